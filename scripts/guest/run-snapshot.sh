#!/bin/sh
# Run script of the migrate group's "snapshot" part (two guests on
# learning bridges, each with a snapshot image: scripts/test.d/migrate):
# internal snapshots (QMP snapshot-save and snapshot-load, as savevm and
# loadvm) of guests with connected QPs. Guest 2 asks the host machine for
# them with "QHCA-SNAPSHOT op=save|load guests=G,... tag=T" console lines
# while the traffic runs.
#
#   both      qhca-verify runs; both guests are saved (tag a), run on, and
#             both are loaded back to it: the two devices and the two
#             programs are at one consistent moment again, and the run goes
#             on over the same QPs to its end with every byte and every
#             completion right
#   one alone ib_send_bw -b (both ways) runs; both guests are saved (tag b), and only
#             guest 1 is loaded back: its QPs are behind the peer's. Nothing
#             crashes, both programs end (neither hangs) with an error
#             completion, and the QPs end in a defined state: the device
#             counts the retry-exceeded errors (or NAKs) that ended them
#             (docs/migration.md says which were seen)
# Kernel command line: mig.seconds=N (default 40) for each program.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
SECS=$(sed -n 's/.*mig\.seconds=\([0-9][0-9]*\).*/\1/p' /proc/cmdline)
SECS=${SECS:-40}
echo "# snapshot: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX, ${SECS}s programs"
port=19200

# the client's requests, from a background shell started with it:
# save at 10 s, load at 22 s (after a load it comes back here: the host
# does each (op, tag) once)
ask() {	# ask TAG LOAD_GUESTS: a shell command
	echo "( sleep 10; echo 'QHCA-SNAPSHOT op=save guests=1,2 tag=$1' >/dev/console; sleep 12; echo 'QHCA-SNAPSHOT op=load guests=$2 tag=$1' >/dev/console ) &"
}

port=$((port + 1))
_o="-d \$PAIR_DEV -g \$PAIR_GIDX -p $port -q 8 -t $SECS"
pcheck "snapshot: qhca-verify -q 8 -t $SECS: both guests saved, then both loaded back: the run goes on and passes" 1 2 \
	$((SECS + 240)) "tcp:$port" \
	"/qhca/qhca-verify $_o" "$(ask a 1,2) /qhca/qhca-verify $_o \$SRV" v_verify

# one guest loaded alone: the programs must fail (and end), the device
# must have ended the QPs by retry-exceeded or a NAK
counters() {
	for _f in /sys/class/infiniband/"$PAIR_DEV"/ports/1/hw_counters/retry_exceeded_err \
		/sys/class/infiniband/"$PAIR_DEV"/ports/1/hw_counters/naks_rcvd; do
		[ -r "$_f" ] && cat "$_f" || echo 0
	done | tr '\n' ' '
}
c0=$(counters)
port=$((port + 1))
# -b: both sides send, so both requesters meet the other's state (a
# receiver alone would wait for ever for a peer whose QP has failed)
_o="-d \$PAIR_DEV -x \$PAIR_GIDX -p $port -s 4096 -D $SECS -F -b"
pair_test "snapshot: ib_send_bw -b, guest 1 loaded alone" 1 2 $((SECS + 240)) "tcp:$port" \
	"ib_send_bw $_o" "$(ask b 1) ib_send_bw $_o \$SRV" >/dev/null 2>&1
_rc=$?
c1=$(counters)
_st=$(grep -ho 'Failed status [0-9]*' "$OUT" 2>/dev/null | head -n 1)
echo "# snapshot: one alone: this side's program: ${MY_RC:-?} ($_st); counters retry_exceeded_err naks_rcvd before: $c0 after: $c1"
if [ "$_rc" != 0 ] && [ "${MY_RC:-0}" != 124 ] && [ "${PEER_RC:-0}" != 124 ]; then
	ok "snapshot: guest 1 loaded alone: both programs ended with an error, neither hung"
else
	not_ok "snapshot: guest 1 loaded alone: both programs ended with an error, neither hung" \
		"pair rc $_rc, this side $MY_RC, peer $PEER_RC"
fi
# shellcheck disable=SC2086 # the two counters, split
set -- $c0
r0=$1 n0=$2
# shellcheck disable=SC2086
set -- $c1
if [ "$1" -gt "$r0" ] || [ "$2" -gt "$n0" ]; then
	ok "snapshot: guest 1 loaded alone: the device ended its QPs by retry exceeded or the peer's NAK"
else
	not_ok "snapshot: guest 1 loaded alone: the device ended its QPs by retry exceeded or the peer's NAK" \
		"retry_exceeded_err $r0 -> $1, naks_rcvd $n0 -> $2"
fi
pair_notes
pair_stop_mailbox
checks_done
