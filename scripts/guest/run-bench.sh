#!/bin/sh
# Run script of scripts/bench: perftest bandwidth and latency between guest
# pairs (1 server, 2 client; 3 and 4; ...); each result row is printed as
# "# result: NAME: client: BYTES ITERS ..." (perftest's own columns).
#
# With /qhca/bench.plan (scripts/bench puts it there), the plan says what
# runs, one case a line, in order:
#   TAG perf TEST SIZE QPS ITERS [ARGS]
#                                  perftest TEST -s SIZE -q QPS -n ITERS
#                                  (ITERS "-": no -n) [more perftest ARGS]
#                                  on every pair at once (a barrier first
#                                  when there is more than one pair)
#   TAG qperf TEST SIZE            qperf TEST (tcp_bw, tcp_lat) -m SIZE from
#                                  each client to its server over eth0
# Around each case every guest prints, live on its console,
#   QHCA-BENCH-BEGIN TAG / QHCA-BENCH-END TAG
# (scripts/bench samples the QEMU processes' CPU time there) and
#   # cpu: TAG: USER NICE SYSTEM IDLE IOWAIT IRQ SOFTIRQ STEAL
# the guest's own /proc/stat "cpu" jiffies spent during the case.
#
# Without a plan: BENCH_SIZES / BENCH_ITERS / BENCH_TESTS come from the
# kernel command line (qbench.sizes=1,4096,... qbench.iters=N
# qbench.tests=ib_write_bw,...), as before.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# bench: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
echo "# bench: $PAIR_DEV $(ibv_devinfo -d "$PAIR_DEV" 2>/dev/null | grep -E 'active_mtu' | tr -s ' \t' ' ')"
echo "# bench: eth0 mtu $(cat /sys/class/net/eth0/mtu 2>/dev/null)"

# bench_barrier TAG: every guest of the run gets here before any goes on.
# Through the pair mailboxes (nc -ll: every connection is taken), not
# qhca_barrier, whose one-shot listeners can lose a connection that comes
# while the previous one is being answered (seen with four guests).
bench_barrier() {
	for _bp in $QHCA_PEERS; do
		pair_send "$_bp" "bar-$1" BAR || return 1
	done
	for _bp in $QHCA_PEERS; do
		pair_wait "$_bp" "bar-$1" BAR 600 >/dev/null || return 1
	done
}

cpu_stat() {	# the "cpu" line of /proc/stat, without its name
	read -r _c _l </proc/stat
	echo "$_l"
}
cpu_delta() {	# cpu_delta BEFORE AFTER: the first 8 fields, after - before
	echo "$1 $2" | awk '{ for (i = 1; i <= 8; i++) printf "%s%d", (i > 1 ? " " : ""), $(i + 10) - $i; print "" }'
}

if [ -f /qhca/bench.plan ]; then
	# my pair: servers are the odd guests, each with the next one as client
	if [ $((QHCA_ID % 2)) = 1 ]; then MYSRV=$QHCA_ID; else MYSRV=$((QHCA_ID - 1)); fi
	MYCLI=$((MYSRV + 1))
	NPAIRS=$((QHCA_N / 2))
	if [ "$MYCLI" -gt "$QHCA_N" ]; then
		echo "# guest $QHCA_ID has no partner: idle"
		MYSRV=0 MYCLI=0
	fi
	if [ "$QHCA_ID" = "$MYSRV" ] && grep -q ' qperf ' /qhca/bench.plan; then
		setsid qperf </dev/null >/tmp/qperf-server.out 2>&1 &
		QPERF_PID=$!
	fi
	port=19000
	while read -r tag kind a b c d e <&3; do
		case $tag in ''|'#'*) continue ;; esac
		port=$((port + 1))
		if [ "$NPAIRS" -gt 1 ]; then
			bench_barrier "$tag" || echo "# barrier before $tag failed"
		fi
		echo "QHCA-BENCH-BEGIN $tag"
		c0=$(cpu_stat)
		case $kind in
		perf)
			o="-d \$PAIR_DEV -i 1 -F -x \$PAIR_GIDX -p $port -s $b"
			[ "$d" != - ] && o="$o -n $d"
			[ "$c" -gt 1 ] && o="$o -q $c"
			[ -n "$e" ] && o="$o $e"
			[ "$MYSRV" != 0 ] &&
				pcheck "$tag" "$MYSRV" "$MYCLI" 600 "tcp:$port" "$a $o" "$a $o \$SRV" "v_perf $b"
			;;
		qperf)
			if [ "$QHCA_ID" = "$MYCLI" ]; then
				SRV=$(pair_ip "$MYSRV")
				qo=$(qhca_timeout 120 qperf "$SRV" -t 3 -m "$b" "$a" 2>&1)
				v=$(echo "$qo" | awk '$2 == "=" { print $3, $4; exit }')
				if [ -n "$v" ]; then
					ok "$tag"
					pair_note "$tag: client: qperf $a $b $v"
				else
					not_ok "$tag" "$(echo "$qo" | tail -n 5)"
				fi
			fi
			;;
		*) echo "# unknown plan line: $tag $kind" ;;
		esac
		echo "# cpu: $tag: $(cpu_delta "$c0" "$(cpu_stat)")"
		echo "QHCA-BENCH-END $tag"
		pair_notes
	done 3</qhca/bench.plan
	# servers keep their qperf until every client is through
	[ "$QHCA_N" -gt 1 ] && { bench_barrier end || echo "# end barrier failed"; }
	[ -n "${QPERF_PID:-}" ] && kill "$QPERF_PID" 2>/dev/null
	pair_stop_mailbox
	checks_done
	exit
fi

SIZES="2 64 4096 65536 1048576"
ITERS=200
TESTS="ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat"
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case $arg in
	qbench.sizes=*) SIZES=$(echo "${arg#*=}" | tr ',' ' ') ;;
	qbench.iters=*) ITERS=${arg#*=} ;;
	qbench.tests=*) TESTS=$(echo "${arg#*=}" | tr ',' ' ') ;;
	esac
done
port=19000
for t in $TESTS; do
	for s in $SIZES; do
		port=$((port + 1))
		o="-d \$PAIR_DEV -i 1 -F -x \$PAIR_GIDX -p $port -n $ITERS -s $s"
		pcheck "$t -s $s -n $ITERS" 1 2 300 "tcp:$port" "$t $o" "$t $o \$SRV" "v_perf $s"
	done
done
pair_notes
pair_stop_mailbox
checks_done
