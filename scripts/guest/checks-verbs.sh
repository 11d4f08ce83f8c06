#!/bin/sh
# Verbs checks: unmodified verbs programs between two guests (guest 1 serves,
# guest 2 connects), each a pair check (scripts/guest/pair.sh): the
# verifying workload qhca-verify (every byte and every completion of RC
# WRITE, READ, SEND, SEND with immediate, WRITE with immediate and atomics
# checked, on 8 and on 64 QPs), the ibv_*_pingpong examples (-c: they
# compare one byte of each page, which checks the programs run, not the
# data), rping, perftest's send/write/read/atomic bandwidth and latency
# tests with and without rdma_cm (-R) at 1 byte to 1 MiB, and a
# kernel-bypass check (the system calls of ib_send_bw do not grow with the
# iteration count). Then the loopback checks (loopback.sh): server and
# client in one guest.
#
# Sourced by checks.sh (after its device checks) with its `check`; also by
# run-verbs.sh (Soft-RoCE runs, scripts/test.d/rxe). On guests other than 1
# and 2 it does nothing.
# shellcheck disable=SC2016 # commands are evaluated on each guest
qhca_pair_start --dev --mailbox
echo "# verbs: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
[ -e "/sys/class/infiniband/$PAIR_DEV" ] ||
	echo "# verbs: this guest has no $PAIR_DEV: every verbs check fails (the device checks say why)"

VPORT=18600
vport() { VPORT=$((VPORT + 1)); }

# pp TOOL NAME_EXTRA OPTIONS [TIMEOUT]: an ibv_*_pingpong pair check
pp() {
	vport
	_o="-d \$PAIR_DEV -i 1 -g \$PAIR_GIDX -p $VPORT $3"
	pcheck "$1 $3${2:+ $2}" 1 2 "${4:-60}" "tcp:$VPORT" \
		"$1 $_o" "$1 $_o \$SRV" v_pingpong
}

# perf TOOL SIZE ITERS [R] [EXTRA]: a perftest pair check (R: rdma_cm)
perf() {
	vport
	_o="-d \$PAIR_DEV -i 1 -F -p $VPORT -n $3"
	_sz=$2
	case $1 in
	ib_atomic*) _sz=8 ;;
	*) _o="$_o -s $2" ;;
	esac
	if [ "${4:-}" = R ]; then
		_o="$_o -R"
		_r="cm:$VPORT"
		_l=" -R"
	else
		_o="$_o -x \$PAIR_GIDX"
		_r="tcp:$VPORT"
		_l=
	fi
	_to=60
	[ "$_sz" -ge 1048576 ] && _to=120
	_n="$1$_l${5:+ $5} -s $_sz -n $3"
	pcheck "$_n" 1 2 "$_to" "$_r" "$1 $_o ${5:-}" "$1 $_o ${5:-} \$SRV" "v_perf $_sz"
}

# --- qhca-verify: every byte, every completion (guest-driver/tools/qhca-verify.c) ------------
# 8 QPs, each of its 40 operations (WRITE read back, READ, SEND, SEND with
# immediate, WRITE with immediate, FETCH_ADD/CMP_SWP in turn) of 1 B to
# 1 MiB; then 64 QPs of 1 B to 16 KiB. Between two Soft-RoCE guests (the
# rxe group) smaller: Soft-RoCE (6.12) against itself completes some
# 1 MiB READs with IBV_WC_SUCCESS but the end of their data missing, and
# with 64 QPs some atomics without their result written (rxe_comp.c:827
# warns then; docs/testing.md, "The verifying workload")
if [ "$PAIR_DEV" = rxe0 ]; then
	V1="-q 4 -n 30 -S 1,8,1000,4096,65536,256k,r70000" V1_SIZES="1 B to 256 KiB"
	V2="-q 16 -D 4 -n 20 -S 1,8,1000,4096,r16384" V2_QPS=16
else
	V1="-q 8 -n 40" V1_SIZES="1 B to 1 MiB"
	V2="-q 64 -D 8 -n 20 -S 1,8,1000,4096,r16384" V2_QPS=64
fi
vport
vcheck "qhca-verify ${V1%% -S*}: WRITE, READ, SEND, SEND/WRITE with immediate, atomics, $V1_SIZES" \
	1 2 180 $VPORT "\$PAIR_GIDX" "$V1"
vport
vcheck "qhca-verify ${V2%% -S*}: the same on $V2_QPS QPs, 1 B to 16 KiB" \
	1 2 180 $VPORT "\$PAIR_GIDX" "$V2"

