#!/bin/sh
# Two-guest verbs tests (POSIX sh: dash). Source it after lib.sh:
#   . /usr/lib/qhca/lib.sh; . /usr/lib/qhca/pair.sh
#
# A "pair check" runs a server program on one guest and a client program on
# another and reports, on both guests, one "ok - NAME" / "not ok - NAME"
# line (through lib.sh's `check` runner). It is
# ok only if both programs exit 0 and the optional verification passes.
#
# Coordination over the IP network (TCP, busybox nc): every guest runs a
# mailbox (nc -ll on port 7300) that appends the one-line messages it gets
# to $PAIR_DIR/mbox. Messages are "FROM_IP TAG WORD ARGS", TAG is derived
# from the check's name (unique in a run), WORD one of:
#   READY        server -> client: the server program listens
#   FAIL RC      server -> client: the server program ended (or hung)
#                before it listened; the client does not run
#   DONE RC      client -> server: the client program ended with RC; on
#                RC != 0 the server program gets 3 s, then is killed
#   EXIT RC      server -> client: the server program ended with RC (if
#                RC != 0 the client program gets 5 s, then is killed)
#   RESULT RC    server -> client: the server program's exit code, once
#                the client's DONE is in
# so a side that fails makes the other side fail within seconds (not at
# its timeout). Readiness (READY): "tcp:PORT[,PORT...]" (a TCP listener in
# netstat), "cm:PORT" (an rdma_cm listener in `rdma res show cm_id`),
# "sleep:SEC".
#
# Every program runs in its own session with a deadline; at the deadline
# its whole process group is killed (rc 124). After two pair checks in a
# row whose own program hung (rc 124 / never ready), this guest skips
# running its programs for the rest of the run (it still answers, with rc
# 125), so a hanging driver does not cost a timeout per check.
#
# The RDMA device: qhca0 if the kernel has it; with qguest.rxe on the
# kernel command line (scripts/launch --rxe) a Soft-RoCE device rxe0 on
# eth0 is made and used. PAIR_DEV and PAIR_GIDX (the RoCE v2 GID index of
# eth0's IPv4-mapped address) are set by pair_setup; commands given to
# pair checks are evaluated on each guest, so they may use $PAIR_DEV,
# $PAIR_GIDX and $SRV (the server's IP).

PAIR_PORT=7300
PAIR_DIR=/tmp/pair
PAIR_MBOX=$PAIR_DIR/mbox
PAIR_DEV=
PAIR_GIDX=
# seconds the server program may take to listen
PAIR_READY_TIMEOUT=${PAIR_READY_TIMEOUT:-40}

# --- device ------------------------------------------------------------------------

# pair_gid_text ADDR: the GID of the address ADDR as sysfs writes it (eight
# groups of four hex digits): an IPv6 address (full or with "::") as it
# is, an IPv4 address as its IPv4-mapped ::ffff:A.B.C.D
pair_gid_text() {
	case $1 in
	*:*) ;;
	*)
		echo "$1" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4 }'
		return ;;
	esac
	case $1 in
	*::*) _l=${1%%::*} _r=${1#*::} ;;
	*) _l=$1 _r= ;;
	esac
	_old=$IFS
	IFS=:
	_nl=0
	_nr=0
	for _x in $_l; do _nl=$((_nl + 1)); done
	for _x in $_r; do _nr=$((_nr + 1)); done
	_out=
	for _x in $_l; do _out="$_out$(printf '%04x' $((0x$_x))):"; done
	_z=$((8 - _nl - _nr))
	while [ $_z -gt 0 ]; do
		_out="${_out}0000:"
		_z=$((_z - 1))
	done
	for _x in $_r; do _out="$_out$(printf '%04x' $((0x$_x))):"; done
	IFS=$_old
	echo "${_out%:}"
}

