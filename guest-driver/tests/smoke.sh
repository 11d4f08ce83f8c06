#!/bin/sh
# The raw uverbs smoke test (tools/qhca-uverbs-smoke.c), run inside a guest
# (scripts/launch --add build/guest-driver/qhca-uverbs-smoke): the
# context, queries, PD, MR, and the udata validation of CQs, QPs and SRQs
# without rdma-core; then 12 copies at once (12 contexts, each with its
# own doorbell page; many commands in flight) and 40 ibv_devinfo at once.
#
# Prints the tool's "ok - NAME" lines; exits 1 if anything failed.
TOOL=/qhca/qhca-uverbs-smoke
[ -x "$TOOL" ] || TOOL=$(command -v qhca-uverbs-smoke)
[ -x "$TOOL" ] || { echo "not ok - qhca-uverbs-smoke in /qhca (launch --add it)"; exit 1; }
DEV=/dev/infiniband/$(basename /sys/class/infiniband/qhca0/device/infiniband_verbs/uverbs*)
FAILED=0
BEFORE=$(dmesg | wc -l)

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

i=0
pids=
while [ $i -lt 12 ]; do
	"$TOOL" "$DEV" >/tmp/smoke.$i 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
n=0
for p in $pids; do wait "$p" || n=$((n + 1)); done
if [ $n -eq 0 ]; then
	echo "ok - 12 smoke tests at once"
else
	echo "not ok - 12 smoke tests at once ($n failed)"
	grep -h 'not ok' /tmp/smoke.* | sort | uniq -c | head | sed 's/^/# /'
	FAILED=$((FAILED + 1))
fi
rm -f /tmp/smoke.*

i=0
pids=
while [ $i -lt 40 ]; do
	ibv_devinfo -d qhca0 >/dev/null 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
n=0
for p in $pids; do wait "$p" || n=$((n + 1)); done
if [ $n -eq 0 ]; then
	echo "ok - 40 ibv_devinfo at once"
else
	echo "not ok - 40 ibv_devinfo at once ($n failed)"
	FAILED=$((FAILED + 1))
fi

BAD='WARNING:|BUG:|Oops|Call Trace|refcount_t:|general protection|qhca.*(dead|timed out|error)'
if dmesg | tail -n +"$((BEFORE + 1))" | grep -Eq "$BAD"; then
	echo "not ok - no kernel warnings"
	dmesg | tail -n +"$((BEFORE + 1))" | grep -E "$BAD" | head | sed 's/^/# /'
	FAILED=$((FAILED + 1))
else
	echo "ok - no kernel warnings"
fi
[ "$FAILED" -eq 0 ]