# --- ibv_*_pingpong (RC, UC, UD, SRQ) ---------------------------------------------------------
# -c compares one byte of each page (byte 0 of each 4 KiB): the programs
# ran, not that the data arrived; qhca-verify above checks every byte
pp ibv_rc_pingpong "" "-s 1 -n 10 -c"
pp ibv_rc_pingpong "" "-s 65536 -n 10 -c"
pp ibv_rc_pingpong "" "-s 1048576 -n 4 -c" 120
pp ibv_rc_pingpong "(CQ events)" "-e -s 4096 -n 10 -c"
pp ibv_rc_pingpong "(ibv_wr_* API)" "-N -s 4096 -n 10 -c"
pp ibv_uc_pingpong "" "-s 1 -n 10 -c"
pp ibv_uc_pingpong "" "-s 65536 -n 10 -c"
pp ibv_uc_pingpong "(CQ events)" "-e -s 4096 -n 10 -c"
pp ibv_ud_pingpong "" "-s 1 -n 10 -c"
pp ibv_ud_pingpong "" "-s 1024 -n 10 -c"
pp ibv_srq_pingpong "" "-q 4 -s 4096 -n 10 -c"

# --- rping: rdma_cm, SEND + RDMA READ/WRITE, its own payload validated (-V) -----------------
vport
pcheck "rping -C 10 -S 4096 -V" 1 2 60 "cm:$VPORT" \
	"rping -s -a \$SRV -p $VPORT -C 10 -S 4096 -V" \
	"rping -c -a \$SRV -p $VPORT -C 10 -S 4096 -V -v" \
	"v_rping 10"

# --- IBA 1.5: ATOMIC WRITE and FLUSH (guest-driver/tools/qhca-place.c, --add'ed) -------------
if [ -x /qhca/qhca-place ]; then
	vport
	pcheck "qhca-place: WRITE, ATOMIC WRITE, FLUSH" 1 2 60 "tcp:$VPORT" \
		"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $VPORT" \
		"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $VPORT \$SRV" v_place
	vport
	pcheck "qhca-place -M: memory window" 1 2 60 "tcp:$VPORT" \
		"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $VPORT -M" \
		"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $VPORT -M \$SRV" v_place
	# a type 1 window bound with the rights programs give their MR
	# (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | MW_BIND): local rights
	# in a bind are ignored, as Soft-RoCE and mlx5 do
	vport
	pcheck "qhca-place -M -L: a window bound with the MR's flags" 1 2 60 "tcp:$VPORT" \
		"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $VPORT -M -L" \
		"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $VPORT -M -L \$SRV" v_place
fi

# --- perftest: 1 byte, 64 KiB, 1 MiB; with rdma_cm at 1 byte ---------------------------------
# (-R at 1 MiB too until 2026-12-03: the same data path as without it, six
# runs of about 7 s each that CI's time now goes to the fabric part)
for _t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat; do
	perf $_t 1 20
	perf $_t 65536 10
	perf $_t 1048576 5
	perf $_t 1 20 R
done
perf ib_atomic_bw 8 20 "" "-A FETCH_AND_ADD"
perf ib_atomic_bw 8 20 "" "-A CMP_AND_SWAP"
perf ib_atomic_bw 8 20 R
perf ib_atomic_lat 8 20 "" "-A FETCH_AND_ADD"
perf ib_atomic_lat 8 20 "" "-A CMP_AND_SWAP"
perf ib_atomic_lat 8 20 R

# --- kernel bypass: strace -c -f of ib_send_bw, -n 100 against -n 10000 -----------------------
# The data path (post, poll, doorbell) must make no system call: the counts
# of every system call may differ by a small constant only (buffers, the
# result exchange), not by anything that grows with the iteration count.
BYPASS_N1=100
BYPASS_N2=10000
for _n in $BYPASS_N1 $BYPASS_N2; do
	vport
	_o="-d \$PAIR_DEV -i 1 -F -p $VPORT -x \$PAIR_GIDX -s 8 -n $_n"
	pcheck "strace -f -c ib_send_bw -s 8 -n $_n" 1 2 180 "tcp:$VPORT" \
		"strace -f -c -o /tmp/pair/strace-server-$_n ib_send_bw $_o" \
		"strace -f -c -o /tmp/pair/strace-client-$_n ib_send_bw $_o \$SRV" "v_perf 8"
done

# Clock reads scale with time, not with iterations: perftest samples the
# clock to estimate the CPU frequency, and when the guest's clocksource has
# no vDSO (TCG guests sometimes boot with the TSC found unreliable) each
# read is a system call (about 1100 per run seen). They get their own
# bound, far below one per iteration.
BYPASS_CLOCK="gettimeofday clock_gettime clock_gettime64 time clock_nanosleep nanosleep"

# strace_calls FILE: "SYSCALL CALLS" lines of a strace -c summary
strace_calls() {
	awk '$NF != "total" && $NF != "syscall" && $4 ~ /^[0-9]+$/ { print $NF, $4 }' "$1"
}

