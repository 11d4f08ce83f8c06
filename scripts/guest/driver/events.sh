#!/bin/sh
# Port events, run inside a guest: with ibv_asyncwatch listening, eth0 (the
# netdev qhca0 is paired with) goes down and up again; the port must
# follow (sysfs state) and user space must see IBV_EVENT_PORT_ERR and
# IBV_EVENT_PORT_ACTIVE.
#
# Prints "ok - NAME" / "not ok - NAME"; exits 1 if any failed.
. /usr/lib/qhca/lib.sh

qhca_wait_port ACTIVE 30 || not_ok "port active at the start" "$(qhca_port_state)"
ibv_asyncwatch -d qhca0 >/tmp/events.out 2>&1 &
W=$!
sleep 1
ip link set eth0 down
if qhca_wait_port DOWN 10; then ok "port down with eth0"; else not_ok "port down with eth0" "$(qhca_port_state)"; fi
ip link set eth0 up
if qhca_wait_port ACTIVE 30; then ok "port active again with eth0"; else not_ok "port active again with eth0" "$(qhca_port_state)"; fi
sleep 1
kill $W 2>/dev/null
wait $W 2>/dev/null
if grep -q 'PORT_ERR' /tmp/events.out && grep -q 'PORT_ACTIVE' /tmp/events.out; then
	ok "user space saw PORT_ERR and PORT_ACTIVE"
else
	not_ok "user space saw PORT_ERR and PORT_ACTIVE" "$(cat /tmp/events.out)"
fi
# the IPv4 GID is back (later tests need it)
i=0
while [ $i -lt 100 ] && ! qhca_has_ipv4_gid; do
	sleep 0.1
	i=$((i + 1))
done
[ $i -lt 100 ] && ok "IPv4 GID present afterwards" || not_ok "IPv4 GID present afterwards"
[ "$FAILED" -eq 0 ]
