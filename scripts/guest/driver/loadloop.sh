#!/bin/sh
# qhca.ko load/unload loop, run inside a guest (one guest is enough):
#
#   LOADLOOP_COUNT=N loadloop.sh      (default 50 rounds)
#
# (Arguments are ignored: scripts/launch passes "ID ROLE PEER_IP".)
# COUNT times: rmmod qhca, modprobe qhca, wait for qhca0 with an active
# port and its IPv4 GID, run ibv_devinfo.  Then once more while a program
# holds the device open (ibv_rc_pingpong waiting for its peer: a context,
# PD, MR, CQ, QP and the doorbell mapping), so that the unload must
# disassociate it; the program is killed afterwards and the driver loaded
# again.  Finally the kernel log must have no warning, oops or leak report
# since the start.
#
# Prints "ok - NAME" / "not ok - NAME" per check and exits 1 if any failed.
# Needs: rmmod/modprobe, ibv_devinfo, ibv_rc_pingpong, an eth0 with an IPv4
# address paired with the qhca device (scripts/launch sets that up).

. /usr/lib/qhca/lib.sh
COUNT=${LOADLOOP_COUNT:-50}
LOG=/tmp/loadloop.$$
mkdir -p "$LOG"

# Kernel messages from now on are checked at the end
BEFORE=$(qhca_dmesg_lines)

# qhca0 registered, its port ACTIVE, an IPv4 GID present (qhca_wait_port ... gid)
qhca_wait_port ACTIVE 30 gid || not_ok "qhca0 is up before the loop" \
	"$(ls /sys/class/infiniband 2>&1)"

i=0
loop_fail=
while [ $i -lt "$COUNT" ]; do
	i=$((i + 1))
	if ! rmmod qhca 2>"$LOG/err"; then
		loop_fail="round $i: rmmod: $(cat "$LOG/err")"
		break
	fi
	if [ -e /sys/class/infiniband/qhca0 ]; then
		loop_fail="round $i: qhca0 still registered after rmmod"
		break
	fi
	if ! modprobe qhca 2>"$LOG/err"; then
		loop_fail="round $i: modprobe: $(cat "$LOG/err")"
		break
	fi
	if ! qhca_wait_port ACTIVE 30 gid; then
		loop_fail="round $i: no active qhca0 with an IPv4 GID after 30 s"
		break
	fi
	if ! ibv_devinfo -d qhca0 >"$LOG/devinfo" 2>&1 ||
		! grep -q 'state:[[:space:]]*PORT_ACTIVE' "$LOG/devinfo"; then
		loop_fail="round $i: ibv_devinfo: $(head -c 300 "$LOG/devinfo")"
		break
	fi
done
if [ -z "$loop_fail" ]; then
	ok "$COUNT unload/load rounds with ibv_devinfo in between"
else
	not_ok "$COUNT unload/load rounds with ibv_devinfo in between" "$loop_fail"
fi

# Unload while a process holds the device: ibv_rc_pingpong as a server
# creates its verbs objects, then waits for a peer that never comes.
GIDX=$(for g in /sys/class/infiniband/qhca0/ports/1/gids/*; do
	grep -q '0000:0000:0000:0000:0000:ffff' "$g" 2>/dev/null && basename "$g" && break
done)
ibv_rc_pingpong -d qhca0 -g "${GIDX:-1}" -p 18515 >"$LOG/pp.out" 2>&1 &
PP=$!
sleep 3
if ! kill -0 $PP 2>/dev/null; then
	not_ok "a program holds qhca0 open" "$(cat "$LOG/pp.out")"
elif ! grep -q 'infiniband/uverbs' "/proc/$PP/maps" 2>/dev/null &&
	! ls -l "/proc/$PP/fd" 2>/dev/null | grep -q uverbs; then
	not_ok "a program holds qhca0 open" "no uverbs file open in $PP"
else
	ok "a program holds qhca0 open"
	start=$(cut -d. -f1 /proc/uptime)
	if rmmod qhca 2>"$LOG/err"; then
		took=$(($(cut -d. -f1 /proc/uptime) - start))
		ok "unload while the program holds the device (${took}s)"
	else
		not_ok "unload while the program holds the device" "$(cat "$LOG/err")"
	fi
	if kill -0 $PP 2>/dev/null; then
		ok "the program survives the unload"
	else
		not_ok "the program survives the unload" "$(cat "$LOG/pp.out")"
	fi
fi
kill $PP 2>/dev/null
wait $PP 2>/dev/null
if [ -d /sys/module/qhca ] || modprobe qhca; then
	if qhca_wait_port ACTIVE 30 gid; then
		ok "reload after the forced unload"
	else
		not_ok "reload after the forced unload" "no active qhca0"
	fi
else
	not_ok "reload after the forced unload" "modprobe failed"
fi

# No warnings, oopses or leak reports since the start, and no qhca error
qhca_dmesg_after "$BEFORE" >"$LOG/dmesg.after"
BAD='WARNING:|BUG:|Oops|Call Trace|refcount_t:|UBSAN|KASAN|general protection|corruption|INFO: task'
QBAD='qhca.*(error|dead|timed out|not freed|fail|unknown|cannot)'
if grep -Eq "$BAD" "$LOG/dmesg.after" || grep -Eiq "$QBAD" "$LOG/dmesg.after"; then
	not_ok "no kernel warnings or qhca errors during the loop" \
		"$( (grep -E "$BAD" "$LOG/dmesg.after"; grep -Ei "$QBAD" "$LOG/dmesg.after") | head -n 10)"
else
	ok "no kernel warnings or qhca errors during the loop ($(wc -l <"$LOG/dmesg.after") new kernel lines)"
fi

rm -rf "$LOG"
[ "$FAILED" -eq 0 ]
