#!/bin/sh
# Run script (apps group, part nvme): NVMe over RDMA between two guests
# (docs/consumers.md, "NVMe over RDMA").
#
# Guest 1 (target): a memory-backed null_blk disk (1 GiB) exported by nvmet
# through an RDMA port on its eth0 address, 4420. Guest 2 (host):
#   discover      nvme discover -t rdma lists the subsystem
#   connect       nvme connect -t rdma --ctrl-loss-tmo 30; the namespace
#                 appears with the target's size
#   fio           4 jobs (sequential and random writes, 4 KiB, 128 KiB and
#                 4-128 KiB, iodepth 32, libaio, O_DIRECT) for APPS_FIO_SECONDS
#                 (default 60) with verify=crc32c every 64 writes and at the
#                 end: no error, reads verified
#   disconnect    nvme disconnect: the controller and the block device go,
#                 no rdma_cm id of the host is left
#   port fault    connected again, fio as above (45 s) while the target removes its
#                 port (the listener and every queue's connection go) and
#                 makes it again 8 s later: the host reconnects
#                 ("Successfully reconnected" in its log) and fio ends
#                 without error or verify failure
#   target death  connected again (--ctrl-loss-tmo 30 --fast_io_fail_tmo 15),
#                 fio while the target powers off (poweroff -f: QEMU ends,
#                 the wire goes silent): fio ends with I/O errors within
#                 DEATH_LIMIT (90 s: the time to notice, keep-alive or RC
#                 retries, plus ctrl-loss-tmo 30 s plus a margin) instead of
#                 hanging, and nvme disconnect of the controller that keeps
#                 reconnecting to nobody returns within 150 s.
#                 Why fast_io_fail_tmo: ctrl-loss-tmo is a count of
#                 reconnect attempts (30 / reconnect-delay 2 = 15), not a
#                 clock, and each attempt to a silent peer whose ARP entry
#                 is still cached lasts as long as the CM's REQ retries
#                 (about 80 s, the kernel's rdma_cm, on any RDMA device), so
#                 without it queued I/O waits about 15 x 80 s. And nvme_core
#                 is loaded again with multipath=N for this phase: with native
#                 multipath (the default) 6.12 parks the failed-over I/O on
#                 the namespace head and "failfast expired" does not kick it
#                 (measured: fio still waiting 75 s after that message), so
#                 only the controller's deletion would end it.
# Guest 1 reports its own checks and, last, powers off (its console output
# is what the host side reads; there is no QHCA-RUN-END from it).
_rd=/qhca
# shellcheck source=scripts/guest/apps/apps-lib.sh
. "$_rd/apps-lib.sh"

NQN=nqn.2026-11.org.qhca:apps-nvme
PORT=4420
# fio's run time: apps.fio_seconds= on the kernel command line (the host's
# APPS_FIO_SECONDS), default 60
FIO_SECONDS=$(sed -n 's/.*apps\.fio_seconds=\([0-9][0-9]*\).*/\1/p' /proc/cmdline)
FIO_SECONDS=${FIO_SECONDS:-60}
DEATH_LIMIT=90
CFS=/sys/kernel/config/nvmet

# --- target ------------------------------------------------------------------
target_port_add() {
	mkdir "$CFS/ports/1" &&
		echo rdma >"$CFS/ports/1/addr_trtype" &&
		echo ipv4 >"$CFS/ports/1/addr_adrfam" &&
		echo "$QHCA_IP" >"$CFS/ports/1/addr_traddr" &&
		echo "$PORT" >"$CFS/ports/1/addr_trsvcid" &&
		ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN"
}

target_port_remove() {
	rm -f "$CFS/ports/1/subsystems/$NQN" && rmdir "$CFS/ports/1"
}

