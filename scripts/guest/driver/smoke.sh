#!/bin/sh
# The raw uverbs smoke test (tools/qhca-uverbs-smoke.c), run inside a guest
# (scripts/launch --add build/guest-driver/qhca-uverbs-smoke): the
# context, queries, PD, MR, and the udata validation of CQs, QPs and SRQs
# without rdma-core; then 12 copies at once (12 contexts, each with its
# own doorbell page; many commands in flight) and 40 ibv_devinfo at once.
#
# Prints the tool's "ok - NAME" lines; exits 1 if anything failed.
. /usr/lib/qhca/lib.sh
TOOL=/qhca/qhca-uverbs-smoke
[ -x "$TOOL" ] || TOOL=$(command -v qhca-uverbs-smoke)
[ -x "$TOOL" ] || { echo "not ok - qhca-uverbs-smoke in /qhca (launch --add it)"; exit 1; }
DEV=/dev/infiniband/$(basename /sys/class/infiniband/qhca0/device/infiniband_verbs/uverbs*)
BEFORE=$(qhca_dmesg_lines)

# state 4 (ACTIVE); the active MTU follows eth0's as the kernel's
# iboe_get_mtu() says: less the RoCE headers (96 bytes), the largest IB MTU
# that fits (launch gives eth0 9000 bytes: 5, 4096; with --mtu 1500: 3, 1024)
ETH_MTU=$(cat /sys/class/net/eth0/mtu)
room=$((ETH_MTU - 96))
if [ $room -ge 4096 ]; then IBMTU=5
elif [ $room -ge 2048 ]; then IBMTU=4
elif [ $room -ge 1024 ]; then IBMTU=3
elif [ $room -ge 512 ]; then IBMTU=2
else IBMTU=1
fi
"$TOOL" "$DEV" 4 $IBMTU || FAILED=$((FAILED + 1))

# at_once N OUT CMD...: N copies of CMD at once (the output of copy I in
# OUT.I); sets n to the number that failed
at_once() {
	_n=$1 _out=$2 _i=0 _pids=
	shift 2
	while [ $_i -lt "$_n" ]; do
		"$@" >"$_out.$_i" 2>&1 &
		_pids="$_pids $!"
		_i=$((_i + 1))
	done
	n=0
	for _p in $_pids; do wait "$_p" || n=$((n + 1)); done
}

at_once 12 /tmp/smoke "$TOOL" "$DEV"
if [ $n -eq 0 ]; then
	ok "12 smoke tests at once"
else
	not_ok "12 smoke tests at once ($n failed)" \
		"$(grep -h 'not ok' /tmp/smoke.* | sort | uniq -c | head)"
fi
rm -f /tmp/smoke.*

at_once 40 /tmp/devinfo ibv_devinfo -d qhca0
rm -f /tmp/devinfo.*
if [ $n -eq 0 ]; then
	ok "40 ibv_devinfo at once"
else
	not_ok "40 ibv_devinfo at once ($n failed)"
fi

BAD='WARNING:|BUG:|Oops|Call Trace|refcount_t:|general protection|qhca.*(dead|timed out|error)'
qhca_dmesg_since "$BEFORE" "$BAD" "no kernel warnings"
[ "$FAILED" -eq 0 ]