# pair_gid_index DEV ADDR: the index of DEV port 1's RoCE v2 GID that is
# the IPv4 or IPv6 address ADDR (pair_gid_text)
pair_gid_index() {
	[ -n "$2" ] || return 1
	_want=$(pair_gid_text "$2")
	for _g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		_i=${_g##*/}
		[ "$(cat "$_g" 2>/dev/null)" = "$_want" ] || continue
		case $(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$_i" 2>/dev/null) in
		"RoCE v2") echo "$_i"; return 0 ;;
		esac
	done
	return 1
}

# pair_rxe: make the Soft-RoCE device rxe0 on eth0 (if there is none)
pair_rxe() {
	[ -e /sys/class/infiniband/rxe0 ] && return 0
	modprobe rdma_rxe 2>/dev/null
	qhca_timeout 30 rdma link add rxe0 type rxe netdev "$QHCA_IFACE" || return 1
	_i=0
	while [ $_i -lt 50 ] && ! pair_gid_index rxe0 "$QHCA_IP" >/dev/null; do
		sleep 0.1
		_i=$((_i + 1))
	done
}

pair_setup_dev() {
	if grep -qw qguest.rxe /proc/cmdline; then
		pair_rxe || echo "# pair: making rxe0 on $QHCA_IFACE failed"
		PAIR_DEV=rxe0
	else
		PAIR_DEV=qhca0
	fi
	PAIR_GIDX=$(pair_gid_index "$PAIR_DEV" "$QHCA_IP") || PAIR_GIDX=1
	export PAIR_DEV PAIR_GIDX
}

# --- mailbox ---------------------------------------------------------------------------

pair_start_mailbox() {
	mkdir -p "$PAIR_DIR"
	: >>"$PAIR_MBOX"
	if [ -f "$PAIR_DIR/mbox.pid" ] && kill -0 "$(cat "$PAIR_DIR/mbox.pid")" 2>/dev/null; then
		return 0
	fi
	printf '#!/bin/sh\nexec cat >>%s\n' "$PAIR_MBOX" >"$PAIR_DIR/recv"
	chmod 755 "$PAIR_DIR/recv"
	nc -ll -p "$PAIR_PORT" -e "$PAIR_DIR/recv" </dev/null >/dev/null 2>&1 &
	echo $! >"$PAIR_DIR/mbox.pid"
}

pair_stop_mailbox() {
	[ -f "$PAIR_DIR/mbox.pid" ] && kill "$(cat "$PAIR_DIR/mbox.pid")" 2>/dev/null
	rm -f "$PAIR_DIR/mbox.pid"
}

# pair_send TO_IP TAG WORD [ARGS]: deliver one message (retries for 30 s)
pair_send() {
	_sto=$1
	shift
	_sdl=$(($(qhca_now) + 30))
	while :; do
		echo "$QHCA_IP $*" | nc -w 2 "$_sto" "$PAIR_PORT" >/dev/null 2>&1 && return 0
		if [ "$(qhca_now)" -ge "$_sdl" ]; then
			echo "pair: could not send '$*' to $_sto:$PAIR_PORT for 30 s" >&2
			return 1
		fi
		sleep 0.5
	done
}

# pair_poll FROM_IP TAG WORDS: print ARGS of a message "FROM TAG WORD ARGS"
# (WORDS: an ERE alternative such as "READY|FAIL"), print "WORD ARGS"
pair_poll() {
	_re="^$(echo "$1" | sed 's/\./\\./g') $2 ($3)( |\$)"
	_l=$(grep -E "$_re" "$PAIR_MBOX" | head -n 1)
	[ -n "$_l" ] || return 1
	echo "${_l#* * }"
}

# pair_wait FROM_IP TAG WORDS TIMEOUT: pair_poll until it answers
pair_wait() {
	_wdl=$(($(qhca_now) + $4))
	while ! pair_poll "$1" "$2" "$3"; do
		[ "$(qhca_now)" -ge "$_wdl" ] && return 1
		sleep 0.3
	done
	return 0
}

# --- programs ------------------------------------------------------------------------------

pair_alive() {	# pair_alive PID: running (not a zombie)
	[ -r "/proc/$1/stat" ] || return 1
	case $(cut -d')' -f2 "/proc/$1/stat" 2>/dev/null) in
	" Z"*|"") return 1 ;;
	esac
	return 0
}

# pair_spawn OUTFILE CMD: run the shell command CMD in its own session;
# sets PAIR_PID (also its process group)
pair_spawn() {
	setsid /usr/bin/dash -c "$2" </dev/null >"$1" 2>&1 &
	PAIR_PID=$!
}