# the per-syscall growth from N1 to N2 iterations on this guest's side
bypass_growth() {
	_a=$PAIR_DIR/strace-$1-$BYPASS_N1
	_b=$PAIR_DIR/strace-$1-$BYPASS_N2
	for _f in "$_a" "$_b"; do
		[ -s "$_f" ] || { echo "no strace summary $_f (see the strace checks)"; return 1; }
		strace_calls "$_f" | grep -q . || { echo "$_f has no syscall counts:"; head -n 5 "$_f"; return 1; }
	done
	{ strace_calls "$_a" | sed 's/^/a /'; strace_calls "$_b" | sed 's/^/b /'; } |
		awk -v clock="$BYPASS_CLOCK" '
		BEGIN { n = split(clock, cl, " "); for (i = 1; i <= n; i++) isclock[cl[i]] = 1 }
		{ c[$2] += ($1 == "b" ? $3 : -$3); t[$1] += $3; if ($1 == "a") A[$2] = $3; else B[$2] = $3 }
		END {
			for (s in c) {
				d = c[s]; tot += d
				if (isclock[s]) { ctot += d; continue }
				otot += d; if (d > max) { max = d; ms = s }
			}
			printf "TOTALS %d %d %d %d %d %d %s\n", t["a"], t["b"], tot, otot, ctot, max, ms
			for (s in c) if (c[s] != 0) printf "DIFF %s %d -> %d (%+d)%s\n", s, A[s] + 0, B[s] + 0, c[s], isclock[s] ? " [clock read]" : ""
		}' >"$PAIR_DIR/bypass-$1"
	read -r _ BYP_A BYP_B BYP_TOT BYP_OTHER BYP_CLOCK BYP_MAX BYP_MAXS <"$PAIR_DIR/bypass-$1"
	echo "$1 side: $BYP_A system calls with -n $BYPASS_N1, $BYP_B with -n $BYPASS_N2 (growth $BYP_TOT: clock reads $BYP_CLOCK, others $BYP_OTHER; largest other: ${BYP_MAXS:-none} +$BYP_MAX); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	grep '^DIFF' "$PAIR_DIR/bypass-$1" | sort -t'(' -k2 -rn | head -n 8 | sed 's/^DIFF /  /'
}

# Allowed: a few more calls for the longer run (none per iteration); clock
# reads: less than one per 4 iterations.
BYPASS_SLACK=40
BYPASS_CLOCK_SLACK=$(((BYPASS_N2 - BYPASS_N1) / 4))
c_bypass() {
	_side=client
	[ "$QHCA_ID" = 1 ] && _side=server
	bypass_growth $_side >"$PAIR_DIR/bypass-report" || { cat "$PAIR_DIR/bypass-report"; return 1; }
	cat "$PAIR_DIR/bypass-report"
	pair_note "kernel bypass: $(head -n 1 "$PAIR_DIR/bypass-report")"
	if [ "$PAIR_DEV" = rxe0 ]; then
		# Soft-RoCE's provider enters the kernel to post a send: the
		# detector must see that on the sending side (a self-test).
		[ "$_side" = server ] && return 0
		[ "$BYP_TOT" -ge $((BYPASS_N2 - BYPASS_N1)) ] && return 0
		echo "rxe posts through the kernel, yet the growth is only $BYP_TOT"
		return 1
	fi
	[ "$BYP_OTHER" -le "$BYPASS_SLACK" ] && [ "$BYP_MAX" -le "$BYPASS_SLACK" ] &&
		[ "$BYP_CLOCK" -le "$BYPASS_CLOCK_SLACK" ] && return 0
	echo "system calls grow with the iteration count (allowed: $BYPASS_SLACK, clock reads $BYPASS_CLOCK_SLACK)"
	return 1
}
if [ "$QHCA_ID" = 1 ] || [ "$QHCA_ID" = 2 ]; then
	if [ "$PAIR_DEV" = rxe0 ]; then
		check "kernel-bypass detector sees rxe's per-post system calls (strace -n $BYPASS_N1 vs -n $BYPASS_N2)" c_bypass
	else
		check "kernel bypass: ib_send_bw system calls do not grow from -n $BYPASS_N1 to -n $BYPASS_N2" c_bypass
	fi
fi

# --- loopback: server and client in one guest, to its own GID and IP -----------------------
_lb=$(qhca_helper loopback.sh)
if [ -f "$_lb" ]; then
	# shellcheck source=scripts/guest/loopback.sh
	. "$_lb"
elif [ "$QHCA_ID" = 1 ] || [ "$QHCA_ID" = 2 ]; then
	check "loopback: checks present (loopback.sh)" false
fi
pair_notes
