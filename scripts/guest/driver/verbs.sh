#!/bin/sh
# User verbs programs between two guests, run inside both (scripts/launch
# -n 2): the ibverbs-utils pingpongs (RC, RC with completion events, RC
# with 4 MiB messages checked byte for byte: a 1024-page MR with a
# two-level page list, UD, SRQ) and perftest (send, RDMA WRITE through the
# RDMA CM, READ, atomics).  Guest 1 is the server, guest 2 the client.
#
# Prints "ok - NAME" / "not ok - NAME" per program; exits 1 if any failed.
. /usr/lib/qhca/lib.sh

OUT=/tmp/verbs.$$
mkdir -p "$OUT"
BEFORE=$(qhca_dmesg_lines)
GID=$(for g in /sys/class/infiniband/qhca0/ports/1/gids/*; do
	grep -q '0000:0000:0000:0000:0000:ffff' "$g" && basename "$g" && break
done)

# pair NAME BARRIER-PORT CMD...: the server runs CMD, the client CMD PEER
pair() {
	_name=$1 _port=$2
	shift 2
	if ! qhca_barrier "$_port" 120; then
		not_ok "$_name" "the peer did not reach barrier $_port"
		return
	fi
	if [ "$QHCA_ROLE" = server ]; then
		qhca_timeout 180 "$@" >"$OUT/out" 2>&1
	else
		sleep 3	# the server listens first
		qhca_timeout 180 "$@" "$QHCA_PEER_IP" >"$OUT/out" 2>&1
	fi
	_rc=$?
	if [ $_rc -eq 0 ]; then
		ok "$_name ($QHCA_ROLE): $(grep -m1 -E 'iters in|^ [0-9]+ +[0-9]+ ' "$OUT/out" | tr -s ' ')"
	else
		not_ok "$_name ($QHCA_ROLE)" "exit $_rc" "$(tail -n 6 "$OUT/out")"
	fi
}

pair "ibv_rc_pingpong" 7151 ibv_rc_pingpong -d qhca0 -g "$GID" -n 200
pair "ibv_rc_pingpong -e (completion events)" 7152 \
	ibv_rc_pingpong -d qhca0 -g "$GID" -n 100 -e
pair "ibv_rc_pingpong 4 MiB checked (two-level MR)" 7153 \
	ibv_rc_pingpong -d qhca0 -g "$GID" -n 4 -s 4194304 -m 1024 -c
pair "ibv_ud_pingpong" 7154 ibv_ud_pingpong -d qhca0 -g "$GID" -n 200 -s 1024
pair "ibv_srq_pingpong" 7155 ibv_srq_pingpong -d qhca0 -g "$GID" -n 100 -q 4
pair "ib_send_bw" 7156 ib_send_bw -d qhca0 -x "$GID" -n 200 -s 4096
pair "ib_write_bw -R" 7157 ib_write_bw -d qhca0 -R -n 200 -s 65536
pair "ib_read_lat" 7158 ib_read_lat -d qhca0 -x "$GID" -n 100
pair "ib_atomic_bw" 7159 ib_atomic_bw -d qhca0 -x "$GID" -n 100

BAD='WARNING:|BUG:|Oops|Call Trace|refcount_t:|general protection|qhca.*(dead|timed out|error)'
qhca_dmesg_since "$BEFORE" "$BAD" "no kernel warnings"
rm -rf "$OUT"
[ "$FAILED" -eq 0 ]