# pair_kill PID: end its process group (TERM, then KILL)
pair_kill() {
	kill -s TERM -- "-$1" 2>/dev/null
	_k=0
	while pair_alive "$1" && [ $_k -lt 10 ]; do
		sleep 0.3
		_k=$((_k + 1))
	done
	kill -s KILL -- "-$1" 2>/dev/null
}

# pair_reap PID DEADLINE: wait for PID until DEADLINE (qhca_now seconds);
# kill it then. Sets PAIR_RC (124 if it was killed).
pair_reap() {
	while pair_alive "$1"; do
		if [ "$(qhca_now)" -ge "$2" ]; then
			pair_kill "$1"
			wait "$1" 2>/dev/null
			PAIR_RC=124
			return
		fi
		sleep 0.3
	done
	wait "$1"
	PAIR_RC=$?
}

# pair_listening READY PID: is the server listening yet?
pair_listening() {
	case $1 in
	tcp:*)
		for _p in $(echo "${1#tcp:}" | tr ',' ' '); do
			netstat -ltn 2>/dev/null | grep -q "[.:]${_p}[[:space:]].*LISTEN" || return 1
		done
		return 0 ;;
	cm:*)
		qhca_timeout 10 rdma res show cm_id 2>/dev/null |
			grep -q "state LISTEN .*:${1#cm:}\\( \\|\$\\)" ;;
	sleep:*)
		[ ! -f "$PAIR_DIR/spawned" ] && return 1
		[ $(($(qhca_now) - $(cat "$PAIR_DIR/spawned"))) -ge "${1#sleep:}" ] ;;
	*) echo "pair: bad readiness '$1'" >&2; return 1 ;;
	esac
}

# pair_new_dmesg N: the last N kernel messages since pair_mark_dmesg
# (but audit lines)
pair_mark_dmesg() {
	qhca_dmesg_lines >"$PAIR_DIR/dmesg.mark"
}
pair_new_dmesg() {
	_m=$(cat "$PAIR_DIR/dmesg.mark" 2>/dev/null || echo 0)
	qhca_dmesg_after "$_m" | grep -v 'audit' | tail -n "$1"
}

pair_gate_hang() {	# count programs of ours that hung; 2 in a row close the gate
	_h=$(cat "$PAIR_DIR/hangs" 2>/dev/null || echo 0)
	echo $((_h + 1)) >"$PAIR_DIR/hangs"
}
pair_gate_ok() { echo 0 >"$PAIR_DIR/hangs"; }
pair_gated() { [ "$(cat "$PAIR_DIR/hangs" 2>/dev/null || echo 0)" -ge 2 ]; }

# --- the pair check ----------------------------------------------------------------------

# pair_test NAME SRV_ID CLI_ID TIMEOUT READY SRV_CMD CLI_CMD [VERIFY]
# Run on both guests (SRV_ID's and CLI_ID's; others return 0 at once).
# TIMEOUT: seconds each program may run. VERIFY: a shell command evaluated
# on each side after its program exited 0, with $OUT (the program's
# output file) and $ROLE (server|client); it prints why and fails.
# Prints the program's output (tail) and the kernel's new messages on failure.
pair_test() {
	if pair_test_once "$@"; then
		return 0
	fi
	case "$MY_WHY|$PEER_WHY" in
	*"$PAIR_FLAKE"*) ;;
	*) return 1 ;;
	esac
	# A known crash of the tools, not of qhca: once more, and say so.
	echo "--- first try failed with a known tool crash; trying again:"
	if pair_test_once "$1 (second try)" "$2" "$3" "$4" "$5" "$6" "$7" "${8:-}"; then
		pair_note "$1: passed on the second try; the first: $PAIR_FLAKE"
		return 0
	fi
	return 1
}

# Known tool flake: perftest clients with -R (rdma_cm) now and then die of
# a general protection fault inside librdmacm (rdma_resolve_addr on a bad
# cm_id, librdmacm.so.1.3.56.1 offset 0xa6df; seen with rxe and with qhca).
PAIR_FLAKE="tool crash: general protection fault in librdmacm"
pair_flaked() {	# the kernel logged a fault in librdmacm since pair_mark_dmesg
	pair_new_dmesg 40 | grep -q 'traps: .*librdmacm\|segfault at .*librdmacm'
}

