#!/bin/sh
# wire-traffic.sh server|client [SERVER_IP]: the traffic of the wire capture
# check (run-wire.sh): ib_send_bw, ib_write_bw, ib_read_bw (16 KiB
# messages: FIRST/MIDDLE/LAST packets at any path MTU up to 4096) and
# ib_atomic_bw with CMP_AND_SWAP and with FETCH_AND_ADD, all five at once,
# each on its own TCP port 18701..18705. Exit 0 if all five exit 0.
#
# At once, not one after the other: the device hands out the lowest free
# QP number, so consecutive programs would reuse one QPN with a new random
# start PSN, which a capture-wide PSN check cannot tell from a PSN jump.
# Concurrent programs have distinct QPNs for the whole capture.
# shellcheck disable=SC2086 # $o is a list of options
ROLE=$1
SRV=${2:-}
D=${PAIR_DEV:-qhca0}
G=${PAIR_GIDX:-1}
W=/tmp/pair/wire
mkdir -p "$W"
o="-d $D -i 1 -F -x $G -n 5"
pids=''
start() {	# start NAME PROGRAM ARGS...
	_n=$1
	shift
	if [ "$ROLE" = server ]; then
		"$@" >"$W/$_n.out" 2>&1 &
	else
		"$@" "$SRV" >"$W/$_n.out" 2>&1 &
	fi
	pids="$pids $_n:$!"
	# the servers start one by one (under TCG five at once starve each other)
	[ "$ROLE" = server ] && sleep 1
}
start send ib_send_bw $o -p 18701 -s 16384
start write ib_write_bw $o -p 18702 -s 16384
start read ib_read_bw $o -p 18703 -s 16384
start cas ib_atomic_bw $o -p 18704 -A CMP_AND_SWAP
start faa ib_atomic_bw $o -p 18705 -A FETCH_AND_ADD
rc=0
for p in $pids; do
	if wait "${p#*:}"; then
		echo "${p%%:*}: ok"
	else
		r=$?
		echo "${p%%:*}: exit $r"
		tail -n 6 "$W/${p%%:*}.out" | sed "s/^/  ${p%%:*}: /"
		rc=1
	fi
done
exit $rc
