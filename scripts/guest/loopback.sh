#!/bin/sh
# Loopback checks: verbs programs whose server and
# client run in the same guest and talk through the guest's own RDMA
# device and its own address, as single-device programs and test suites
# do: the verifying workload qhca-verify (every byte and completion of
# RC WRITE, READ, SEND, SEND/WRITE with immediate and atomics checked),
# ibv_rc_pingpong (also waiting in ibv_get_cq_event, -e) and
# ibv_ud_pingpong to the guest's own RoCE v2 GID (-g, the index the pair
# checks use), rping and ib_send_bw -R (rdma_cm) to the guest's own IP.
#
# Sourced at the end of checks-verbs.sh (after pair.sh, with its `check`
# and pair_setup_dev); runs on guests 1 and 2, each on its own, at the
# same time. Every program has a deadline: a hung one is killed (its
# process group) and the check fails; the run goes on.
# shellcheck disable=SC2016,SC2034 # commands are evaluated by the spawned
# shell; OUT and ROLE are read by the VERIFY command (eval)

LB_PORT=18900

# lb_test NAME TIMEOUT READY SRV_CMD CLI_CMD [VERIFY]: run SRV_CMD, wait
# until it is READY (pair_listening: tcp:PORT or cm:PORT), run CLI_CMD;
# both must exit 0 within TIMEOUT seconds and pass VERIFY (evaluated with
# $OUT and $ROLE, as in pair checks) on both outputs.
lb_test() {
	_name=$1 _lto=$2 _lready=$3 _lscmd=$4 _lccmd=$5 _lverify=${6:-}
	SRV=$QHCA_IP
	CLI=$QHCA_IP
	export SRV CLI
	_lw=$PAIR_DIR/loop-$(printf '%s' "$_name" | md5sum | cut -c1-12)
	mkdir -p "$_lw"
	pair_mark_dmesg
	qhca_now >"$PAIR_DIR/spawned"
	pair_spawn "$_lw/server" "$_lscmd"
	_lspid=$PAIR_PID
	_ldl=$(($(qhca_now) + PAIR_READY_TIMEOUT))
	while pair_alive "$_lspid" && ! pair_listening "$_lready" "$_lspid"; do
		if [ "$(qhca_now)" -ge "$_ldl" ]; then
			break
		fi
		sleep 0.3
	done
	if ! pair_alive "$_lspid" || ! pair_listening "$_lready" "$_lspid"; then
		pair_kill "$_lspid"
		wait "$_lspid" 2>/dev/null
		echo "server did not get ready ($_lready) within ${PAIR_READY_TIMEOUT}s: $_lscmd"
		tail -n 10 "$_lw/server"
		return 1
	fi
	pair_spawn "$_lw/client" "$_lccmd"
	_lcpid=$PAIR_PID
	_ldl=$(($(qhca_now) + _lto))
	pair_reap "$_lcpid" "$_ldl"
	_lcrc=$PAIR_RC
	# a client that failed leaves the server waiting: 3 s, then it goes
	[ "$_lcrc" = 0 ] || _ldl=$(($(qhca_now) + 3))
	pair_reap "$_lspid" "$_ldl"
	_lsrc=$PAIR_RC
	_lok=0
	for ROLE in server client; do
		OUT=$_lw/$ROLE
		_rc=$_lsrc
		[ "$ROLE" = client ] && _rc=$_lcrc
		if [ "$_rc" != 0 ]; then
			_why=
			[ "$_rc" = 124 ] && _why=" (hung: killed at its deadline)"
			echo "$ROLE exited $_rc$_why"
			_lok=1
		elif [ -n "$_lverify" ] && ! eval "$_lverify" >"$_lw/verify-$ROLE" 2>&1; then
			echo "$ROLE output failed the verification:"
			cat "$_lw/verify-$ROLE"
			_lok=1
		fi
	done
	if [ "$_lok" != 0 ]; then
		echo "server: $_lscmd"
		echo "client: $_lccmd"
		for ROLE in server client; do
			echo "$ROLE output (last lines):"
			grep -v '^ *$' "$_lw/$ROLE" | tail -n 8
		done
		_k=$(pair_new_dmesg 12)
		[ -n "$_k" ] && { echo "kernel messages meanwhile:"; echo "$_k"; }
	fi
	return $_lok
}

# lcheck NAME TIMEOUT READY SRV_CMD CLI_CMD [VERIFY]: lb_test through `check`
lcheck() {
	L_NAME=$1 L_TO=$2 L_READY=$3 L_SCMD=$4 L_CCMD=$5 L_VERIFY=${6:-}
	check "loopback: $L_NAME" _lcheck_fn $((L_TO + PAIR_READY_TIMEOUT + 30))
}
_lcheck_fn() {
	lb_test "$L_NAME" "$L_TO" "$L_READY" "$L_SCMD" "$L_CCMD" "$L_VERIFY"
}

# lpp TOOL OPTIONS [NAME_EXTRA]: an ibv_*_pingpong to this guest's own GID
lpp() {
	LB_PORT=$((LB_PORT + 1))
	_o="-d $PAIR_DEV -i 1 -g $PAIR_GIDX -p $LB_PORT $2"
	lcheck "$1 $2${3:+ $3} to its own GID" 60 "tcp:$LB_PORT" \
		"$1 $_o" "$1 $_o $QHCA_IP" v_pingpong
}

if [ "$QHCA_ID" = 1 ] || [ "$QHCA_ID" = 2 ]; then
	echo "# loopback: $PAIR_DEV, GID index $PAIR_GIDX, own address $QHCA_IP"
	LB_PORT=$((LB_PORT + 1))
	_o="-d $PAIR_DEV -g $PAIR_GIDX -p $LB_PORT"
	lcheck "qhca-verify -q 4 -n 40 (1 B to 64 KiB, all six operations) to its own GID" \
		120 "tcp:$LB_PORT" "$PAIR_VERIFY $_o" \
		"$PAIR_VERIFY $_o -q 4 -n 40 -S 1,8,1000,4096,65536,r70000 $QHCA_IP" v_verify
	lpp ibv_rc_pingpong "-s 4096 -n 10 -c"
	lpp ibv_rc_pingpong "-s 1048576 -n 4 -c"
	lpp ibv_rc_pingpong "-e -s 4096 -n 10 -c" "(CQ events)"
	lpp ibv_ud_pingpong "-s 1024 -n 10 -c"

	LB_PORT=$((LB_PORT + 1))
	lcheck "rping -C 10 -S 4096 -V to its own IP" 60 "cm:$LB_PORT" \
		"rping -s -a $QHCA_IP -p $LB_PORT -C 10 -S 4096 -V" \
		"rping -c -a $QHCA_IP -p $LB_PORT -C 10 -S 4096 -V -v" \
		"v_rping 10"

	LB_PORT=$((LB_PORT + 1))
	_o="-d $PAIR_DEV -i 1 -F -p $LB_PORT -R -s 65536 -n 20"
	lcheck "ib_send_bw -R -s 65536 -n 20 to its own IP" 60 "cm:$LB_PORT" \
		"ib_send_bw $_o" "ib_send_bw $_o $QHCA_IP" "v_perf 65536"
fi