pair_test_once() {
	_name=$1 _srv=$2 _cli=$3 _to=$4 _ready=$5 _scmd=$6 _ccmd=$7 _verify=${8:-}
	SRV=$(pair_ip "$_srv")
	CLI=$(pair_ip "$_cli")
	export SRV CLI
	_tag=$(printf '%s' "$_name" | md5sum | cut -c1-12)
	_w=$PAIR_DIR/$_tag
	mkdir -p "$_w"
	OUT=$_w/out
	pair_mark_dmesg
	if [ "$QHCA_ID" = "$_srv" ]; then
		ROLE=server
		pair_server "$_to" "$_ready" "$_scmd"
	elif [ "$QHCA_ID" = "$_cli" ]; then
		ROLE=client
		pair_client "$_to" "$_ccmd"
	else
		return 0
	fi
	_ok=0
	[ "$MY_RC" = 0 ] || _ok=1
	[ "$PEER_RC" = 0 ] || _ok=1
	if [ "$_ok" != 0 ]; then
		echo "$ROLE (this guest, $QHCA_IP): exit $MY_RC${MY_WHY:+ ($MY_WHY)}; $PEER_ROLE ($PEER): ${PEER_RC:-no answer}${PEER_WHY:+ ($PEER_WHY)}"
		[ -s "$_w/verify" ] && sed 's/^/verify: /' "$_w/verify"
		echo "command: $MY_CMD"
		if [ -s "$OUT" ]; then
			# stderr is unbuffered: error messages may come before the rest
			_e=$(grep -Ei "$PAIR_ERR_RE" "$OUT" | head -n 8)
			[ -n "$_e" ] && { echo "its error lines:"; echo "$_e"; }
			echo "its output (last lines):"
			grep -v '^ *$' "$OUT" | grep -v '^ *[A-Za-z][A-Za-z /.*-]* *: [^ ].*' | tail -n 10
		fi
		_k=$(pair_new_dmesg 12)
		[ -n "$_k" ] && { echo "kernel messages meanwhile:"; echo "$_k"; }
	fi
	return $_ok
}

pair_ip() { echo "${QHCA_IP%.*}.$1"; }

# --- two guests, two devices ------------------------------------------------------------------

# pair_peer_devs: tell the peer (the other guest of two) which RDMA device
# this guest uses and learn the peer's; sets D1 and D2, guest 1's and
# guest 2's ("?" for the peer's if it did not say within 120 s)
pair_peer_devs() {
	pair_send "$QHCA_PEER_IP" devname DEV "$PAIR_DEV"
	PEER_DEV=$(pair_wait "$QHCA_PEER_IP" devname DEV 120 | cut -d' ' -f2)
	if [ "$QHCA_ID" = 1 ]; then D1=$PAIR_DEV D2=${PEER_DEV:-?}; else D1=${PEER_DEV:-?} D2=$PAIR_DEV; fi
}

# pair_both FN: FN S C twice, guest 1 serving guest 2 (S=1 C=2), then
# guest 2 serving guest 1, with SRV_DEV and CLI_DEV the server's and the
# client's device (pair_peer_devs first)
# shellcheck disable=SC2034 # SRV_DEV, CLI_DEV: read by FN
pair_both() {
	SRV_DEV=$D1 CLI_DEV=$D2
	"$1" 1 2
	SRV_DEV=$D2 CLI_DEV=$D1
	"$1" 2 1
}

# pair_verify: VERIFY on this side's output (exit 0 programs only); on a
# failure MY_RC becomes 98, so that the peer fails the check too
pair_verify() {
	[ "$MY_RC" = 0 ] && [ -n "$_verify" ] || return 0
	eval "$_verify" >"$_w/verify" 2>&1 && return 0
	MY_RC=98 MY_WHY="its output failed the verification"
}

# lines of a program's output that say what went wrong
PAIR_ERR_RE="error|fail|couldn't|could not|unable|invalid|not supported|mismatch|unexpected|timeout|timed out|refused|denied|wrong|illegal|segmentation|abort|should be"

