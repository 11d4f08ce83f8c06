#!/bin/sh
# RoCEv2 over IPv6 between two guests (docs/verbs.md):
#   scripts/launch -n 2 --run scripts/guest/run-ipv6.sh           qhca <-> qhca
#   scripts/launch -n 2 --rxe 2 --run scripts/guest/run-ipv6.sh   qhca <-> Soft-RoCE
# Each guest's eth0 has its automatic link-local address and gets the ULA
# fd71:4800::ID/64; the kernel adds both to the RDMA device's GID table as
# RoCE v2 GIDs. Checked: the GIDs are there; ibv_rc_pingpong,
# ibv_uc_pingpong and ibv_ud_pingpong on the link-local GID index, and
# rping (rdma_cm, whose CM MADs travel as UD with an IPv6 GRH) to the ULA
# and to the link-local address with its scope, each with either guest
# serving. With --capture, tests/unit/icrc-check.py checks the ICRC of
# every frame on the wire (IPv6 ones included).
. /usr/lib/qhca/lib.sh
qhca_pair_start
pair_setup_dev
pair_start_mailbox
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

# gid6_index DEV ADDR: the index of DEV port 1's RoCE v2 GID that is the
# IPv6 address ADDR (sysfs writes GIDs as eight groups of four hex digits)
gid_text() {
	case $1 in
	*::*) _l=${1%%::*} _r=${1#*::} ;;
	*) _l=$1 _r= ;;
	esac
	_old=$IFS
	IFS=:
	_nl=0
	_nr=0
	for _x in $_l; do _nl=$((_nl + 1)); done
	for _x in $_r; do _nr=$((_nr + 1)); done
	_out=
	for _x in $_l; do _out="$_out$(printf '%04x' $((0x$_x))):"; done
	_z=$((8 - _nl - _nr))
	while [ $_z -gt 0 ]; do
		_out="${_out}0000:"
		_z=$((_z - 1))
	done
	for _x in $_r; do _out="$_out$(printf '%04x' $((0x$_x))):"; done
	IFS=$_old
	echo "${_out%:}"
}
gid6_index() {
	_want=$(gid_text "$2")
	[ -n "$_want" ] || return 1
	for _g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		_i=${_g##*/}
		[ "$(cat "$_g" 2>/dev/null)" = "$_want" ] || continue
		case $(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$_i" 2>/dev/null) in
		"RoCE v2") echo "$_i"; return 0 ;;
		esac
	done
	return 1
}

# wait (20 s) for both addresses to be GIDs of the device
MY_LL=
LL_GIDX=
ULA_GIDX=
_w=0
while [ $_w -lt 200 ]; do
	[ -n "$MY_LL" ] || MY_LL=$(link_local)
	if [ -n "$MY_LL" ]; then
		LL_GIDX=$(gid6_index "$PAIR_DEV" "$MY_LL") || LL_GIDX=
	fi
	ULA_GIDX=$(gid6_index "$PAIR_DEV" "$MY_ULA") || ULA_GIDX=
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
pair_send "$QHCA_PEER_IP" devname DEV "$PAIR_DEV"
PEER_DEV=$(pair_wait "$QHCA_PEER_IP" devname DEV 120 | cut -d' ' -f2)
if [ "$QHCA_ID" = 1 ]; then D1=$PAIR_DEV D2=${PEER_DEV:-?}; else D1=${PEER_DEV:-?} D2=$PAIR_DEV; fi

# the network's neighbours must know each other before the first RC
# connect: ping each other's link-local address once
ping -6 -c 1 -W 5 "$PEER_LL%$QHCA_IFACE" >/dev/null 2>&1 ||
	ping6 -c 1 -W 5 "$PEER_LL%$QHCA_IFACE" >/dev/null 2>&1 || :
qhca_barrier 7391 120 || echo "# ipv6: barrier failed"

port=18900
both() {
	for _sc in "1 2" "2 1"; do
		# shellcheck disable=SC2086 # two numbers
		set -- $_sc
		port=$((port + 1))
		if [ "$1" = 1 ]; then _sd=$D1 _cd=$D2; else _sd=$D2 _cd=$D1; fi
		_l="guest $1 $_sd server, guest $2 $_cd client"
		_o="-d \$PAIR_DEV -i 1 -p $port"
		case $T in
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
	done
}
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
