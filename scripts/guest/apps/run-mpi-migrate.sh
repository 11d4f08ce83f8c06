#!/bin/sh
# Run script (migrate group, part mpi): an Open MPI job while guest 1 (the
# one that runs mpirun and rank 0) is live-migrated
# (scripts/test.d/migrate; docs/migration.md). As the apps group's mpi part
# (run-mpi.sh, whose functions this script uses): pml ucx over rc_verbs,
# one rank per guest, launched through qhca-rsh; mpi-check's ping-pongs,
# allreduce and bcast with every byte checked, MIG_ITERS iterations (long
# enough to span the migrations). Guest 1 asks the host machine for
# MIG_COUNT migrations of itself ("QHCA-MIGRATE" console line) as mpirun
# starts. Passes if mpi-check passes all its checks with one rank on each
# guest over the RDMA device.
# Kernel command line: mig.iters=N (default 2000), mig.count=N (default
# 2), mig.gap=S (default 15).
_rd=/qhca
APPS_SELF=$_rd/run-mpi.sh
APPS_FN_ONLY=1
# shellcheck source=scripts/guest/apps/run-mpi.sh
. "$_rd/run-mpi.sh"
unset APPS_FN_ONLY

arg() { _v=$(sed -n "s/.*mig\\.$1=\\([0-9][0-9]*\\).*/\\1/p" /proc/cmdline); echo "${_v:-$2}"; }
MIG_ITERS=$(arg iters 2000)
MIG_COUNT=$(arg count 2)
MIG_GAP=$(arg gap 15)

apps_start
export SHELL=/bin/sh
if [ "$QHCA_ID" = 2 ]; then
	nc -ll -p 7410 -e /qhca/qhca-rshd </dev/null >/dev/null 2>&1 &
	rshd=$!
	apps_send RSHD-READY
	apps_wait MPI-DONE 1800 >/dev/null || not_ok "mpi: guest 1 finished its mpirun run" "no MPI-DONE message in 1800 s"
	kill "$rshd" 2>/dev/null
else
	if apps_wait RSHD-READY 300 >/dev/null; then
		echo "QHCA-MIGRATE guest=1 count=$MIG_COUNT gap=$MIG_GAP" >/dev/console
		apps_check "mpi: mpirun -np 2 over rc_verbs, mpi-check $MIG_ITERS iterations checked, while guest 1 migrates $MIG_COUNT times" 1500 \
			"mpi_run rc_verbs,ud_verbs,self $MIG_ITERS" "$V_MPI" &&
			apps_note "$(grep 'mpi-check: ping-pong' "$OUT" | sed 's/mpi-check: //' | tr '\n' ';')"
	else
		not_ok "mpi: guest 2's qhca-rshd listens" "no RSHD-READY message in 300 s"
	fi
	apps_send MPI-DONE
fi
apps_done
