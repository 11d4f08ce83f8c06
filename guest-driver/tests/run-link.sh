#!/bin/bash
# Host side of link.sh: boot one guest with a QMP socket, wait until the
# guest is watching (QHCA-LINK-READY on its console), turn the qhca
# device's netdev ("rdmanet") off, then on again, and report.
#   guest-driver/tests/run-link.sh [RUN-DIR]
# Exit status 0 if the guest's checks passed.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${1:-$TOP/build/runs/link-$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$DIR"
SOCK=$DIR/qmp.sock
rm -f "$SOCK"

"$TOP/scripts/launch" -n 1 --dir "$DIR" --timeout 200 \
	--run "$TOP/guest-driver/tests/link.sh" \
	--qemu-arg -qmp --qemu-arg "unix:$SOCK,server=on,wait=off" \
	>"$DIR/launch.out" 2>&1 &
LAUNCH=$!

/usr/bin/python3 - "$SOCK" "$DIR/guest1.log" <<'PY'
import json, os, socket, sys, time
sock, log = sys.argv[1], sys.argv[2]

def wait_for(cond, secs):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.2)
    return False

def ready():
    try:
        with open(log, errors="replace") as f:
            return "QHCA-LINK-READY" in f.read()
    except OSError:
        return False

if not wait_for(ready, 400):
    sys.exit("the guest never got ready")
time.sleep(2)

def set_link(up):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    f = s.makefile("rw")
    f.readline()
    for c in ({"execute": "qmp_capabilities"},
              {"execute": "set_link",
               "arguments": {"name": "rdmanet", "up": up}}):
        f.write(json.dumps(c) + "\n")
        f.flush()
        r = json.loads(f.readline())
        if "error" in r:
            sys.exit("QMP: %s" % r["error"])
    s.close()

set_link(False)
time.sleep(6)
set_link(True)
PY
wait $LAUNCH || true
cat "$DIR/guest1.out"
grep -q 'guest1: ok' "$DIR/launch.out"
