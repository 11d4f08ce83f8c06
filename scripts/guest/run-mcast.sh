#!/bin/sh
# UD multicast between guests (docs/verbs.md), with rdma-core's mckey
# (librdmacm: rdma_join_multicast, then ibv_attach_mcast on the id's UD
# QP; rdma_leave_multicast, ibv_detach_mcast):
#   scripts/launch -n 3 --run scripts/guest/run-mcast.sh
#   scripts/launch -n 3 --rxe 3 --run ...   a Soft-RoCE receiver (or --rxe 1:
#                                           a Soft-RoCE sender); one segment
# Guest 1 sends, every other guest receives. The receivers join the group
# 239.1.2.3 (the GID ::ffff:239.1.2.3, MAC 01:00:5e:01:02:03) and wait
# for MCAST_COUNT messages; once all have joined (barrier), guest 1 joins
# and sends MCAST_COUNT UD messages to the group (DestQP 0xFFFFFF). Each
# receiver must get all of them and leave the group; guest 1's sends must
# all go out. Then a second round with a single receiver (guest 2):
# the other receivers left the group, so their devices now drop the
# group's frames (their device counter of dropped frames grows by the
# frames sent; not checked on Soft-RoCE, which has no such counter, and
# weak on one segment, where the IP network's frames count too); guest 2
# gets all. Last, no kernel warnings.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev
DMESG0=$(qhca_dmesg_lines)
GROUP=239.1.2.3
MCAST_COUNT=${MCAST_COUNT:-20}
D=/tmp/mcast
mkdir -p "$D"
echo "# mcast: guest $QHCA_ID on $PAIR_DEV, group $GROUP, $MCAST_COUNT messages"

# the multicast route: rdma_cm resolves the group's address like any other
ip route add 224.0.0.0/4 dev "$QHCA_IFACE" 2>/dev/null

# a device counter (hw_counters of port 1), empty if there is none
counter() {
	cat "/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters/$1" 2>/dev/null
}

# recv_start TAG: a receiver in the background; its output in $D/TAG.out,
# its exit code in $D/TAG.rc when it ends
recv_start() {
	rm -f "$D/$1.rc"
	(
		qhca_timeout 120 mckey -m "$GROUP" -b "$QHCA_IP" -C "$MCAST_COUNT" \
			>"$D/$1.out" 2>&1
		echo $? >"$D/$1.rc"
	) &
}

# recv_wait TAG: the receiver got every message and left the group
recv_wait() {
	while [ ! -f "$D/$1.rc" ]; do sleep 1; done
	cat "$D/$1.out"
	[ "$(cat "$D/$1.rc")" = 0 ] || { echo "mckey exited $(cat "$D/$1.rc")"; return 1; }
	grep -q "data transfers complete" "$D/$1.out" || return 1
	! grep -q "failure leaving" "$D/$1.out"
}

send_group() {
	qhca_timeout 60 mckey -m "$GROUP" -b "$QHCA_IP" -s -C "$MCAST_COUNT" || return 1
}

# check() runs a function without arguments
recv_wait_all() { recv_wait all; }
recv_wait_one() { recv_wait one; }

receivers=
_i=2
while [ $_i -le "$QHCA_N" ]; do
	receivers="$receivers $_i"
	_i=$((_i + 1))
done

drop0=$(counter rx_dropped)
_me=no
for _g in $receivers; do [ "$_g" = "$QHCA_ID" ] && _me=yes; done
[ $_me = yes ] && recv_start all && sleep 6
qhca_barrier 7141 120 || not_ok "mcast: barrier 7141"
if [ "$QHCA_ID" = 1 ]; then
	check "mcast: sends $MCAST_COUNT messages to $GROUP" send_group 90
elif [ $_me = yes ]; then
	check "mcast: receives $MCAST_COUNT messages from $GROUP" \
		recv_wait_all 150
fi
qhca_barrier 7142 180 || not_ok "mcast: barrier 7142"

# round 2: guest 2 alone in the group; the others left it
drop1=$(counter rx_dropped)
[ "$QHCA_ID" = 2 ] && recv_start one && sleep 6
qhca_barrier 7143 120 || not_ok "mcast: barrier 7143"
if [ "$QHCA_ID" = 1 ]; then
	check "mcast: after the others left, sends $MCAST_COUNT messages" \
		send_group 90
elif [ "$QHCA_ID" = 2 ]; then
	check "mcast: alone in the group, receives $MCAST_COUNT messages" \
		recv_wait_one 150
fi
qhca_barrier 7144 180 || not_ok "mcast: barrier 7144"
drop2=$(counter rx_dropped)
echo "# mcast: rx_dropped $drop0 -> $drop1 -> $drop2"
if [ "$QHCA_ID" -gt 2 ] && [ -z "$drop2" ]; then
	echo "# mcast: $PAIR_DEV has no rx_dropped counter: not checked that it dropped the group's frames"
elif [ "$QHCA_ID" -gt 2 ]; then
	if [ $((drop2 - drop1)) -ge "$MCAST_COUNT" ]; then
		ok "mcast: left the group: its device dropped the group's $MCAST_COUNT frames"
	else
		not_ok "mcast: left the group: its device dropped the group's $MCAST_COUNT frames" \
			"rx_dropped grew by $((drop2 - drop1))"
	fi
fi

qhca_dmesg_since "$DMESG0" "WARNING|BUG|Oops|qhca.*(error|timed out)" \
	"mcast: no kernel warnings"
checks_done
