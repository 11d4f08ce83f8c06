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
	# Each peer says who it is and is answered: a connection counts on
	# both sides only once answered. (Counted on connect alone, a second
	# peer's connection could land in the backlog of a listener that
	# then took only the first, and be reset: counted by that peer and
	# never by us.) We wait for every peer's address, however often it
	# came.
	_seen=/tmp/.barrier.$_port
	: >"$_seen"
	(
		while [ "$(sort -u "$_seen" | wc -l)" -lt $_np ]; do
			nc -l -p "$_port" -e sh -c "read _who; echo \"\$_who\" >>$_seen; echo ack" \
				</dev/null >/dev/null 2>&1
		done
	) &
	_lpid=$!
	_todo=$QHCA_PEERS
	while [ -n "$_todo" ]; do
		_left=
		for _p in $_todo; do
			[ "$(echo "$QHCA_IP" | nc -w 2 "$_p" "$_port" 2>/dev/null)" = ack ] ||
				_left="$_left $_p"
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

# --- results: the one runner every guest test uses -------------------------------
# A test prints one line per case, "ok - NAME" or "not ok - NAME", with
# "# " lines under a failure saying why, and ends with checks_done. The
# host counts the lines (scripts/test.d/*).
PASSED=0
FAILED=0

ok() {	# ok NAME
	echo "ok - $1"
	PASSED=$((PASSED + 1))
}

not_ok() {	# not_ok NAME [DIAGNOSTIC...]: each diagnostic's lines as "# " lines
	echo "not ok - $1"
	shift
	for _l in "$@"; do
		printf '%s\n' "$_l" | sed 's/^/# /'
	done
	FAILED=$((FAILED + 1))
}

# check NAME FUNCTION [TIMEOUT]: run FUNCTION (its output kept in
# $QHCA_CHECK_DIR), ok if it returns 0 within TIMEOUT seconds (default 60;
# then it is killed); its output (40 lines) under a failure. Then runs
# $QHCA_AFTER_CHECK if set. Returns FUNCTION's status.
QHCA_CHECK_DIR=${QHCA_CHECK_DIR:-/tmp/checks}
check() {
	_ck_name=$1 _ck_fn=$2 _ck_to=${3:-60}
	mkdir -p "$QHCA_CHECK_DIR"
	"$_ck_fn" >"$QHCA_CHECK_DIR/out" 2>&1 &
	_ck_pid=$!
	# (the watchdog must not hold our stdout: init waits for its end)
	(
		sleep "$_ck_to"
		kill -9 "$_ck_pid" 2>/dev/null &&
			echo "timed out after ${_ck_to}s" >>"$QHCA_CHECK_DIR/out"
	) </dev/null >/dev/null 2>&1 &
	_ck_wd=$!
	wait "$_ck_pid"
	_ck_rc=$?
	kill "$_ck_wd" 2>/dev/null
	if [ "$_ck_rc" -eq 0 ]; then
		ok "$_ck_name"
	else
		not_ok "$_ck_name" "$(head -n 40 "$QHCA_CHECK_DIR/out")"
	fi
	[ -z "${QHCA_AFTER_CHECK:-}" ] || $QHCA_AFTER_CHECK
	return "$_ck_rc"
}

# checks_done [WORD]: the last line of a test, "# checks done: P passed,
# F failed" ("# WORD done: ..." with WORD); its exit status (1 if any failed)
checks_done() {
	echo "# ${1:-checks} done: $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}

# --- the kernel log ----------------------------------------------------------------

# qhca_dmesg_lines: how many lines the kernel log has now; a mark for
# qhca_dmesg_after and qhca_dmesg_since
qhca_dmesg_lines() {
	dmesg 2>/dev/null | wc -l
}

# qhca_dmesg_after LINE: the kernel log after its first LINE lines
qhca_dmesg_after() {
	dmesg 2>/dev/null | tail -n +"$(($1 + 1))"
}

# qhca_dmesg_since LINE PATTERN NAME: the check NAME, ok if the kernel
# logged nothing matching the ERE PATTERN after its first LINE lines
qhca_dmesg_since() {
	if qhca_dmesg_after "$1" | grep -Eq "$2"; then
		not_ok "$3" "$(qhca_dmesg_after "$1" | grep -E "$2" | head -n 10)"
	else
		ok "$3"
	fi
}

# --- the run scripts' common start ------------------------------------------------

# qhca_helper NAME: a helper script, /qhca/NAME when the launcher added it
# there (--add: the one next to the run script, whatever the image's age),
# else the image's /usr/lib/qhca/NAME
qhca_helper() {
	if [ -f "/qhca/$1" ]; then echo "/qhca/$1"; else echo "/usr/lib/qhca/$1"; fi
}

# qhca_pair_load: source pair.sh (the pair checks), once; QHCA_HELPERS is
# the directory it came from. Its work directory $PAIR_DIR is made.
qhca_pair_load() {
	[ -n "${QHCA_HELPERS:-}" ] && return 0
	QHCA_HELPERS=$(dirname "$(qhca_helper pair.sh)")
	# shellcheck source=scripts/guest/pair.sh
	. "$QHCA_HELPERS/pair.sh"
	mkdir -p "$PAIR_DIR"
}

# qhca_pair_start [--dev] [--mailbox]: the start of a run script that runs
# pair checks. Loads pair.sh and says who this guest is (the first time),
# then, in the order given: --dev sets up the RDMA device (pair_setup_dev:
# qhca0, or rxe0 with qguest.rxe; PAIR_DEV, PAIR_GIDX), --mailbox starts
# this guest's mailbox (pair_start_mailbox; stop it with pair_stop_mailbox)
qhca_pair_start() {
	if [ -z "${QHCA_HELPERS:-}" ]; then
		qhca_pair_load
		echo "# guest $QHCA_ID ($QHCA_ROLE) $QHCA_IP, peers ${QHCA_PEERS:-none}"
	fi
	for _ps in "$@"; do
		case $_ps in
		--dev) pair_setup_dev ;;
		--mailbox) pair_start_mailbox ;;
		*) echo "qhca_pair_start: unknown option $_ps" >&2; return 2 ;;
		esac
	done
}

# --- the qhca device ----------------------------------------------------------------

# qhca_port_state: qhca0 port 1's state, as sysfs says it ("4: ACTIVE")
qhca_port_state() {
	cat /sys/class/infiniband/qhca0/ports/1/state 2>/dev/null
}

# qhca_has_ipv4_gid: qhca0 port 1 has an IPv4-mapped GID (::ffff:A.B.C.D)
qhca_has_ipv4_gid() {
	grep -q '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/qhca0/ports/1/gids/* 2>/dev/null
}

# qhca_wait_port WORD SECONDS [gid]: wait until the port's state has WORD
# in it (ACTIVE, DOWN) and, with "gid", the port has an IPv4-mapped GID;
# returns 1 if not after SECONDS
qhca_wait_port() {
	_wp=0
	while [ $_wp -lt $(($2 * 10)) ]; do
		if qhca_port_state | grep -q "$1" &&
			{ [ "${3:-}" != gid ] || qhca_has_ipv4_gid; }; then
			return 0
		fi
		sleep 0.1
		_wp=$((_wp + 1))
	done
	return 1
}
