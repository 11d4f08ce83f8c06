#!/bin/sh
# A device that stops answering, run inside a guest (one guest is enough).
#
# While a program holds verbs objects (ibv_rc_pingpong waiting for a peer),
# Bus Master Enable of the qhca function is cleared behind the driver's
# back: the device can no longer read its command queue, so the next
# command (ibv_devinfo's QUERY_PORT) gets no completion.  The driver must
# then give up after its 5 s timeout, reset the device and report it dead,
# fail later commands at once, let the program's objects be destroyed,
# unload cleanly, and work again after a reload (probe enables bus
# mastering again).
#
# With /qhca/qhca_ktest.ko (scripts/launch --add it), kernel QPs are
# checked too: ib_drain_qp() of an RC QP with posted work requests returns
# with every request flushed, on the live device and, waiting for the
# device's death, on the dead one (the driver must flush them itself).
#
# Prints "ok - NAME" / "not ok - NAME" per check; exits 1 if any failed.
. /usr/lib/qhca/lib.sh
KTEST=/qhca/qhca_ktest.ko

LOG=/tmp/deadtest.$$
mkdir -p "$LOG"

now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

PCI=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1af4:0x10f0 ]; then
		PCI=$d
		break
	fi
done
[ -n "$PCI" ] || { not_ok "a qhca PCI function" "none"; exit 1; }
qhca_wait_port ACTIVE 30 || not_ok "qhca0 is up" "$(ls /sys/class/infiniband 2>&1)"

BEFORE=$(qhca_dmesg_lines)

# ktest NAME ARGS...: load the self-test (it runs in module init)
ktest() {
	_n=$1
	shift
	if qhca_timeout 120 insmod "$KTEST" role=drain local="$QHCA_IP" "$@" \
		2>"$LOG/kt.err"; then
		ok "$_n"
		rmmod qhca_ktest
	else
		not_ok "$_n" "$(cat "$LOG/kt.err")" \
			"$(dmesg | grep qhca_ktest | tail -n 6)"
	fi
}
if [ -f "$KTEST" ]; then
	ktest "kernel QP drained on the live device"
else
	echo "# $KTEST missing: no kernel QP checks"
fi

ibv_rc_pingpong -d qhca0 -g 1 -p 18516 >"$LOG/pp.out" 2>&1 &
PP=$!
sleep 3
if kill -0 $PP 2>/dev/null; then
	ok "a program holds verbs objects"
else
	not_ok "a program holds verbs objects" "$(cat "$LOG/pp.out")"
fi

# A kernel QP with posted work, drained once the device is dead
if [ -f "$KTEST" ]; then
	(ktest "kernel QP drained on the dead device" dead=1 >"$LOG/kt.dead") &
	KT=$!
	sleep 2
fi

# PCI command register (offset 4): keep Memory Space, clear Bus Master
cmd=$(od -An -tu2 -j4 -N2 "$PCI/config" | tr -d ' ')
new=$((cmd & ~4))
printf "$(printf '\\%03o\\%03o' $((new & 255)) $((new >> 8)))" |
	dd of="$PCI/config" bs=1 seek=4 count=2 conv=notrunc 2>/dev/null
after=$(od -An -tu2 -j4 -N2 "$PCI/config" | tr -d ' ')
if [ $((after & 4)) -eq 0 ]; then
	ok "bus mastering turned off behind the driver"
else
	not_ok "bus mastering turned off behind the driver" "command $cmd -> $after"
fi

t0=$(now_ms)
ibv_devinfo -d qhca0 >"$LOG/devinfo1" 2>&1
t1=$(now_ms)
if [ $((t1 - t0)) -ge 4000 ] && [ $((t1 - t0)) -lt 15000 ]; then
	ok "the first command times out ($((t1 - t0)) ms)"
else
	not_ok "the first command times out" "ibv_devinfo took $((t1 - t0)) ms"
fi
if qhca_dmesg_after "$BEFORE" | grep -q 'device is dead'; then
	ok "the driver reports the device dead"
else
	not_ok "the driver reports the device dead" \
		"$(qhca_dmesg_after "$BEFORE" | grep qhca | tail -n 5)"
fi
if grep -q 'PORT_DOWN' "$LOG/devinfo1" ||
	grep -q DOWN /sys/class/infiniband/qhca0/ports/1/state; then
	ok "the port is down"
else
	not_ok "the port is down" "$(grep state "$LOG/devinfo1")"
fi

t0=$(now_ms)
ibv_devinfo -d qhca0 >"$LOG/devinfo2" 2>&1
ibv_rc_pingpong -d qhca0 -g 1 -p 18517 >"$LOG/pp2.out" 2>&1 &
PP2=$!
sleep 1
kill $PP2 2>/dev/null
wait $PP2
rc2=$?
t1=$(now_ms)
if [ $((t1 - t0)) -lt 3000 ]; then
	ok "later commands fail at once ($((t1 - t0)) ms)"
else
	not_ok "later commands fail at once" "took $((t1 - t0)) ms"
fi
if [ $rc2 -ne 0 ] && ! grep -q 'local address' "$LOG/pp2.out"; then
	ok "a new program cannot set up on the dead device"
else
	not_ok "a new program cannot set up on the dead device" \
		"rc $rc2: $(head -n 3 "$LOG/pp2.out")"
fi

if [ -n "${KT:-}" ]; then
	wait $KT
	cat "$LOG/kt.dead"
fi

# The held objects go away on the dead device, and so does the driver
t0=$(now_ms)
kill $PP 2>/dev/null
wait $PP 2>/dev/null
t1=$(now_ms)
ok "the holding program exits ($((t1 - t0)) ms)"
t0=$(now_ms)
if rmmod qhca 2>"$LOG/err"; then
	ok "unload of the dead device ($(($(now_ms) - t0)) ms)"
else
	not_ok "unload of the dead device" "$(cat "$LOG/err")"
fi
if modprobe qhca && qhca_wait_port ACTIVE 30; then
	ok "reload brings the device back"
else
	not_ok "reload brings the device back" "$(dmesg | grep qhca | tail -n 5)"
fi
if ibv_devinfo -d qhca0 | grep -q PORT_ACTIVE; then
	ok "ibv_devinfo after the reload"
else
	not_ok "ibv_devinfo after the reload"
fi

qhca_dmesg_since "$BEFORE" \
	'WARNING:|BUG:|Oops|Call Trace|refcount_t:|UBSAN|KASAN|general protection|corruption|INFO: task|not freed' \
	"no kernel warnings"
echo "# kernel messages:"
qhca_dmesg_after "$BEFORE" | grep -i qhca | sed 's/^/# /' | head -n 20

rm -rf "$LOG"
[ "$FAILED" -eq 0 ]
