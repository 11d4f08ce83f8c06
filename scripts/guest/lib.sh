#!/bin/sh
# Helpers for guest scripts (POSIX sh: dash). Source it:  . /usr/lib/qhca/lib.sh
#
# Environment set by /init for the run script:
#   QHCA_ID        this guest's index, 1..QHCA_N
#   QHCA_N         number of guests in the run
#   QHCA_IP        this guest's eth0 IPv4 address (198.18.0.ID)
#   QHCA_PREFIX    its prefix length
#   QHCA_PEERS     the other guests' addresses, space separated
#   QHCA_PEER_IP   the first of them (the peer, with two guests)
#   QHCA_ROLE      "server" for guest 1, "client" for the others
#   QHCA_IFACE     the IP network interface (eth0)

# Trap: busybox applets that run a command by name (timeout, xargs, env,
# nice, setsid...) run busybox's own applet of that name if there is one
# (Debian's busybox prefers applets): `timeout 5 ip ...` runs busybox ip.
# Give them full paths, or use qhca_timeout.

# qhca_timeout SEC CMD ARGS...: timeout that runs CMD found in PATH
qhca_timeout() {
	_t=$1
	shift
	_c=$(command -v "$1") || { echo "qhca_timeout: $1: not found" >&2; return 127; }
	shift
	timeout "$_t" "$_c" "$@"
}

# uptime in whole seconds
qhca_now() {
	cut -d. -f1 /proc/uptime
}

# qhca_barrier PORT TIMEOUT: wait until every guest of the run has reached
# the barrier with the same PORT (TCP over the IP network). Returns 1 on
# timeout. Use ports above 7110 in run scripts; /init uses 7101 and 7102.
qhca_barrier() {
	_port=$1
	_deadline=$(($(qhca_now) + $2))
	[ -n "$QHCA_PEERS" ] || return 0
	_np=0
	for _p in $QHCA_PEERS; do _np=$((_np + 1)); done
	# one accepted connection from each peer
	(
		_i=0
		while [ $_i -lt $_np ]; do
			nc -l -p "$_port" -e true </dev/null >/dev/null 2>&1 && _i=$((_i + 1))
		done
	) &
	_lpid=$!
	_todo=$QHCA_PEERS
	while [ -n "$_todo" ]; do
		_left=
		for _p in $_todo; do
			nc -w 2 "$_p" "$_port" -e true </dev/null >/dev/null 2>&1 || _left="$_left $_p"
		done
		_todo=$_left
		[ -z "$_todo" ] && break
		if [ "$(qhca_now)" -ge "$_deadline" ]; then
			kill "$_lpid" 2>/dev/null
			echo "barrier $_port: timed out waiting for:$_todo" >&2
			return 1
		fi
		sleep 1
	done
	while kill -0 "$_lpid" 2>/dev/null; do
		if [ "$(qhca_now)" -ge "$_deadline" ]; then
			kill "$_lpid" 2>/dev/null
			echo "barrier $_port: timed out waiting for peers to reach it" >&2
			return 1
		fi
		sleep 1
	done
	wait "$_lpid" 2>/dev/null
	return 0
}
