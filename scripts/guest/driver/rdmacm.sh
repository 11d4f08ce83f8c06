#!/bin/sh
# RDMA CM tools between two guests, run inside both (scripts/launch -n 2):
# rping -C 10 -v, ucmatose and udaddy, guest 1 the server, guest 2 the
# client.  They use the kernel's QP1 (GSI) for the CM exchange, user RC/UD
# QPs through the qhca provider for the data, and kernel address handles.
#
# Prints "ok - NAME" / "not ok - NAME" per tool; exits 1 if any failed.
. /usr/lib/qhca/lib.sh

OUT=/tmp/rdmacm.$$
mkdir -p "$OUT"
BEFORE=$(qhca_dmesg_lines)

# tool NAME BARRIER-PORT SERVER-CMD... -- CLIENT-CMD...
tool() {
	_name=$1 _port=$2
	shift 2
	_srv=
	while [ "$1" != -- ]; do _srv="$_srv $1"; shift; done
	shift
	if ! qhca_barrier "$_port" 120; then
		not_ok "$_name" "the peer did not reach barrier $_port"
		return
	fi
	if [ "$QHCA_ROLE" = server ]; then
		# shellcheck disable=SC2086 # word splitting wanted
		qhca_timeout 120 $_srv >"$OUT/$_name" 2>&1
	else
		sleep 3	# the server listens first
		qhca_timeout 120 "$@" >"$OUT/$_name" 2>&1
	fi
	_rc=$?
	if [ $_rc -eq 0 ] && ! grep -qi 'fail\|error' "$OUT/$_name"; then
		ok "$_name ($QHCA_ROLE)"
	else
		not_ok "$_name ($QHCA_ROLE)" "exit $_rc" "$(tail -n 8 "$OUT/$_name")"
	fi
}

tool "rping -C 10 -v" 7131 rping -s -a "$QHCA_IP" -C 10 -v -- \
	rping -c -a "$QHCA_PEER_IP" -C 10 -v
[ "$QHCA_ROLE" = server ] || grep -c 'ping data' "$OUT/rping -C 10 -v" |
	grep -qx 10 || not_ok "rping printed 10 pings"
tool ucmatose 7132 ucmatose -b "$QHCA_IP" -- ucmatose -s "$QHCA_PEER_IP"
tool "ucmatose -c 4 -C 20" 7133 ucmatose -b "$QHCA_IP" -c 4 -C 20 -- \
	ucmatose -s "$QHCA_PEER_IP" -c 4 -C 20
tool udaddy 7134 udaddy -b "$QHCA_IP" -- udaddy -s "$QHCA_PEER_IP"

BAD='WARNING:|BUG:|Oops|Call Trace|refcount_t:|general protection|qhca.*(dead|timed out|error)'
qhca_dmesg_since "$BEFORE" "$BAD" "no kernel warnings"
rm -rf "$OUT"
[ "$FAILED" -eq 0 ]
