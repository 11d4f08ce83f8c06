#!/bin/sh
# The driver's pairing by MAC, in one guest with no peer (scripts/test.d/
# driver runs it after link.sh, see single.sh): the driver warns, once per
# device and with both MACs, when the paired netdev's MAC is changed away
# from the device's (ip link set eth0 address ...), says so when it is
# back, and warns when no netdev has the device's MAC (virtio_net
# unloaded: eth0 gone; the port goes DOWN, and the warning comes
# QHCA_PAIR_WAIT_MS, 10 s, later); eth0 is made again as it was and the
# port comes back.
#
# Prints "ok - NAME" / "not ok - NAME"; exits 1 if any failed.
. /usr/lib/qhca/lib.sh

# the launcher gives eth0 and the qhca device the same MAC
MAC=$(cat /sys/class/net/eth0/address)
OTHER=52:54:00:71:48:fe
OTHER2=52:54:00:71:48:fd
DIFFERS="qhca0: netdev eth0 MAC $OTHER differs from the device's MAC $MAC"
NONE="qhca0: no netdev has the device's MAC $MAC"

# mac_wait SECONDS FIXED-STRING: wait until the kernel log after $MARK has it
mac_wait() {
	_mw=0
	while [ $_mw -lt $(($1 * 10)) ]; do
		qhca_dmesg_after "$MARK" | grep -qF "$2" && return 0
		sleep 0.1
		_mw=$((_mw + 1))
	done
	return 1
}

qhca_wait_port ACTIVE 30 || not_ok "port active at the start" "$(qhca_port_state)"

# --- the paired netdev's MAC changed ---
MARK=$(qhca_dmesg_lines)
ip link set eth0 address "$OTHER"
if mac_wait 5 "$DIFFERS"; then
	ok "warning with both MACs when eth0's MAC is changed"
else
	not_ok "warning with both MACs when eth0's MAC is changed" \
		"wanted: $DIFFERS" "$(qhca_dmesg_after "$MARK" | tail -n 5)"
fi
ip link set eth0 address "$MAC"
if mac_wait 5 "qhca0: netdev eth0 has the device's MAC $MAC again"; then
	ok "eth0's MAC back: the driver says so"
else
	not_ok "eth0's MAC back: the driver says so" "$(qhca_dmesg_after "$MARK" | tail -n 5)"
fi
ip link set eth0 address "$OTHER2"
sleep 1
ip link set eth0 address "$MAC"
sleep 1
n=$(qhca_dmesg_after "$MARK" | grep -c "qhca0: netdev eth0 MAC .* differs")
if [ "$n" -eq 1 ]; then
	ok "warned once per device (a second change is not warned again)"
else
	not_ok "warned once per device (a second change is not warned again)" \
		"$n warnings" "$(qhca_dmesg_after "$MARK" | grep differs)"
fi
if qhca_wait_port ACTIVE 10; then
	ok "port active after eth0's MAC is back"
else
	not_ok "port active after eth0's MAC is back" "$(qhca_port_state)"
fi

# --- no netdev of the device's MAC ---
ADDR=$(ip -4 -o addr show dev eth0 | awk '{ print $4; exit }')
MTU=$(cat /sys/class/net/eth0/mtu)
MARK=$(qhca_dmesg_lines)
if rmmod virtio_net; then
	if qhca_wait_port DOWN 10; then ok "port down with eth0 gone"; else not_ok "port down with eth0 gone" "$(qhca_port_state)"; fi
	if mac_wait 30 "$NONE"; then
		ok "warning with the device's MAC when no netdev has it"
	else
		not_ok "warning with the device's MAC when no netdev has it" \
			"wanted: $NONE" "$(qhca_dmesg_after "$MARK" | tail -n 5)"
	fi
else
	not_ok "rmmod virtio_net (eth0 gone)"
fi
modprobe virtio_net
_w=0
while [ ! -e /sys/class/net/eth0 ] && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
ip link set eth0 mtu "$MTU"
[ -n "$ADDR" ] && ip addr add "$ADDR" dev eth0
ip link set eth0 up
if qhca_wait_port ACTIVE 30 && qhca_dmesg_after "$MARK" | grep -q "qhca0: bound to netdev eth0"; then
	ok "eth0 back: bound again, port active"
else
	not_ok "eth0 back: bound again, port active" "$(qhca_port_state)" "$(qhca_dmesg_after "$MARK" | tail -n 5)"
fi
[ "$FAILED" -eq 0 ]
