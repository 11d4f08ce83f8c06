#!/bin/sh
# Run script for Soft-RoCE interoperability (part interop of scripts/test.d/guest):
#   scripts/launch --rxe 2 --run scripts/guest/run-interop.sh
# guest 1 has qhca0, guest 2 the kernel's rdma_rxe (rxe0 on eth0) and
# rdma-core's rxe provider, all NICs on one Ethernet segment. Each program
# runs twice: qhca serving the rxe client, then rxe serving the qhca client.
# The data checks are qhca-verify's (every byte and every completion of RC
# WRITE, READ, SEND, SEND/WRITE with immediate and atomics).
# With --rxe 1,2 (Soft-RoCE on both) the same script validates the harness.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# interop: this guest uses $PAIR_DEV (RoCE v2 GID index $PAIR_GIDX)"
# the device each guest uses, for the check names
pair_peer_devs

port=18800
# one S C: the check $T with guest S serving, guest C connecting
one() {
	port=$((port + 1))
	_l="$SRV_DEV server, $CLI_DEV client"
	_o="-d \$PAIR_DEV -i 1 -p $port"
	case $T in
	pingpong | uc_pingpong)
		_p=ibv_rc_pingpong
		[ "$T" = uc_pingpong ] && _p=ibv_uc_pingpong
		pcheck "$_p -s 65536 -n 10 -c ($_l)" "$1" "$2" 90 "tcp:$port" \
			"$_p $_o -g \$PAIR_GIDX -s 65536 -n 10 -c" \
			"$_p $_o -g \$PAIR_GIDX -s 65536 -n 10 -c \$SRV" v_pingpong ;;
	place)
		# ATOMIC WRITE (IBA 1.5): guest-driver/tools/qhca-place.c.
		# -F: no FLUSH, whose ICRC Soft-RoCE computes its own way
		# (docs/verbs.md); the main part runs FLUSH qhca to qhca
		pcheck "qhca-place -F: WRITE, ATOMIC WRITE ($_l)" "$1" "$2" 90 "tcp:$port" \
			"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $port" \
			"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $port -F \$SRV" v_place ;;
	place_mw)
		# a type 2 window of the server's, written through by the
		# client; -B: Soft-RoCE does not keep writes within a
		# window (only within its MR), so past its end is not tried
		_b=; case $SRV_DEV in rxe*) _b=" -B" ;; esac
		pcheck "qhca-place -F -M$_b: memory window ($_l)" "$1" "$2" 90 "tcp:$port" \
			"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $port -M$_b" \
			"/qhca/qhca-place -d \$PAIR_DEV -g \$PAIR_GIDX -p $port -F -M$_b \$SRV" v_place ;;
	verify)
		# 4 QPs, 1 B to 256 KiB: Soft-RoCE moves about 5 MB/s under TCG
		vcheck "qhca-verify -q 4 -n 30: WRITE, READ, SEND, SEND/WRITE with immediate, atomics, 1 B to 256 KiB ($_l)" \
			"$1" "$2" 180 "$port" "\$PAIR_GIDX" \
			"-q 4 -n 30 -S 1,8,1000,4096,65536,256k,r70000" ;;
	rping)
		pcheck "rping -C 10 -S 4096 -V ($_l)" "$1" "$2" 90 "cm:$port" \
			"rping -s -a \$SRV -p $port -C 10 -S 4096 -V" \
			"rping -c -a \$SRV -p $port -C 10 -S 4096 -V -v" \
			"v_rping 10" ;;
	*)
		pcheck "$T $(echo "$A" | sed 's/-x \$PAIR_GIDX //') ($_l)" "$1" "$2" 120 "$R:$port" \
			"$T $_o -F $A" "$T $_o -F $A \$SRV" "v_perf $S" ;;
	esac
}
# both: the check $T both ways
both() { pair_both one; }
# READ and atomics: -o 16 on both sides. Without it perftest's initiator
# asks for the responder's outstanding-read limit as its own max_rd_atomic
# (rxe offers 128, qhca 16), which qhca's modify-QP-to-RTS rightly refuses
# ("Failed to modify QP to RTS"); rdma_cm (-R) negotiates the two limits.
T=verify both
T=pingpong both
T=uc_pingpong both
T=ib_write_bw A="-x \$PAIR_GIDX -s 65536 -n 10" R=tcp S=65536 both
T=ib_read_bw A="-x \$PAIR_GIDX -o 16 -s 65536 -n 10" R=tcp S=65536 both
T=ib_write_bw A="-R -s 1048576 -n 5" R=cm S=1048576 both
T=ib_read_bw A="-R -s 65536 -n 10" R=cm S=65536 both
# 1 MiB READs from rxe: before the device sent READs as 32 KiB requests,
# bursts of 1024 responses lost frames on the way, qhca re-requested from
# the first missing PSN while rxe kept streaming, and 1 run in 2 ended in
# RETRY_EXC_ERR (status 12). With 32 KiB requests: 4 of 4 passed.
T=ib_read_bw A="-R -s 1048576 -n 5" R=cm S=1048576 both
T=ib_send_bw A="-x \$PAIR_GIDX -s 4096 -n 10" R=tcp S=4096 both
T=ib_atomic_bw A="-x \$PAIR_GIDX -o 16 -n 10" R=tcp S=8 both
T=ib_atomic_bw A="-R -n 10" R=cm S=8 both
T=rping both
T=place both
T=place_mw both
pair_notes
pair_stop_mailbox
checks_done
