#!/bin/sh
# Run script (migrate group, part nvme): NVMe over RDMA while the target's
# guest is live-migrated (scripts/test.d/migrate; docs/migration.md).
#
# Guest 1 (target) exports a memory-backed null_blk namespace through
# nvmet on rdma, as the apps group's nvme part does (run-nvme.sh, whose
# functions this script uses). Guest 2 (host) connects and runs fio with
# crc32c verification for MIG_SECONDS; 10 s in, it asks the host machine to
# migrate guest 1 MIG_COUNT times (a "QHCA-MIGRATE" console line), there
# and back. Checks on guest 2:
#   fio           no I/O or verify error, and fio's I/O reached the NVMe
#                 namespace (the block layer's counters)
#   no reconnect  the controller stayed live: no reset or reconnect in the
#                 kernel log, its state "live" at the end
# Kernel command line: mig.seconds=N (default 90), mig.count=N (default 3).
_rd=/qhca
# run-nvme.sh's functions, also in the shells apps_run starts
APPS_SELF=$_rd/run-nvme.sh
APPS_FN_ONLY=1
# shellcheck source=scripts/guest/apps/run-nvme.sh
. "$_rd/run-nvme.sh"
unset APPS_FN_ONLY

MIG_SECONDS=$(sed -n 's/.*mig\.seconds=\([0-9][0-9]*\).*/\1/p' /proc/cmdline)
MIG_SECONDS=${MIG_SECONDS:-90}
MIG_COUNT=$(sed -n 's/.*mig\.count=\([0-9][0-9]*\).*/\1/p' /proc/cmdline)
MIG_COUNT=${MIG_COUNT:-3}
# the migrations end well before fio does (each takes 2-8 s here)
MIG_GAP=$(((MIG_SECONDS - 30) / (MIG_COUNT + 1)))

mig_target() {
	if apps_check "nvme: target: null_blk namespace exported by nvmet on rdma $QHCA_IP:$PORT" 60 \
		"set -x; target_setup"; then
		apps_send TARGET-READY ok
	else
		apps_send TARGET-READY fail
	fi
	apps_wait 'HOST-DONE' $((MIG_SECONDS + 600)) >/dev/null ||
		not_ok "nvme: target: the host finished" "no HOST-DONE message"
}

mig_host() {
	host_prepare || return
	host_connect "migration" || return
	DEV=$(host_dev)
	fio_job "$APPS_DIR/fiom.job" "$MIG_SECONDS" "$DEV"
	pair_mark_dmesg
	dm0=$(qhca_dmesg_lines)
	kib0=$(nvme_kib)
	pair_spawn "$APPS_DIR/fiom.out" "fio --minimal $APPS_DIR/fiom.job"
	fpid=$PAIR_PID
	sleep 10
	echo "QHCA-MIGRATE guest=1 count=$MIG_COUNT gap=$MIG_GAP" >/dev/console
	pair_reap "$fpid" $(($(qhca_now) + MIG_SECONDS + 240))
	OUT=$APPS_DIR/fiom.out
	if [ "$PAIR_RC" = 0 ] && v=$(eval "$FIO_VERIFY" 2>&1) && v=$(fio_reached "$kib0" "$OUT"); then
		ok "nvme: host: fio ${MIG_SECONDS}s with verify=crc32c while the target's guest migrates $MIG_COUNT times: no I/O or verify error"
		apps_note "fio: $(fio_summary "$OUT"); $v"
		# the application's gap: the longest completion latency of any
		# read or write (terse fields 15 and 56: clat max, usec)
		apps_note "fio's longest I/O: $(awk -F';' 'NF > 50 { if ($15 > m) m = $15; if ($56 > m) m = $56 } END { printf "%.1f", m / 1000 }' "$OUT") ms"
	else
		not_ok "nvme: host: fio ${MIG_SECONDS}s with verify=crc32c while the target's guest migrates $MIG_COUNT times: no I/O or verify error" \
			"fio exit $PAIR_RC; $v" "$(grep -v '^ *$' "$OUT" | tail -n 12)" "$(pair_new_dmesg 15)"
	fi
	_k=$(qhca_dmesg_after "$dm0" | grep -Ei 'nvme.*(reconnect|resett|error|timeout|abort)')
	_s=$(cat /sys/class/nvme/nvme*/state 2>/dev/null)
	if [ -z "$_k" ] && [ "$_s" = live ]; then
		ok "nvme: host: no reconnect, reset or error: the controller stayed live"
	else
		not_ok "nvme: host: no reconnect, reset or error: the controller stayed live" \
			"state: $_s" "$_k"
	fi
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	apps_send HOST-DONE
}

apps_start
grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config
if [ "$QHCA_ID" = 1 ]; then
	mig_target
else
	mig_host
fi
apps_done