target_setup() {
	modprobe null_blk nr_devices=1 gb=1 bs=4096 memory_backed=1 &&
		modprobe nvmet && modprobe nvmet_rdma || return 1
	i=0
	while [ ! -b /dev/nullb0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ -b /dev/nullb0 ] || { echo "no /dev/nullb0"; return 1; }
	mkdir "$CFS/subsystems/$NQN" &&
		echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host" &&
		mkdir "$CFS/subsystems/$NQN/namespaces/1" &&
		echo /dev/nullb0 >"$CFS/subsystems/$NQN/namespaces/1/device_path" &&
		echo 1 >"$CFS/subsystems/$NQN/namespaces/1/enable" &&
		target_port_add || return 1
	# the listener is an rdma_cm id on port 4420
	i=0
	while [ $i -lt 50 ]; do
		apps_cm_ids | grep -q "LISTEN.*:$PORT" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	echo "no rdma_cm listener on $PORT:"
	apps_cm_ids
	return 1
}

run_target() {
	if apps_check "nvme: target: null_blk namespace exported by nvmet on rdma $QHCA_IP:$PORT" 60 \
		"set -x; target_setup"; then
		apps_send TARGET-READY ok
	else
		apps_send TARGET-READY fail
	fi
	# the port fault, when the host asks (its fio is running)
	if m=$(apps_wait 'CUT-PORT|SKIP-CUT' 600); then
		case $m in
		CUT-PORT*)
			if target_port_remove; then
				ok "nvme: target: port removed while the host's I/O runs"
				sleep 8
				if target_port_add; then
					ok "nvme: target: port added again after 8 s"
				else
					not_ok "nvme: target: port added again after 8 s" "$(ls -lR "$CFS/ports" 2>&1 | tail -n 5)"
				fi
			else
				not_ok "nvme: target: port removed while the host's I/O runs" "$(ls -lR "$CFS/ports" 2>&1 | tail -n 5)"
				target_port_add 2>/dev/null
			fi
			apps_send PORT-BACK
			;;
		esac
	else
		not_ok "nvme: target: the host asked for the port fault" "no CUT-PORT/SKIP-CUT message in 600 s"
	fi
	# the death, when the host asks (its fio is running)
	if m=$(apps_wait 'DIE|SKIP-DIE' 900); then
		case $m in
		DIE*)
			pair_stop_mailbox
			checks_done || :
			echo "APPS-TARGET-POWEROFF: the target powers off now, as the host asked"
			sync
			poweroff -f
			sleep 60
			;;
		esac
	else
		not_ok "nvme: target: the host asked for the death" "no DIE/SKIP-DIE message in 900 s"
	fi
}

# --- host ----------------------------------------------------------------------------------
# host_stay_live SECONDS LIMIT: wait until every nvme controller has been
# "live" for SECONDS in a row (polled every 0.5 s), at most LIMIT seconds;
# sets STAY_WAITED to the seconds waited
host_stay_live() {
	need=$(($1 * 2)); end=$(($(qhca_now) + $2)); t0=$(qhca_now); run=0
	while [ "$(qhca_now)" -lt "$end" ]; do
		st=$(cat /sys/class/nvme/nvme*/state 2>/dev/null | sort -u)
		if [ "$st" = live ]; then
			run=$((run + 1))
		else
			run=0
		fi
		if [ "$run" -ge "$need" ]; then
			STAY_WAITED=$(($(qhca_now) - t0))
			return 0
		fi
		sleep 0.5
	done
	return 1
}

CONNECT="nvme connect -t rdma -a $APPS_SRV -s $PORT -n $NQN --ctrl-loss-tmo 30 --reconnect-delay 2"

