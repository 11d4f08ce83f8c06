#!/bin/sh
# Run script for `scripts/bench --tests nvme-fio` (scripts/lib/qhca_apps_bench.py):
# fio over NVMe/RDMA between two guests. Guest 1 is the target of
# run-nvme.sh (memory-backed null_blk through nvmet on rdma :4420), guest 2
# connects and runs each case (apps.bench_cases= on the kernel command
# line: NAME:RW:BS, comma-separated) for apps.bench_seconds= seconds,
# apps.bench_runs= times, iodepth 32, one job, libaio, O_DIRECT, and prints
#   fio-result NAME RUN KIB_PER_S IOPS
# per case and run (the read or the write side of fio's terse output).
_fn_only=${APPS_FN_ONLY:-}
APPS_FN_ONLY=1
# shellcheck source=scripts/guest/apps/run-nvme.sh
. /qhca/run-nvme.sh
APPS_FN_ONLY=$_fn_only
[ -n "${APPS_FN_ONLY:-}" ] && return 0

arg() { sed -n "s/.*apps\\.$1=\\([^ ]*\\).*/\\1/p" /proc/cmdline; }
CASES=$(arg bench_cases | tr ',' ' ')
SECONDS_=$(arg bench_seconds)
RUNS=$(arg bench_runs)
SECONDS_=${SECONDS_:-10}
RUNS=${RUNS:-1}

apps_start
grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config
if [ "$QHCA_ID" = 1 ]; then
	if apps_check "nvme-fio: target ready" 60 "target_setup"; then
		apps_send TARGET-READY ok
	else
		apps_send TARGET-READY fail
	fi
	apps_wait BENCH-DONE 7200 >/dev/null
else
	modprobe nvme_rdma
	mkdir -p /etc/nvme
	[ -s /etc/nvme/hostnqn ] || nvme gen-hostnqn >/etc/nvme/hostnqn
	m=$(apps_wait TARGET-READY 180) || m=
	if [ "${m#TARGET-READY }" = ok ] && host_connect "bench"; then
		DEV=$(host_dev)
		r=1
		while [ "$r" -le "$RUNS" ]; do
			for c in $CASES; do
				name=${c%%:*} rw=$(echo "$c" | cut -d: -f2) bs=${c##*:}
				OUT=$APPS_DIR/fio-$name-$r.out
				why= kib0=$(nvme_kib)
				if apps_run "$OUT" $((SECONDS_ + 120)) \
					"fio --minimal --name=$name --filename=$DEV --ioengine=libaio --direct=1 --iodepth=32 --rw=$rw --bs=$bs --size=256m --time_based --runtime=$SECONDS_" &&
					why=$(fio_reached "$kib0" "$OUT"); then
					case $rw in
					*read*) awk -F';' -v n="$name" -v r="$r" 'NF > 50 { print "fio-result", n, r, $7, $8 }' "$OUT" ;;
					*) awk -F';' -v n="$name" -v r="$r" 'NF > 50 { print "fio-result", n, r, $48, $49 }' "$OUT" ;;
					esac
				else
					echo "fio-failed $name $r exit $RC: ${why:-$(tail -n 3 "$OUT" | tr '\n' ' ')}"
				fi
			done
			r=$((r + 1))
		done
		nvme disconnect -n "$NQN" >/dev/null
	else
		not_ok "nvme-fio: connected" "target: ${m:-no answer}"
	fi
	apps_send BENCH-DONE
fi
apps_done
