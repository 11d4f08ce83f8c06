#!/bin/sh
# Run script of the guest group's "migrate" part (two guests on learning
# bridges, scripts/launch --bridges --learning --migrate 1:0:0:0): guest 1
# is live-migrated to a new QEMU, there and back, while traffic runs
# between it and guest 2, which asks the host for the migrations
# ("QHCA-MIGRATE guest=1 count=N gap=S" on its console) when the traffic
# has started. Each check passes only if the programs on both sides end
# with success and their own checks (perftest's, qhca-verify's) pass: no
# error completion, no data difference, no reconnect (each program keeps
# the QPs it made), and nothing done to the peer. The host records QEMU's
# downtime of each migration in RUNDIR/migrations; qhca-verify reports the
# longest gap between completions the application saw.
#
# From the kernel command line (scripts/launch --append; the kernel hands
# NAME=VALUE words it does not know to init's environment):
# QHCA_MIGRATE_SECS (default 45): how long each program runs;
# QHCA_MIGRATE_COUNT (default 2): migrations during each;
# QHCA_MIGRATE_TESTS (default write,send,verify): which programs.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
SECS=${QHCA_MIGRATE_SECS:-45}
COUNT=${QHCA_MIGRATE_COUNT:-2}
TESTS=,${QHCA_MIGRATE_TESTS:-write,send,verify},
want() { case $TESTS in *,$1,*) return 0 ;; esac; return 1; }
# the migrations end before the program does (each takes 2-8 s here)
GAP=$(((SECS - 8) / (COUNT + 1)))
echo "# migrate: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX; guest 1 migrated $COUNT times every ${GAP}s in each ${SECS}s run"
port=19100
# the client (guest 2) asks the host for the migrations as it starts its
# program (its command runs in a shell of its own: dash -c)
MIG="echo 'QHCA-MIGRATE guest=1 count=$COUNT gap=$GAP' >/dev/console;"

port=$((port + 1))
_o="-d \$PAIR_DEV -x \$PAIR_GIDX -p $port -s 65536 -D $SECS -F --report_gbits"
want write && pcheck "migrate: ib_write_bw -s 65536 -D $SECS, guest 1 migrated $COUNT times" 1 2 \
	$((SECS + 120)) "tcp:$port" \
	"ib_write_bw $_o" "$MIG ib_write_bw $_o \$SRV" "v_perf 65536"
port=$((port + 1))
_o="-d \$PAIR_DEV -x \$PAIR_GIDX -p $port -s 65536 -D $SECS -F --report_gbits"
want send && pcheck "migrate: ib_send_bw -s 65536 -D $SECS, guest 1 migrated $COUNT times" 1 2 \
	$((SECS + 120)) "tcp:$port" \
	"ib_send_bw $_o" "$MIG ib_send_bw $_o \$SRV" "v_perf 65536"
if want verify; then
	port=$((port + 1))
	_o="-d \$PAIR_DEV -g \$PAIR_GIDX -p $port -q 16 -t $SECS"
	pcheck "migrate: qhca-verify -q 16 -t $SECS, guest 1 migrated $COUNT times" 1 2 \
		$((SECS + 120)) "tcp:$port" \
		"/qhca/qhca-verify $_o" "$MIG /qhca/qhca-verify $_o \$SRV" v_verify
fi
pair_notes
pair_stop_mailbox
checks_done
