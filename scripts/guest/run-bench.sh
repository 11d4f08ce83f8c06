#!/bin/sh
# Run script of scripts/bench: perftest bandwidth and latency between guest
# 1 (server) and guest 2 (client) for a few sizes; each result row is printed
# as "# result: NAME: client: BYTES ITERS ..." (perftest's own columns).
# BENCH_SIZES / BENCH_ITERS / BENCH_TESTS come from the kernel command line
# (qbench.sizes=1,4096,... qbench.iters=N qbench.tests=ib_write_bw,...).
. /usr/lib/qhca/lib.sh
_rd=/usr/lib/qhca
[ -f /qhca/pair.sh ] && _rd=/qhca
# shellcheck source=scripts/guest/pair.sh
. "$_rd/pair.sh"
echo "# guest $QHCA_ID ($QHCA_ROLE) $QHCA_IP, peers ${QHCA_PEERS:-none}"
pair_setup_dev
pair_start_mailbox
echo "# bench: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
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
echo "# checks done: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
