#!/bin/sh
# Run script of the libvirt test group (scripts/test.d/libvirt): two guests
# that a libvirt daemon started (virsh start) on one libvirt network, each
# with a qhca device that shares its virtio-net's backend (-device
# qhca,nic=... from the domain's <qemu:commandline>). Guest 1 serves,
# guest 2 is the client. In order:
#
#   - the ACPI power button: button.ko and evdev.ko come in the run archive
#     (the image has neither), so that `virsh shutdown` (an ACPI power
#     button press) reaches this script
#   - qhca0 is the qhca driver's, ACTIVE on eth0 (the virtio-net: one MAC)
#   - ibv_rc_pingpong -c, rping -V and ib_write_bw between the two
#   - qhca0's hardware counters moved by them (frames both ways; the
#     ib_write_bw payload in tx_bytes on the client, rx_bytes on the server)
#   - "QHCA-LIBVIRT-WAIT id=N" on the console: the host may save, restore,
#     managedsave and migrate the domain now; the script waits for the
#     power button (virsh shutdown), says "QHCA-LIBVIRT-POWER-BUTTON id=N",
#     runs ibv_rc_pingpong -c once more (the device still works after what
#     the host did) and ends; /init then powers the guest off.
. /usr/lib/qhca/lib.sh
qhca_pair_start

PB_WAIT=${LIBVIRT_PB_WAIT:-1800}

# --- the power button ----------------------------------------------------------
pb_load() {
	for _m in button evdev; do
		grep -q "^$_m " /proc/modules && continue
		insmod "/qhca/$_m.ko" || { echo "insmod /qhca/$_m.ko failed"; return 1; }
	done
	_i=0
	while [ $_i -lt 50 ]; do
		[ -n "$(pb_nodes)" ] && { echo "power button: $(pb_nodes)"; return 0; }
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "no input device named 'Power Button' with an event node:"
	grep -H . /sys/class/input/*/name 2>&1
	return 1
}
pb_nodes() {	# the /dev/input/eventN of every "Power Button"
	for _e in /sys/class/input/event*; do
		[ -e "$_e/device/name" ] || continue
		[ "$(cat "$_e/device/name")" = "Power Button" ] &&
			[ -c "/dev/input/${_e##*/}" ] && echo "/dev/input/${_e##*/}"
	done
}
check "ACPI power button ready (button.ko, evdev.ko)" pb_load

# --- the device ------------------------------------------------------------------
c_device() {
	pair_setup_dev || return 1
	echo "device $PAIR_DEV, GID index $PAIR_GIDX"
	[ "$PAIR_DEV" = qhca0 ] || { echo "the RDMA device is $PAIR_DEV, not qhca0"; return 1; }
	_drv=$(basename "$(readlink /sys/class/infiniband/qhca0/device/driver)")
	[ "$_drv" = qhca ] || { echo "qhca0's driver is '$_drv'"; return 1; }
	qhca_wait_port ACTIVE 30 gid || { echo "port: $(qhca_port_state)"; return 1; }
	rdma link show qhca0/1
	rdma link show qhca0/1 | grep -q 'state ACTIVE .*netdev eth0' || return 1
	# one MAC: the device's node GUID is made from eth0's MAC
	_mac=$(cat /sys/class/net/eth0/address)
	echo "eth0 $_mac, qhca0 node_guid $(cat /sys/class/infiniband/qhca0/node_guid)"
}
check "qhca0 (driver qhca) ACTIVE on eth0, the virtio-net of the same MAC" c_device
# PAIR_DEV/PAIR_GIDX for the pair checks (check ran c_device in a subshell)
pair_setup_dev >/dev/null 2>&1
pair_start_mailbox

COUNTERS="tx_frames rx_frames tx_bytes rx_bytes"
counters() {
	for _c in $COUNTERS; do
		printf '%s ' "$(cat /sys/class/infiniband/qhca0/ports/1/hw_counters/"$_c" 2>/dev/null || echo -)"
	done
}
C0=$(counters)
echo "# qhca0 counters before ($COUNTERS): $C0"