pair_server() {	# sets MY_RC MY_WHY PEER_RC PEER_WHY PEER PEER_ROLE MY_CMD
	_to=$1 _ready=$2 MY_CMD=$3
	PEER=$CLI PEER_ROLE=client MY_WHY='' PEER_WHY='' PEER_RC=''
	if pair_gated; then
		MY_RC=125 MY_WHY="skipped: earlier programs on this guest hung"
		pair_send "$PEER" "$_tag" FAIL 125
		pair_wait "$PEER" "$_tag" DONE 30 >/dev/null
		PEER_RC=$(pair_poll "$PEER" "$_tag" DONE | cut -d' ' -f2)
		return
	fi
	qhca_now >"$PAIR_DIR/spawned"
	pair_spawn "$OUT" "$MY_CMD"
	_pid=$PAIR_PID
	_dl=$(($(qhca_now) + PAIR_READY_TIMEOUT))
	_state='wait'
	while [ $_state = wait ]; do
		if ! pair_alive "$_pid"; then
			_state=exited
		elif pair_listening "$_ready" "$_pid"; then
			_state=ready
		elif [ "$(qhca_now)" -ge "$_dl" ]; then
			_state=hung
		else
			sleep 0.3
		fi
	done
	case $_state in
	exited)
		wait "$_pid"
		MY_RC=$?
		MY_WHY="ended before it listened"
		pair_send "$PEER" "$_tag" FAIL "$MY_RC"
		;;
	hung)
		pair_kill "$_pid"
		wait "$_pid" 2>/dev/null
		MY_RC=124 MY_WHY="not listening after ${PAIR_READY_TIMEOUT}s (killed)"
		pair_gate_hang
		pair_send "$PEER" "$_tag" FAIL 124
		;;
	ready)
		pair_send "$PEER" "$_tag" READY
		_dl=$(($(qhca_now) + _to))
		_grace=''
		while pair_alive "$_pid"; do
			if [ -z "$_grace" ] && _d=$(pair_poll "$PEER" "$_tag" DONE); then
				_c=$(echo "$_d" | cut -d' ' -f2)
				# the client failed: the server may wait for it forever
				[ "$_c" != 0 ] && _grace=$(($(qhca_now) + 3)) && _dl=$_grace
			fi
			[ "$(qhca_now)" -ge "$_dl" ] && break
			sleep 0.3
		done
		pair_reap "$_pid" "$_dl"
		MY_RC=$PAIR_RC
		[ "$MY_RC" != 0 ] && pair_flaked && MY_WHY=$PAIR_FLAKE
		# a client still waiting for a dead server stops within seconds
		[ -n "$_grace" ] || pair_send "$PEER" "$_tag" EXIT "$MY_RC"
		if [ "$MY_RC" = 124 ] && [ -z "$MY_WHY" ]; then
			if [ -n "$_grace" ]; then
				MY_WHY="killed after the client failed"
			else
				MY_WHY="timed out after ${_to}s"
				pair_gate_hang
			fi
		else
			pair_gate_ok
		fi
		pair_verify
		;;
	esac
	[ -n "$PEER_RC" ] || if pair_wait "$PEER" "$_tag" DONE 30 >/dev/null; then
		PEER_RC=$(pair_poll "$PEER" "$_tag" DONE | cut -d' ' -f2)
	fi
	PEER_WHY=$(pair_poll "$PEER" "$_tag" DONE | cut -d' ' -f3-)
	pair_send "$PEER" "$_tag" RESULT "$MY_RC" "$MY_WHY"
}

# client output that means "nobody listens (yet)": worth another try
PAIR_CONNECT_ERR="Couldn't connect to|Unable to init the socket connection|Connection refused|RDMA_CM_EVENT_REJECTED|Unexpected CM event|rdma_connect"

