#!/bin/sh
# The device's own link, run inside a guest while the host turns the qhca
# device's QEMU netdev off and on again (scripts/test.d/driver does both, over QMP): the port
# must go down and come back (async events PORT_ERR / PORT_ACTIVE from
# the device's event queue), and user space must see both events.
#
# Prints "ok - NAME" / "not ok - NAME"; exits 1 if any failed.
. /usr/lib/qhca/lib.sh

qhca_wait_port ACTIVE 30 || not_ok "port active at the start" "$(qhca_port_state)"
ibv_asyncwatch -d qhca0 >/tmp/link.events 2>&1 &
W=$!
echo "QHCA-LINK-READY"
if qhca_wait_port DOWN 60; then ok "port down with the device's link"; else not_ok "port down with the device's link" "$(qhca_port_state)"; fi
if qhca_wait_port ACTIVE 60; then ok "port active again with the link"; else not_ok "port active again with the link" "$(qhca_port_state)"; fi
sleep 1
kill $W 2>/dev/null
wait $W 2>/dev/null
if grep -q PORT_ERR /tmp/link.events && grep -q PORT_ACTIVE /tmp/link.events; then
	ok "user space saw PORT_ERR and PORT_ACTIVE"
else
	not_ok "user space saw PORT_ERR and PORT_ACTIVE" "$(cat /tmp/link.events)"
fi
if dmesg | grep -q 'qhca0: device link down' && dmesg | grep -q 'qhca0: device link up'; then
	ok "the driver got the device's link events"
else
	not_ok "the driver got the device's link events" "$(dmesg | grep qhca | tail -n 5)"
fi
[ "$FAILED" -eq 0 ]
