#!/bin/sh
# Run script (apps group, part mpi): UCX and Open MPI between two guests
# (docs/consumers.md, "UCX and Open MPI").
#
#   ucx_info      ucx_info -d lists the RDMA device's rc_verbs and ud_verbs
#                 transports (both guests)
#   ucx_perftest  guest 1 server, guest 2 client (-P 0: Debian builds it with
#                 MPI; not launched by mpirun, it must use its own TCP
#                 rendezvous on port 13337): tag-matching latency and
#                 bandwidth, put latency and bandwidth, get bandwidth over
#                 rc_verbs (ud_verbs for wireup), tag-matching over ud_verbs
#                 alone; UCX_PROTO_INFO=y must show the device in the
#                 protocol table (the data went over it, not TCP)
#   mpirun        Open MPI 5 with pml ucx (btl self only, so no TCP data
#                 path) runs mpi-check (ping-pong 1 B to 1 MiB, allreduce,
#                 bcast; every byte checked) with one rank per guest,
#                 launched from guest 1 through qhca-rsh, an ssh stand-in
#                 over the harness's TCP channel (qhca-rshd listens on guest
#                 2); over rc_verbs, then over ud_verbs
#
# UCX's UD transport drops every RoCE packet whose destination GID is not
# its own, and finds that GID where wc.sl says: UCX reads wc.sl as mlx5
# hardware encodes it (2 = IPv4). qhca reports sl 0 (as Soft-RoCE does, and
# other non-mlx5 devices), so UCX reads an IPv6-sized GID out of the IPv4
# header and drops the packet; UD (and RC's wireup through UD) then ends
# in "UD endpoint ...: unhandled timeout error". UCX_UD_VERBS_ETH_DGID_CHECK=n
# turns that check off (docs/consumers.md).
_rd=/qhca
# shellcheck source=scripts/guest/apps/apps-lib.sh
. "$_rd/apps-lib.sh"

PERF_PORT=13337

# v_ucx: the client printed the final figures and the protocol table names
# the device (UCX_PROTO_INFO=y)
v_ucx() {
	[ "$ROLE" = server ] && return 0
	grep -q 'Final:' "$OUT" || { echo "no 'Final:' line"; return 1; }
	grep -q "$PAIR_DEV:1" "$OUT" || { echo "the protocol table does not name $PAIR_DEV:1"; grep -E '^\[|\|' "$OUT" | head -n 12; return 1; }
	# shellcheck disable=SC2154 # _name: the pair check's (pair.sh)
	pair_note "$_name: $(grep 'Final:' "$OUT" | tr -s ' ')"
	return 0
}

# ucx_pair NAME TLS TEST SIZE ITERS
ucx_pair() {
	_env="UCX_NET_DEVICES=$PAIR_DEV:1 UCX_TLS=$2 UCX_PROTO_INFO=y UCX_IB_GID_INDEX=$PAIR_GIDX UCX_UD_VERBS_ETH_DGID_CHECK=n"
	pcheck "ucx_perftest: $1" 1 2 180 "tcp:$PERF_PORT" \
		"$_env ucx_perftest -P 0 -p $PERF_PORT" \
		"$_env ucx_perftest \$SRV -P 0 -p $PERF_PORT -t $3 -s $4 -n $5" v_ucx
}

mpi_run() {	# mpi_run TLS [ITERS]: mpi-check (ITERS, default 50) across both guests over UCX with TLS
	# (/qhca/mpi-env sets UCX's environment on each guest)
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SHELL=/bin/sh \
		mpirun.openmpi --allow-run-as-root --prtemca plm_ssh_agent /qhca/qhca-rsh \
		-np 2 --host guest1:1,guest2:1 --mca pml ucx --mca btl self --mca osc ucx \
		/qhca/mpi-env "$1" /usr/lib/qhca/apps/mpi-check "${2:-50}"
}