PP="-d \$PAIR_DEV -g \$PAIR_GIDX -p 18515 -s 4096 -n 200 -c"
pcheck "ibv_rc_pingpong -s 4096 -n 200 -c" 1 2 300 tcp:18515 \
	"ibv_rc_pingpong $PP" "ibv_rc_pingpong $PP \$SRV" v_pingpong
# shellcheck disable=SC2016
pcheck "rping -C 10 -S 4096 -V" 1 2 300 cm:7174 \
	'rping -s -a $SRV -p 7174 -C 10 -S 4096 -V' \
	'rping -c -a $SRV -p 7174 -C 10 -S 4096 -V -v' "v_rping 10"
BW="-d \$PAIR_DEV -x \$PAIR_GIDX -p 18516 -s 65536 -n 500 -F"
pcheck "ib_write_bw -s 65536 -n 500" 1 2 300 tcp:18516 \
	"ib_write_bw $BW" "ib_write_bw $BW \$SRV" "v_perf 65536"

C1=$(counters)
echo "# qhca0 counters after: $C1"
c_counters() {
	# shellcheck disable=SC2086
	set -- $C0 $C1
	echo "tx_frames $1 -> $5, rx_frames $2 -> $6, tx_bytes $3 -> $7, rx_bytes $4 -> $8"
	for _v in "$@"; do
		case $_v in '' | *[!0-9]*) echo "a counter is not a number"; return 1 ;; esac
	done
	# 500 WRITEs of 64 KiB one way, 200 x 4 KiB SENDs both ways
	_want=$((500 * 65536))
	if [ "$QHCA_ROLE" = client ]; then _b=$(($7 - $3)); else _b=$(($8 - $4)); fi
	[ $(($5 - $1)) -ge 400 ] && [ $(($6 - $2)) -ge 400 ] && [ "$_b" -ge "$_want" ] && return 0
	echo "want at least 400 frames each way and $_want payload bytes $([ "$QHCA_ROLE" = client ] && echo sent || echo received); got $_b"
	return 1
}
check "qhca0 hw_counters moved (frames both ways, the ib_write_bw bytes)" c_counters

# --- the host's turn: save, restore, migrate; then virsh shutdown ----------------
pb_wait() {
	_nodes=$(pb_nodes)
	[ -n "$_nodes" ] || { echo "no power button"; return 1; }
	_pids=
	for _n in $_nodes; do
		dd if="$_n" of=/dev/null bs=24 count=1 2>/dev/null &
		_pids="$_pids $!"
	done
	echo "QHCA-LIBVIRT-WAIT id=$QHCA_ID"
	_end=$(($(qhca_now) + PB_WAIT))
	while [ "$(qhca_now)" -lt $_end ]; do
		for _p in $_pids; do
			if ! kill -0 "$_p" 2>/dev/null; then
				# shellcheck disable=SC2086
				kill $_pids 2>/dev/null
				echo "QHCA-LIBVIRT-POWER-BUTTON id=$QHCA_ID"
				return 0
			fi
		done
		sleep 1
	done
	# shellcheck disable=SC2086
	kill $_pids 2>/dev/null
	echo "no power button press in ${PB_WAIT}s"
	return 1
}
if pb_wait; then
	ok "power button pressed (virsh shutdown)"
else
	not_ok "power button pressed (virsh shutdown)" "none in ${PB_WAIT}s"
fi
echo "# qhca0 counters at the power button: $(counters)"
pcheck "ibv_rc_pingpong -s 4096 -n 200 -c after the host's save, restore and migration" \
	1 2 300 tcp:18517 \
	"ibv_rc_pingpong -d \$PAIR_DEV -g \$PAIR_GIDX -p 18517 -s 4096 -n 200 -c" \
	"ibv_rc_pingpong -d \$PAIR_DEV -g \$PAIR_GIDX -p 18517 -s 4096 -n 200 -c \$SRV" v_pingpong
pair_notes
pair_stop_mailbox
checks_done
