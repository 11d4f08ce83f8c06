#!/bin/sh
# Port events, run inside a guest: with ibv_asyncwatch listening, eth0 (the
# netdev qhca0 is paired with) goes down and up again; the port must
# follow (sysfs state) and user space must see IBV_EVENT_PORT_ERR and
# IBV_EVENT_PORT_ACTIVE.
#
# Prints "ok - NAME" / "not ok - NAME"; exits 1 if any failed.
FAILED=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; shift; for l in "$@"; do echo "# $l"; done; FAILED=$((FAILED + 1)); }
state() { cat /sys/class/infiniband/qhca0/ports/1/state 2>/dev/null; }
wait_state() {	# wait_state WORD SECONDS
	_i=0
	while [ $_i -lt $(($2 * 10)) ]; do
		state | grep -q "$1" && return 0
		sleep 0.1
		_i=$((_i + 1))
	done
	return 1
}

wait_state ACTIVE 30 || not_ok "port active at the start" "$(state)"
ibv_asyncwatch -d qhca0 >/tmp/events.out 2>&1 &
W=$!
sleep 1
ip link set eth0 down
if wait_state DOWN 10; then ok "port down with eth0"; else not_ok "port down with eth0" "$(state)"; fi
ip link set eth0 up
if wait_state ACTIVE 30; then ok "port active again with eth0"; else not_ok "port active again with eth0" "$(state)"; fi
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
while [ $i -lt 100 ] && ! grep -q '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/qhca0/ports/1/gids/* 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
[ $i -lt 100 ] && ok "IPv4 GID present afterwards" || not_ok "IPv4 GID present afterwards"
[ "$FAILED" -eq 0 ]
