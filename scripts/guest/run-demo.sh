#!/bin/sh
# Run script of scripts/demo: ibv_rc_pingpong (RC SEND/RECV, buffer
# validation) and rping (rdma_cm, RDMA READ and WRITE, payload validation)
# between guest 1 (server) and guest 2 (client). Prints the usual check
# lines and, for the summary, "# result: ..." lines.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# demo: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
PP_SIZE=${DEMO_PP_SIZE:-65536}
PP_ITERS=${DEMO_PP_ITERS:-100}
RP_SIZE=${DEMO_RP_SIZE:-4096}
RP_COUNT=${DEMO_RP_COUNT:-100}
_o="-d \$PAIR_DEV -i 1 -g \$PAIR_GIDX -p 18515 -s $PP_SIZE -n $PP_ITERS -c"
pcheck "ibv_rc_pingpong -s $PP_SIZE -n $PP_ITERS -c" 1 2 240 tcp:18515 \
	"ibv_rc_pingpong $_o" "ibv_rc_pingpong $_o \$SRV" v_pingpong

# v_rping_demo: v_rping, and the figures for the summary
v_rping_demo() {
	v_rping "$RP_COUNT" || return 1
	[ "$ROLE" = server ] && return 0
	pair_note "$_name: $(awk -v n="$RP_COUNT" -v s="$RP_SIZE" '/^elapsed / {
		t = $3 - $2; if (t <= 0) t = 0.001
		printf "%d pings of %d bytes (server RDMA READ + RDMA WRITE each, %d bytes moved) in %.2f seconds = %.0f usec/ping, %.2f Mbit/sec", n, s, 2 * n * s, t, t * 1e6 / n, 2 * n * s * 8 / t / 1e6 }' "$OUT")"
}

# rping prints no timing: the client measures it
# shellcheck disable=SC2016
pcheck "rping -C $RP_COUNT -S $RP_SIZE -V" 1 2 240 cm:7174 \
	"rping -s -a \$SRV -p 7174 -C $RP_COUNT -S $RP_SIZE -V" \
	"t0=\$(cut -d' ' -f1 /proc/uptime); rping -c -a \$SRV -p 7174 -C $RP_COUNT -S $RP_SIZE -V -v; r=\$?; echo \"elapsed \$t0 \$(cut -d' ' -f1 /proc/uptime)\"; exit \$r" \
	v_rping_demo
pair_notes
pair_stop_mailbox
checks_done