# the namespace's block device (the only NVMe disk of this guest). With
# native multipath (nvme_core's default) /sys/block also lists the hidden
# path device nvmeXcYnZ, which has no device node: fio given that name
# would create a plain file in /dev and never reach the target
host_dev() {
	for _b in /sys/block/nvme*n1; do
		case ${_b##*/} in nvme*c*) continue ;; esac
		[ -b "/dev/${_b##*/}" ] && { echo "/dev/${_b##*/}"; return 0; }
	done
	return 1
}

# KiB read and written so far on the NVMe namespace, counted by the block
# layer: on its path devices when multipath puts a head in front of them
# (the head's own counters depend on the kernel), else on the namespace
nvme_kib() {
	_p=$(ls -d /sys/block/nvme*c*n1 2>/dev/null) || _p=$(ls -d /sys/block/nvme*n1)
	for _b in $_p; do cat "$_b/stat"; done | awk '{ s += $3 + $7 } END { print int(s / 2) }'
}

# fio_reached KIB0 OUT: the I/O fio reports in OUT (--minimal, every job:
# KiB read + written) reached the namespace since nvme_kib said KIB0
fio_reached() {
	_moved=$(($(nvme_kib) - $1))
	_fio=$(awk -F';' 'NF > 50 { s += $6 + $47 } END { print s + 0 }' "$2")
	if [ "$_fio" -gt 0 ] && [ "$_moved" -ge "$_fio" ]; then
		echo "the namespace moved $_moved KiB, fio $_fio KiB"
		return 0
	fi
	echo "fio's I/O did not reach the NVMe namespace: fio $_fio KiB, the namespace $_moved KiB"
	return 1
}

host_connect() {	# host_connect WHAT [ARGS]: connect, wait for the namespace
	apps_check "nvme: host: connect ($1): the 1 GiB namespace appears" 90 \
		"$CONNECT ${2:-} && i=0 && while [ \$i -lt 100 ] && ! ls /sys/block | grep -q '^nvme.*n1\$'; do sleep 0.2; i=\$((i + 1)); done; ls /sys/block; cat /sys/class/nvme/nvme*/transport /sys/class/nvme/nvme*/subsysnqn" \
		'd=$(host_dev) || { echo "no namespace block device"; exit 1; }; s=$(cat /sys/block/${d#/dev/}/size); [ "$s" = 2097152 ] || { echo "$d has $s sectors, not 2097152"; exit 1; }; grep -qx rdma "$OUT" || { echo "transport not rdma"; exit 1; }'
}

# fio_job FILE SECONDS DEV: the verifying job file
fio_job() {
	cat >"$1" <<EOF
[global]
filename=$3
ioengine=libaio
direct=1
iodepth=32
time_based=1
runtime=$2
size=48m
verify=crc32c
verify_backlog=64
verify_fatal=1
verify_dump=0
do_verify=1
randrepeat=0
[seq-128k]
rw=write
bs=128k
offset=0
[rand-4k]
rw=randwrite
bs=4k
offset=64m
[rand-4k-128k]
rw=randwrite
bsrange=4k-128k
offset=128m
[seq-4k-128k]
rw=write
bsrange=4k-128k
offset=192m
EOF
}

# fio_verify: every job of $OUT (--minimal) ended without error, wrote and
# read back (verified) something
# shellcheck disable=SC2016
FIO_VERIFY='awk -F";" "NF > 50 { n++; if (\$5 != 0 || \$6 == 0 || \$47 == 0) { bad = 1; print \"job \" \$3 \": error \" \$5 \", read \" \$6 \" KiB, written \" \$47 \" KiB\" } else { r += \$6; w += \$47 } } END { if (n != 4) { print n \" job lines, not 4\"; exit 1 } if (bad) exit 1; print \"written \" w \" KiB, read and verified \" r \" KiB\" }" "$OUT"'

fio_summary() {	# the figures of the last fio run
	awk -F";" 'NF > 50 { r += $6; w += $47; wb += $48 } END { printf "written %d MiB (%.1f MB/s), read and verified %d MiB\n", w / 1024, wb * 1.024 / 1000, r / 1024 }' "$1"
}

# host_prepare: the host's modules and NQN, and the target's word that it
# is ready (false, with the check failed, if it is not)
host_prepare() {
	modprobe nvme_rdma && modprobe nvme_fabrics
	mkdir -p /etc/nvme
	[ -s /etc/nvme/hostnqn ] || nvme gen-hostnqn >/etc/nvme/hostnqn
	[ -s /etc/nvme/hostid ] || sed 's/.*uuid://' /etc/nvme/hostnqn >/etc/nvme/hostid
	m=$(apps_wait TARGET-READY 180) || m="TARGET-READY none"
	[ "${m#TARGET-READY }" = ok ] && return 0
	not_ok "nvme: host: the target is ready" "target says: ${m#TARGET-READY }"
	return 1
}

run_host() {
	if ! host_prepare; then
		apps_send SKIP-CUT
		apps_send SKIP-DIE
		return
	fi
	apps_check "nvme: host: discover over rdma lists $NQN" 60 \
		"nvme discover -t rdma -a $APPS_SRV -s $PORT" \
		'grep -q "subnqn: *'"$NQN"'" "$OUT" && grep -q "trtype: *rdma" "$OUT" || { echo "no rdma entry for '"$NQN"'"; exit 1; }'

	# 1. verified I/O for a minute, clean disconnect
	if host_connect "first"; then
		DEV=$(host_dev)
		fio_job "$APPS_DIR/fio1.job" "$FIO_SECONDS" "$DEV"
		kib0=$(nvme_kib)
		apps_check "nvme: host: fio ${FIO_SECONDS}s, 4 jobs, 4k-128k seq+rand writes, iodepth 32, verify=crc32c" \
			$((FIO_SECONDS + 240)) "fio --minimal $APPS_DIR/fio1.job" "$FIO_VERIFY"' && fio_reached '"$kib0"' "$OUT"' &&
			apps_note "fio: $(fio_summary "$OUT"); $(fio_reached "$kib0" "$OUT")"
		cp "$OUT" "$APPS_DIR/fio1.out" 2>/dev/null
		apps_check "nvme: host: disconnect: controller, block device and rdma_cm ids gone" 60 \
			"nvme disconnect -n $NQN; i=0; while [ \$i -lt 50 ] && { ls /sys/class/nvme/ | grep -q nvme || [ -n \"\$(apps_cm_ids)\" ]; }; do sleep 0.2; i=\$((i + 1)); done; ls /sys/class/nvme/; apps_cm_ids" \
			'grep -q "disconnected 1 controller" "$OUT" || { echo "nvme disconnect did not disconnect 1 controller"; exit 1; }; [ -z "$(ls /sys/class/nvme/)" ] || { echo "controllers left: $(ls /sys/class/nvme/)"; exit 1; }; [ -z "$(apps_cm_ids)" ] || { echo "rdma_cm ids left:"; apps_cm_ids; exit 1; }'
	fi

	# 2. the target's port goes away and comes back while I/O runs
	if host_connect "port fault"; then
		DEV=$(host_dev)
		# 45 s: the port goes 10 s in, for 8 s, and the reconnect follows
		fio_job "$APPS_DIR/fio2.job" 45 "$DEV"
		pair_mark_dmesg
		dm0=$(qhca_dmesg_lines)
		kib0=$(nvme_kib)
		pair_spawn "$APPS_DIR/fio2.out" "fio --minimal $APPS_DIR/fio2.job"
		fpid=$PAIR_PID
		sleep 10
		apps_send CUT-PORT
		back=$(apps_wait PORT-BACK 120) || back=
		pair_reap "$fpid" $(($(qhca_now) + 45 + 240))
		OUT=$APPS_DIR/fio2.out
		if [ "$PAIR_RC" = 0 ] && v=$(eval "$FIO_VERIFY" 2>&1) && v=$(fio_reached "$kib0" "$OUT"); then
			ok "nvme: host: fio with verify across the target's port removal: no I/O or verify error"
			apps_note "fio: $(fio_summary "$OUT"); $v"
		else
			not_ok "nvme: host: fio with verify across the target's port removal: no I/O or verify error" \
				"fio exit $PAIR_RC; $v" "$(grep -v '^ *$' "$OUT" | tail -n 12)" "$(pair_new_dmesg 15)"
		fi
		if [ -z "$back" ]; then
			not_ok "nvme: host: reconnected after the port came back" "the target never said PORT-BACK"
		elif qhca_dmesg_after "$dm0" | grep -q 'Successfully reconnected'; then
			ok "nvme: host: reconnected after the port came back"
			apps_note "$(qhca_dmesg_after "$dm0" | grep -E 'nvme.*(reconnect|Reconnect|error|resett)' | head -n 6)"
		else
			not_ok "nvme: host: reconnected after the port came back" "no 'Successfully reconnected' in the kernel log:" "$(qhca_dmesg_after "$dm0" | tail -n 15)"
		fi
		apps_check "nvme: host: disconnect after the port fault" 60 \
			"nvme disconnect -n $NQN; i=0; while [ \$i -lt 50 ] && ls /sys/class/nvme/ | grep -q nvme; do sleep 0.2; i=\$((i + 1)); done; ls /sys/class/nvme/" \
			'[ -z "$(ls /sys/class/nvme/)" ] || { echo "controllers left: $(ls /sys/class/nvme/)"; exit 1; }'
	else
		apps_send SKIP-CUT
	fi

	# 3. the target dies while I/O runs: errors within the controller-loss
	# timeout (nvme_core without native multipath: see the top)
	modprobe -r nvme_rdma nvme_fabrics nvme_core 2>/dev/null
	modprobe nvme_core multipath=N && modprobe nvme_rdma
	apps_note "nvme_core multipath=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null) for the target death"
	if host_connect "target death" "--fast_io_fail_tmo 15"; then
		DEV=$(host_dev)
		fio_job "$APPS_DIR/fio3.job" 600 "$DEV"
		pair_mark_dmesg
		dm0=$(qhca_dmesg_lines)
		pair_spawn "$APPS_DIR/fio3.out" "fio --minimal $APPS_DIR/fio3.job"
		fpid=$PAIR_PID
		sleep 10
		# The death is meant to meet a live controller with I/O in flight,
		# not a reconnect the host already has under way (Soft-RoCE's
		# target can reset the connection on its own: a WARNING in
		# rxe_completer, see docs/consumers.md): wait until the controller
		# has been live for 5 s in a row, so the case measures one thing
		if host_stay_live 5 180; then
			apps_note "the controller was live for 5 s in a row ${STAY_WAITED}s after the wait began"
		else
			not_ok "nvme: host: target death: the controller is live before the death" \
				"not live for 5 s in a row within 180 s: $(cat /sys/class/nvme/nvme*/state 2>/dev/null)" "$(pair_new_dmesg 20)"
		fi
		apps_send DIE
		t0=$(qhca_now)
		pair_reap "$fpid" $((t0 + DEATH_LIMIT))
		t=$(($(qhca_now) - t0))
		if [ "$PAIR_RC" = 124 ]; then
			not_ok "nvme: host: target death: fio fails within ${DEATH_LIMIT}s (ctrl-loss-tmo 30)" \
				"fio still running after ${t}s: killed" "$(pair_new_dmesg 20)"
		elif [ "$PAIR_RC" = 0 ]; then
			not_ok "nvme: host: target death: fio fails within ${DEATH_LIMIT}s (ctrl-loss-tmo 30)" \
				"fio ended without error after ${t}s" "$(tail -n 5 "$APPS_DIR/fio3.out")"
		else
			ok "nvme: host: target death: fio fails within ${DEATH_LIMIT}s (ctrl-loss-tmo 30)"
			apps_note "fio ended with exit $PAIR_RC ${t}s after the target was told to die: $(grep -o -m 1 'error=[^,]*' "$APPS_DIR/fio3.out")"
		fi
		apps_note "controller state: $(cat /sys/class/nvme/nvme*/state 2>/dev/null)"
		t0=$(qhca_now)
		apps_check "nvme: host: target death: nvme disconnect of the reconnecting controller returns and removes it" 150 \
			"nvme disconnect -n $NQN; ls /sys/class/nvme/" \
			'[ -z "$(ls /sys/class/nvme/)" ] || { echo "controllers left: $(ls /sys/class/nvme/)"; exit 1; }' &&
			apps_note "nvme disconnect took $(($(qhca_now) - t0))s"
		apps_note "kernel: $(qhca_dmesg_after "$dm0" | grep -E 'nvme' | head -n 10)"
	else
		apps_send SKIP-DIE
	fi
}

[ -n "${APPS_FN_ONLY:-}" ] && return 0
apps_start
grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config
if [ "$QHCA_ID" = 1 ]; then
	run_target
else
	run_host
fi
apps_done