pair_client() {
	_to=$1 MY_CMD=$2
	PEER=$SRV PEER_ROLE=server MY_WHY='' PEER_WHY='' PEER_RC=''
	if ! _m=$(pair_wait "$PEER" "$_tag" "READY|FAIL" $((PAIR_READY_TIMEOUT + 40))); then
		MY_RC=125 MY_WHY="server never said READY"
		pair_send "$PEER" "$_tag" DONE 125 "$MY_WHY"
		return
	fi
	case $_m in
	FAIL*)
		MY_RC=125 MY_WHY="not run: the server failed"
		PEER_RC=$(echo "$_m" | cut -d' ' -f2)
		PEER_WHY="server program failed before it listened"
		pair_send "$PEER" "$_tag" DONE 125 "not run"
		return ;;
	esac
	if pair_gated; then
		MY_RC=125 MY_WHY="skipped: earlier programs on this guest hung"
	else
		_dl=$(($(qhca_now) + _to))
		_try=1
		_sx='' _fl=''
		while :; do
			_t0=$(qhca_now)
			pair_spawn "$OUT" "$MY_CMD"
			_pid=$PAIR_PID
			_kdl=$_dl
			while pair_alive "$_pid"; do
				if [ -z "$_sx" ] && _x=$(pair_poll "$PEER" "$_tag" EXIT); then
					_sx=$(echo "$_x" | cut -d' ' -f2)
					# the server's program failed: give ours 5 s
					[ "$_sx" != 0 ] && _kdl=$(($(qhca_now) + 5))
				fi
				# a crashed tool may leave the program hanging: end it soon
				[ -z "$_fl" ] && pair_flaked && _fl=1 && _kdl=$(($(qhca_now) + 2))
				[ "$(qhca_now)" -ge "$_kdl" ] && break
				sleep 0.3
			done
			pair_reap "$_pid" "$_kdl"
			MY_RC=$PAIR_RC
			# refused at once: the listener was not quite there; try again
			if [ "$MY_RC" != 0 ] && [ "$MY_RC" != 124 ] && [ $_try -lt 4 ] &&
				[ $(($(qhca_now) - _t0)) -le 5 ] &&
				grep -Eq "$PAIR_CONNECT_ERR" "$OUT" &&
				! pair_poll "$PEER" "$_tag" EXIT >/dev/null; then
				cp "$OUT" "$OUT.try$_try"
				_try=$((_try + 1))
				sleep 1
				continue
			fi
			break
		done
		[ $_try -gt 1 ] && MY_WHY="try $_try"
		if [ "$MY_RC" != 0 ] && pair_flaked; then
			MY_WHY=$PAIR_FLAKE
		elif [ "$MY_RC" = 124 ] && [ -n "$_sx" ] && [ "$_sx" != 0 ]; then
			MY_WHY="killed 5 s after the server's program failed"
		elif [ "$MY_RC" = 124 ]; then
			MY_WHY="timed out after ${_to}s"
			pair_gate_hang
		else
			pair_gate_ok
		fi
		pair_verify
	fi
	pair_send "$PEER" "$_tag" DONE "$MY_RC" "$MY_WHY"
	if _r=$(pair_wait "$PEER" "$_tag" RESULT 40); then
		PEER_RC=$(echo "$_r" | cut -d' ' -f2)
		PEER_WHY=$(echo "$_r" | cut -d' ' -f3-)
	fi
}

# pcheck NAME SRV_ID CLI_ID TIMEOUT READY SRV_CMD CLI_CMD [VERIFY]: a pair
# check through `check` (on the two guests involved; nothing elsewhere)
pcheck() {
	P_NAME=$1 P_SRV=$2 P_CLI=$3 P_TO=$4 P_READY=$5 P_SCMD=$6 P_CCMD=$7 P_VERIFY=${8:-}
	[ "$QHCA_ID" = "$P_SRV" ] || [ "$QHCA_ID" = "$P_CLI" ] || return 0
	check "$P_NAME" _pcheck_fn $((P_TO + PAIR_READY_TIMEOUT + 120))
}
_pcheck_fn() {
	_t0=$(qhca_now)
	pair_test "$P_NAME" "$P_SRV" "$P_CLI" "$P_TO" "$P_READY" "$P_SCMD" "$P_CCMD" "$P_VERIFY"
	_prc=$?
	echo "$(($(qhca_now) - _t0))s $P_NAME" >>"$PAIR_DIR/times"
	return $_prc
}

# --- verifications (for VERIFY) -----------------------------------------------------------------

