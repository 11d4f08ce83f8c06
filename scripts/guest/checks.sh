#!/bin/sh
# Guest checks: run inside every guest of one boot by scripts/test.d/guest
# (scripts/launch --run scripts/guest/checks.sh). Prints one line per check,
#   ok - NAME          or          not ok - NAME
# followed, for a failure, by "# " lines saying why. Ends with
#   # checks done: P passed, F failed
# Exit status 1 if any check failed.
#
# Adding checks: write a function that returns non-zero on failure and
# prints its diagnostics, then `check "name" function [timeout]` (lib.sh) at the end
# of this file, or put both in a new scripts/guest/checks-NAME.sh (sourced
# below, in name order; it is in the image as /usr/lib/qhca/checks-NAME.sh).
# Every guest runs the same list in the same order, so checks may
# synchronise with qhca_barrier PORT TIMEOUT (ports 7110 and up) and use
# $QHCA_ROLE (server on guest 1, client on guest 2) and $QHCA_PEER_IP.
. /usr/lib/qhca/lib.sh

WORK=/tmp/checks
mkdir -p "$WORK"

# --- what is missing, in words ------------------------------------------------------

image_has() {	# image_has qhca_ko|provider
	grep -q "^$1=yes" /etc/qhca-image
}

# The kernel's qhca messages, the first time only (they repeat otherwise).
qhca_dmesg() {
	[ -f "$WORK/dmesg-shown" ] && { echo "(kernel messages: see the first failed check)"; return; }
	: >"$WORK/dmesg-shown"
	dmesg | grep -i 'qhca' | grep -v 'ommand line\|out-of-tree\|module verification' |
		tail -n "$1"
}

