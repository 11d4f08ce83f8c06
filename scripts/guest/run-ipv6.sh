#!/bin/sh
# RoCEv2 over IPv6 between two guests (docs/verbs.md):
#   scripts/launch -n 2 --run scripts/guest/run-ipv6.sh           qhca <-> qhca
#   scripts/launch -n 2 --rxe 2 --run scripts/guest/run-ipv6.sh   qhca <-> Soft-RoCE
# Each guest's eth0 has its automatic link-local address and gets the ULA
# fd71:4800::ID/64; the kernel adds both to the RDMA device's GID table as
# RoCE v2 GIDs. Checked: the GIDs are there; the verifying workload
# qhca-verify (every byte and completion of RC WRITE, READ, SEND,
# SEND/WRITE with immediate and atomics), ibv_rc_pingpong,
# ibv_uc_pingpong and ibv_ud_pingpong on the link-local GID index, and
# rping (rdma_cm, whose CM MADs travel as UD with an IPv6 GRH) to the ULA
# and to the link-local address with its scope, each with either guest
# serving. With --capture, tests/unit/icrc-check.py checks the ICRC of
# every frame on the wire (IPv6 ones included).
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# ipv6: this guest uses $PAIR_DEV"
DMESG0=$(qhca_dmesg_lines)

ULA_PREFIX=fd71:4800::
MY_ULA=$ULA_PREFIX$QHCA_ID
ip -6 addr add "$MY_ULA/64" dev "$QHCA_IFACE" nodad

# the link-local address of eth0 (automatic; may take a moment)
link_local() {
	ip -6 addr show dev "$QHCA_IFACE" scope link 2>/dev/null |
		awk '$1 == "inet6" { sub("/.*", "", $2); print $2; exit }'
}

# wait (20 s) for both addresses to be GIDs of the device
MY_LL=
LL_GIDX=
ULA_GIDX=
_w=0
while [ $_w -lt 200 ]; do
	[ -n "$MY_LL" ] || MY_LL=$(link_local)
	if [ -n "$MY_LL" ]; then
		LL_GIDX=$(pair_gid_index "$PAIR_DEV" "$MY_LL") || LL_GIDX=
	fi
	ULA_GIDX=$(pair_gid_index "$PAIR_DEV" "$MY_ULA") || ULA_GIDX=
	[ -n "$LL_GIDX" ] && [ -n "$ULA_GIDX" ] && break
	sleep 0.1
	_w=$((_w + 1))
done
export MY_LL LL_GIDX ULA_GIDX
echo "# ipv6: link-local $MY_LL GID index ${LL_GIDX:-none}, $MY_ULA GID index ${ULA_GIDX:-none}"
for _g in /sys/class/infiniband/"$PAIR_DEV"/ports/1/gids/*; do
	_i=${_g##*/}
	_t=$(cat "/sys/class/infiniband/$PAIR_DEV/ports/1/gid_attrs/types/$_i" 2>/dev/null) || continue
	echo "# gid $_i $(cat "$_g") $_t"
done

c_ll_gid() { [ -n "$LL_GIDX" ] || { echo "no RoCE v2 GID for $MY_LL"; return 1; }; }
c_ula_gid() { [ -n "$ULA_GIDX" ] || { echo "no RoCE v2 GID for $MY_ULA"; return 1; }; }
check "ipv6: link-local address is a RoCE v2 GID of $PAIR_DEV" c_ll_gid 5
check "ipv6: ULA address is a RoCE v2 GID of $PAIR_DEV" c_ula_gid 5

# the peer's link-local address (for rping to it with a scope)
pair_send "$QHCA_PEER_IP" lladdr LL "$MY_LL"
PEER_LL=$(pair_wait "$QHCA_PEER_IP" lladdr LL 120 | cut -d' ' -f2)
export PEER_LL
pair_peer_devs

# the network's neighbours must know each other before the first RC
# connect: ping each other's link-local address once
ping -6 -c 1 -W 5 "$PEER_LL%$QHCA_IFACE" >/dev/null 2>&1 ||
	ping6 -c 1 -W 5 "$PEER_LL%$QHCA_IFACE" >/dev/null 2>&1 || :
qhca_barrier 7391 120 || echo "# ipv6: barrier failed"

port=18900
# one S C: the check $T with guest S serving, guest C connecting
one() {
	port=$((port + 1))
	_l="guest $1 $SRV_DEV server, guest $2 $CLI_DEV client"
	_o="-d \$PAIR_DEV -i 1 -p $port"
	case $T in
	verify)
		vcheck "ipv6: qhca-verify link-local GID -q 4 -n 30 (1 B to 64 KiB, all six operations) ($_l)" \
			"$1" "$2" 180 "$port" "\$LL_GIDX" "-q 4 -n 30 -S 1,8,1000,4096,65536,r70000" ;;
	rc)
		pcheck "ipv6: ibv_rc_pingpong link-local GID -s 65536 -n 10 -c ($_l)" "$1" "$2" 90 "tcp:$port" \
			"ibv_rc_pingpong $_o -g \$LL_GIDX -s 65536 -n 10 -c" \
			"ibv_rc_pingpong $_o -g \$LL_GIDX -s 65536 -n 10 -c \$SRV" v_pingpong ;;
	uc)
		pcheck "ipv6: ibv_uc_pingpong link-local GID -s 4096 -n 10 -c ($_l)" "$1" "$2" 90 "tcp:$port" \
			"ibv_uc_pingpong $_o -g \$LL_GIDX -s 4096 -n 10 -c" \
			"ibv_uc_pingpong $_o -g \$LL_GIDX -s 4096 -n 10 -c \$SRV" v_pingpong ;;
	ud)
		pcheck "ipv6: ibv_ud_pingpong link-local GID -s 1024 -n 10 -c ($_l)" "$1" "$2" 90 "tcp:$port" \
			"ibv_ud_pingpong $_o -g \$LL_GIDX -s 1024 -n 10 -c" \
			"ibv_ud_pingpong $_o -g \$LL_GIDX -s 1024 -n 10 -c \$SRV" v_pingpong ;;
	rping-ula)
		pcheck "ipv6: rping -a ULA -C 10 -S 4096 -V ($_l)" "$1" "$2" 90 "cm:$port" \
			"rping -s -a $ULA_PREFIX\${SRV##*.} -p $port -C 10 -S 4096 -V" \
			"rping -c -a $ULA_PREFIX\${SRV##*.} -p $port -C 10 -S 4096 -V -v" \
			"v_rping 10" ;;
	rping-ll)
		pcheck "ipv6: rping -a link-local%eth0 -C 10 -S 4096 -V ($_l)" "$1" "$2" 90 "cm:$port" \
			"rping -s -a \$MY_LL%\$QHCA_IFACE -p $port -C 10 -S 4096 -V" \
			"rping -c -a \$PEER_LL%\$QHCA_IFACE -p $port -C 10 -S 4096 -V -v" \
			"v_rping 10" ;;
	esac
}
# both: the check $T both ways
both() { pair_both one; }
T=verify both
T=rc both
T=uc both
T=ud both
T=rping-ula both
T=rping-ll both
pair_notes
# the kernel said nothing bad about the device meanwhile
qhca_dmesg_since "$DMESG0" "WARNING|BUG|Oops" "ipv6: no kernel warnings"
pair_stop_mailbox
checks_done