# v_pingpong: ibv_*_pingpong finished its iterations, no invalid data
v_pingpong() {
	grep -q 'iters in .* usec/iter' "$OUT" || { echo "no 'N iters in ... usec/iter' line"; return 1; }
	grep -i 'invalid data' "$OUT" && return 1
	[ "$ROLE" = client ] &&
		pair_note "$_name: $(grep -E 'bytes in|iters in' "$OUT" | tr '\n' ';' | sed 's/;$//; s/;/; /')"
	return 0
}

# v_place: qhca-place passed all its checks on this side
v_place() {
	grep -q '^place: all ok' "$OUT" && return 0
	grep '^not ok' "$OUT" | head -5
	return 1
}

# --- qhca-verify: the verifying workload ------------------------------------------------------

# The ibv_*_pingpong examples' -c compares one byte of each 4 KiB page
# and rping -V only what rping itself carries, so the data checks of the
# guest scripts are qhca-verify's (guest-driver/tools/qhca-verify.c): RC
# WRITE (read back), READ, SEND with and without immediate, WRITE with
# immediate and atomics over many QPs, every byte and every completion
# compared. It is in the image (/usr/lib/qhca/qhca-verify); a copy the
# launcher added (--add build/guest-driver/qhca-verify) is taken first.
if [ -x /qhca/qhca-verify ]; then
	PAIR_VERIFY=/qhca/qhca-verify
else
	PAIR_VERIFY=/usr/lib/qhca/qhca-verify
fi
export PAIR_VERIFY

# vcheck NAME SRV_ID CLI_ID TIMEOUT PORT GIDX OPTIONS: a qhca-verify pair
# check on TCP port PORT with the client's OPTIONS; GIDX is evaluated on
# each guest (e.g. '$PAIR_GIDX'); both sides must end "verify: all ok"
vcheck() {
	pcheck "$1" "$2" "$3" "$4" "tcp:$5" \
		"\$PAIR_VERIFY -d \$PAIR_DEV -g $6 -p $5" \
		"\$PAIR_VERIFY -d \$PAIR_DEV -g $6 -p $5 $7 \$SRV" v_verify
}

# v_verify: qhca-verify (guest-driver/tools/qhca-verify.c) ended with
# "verify: all ok" on this side; the client's figures are noted
v_verify() {
	_v=$(grep '^verify: ' "$OUT" | tail -n 1)
	case $_v in
	"verify: all ok "*) ;;
	*)
		grep '^not ok\|^# error' "$OUT" | head -n 8
		echo "${_v:-no 'verify:' line}"
		return 1 ;;
	esac
	[ "$ROLE" = client ] && pair_note "$_name: ${_v#verify: all ok }"
	return 0
}

# v_rping COUNT: the rping client printed COUNT validated pings (-v)
v_rping() {
	[ "$ROLE" = server ] && return 0
	_n=$(grep -c '^ping data: ' "$OUT")
	[ "$_n" -ge "$1" ] && return 0
	echo "$_n 'ping data' lines, want $1"
	return 1
}

# v_perf SIZE: the perftest result table has a row for SIZE bytes (on the
# side that prints it: the client, and both sides for send tests)
v_perf() {
	_row=$(awk -v s="$1" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= 5' "$OUT")
	if [ -z "$_row" ]; then
		if [ "$ROLE" = server ] && ! grep -q '#bytes' "$OUT"; then
			return 0	# passive side of WRITE/READ/atomic: no table
		fi
		echo "no result row for $1 bytes"
		return 1
	fi
	pair_note "$_name: $ROLE: $(echo "$_row" | tr -s ' \t' ' ')"
	return 0
}

# pair_note TEXT: remember a result line (pair_notes prints them as "# ")
pair_note() {
	echo "$*" >>"$PAIR_DIR/notes"
}
pair_notes() {
	[ -f "$PAIR_DIR/notes" ] && sed 's/^/# result: /' "$PAIR_DIR/notes"
	[ -f "$PAIR_DIR/times" ] && sed 's/^/# time: /' "$PAIR_DIR/times"
	rm -f "$PAIR_DIR/notes" "$PAIR_DIR/times"
}