has_pci_device() {	# a 1af4:10f0 function
	for _d in /sys/bus/pci/devices/*; do
		[ "$(cat "$_d/vendor" 2>/dev/null):$(cat "$_d/device" 2>/dev/null)" = 0x1af4:0x10f0 ] &&
			return 0
	done
	return 1
}

# Why there is no qhca0: the missing pieces, most basic first.
why_no_device() {
	_why=''
	if ! image_has qhca_ko; then
		echo "the image has no qhca.ko: $(grep '^missing=qhca.ko' /etc/qhca-image | cut -d= -f2-)"
		_why=1
	fi
	if ! has_pci_device; then
		echo "no qhca PCI device (1af4:10f0): QEMU ran without -device qhca (scripts/launch --no-qhca?)"
		_why=1
	fi
	if image_has qhca_ko && [ ! -d /sys/module/qhca ]; then
		if grep -qw qguest.noqhca /proc/cmdline; then
			echo "qhca.ko was not loaded: qguest.noqhca on the kernel command line"
		else
			echo "qhca.ko is in the image but not loaded: $(cat /run/qhca-init-problems 2>/dev/null)"
			qhca_dmesg 5
		fi
		_why=1
	fi
	[ -n "$_why" ] && return
	if [ ! -e /sys/class/infiniband/qhca0 ]; then
		echo "qhca.ko is loaded but registered no ib_device qhca0 (driver: guest-driver/)"
		qhca_dmesg 10
	fi
}

why_no_verbs_device() {
	why_no_device
	[ -e /sys/class/infiniband/qhca0 ] || return
	if ! image_has provider; then
		echo "the kernel has qhca0 but the image has no provider: $(grep '^missing=libqhca' /etc/qhca-image | cut -d= -f2-)"
	elif [ ! -f /usr/lib/x86_64-linux-gnu/libibverbs/libqhca-rdmav34.so ]; then
		echo "libqhca-rdmav34.so is not in /usr/lib/x86_64-linux-gnu/libibverbs/"
	else
		echo "qhca0 exists in the kernel and libqhca-rdmav34.so is installed, but libibverbs did not open it (provider userlib/: PCI match, ABI version?)"
		echo "IBV_SHOW_WARNINGS=1 ibv_devices:"
		IBV_SHOW_WARNINGS=1 qhca_timeout 30 ibv_devices 2>&1 | head -n 10
	fi
}

# --- device: the device is there and bound to eth0 --------------------------------------------

DEVINFO=$WORK/devinfo
devinfo() {	# ibv_devinfo -v, once
	[ -f "$DEVINFO" ] || qhca_timeout 60 ibv_devinfo -v >"$DEVINFO" 2>&1
	cat "$DEVINFO"
}
# the qhca0 section of ibv_devinfo -v
devinfo_qhca0() {
	devinfo | awk '/^hca_id:/ { on = ($2 == "qhca0") } on'
}

c_module() {
	[ -d /sys/module/qhca ] && return 0
	why_no_device
	return 1
}

c_ibdev() {
	[ -e /sys/class/infiniband/qhca0 ] && return 0
	why_no_device
	return 1
}

c_devinfo_lists() {
	devinfo | grep -q '^hca_id:[[:space:]]*qhca0$' && return 0
	echo "ibv_devinfo -v does not list qhca0; it printed:"
	head -n 5 "$DEVINFO"
	why_no_verbs_device
	return 1
}

need_devinfo_qhca0() {
	devinfo_qhca0 | grep -q . && return 0
	echo "qhca0 is not in ibv_devinfo -v (see the check 'ibv_devinfo -v lists qhca0')"
	return 1
}

c_port_active() {
	need_devinfo_qhca0 || return 1
	devinfo_qhca0 | grep -q 'state:[[:space:]]*PORT_ACTIVE' && return 0
	echo "port state: $(devinfo_qhca0 | grep -m1 '[[:space:]]state:' | tr -s '\t ' ' ')"
	return 1
}

c_link_layer() {
	need_devinfo_qhca0 || return 1
	devinfo_qhca0 | grep -q 'link_layer:[[:space:]]*Ethernet$' && return 0
	devinfo_qhca0 | grep -m1 'link_layer:' | tr -s '\t ' ' '
	return 1
}

c_gid() {
	need_devinfo_qhca0 || return 1
	_re=$(echo "$QHCA_IP" | sed 's/\./\\./g')
	devinfo_qhca0 | grep -Eq "GID\\[ *[0-9]+\\]:[[:space:]]*::ffff:$_re, RoCE v2\$" &&
		return 0
	echo "no 'GID[n]: ::ffff:$QHCA_IP, RoCE v2' for eth0's $QHCA_IP; qhca0's GIDs:"
	devinfo_qhca0 | grep 'GID\[' | tr -s '\t' ' ' | head -n 8
	devinfo_qhca0 | grep -q 'GID\[' || echo "(none)"
	return 1
}

c_rdma_link() {
	_out=$(qhca_timeout 30 rdma link show 2>&1)
	echo "$_out" | grep -Eq '^link qhca0/1 state ACTIVE .*netdev eth0( |$)' && return 0
	echo "rdma link show:"
	echo "${_out:-(nothing)}"
	echo "$_out" | grep -q 'qhca0' || why_no_device
	return 1
}

c_ping() {
	[ -n "$QHCA_PEER_IP" ] || { echo "no peer in this run"; return 1; }
	_out=$(ping -c 3 -W 2 -I eth0 "$QHCA_PEER_IP" 2>&1)
	echo "$_out" | grep -q ' 3 packets received' && return 0
	echo "$_out" | tail -n 3
	return 1
}

# pair.sh, for the verbs checks (checks-verbs.sh); says who this guest is
qhca_pair_start
[ -s /run/qhca-init-problems ] && echo "# init problems: $(cat /run/qhca-init-problems)"

check "qhca.ko loaded" c_module
check "ib_device qhca0 registered" c_ibdev
check "ibv_devinfo -v lists qhca0" c_devinfo_lists
check "qhca0 port 1 PORT_ACTIVE" c_port_active
check "qhca0 link_layer Ethernet" c_link_layer
check "qhca0 RoCE v2 GID is eth0's IPv4-mapped address" c_gid
check "rdma link: qhca0/1 ACTIVE on netdev eth0" c_rdma_link
check "ping the peer over eth0" c_ping

for _f in /usr/lib/qhca/checks-*.sh; do
	[ -f "$_f" ] || continue
	# shellcheck disable=SC1090
	. "$_f"
done

checks_done
