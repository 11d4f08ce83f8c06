#!/bin/sh
# Helpers of the apps run scripts (run-nvme.sh, run-nfs.sh, run-mpi.sh:
# real RDMA consumers on qhca, docs/consumers.md). POSIX sh (dash). The
# host adds this file, pair.sh and the run script to /qhca/
# (scripts/test.d/apps); source it:
#   . /qhca/apps-lib.sh
#
# Guest 1 is the server (NVMe target, NFS server, mpirun), guest 2 the
# client. The two talk through pair.sh's mailboxes (TCP over eth0):
# apps_send WORD [ARGS] / apps_wait WORD SEC. Every check prints one
# "ok - NAME" or "not ok - NAME" line with "# " diagnostics under a
# failure, and every program runs with a deadline (apps_run), so a hang
# fails a check instead of the run.
. /usr/lib/qhca/lib.sh
qhca_pair_load

APPS_DIR=/tmp/apps
mkdir -p "$APPS_DIR"

apps_note() { echo "# $*"; }

# The run script, sourced again (with APPS_FN_ONLY=1: its functions only)
# by the shells that apps_run starts, so that commands may call them.
APPS_SELF=${APPS_SELF:-$0}

# apps_run LOG SEC CMD: run the shell command CMD in its own session (a new
# dash that has the run script's functions), output in LOG; at SEC seconds
# its whole process group is killed. Sets RC (124 if it was killed) and
# returns it.
apps_run() {
	pair_spawn "$1" "APPS_FN_ONLY=1; . $APPS_SELF; $3"
	pair_reap "$PAIR_PID" $(($(qhca_now) + $2))
	RC=$PAIR_RC
	return "$RC"
}

# apps_check NAME SEC CMD [VERIFY]: apps_run CMD; ok if it exits 0 and
# VERIFY (a shell command evaluated with $OUT, the output file) passes.
apps_check() {
	OUT=$APPS_DIR/$(echo "$1" | tr -c 'A-Za-z0-9.\n-' '_').log
	pair_mark_dmesg
	apps_run "$OUT" "$2" "$3"
	_why=
	if [ "$RC" != 0 ]; then
		_why="exit $RC$([ "$RC" = 124 ] && echo " (killed after $2 s)")"
	elif [ -n "${4:-}" ] && ! _v=$(eval "$4" 2>&1); then
		_why="verification failed: $_v"
	fi
	if [ -z "$_why" ]; then
		ok "$1"
		return 0
	fi
	not_ok "$1" "$_why" "command: $3" "output (last lines):" \
		"$(grep -v '^ *$' "$OUT" | tail -n 15)" \
		"kernel messages meanwhile:" "$(pair_new_dmesg 15)"
	return 1
}

# the peer (the other guest of two)
APPS_PEER=$QHCA_PEER_IP
APPS_SRV=$(pair_ip 1)
APPS_CLI=$(pair_ip 2)

apps_send() {	# apps_send WORD [ARGS]: a message to the peer
	pair_send "$APPS_PEER" apps "$@"
}

# apps_wait WORDS SEC: wait for a message WORD (ERE alternatives) from the
# peer; prints "WORD ARGS". Returns 1 after SEC seconds.
apps_wait() {
	pair_wait "$APPS_PEER" apps "$1" "$2"
}

# apps_start: the mailbox, the RDMA device (qhca0, or rxe0 with
# qguest.rxe), and /etc/hosts names for both guests
apps_start() {
	qhca_pair_start --mailbox --dev
	grep -q ' guest1$' /etc/hosts || printf '%s\tguest1\n%s\tguest2\n' "$APPS_SRV" "$APPS_CLI" >>/etc/hosts
	echo "# guest $QHCA_ID ($QHCA_ROLE) $QHCA_IP, peer $APPS_PEER, device $PAIR_DEV (GID index $PAIR_GIDX)"
	if [ ! -e "/sys/class/infiniband/$PAIR_DEV" ]; then
		not_ok "RDMA device $PAIR_DEV present" "$(ls /sys/class/infiniband 2>&1)"
	fi
}

apps_done() {
	pair_stop_mailbox
	checks_done
}

# apps_cm_ids: lines of `rdma res show cm_id` (kernel and user rdma_cm ids)
apps_cm_ids() {
	qhca_timeout 10 rdma res show cm_id 2>/dev/null | grep -v '^ *$' || true
}

# lib.sh's `check` runs pair.sh's pair checks (pcheck); after each, the
# notes they left (pair_note)
QHCA_CHECK_DIR=$APPS_DIR/check
QHCA_AFTER_CHECK=pair_notes
