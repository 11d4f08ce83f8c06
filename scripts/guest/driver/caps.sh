#!/bin/sh
# Honest capabilities and the device's own counters (docs/verbs.md),
# in one guest (all.sh runs it in each):
#
# * qhca-verbs-caps (guest-driver/tools/, scripts/launch --add
#   build/guest-driver/qhca-verbs-caps): reported limits tried at the limit
#   and one past it, absent features absent, unsupported verbs EOPNOTSUPP;
# * the port's hardware counters (rdma statistic, sysfs hw_counters) move
#   with traffic (an RC pingpong to the device's own GID: looped frames);
# * rdma resource show -dd shows the device's view of a QP and a CQ.
#
# Prints "ok - NAME" / "not ok - NAME"; exits 1 if anything failed.
. /usr/lib/qhca/lib.sh
DEV=qhca0
TOOL=/qhca/qhca-verbs-caps
[ -x "$TOOL" ] || TOOL=$(command -v qhca-verbs-caps)

# the RoCE v2 GID index of eth0's IPv4 address
GIDX=
for _g in /sys/class/infiniband/$DEV/ports/1/gids/*; do
	_i=${_g##*/}
	case $(cat "$_g") in
	0000:0000:0000:0000:0000:ffff:*)
		[ "$(cat /sys/class/infiniband/$DEV/ports/1/gid_attrs/types/"$_i" 2>/dev/null)" = "RoCE v2" ] &&
			{ GIDX=$_i; break; } ;;
	esac
done
echo "# caps: device $DEV, RoCE v2 IPv4 GID index ${GIDX:-none}"

if [ -x "$TOOL" ]; then
	"$TOOL" -d $DEV -g "${GIDX:-1}" >/tmp/caps.out 2>&1
	rc=$?
	# all.sh puts "caps: " before every line already
	sed 's/^\(\(not \)\{0,1\}ok - \)caps: /\1/' /tmp/caps.out
	PASSED=$((PASSED + $(grep -c '^ok - ' /tmp/caps.out)))
	FAILED=$((FAILED + $(grep -c '^not ok - ' /tmp/caps.out)))
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok - ' /tmp/caps.out; then
		not_ok "qhca-verbs-caps exited $rc" "$(tail -n 5 /tmp/caps.out)"
	fi
else
	not_ok "qhca-verbs-caps in /qhca (launch --add it)"
fi

# stat NAME: the port counter NAME as rdma statistic shows it
hwstat() {
	rdma statistic show link $DEV/1 | tr -s ' \n' '  ' |
		sed -n "s/.* $1 \([0-9]*\) .*/\1/p"
}
sysfs() {
	cat /sys/class/infiniband/$DEV/ports/1/hw_counters/"$1"
}

names="tx_frames rx_frames tx_bytes rx_bytes loopback_frames rx_dropped
rx_icrc_errors retransmits guest_errors loopback_dropped naks_sent naks_rcvd
rnr_naks_sent rnr_naks_rcvd out_of_sequence duplicate_request
local_ack_timeout_err retry_exceeded_err rnr_retry_exceeded_err"
missing=
for n in $names; do
	[ -n "$(hwstat "$n")" ] && [ -e /sys/class/infiniband/$DEV/ports/1/hw_counters/"$n" ] ||
		missing="$missing $n"
done
if [ -z "$missing" ]; then
	ok "rdma statistic and sysfs hw_counters list the device's 19 counters"
else
	not_ok "rdma statistic and sysfs hw_counters list the device's 19 counters" \
		"missing:$missing" "$(rdma statistic show link $DEV/1)"
fi

tx0=$(hwstat tx_frames) rxb0=$(hwstat rx_bytes) lo0=$(hwstat loopback_frames)
# a server that waits with its QP created (for rdma resource), then 20
# 64 KiB exchanges with a client in the same guest (loopback)
ibv_rc_pingpong -d $DEV -g "${GIDX:-1}" -p 18950 -s 65536 -n 20 -c \
	>/tmp/caps.srv 2>&1 &
srv=$!
sleep 1
rdma resource show qp link $DEV -dd >/tmp/caps.qp 2>&1
rdma resource show cq dev $DEV -dd >/tmp/caps.cq 2>&1
if grep -q 'comm ibv_rc_pingpong' /tmp/caps.qp &&
	grep -A3 'comm ibv_rc_pingpong' /tmp/caps.qp | grep -q 'drv_hw_state INIT' &&
	grep -A3 'comm ibv_rc_pingpong' /tmp/caps.qp | grep -q 'drv_rq_pi'; then
	ok "rdma resource show qp -dd: the device's state, PSNs and indices of a waiting server's QP"
else
	not_ok "rdma resource show qp -dd: the device's state, PSNs and indices of a waiting server's QP" \
		"$(cat /tmp/caps.qp)"
fi
if grep -q 'drv_depth' /tmp/caps.cq && grep -q 'drv_fill' /tmp/caps.cq; then
	ok "rdma resource show cq -dd: the device's depth, indices and fill of the CQs"
else
	not_ok "rdma resource show cq -dd: the device's depth, indices and fill of the CQs" \
		"$(head -n 20 /tmp/caps.cq)"
fi
qhca_timeout 60 ibv_rc_pingpong -d $DEV -g "${GIDX:-1}" -p 18950 -s 65536 -n 20 -c \
	127.0.0.1 >/tmp/caps.cli 2>&1
crc=$?
wait $srv
tx1=$(hwstat tx_frames) rxb1=$(hwstat rx_bytes) lo1=$(hwstat loopback_frames)
# 20 x 64 KiB each way is at least 2 x 20 x 16 packets at MTU 4096
if [ "$crc" -eq 0 ] && [ $((tx1 - tx0)) -ge 640 ] && [ $((lo1 - lo0)) -ge 640 ] &&
	[ $((rxb1 - rxb0)) -ge $((2 * 20 * 65536)) ]; then
	ok "counters move with traffic: tx_frames +$((tx1 - tx0)), loopback_frames +$((lo1 - lo0)), rx_bytes +$((rxb1 - rxb0))"
else
	not_ok "counters move with traffic" "pingpong exit $crc" \
		"tx_frames $tx0 -> $tx1, loopback_frames $lo0 -> $lo1, rx_bytes $rxb0 -> $rxb1" \
		"$(tail -n 3 /tmp/caps.cli)"
fi
if [ "$(sysfs tx_frames)" -ge "$tx1" ] && [ "$(sysfs rx_bytes)" -ge "$rxb1" ]; then
	ok "sysfs hw_counters agree with rdma statistic"
else
	not_ok "sysfs hw_counters agree with rdma statistic" \
		"tx_frames $(sysfs tx_frames) (rdma: $tx1), rx_bytes $(sysfs rx_bytes) (rdma: $rxb1)"
fi
checks_done