# the mpirun output: the program's "all checks passed" from rank 0, both
# ranks ran on their own guest, and UCX's protocol table names the device
# shellcheck disable=SC2016
V_MPI='grep -q "mpi-check: all checks passed" "$OUT" || { echo "no \"all checks passed\""; exit 1; }; grep -q "rank 0 of 2 on guest1" "$OUT" && grep -q "rank 1 of 2 on guest2" "$OUT" || { echo "not one rank on each guest"; exit 1; }; grep -q "$PAIR_DEV:1" "$OUT" || { echo "UCX protocol table does not name $PAIR_DEV:1"; exit 1; }'

[ -n "${APPS_FN_ONLY:-}" ] && return 0
apps_start
export SHELL=/bin/sh

apps_check "ucx_info -d lists $PAIR_DEV:1 with rc_verbs and ud_verbs" 120 "ucx_info -d" \
	'awk -v d="'"$PAIR_DEV"':1" "/Transport:/ { t = \$NF } /Device:/ && \$NF == d { print t }" "$OUT" >"$OUT.tl"; grep -qx rc_verbs "$OUT.tl" && grep -qx ud_verbs "$OUT.tl" || { echo "transports on '"$PAIR_DEV"':1: $(tr "\n" " " <"$OUT.tl")"; exit 1; }'

ucx_pair "tag_lat 8 B rc_verbs" rc_verbs,ud_verbs tag_lat 8 1000
ucx_pair "tag_bw 64 KiB rc_verbs" rc_verbs,ud_verbs tag_bw 65536 200
ucx_pair "ucp_put_lat 8 B rc_verbs" rc_verbs,ud_verbs ucp_put_lat 8 1000
ucx_pair "ucp_put_bw 64 KiB rc_verbs" rc_verbs,ud_verbs ucp_put_bw 65536 200
ucx_pair "ucp_get 64 KiB rc_verbs" rc_verbs,ud_verbs ucp_get 65536 200
ucx_pair "tag_lat 8 B ud_verbs" ud_verbs tag_lat 8 1000
ucx_pair "tag_bw 64 KiB ud_verbs" ud_verbs tag_bw 65536 100

# Open MPI: guest 2 runs the agent's listener, guest 1 runs mpirun
if [ "$QHCA_ID" = 2 ]; then
	nc -ll -p 7410 -e /qhca/qhca-rshd </dev/null >/dev/null 2>&1 &
	rshd=$!
	apps_send RSHD-READY
	apps_wait MPI-DONE 1200 >/dev/null || not_ok "mpi: guest 1 finished its mpirun runs" "no MPI-DONE message in 1200 s"
	kill "$rshd" 2>/dev/null
	[ -s /tmp/qhca-rshd.log ] && apps_note "qhca-rshd ran: $(cut -c1-200 /tmp/qhca-rshd.log | head -n 3)"
else
	if apps_wait RSHD-READY 300 >/dev/null; then
		apps_check "mpirun -np 2 (one rank per guest, qhca-rsh agent): pml ucx over rc_verbs: mpi-check ping-pong, allreduce, bcast checked" 400 \
			"mpi_run rc_verbs,ud_verbs,self" "$V_MPI" &&
			apps_note "$(grep 'mpi-check: ping-pong' "$OUT" | sed 's/mpi-check: //' | tr '\n' ';')"
		apps_check "mpirun -np 2 (one rank per guest, qhca-rsh agent): pml ucx over ud_verbs: mpi-check ping-pong, allreduce, bcast checked" 400 \
			"mpi_run ud_verbs,self" "$V_MPI" &&
			apps_note "$(grep 'mpi-check: ping-pong' "$OUT" | sed 's/mpi-check: //' | tr '\n' ';')"
	else
		not_ok "mpi: guest 2's qhca-rshd listens" "no RSHD-READY message in 300 s"
	fi
	apps_send MPI-DONE
fi
apps_done
