#!/bin/sh
# Run script for two guests on a simulated fabric (part "fabric" of
# scripts/test.d/guest, and the on-demand group "fabric"):
#   scripts/launch --fabric lan --run scripts/guest/run-fabric.sh \
#       --add build/guest-driver/qhca-verify
# Guest 1 serves, guest 2 connects. For each phase guest 1 asks the host to
# impair the links ("QHCA-FABRIC host=all KEY=VALUE..." on the console,
# scripts/lib/qhca_fabric.py), both wait at a barrier, and the verifying
# workload qhca-verify runs: every byte and every completion of RC WRITE
# (read back), READ, SEND, SEND/WRITE with immediate and atomics checked.
# Then the device counters that prove the impairment reached the device
# (hw_counters of port 1) are checked on the guest that must see them.
#
# QHCA_FABRIC_PHASES (kernel command line, default "clean loss5 reorder25
# dup5 corrupt1 rtt20 ecn"): the phases, of
#   clean      nothing impaired
#   lossN      N% of what each host sends lost (1, 5, 20)
#   burst      loss bursts (Gilbert: 0.5% good->bad, 25% bad->good)
#   reorder25  delay 1 ms, 25% of frames sent at once (ahead of the others)
#   dup5       5% of frames twice
#   corrupt1   1% of frames with one bit flipped (bad ICRC: dropped, counted)
#   rttN       N ms round trip (N/2 ms on each host's link)
#   bw100      the switch's ports at 100 Mbit/s, 256 KiB queues
#   ecn        the same, ECN-capable frames marked CE behind 32 KiB:
#              the responder answers them with CNPs, the requester slows
#              down (rp_cnp_handled moves on guest 2), nothing is lost
#   down5      guest 1's host's link down for 5 s in the middle of a 12 s
#              run whose QPs' timeout and retries cover it (-A 18 -R 7:
#              8 x 1.07 s): the traffic resumes with no error
#   down5def   the same with qhca-verify's defaults (-A 14 -R 7): the
#              client's QPs end in retry-exceeded (status 12) about
#              (7 + 1) x 4.096 us x 2^14 = 0.54 s after their last
#              completion (accepted: 0.45 to 2 s; TCG's delays add)
# QHCA_FABRIC_VERIFY: qhca-verify's options (default -q 4 -n 30 -S 1,8,1000,
# 4096,65536,r70000).
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
PHASES=$(echo "${QHCA_FABRIC_PHASES:-clean loss5 reorder25 dup5 corrupt1 rtt20 ecn}" | tr , " ")
VOPTS=${QHCA_FABRIC_VERIFY:--q 4 -n 30 -S 1,8,1000,4096,65536,r70000}
CNT=/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters
echo "# fabric: device $PAIR_DEV, GID index $PAIR_GIDX, phases: $PHASES"
port=19300
step=0

sync_all() {
	step=$((step + 1))
	qhca_barrier $((7400 + step)) 300 || echo "# barrier $step failed"
}

# counter NAME: the device counter now (0 when the device has none)
counter() { cat "$CNT/$1" 2>/dev/null || echo 0; }

snap() {
	for _c in retransmits naks_sent naks_rcvd out_of_sequence duplicate_request \
		rx_icrc_errors local_ack_timeout_err retry_exceeded_err rx_frames tx_frames \
		np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled \
		completer_retry_err rcvd_seq_err; do
		echo "$_c $(counter $_c)"
	done >"/tmp/fabric.before"
}

# moved NAME: how much counter NAME moved since snap
moved() {
	_b=$(awk -v c="$1" '$1 == c { print $2 }' /tmp/fabric.before)
	echo $(($(counter "$1") - ${_b:-0}))
}

# c_moved: every counter of $WANT (NAME[+NAME...]) moved by at least one
# in sum; none of $NEVER did
c_moved() {
	_sum=0
	for _c in $(echo "$WANT" | tr '+' ' '); do
		_m=$(moved "$_c")
		echo "$_c moved $_m"
		_sum=$((_sum + _m))
	done
	for _c in $NEVER; do
		_m=$(moved "$_c")
		echo "$_c moved $_m"
		[ "$_m" -eq 0 ] || { echo "$_c must not move"; return 1; }
	done
	[ "$_sum" -gt 0 ]
}

# c_rtt: ping's shortest round trip to the peer is at least $RTT_WANT ms
c_rtt() {
	_r=$(ping -c 5 -i 0.2 -W 2 "$(pair_ip 1)" | sed -n 's|.*= \([0-9.]*\)/.*|\1|p')
	echo "ping min rtt: ${_r:-none} ms (want >= $RTT_WANT)"
	[ -n "$_r" ] && awk -v r="$_r" -v w="$RTT_WANT" 'BEGIN { exit !(r >= w) }'
}

phase_keys() {
	case $1 in
	clean) echo "clear" ;;
	loss*) echo "loss=${1#loss}%" ;;
	burst) echo "loss-burst=0.5%,25%" ;;
	reorder25) echo "delay=1ms reorder=25%" ;;
	dup5) echo "duplicate=5%" ;;
	corrupt1) echo "corrupt=1%" ;;
	rtt*) echo "delay=$((${1#rtt} * 500))us" ;;
	bw100) echo "rate=100m limit=256k" ;;
	ecn) echo "rate=100m limit=256k ecn=32k" ;;
	down5|down5def) echo "clear" ;;
	*) return 1 ;;
	esac
}

# what must move, where: "GUEST COUNTERS" (requester: guest 2, the client;
# a Soft-RoCE requester counts its go-backs as completer_retry_err and
# the sequence NAKs it takes as rcvd_seq_err: it has no retransmits)
phase_want() {
	_rt=retransmits
	case $PAIR_DEV in rxe*) _rt=completer_retry_err+rcvd_seq_err ;; esac
	case $1 in
	loss*|burst) echo "2 $_rt" ;;
	reorder25) echo "1 out_of_sequence+duplicate_request+naks_sent" ;;
	dup5) echo "1 duplicate_request" ;;
	corrupt1) echo "0 rx_icrc_errors" ;;
	down5) echo "2 local_ack_timeout_err" ;;
	ecn) echo "2 rp_cnp_handled" ;;
	*) echo "" ;;
	esac
}

# c_retry_exc: the client's qhca-verify failed with retry-exceeded (12)
# between 0.45 and 2 s after its QP's last completion
c_retry_exc() {
	_l=$(grep -m 1 'status .*(12).*after the QP' /tmp/down5def.out)
	echo "${_l:-no retry-exceeded completion; the output:}"
	[ -n "$_l" ] || { tail -n 5 /tmp/down5def.out; return 1; }
	_g=$(echo "$_l" | sed -n 's/.*, \([0-9.]*\) s after the QP.*/\1/p')
	echo "after ${_g:-?} s (IBA: 0.537 s)"
	[ -n "$_g" ] && awk -v g="$_g" 'BEGIN { exit !(g >= 0.45 && g <= 2) }'
}

# down5def PORT: host 1's link down 5 s under QPs with qhca-verify's
# default timeout and retry count; guest 1 serves, guest 2's QPs fail
down5def() {
	if [ "$QHCA_ID" = 1 ]; then
		qhca_timeout 60 "$PAIR_VERIFY" -d "$PAIR_DEV" -g "$PAIR_GIDX" -p "$1" \
			>/tmp/down5def.srv 2>&1 &
		_sp=$!
	fi
	sync_all
	if [ "$QHCA_ID" = 1 ]; then
		( sleep 4; echo "QHCA-FABRIC host=1 down=1" >/dev/console;
			sleep 5; echo "QHCA-FABRIC host=1 down=0" >/dev/console ) </dev/null >/dev/null 2>&1
		kill "$_sp" 2>/dev/null
		wait "$_sp" 2>/dev/null
	else
		sleep 1
		qhca_timeout 60 "$PAIR_VERIFY" -d "$PAIR_DEV" -g "$PAIR_GIDX" -p "$1" -q 4 -t 12 \
			-S 1,8,1000,4096,65536 "$(pair_ip 1)" >/tmp/down5def.out 2>&1
		check "fabric down5def (host 1's link down 5 s, qhca-verify -q 4 -t 12 with the default timeout and retries): the QPs end in retry-exceeded at the IBA's time" \
			c_retry_exc 30
		echo "# fabric down5def: $(grep -m 1 'after the QP' /tmp/down5def.out)"
	fi
}

for ph in $PHASES; do
	keys=$(phase_keys "$ph") || { not_ok "fabric: phase $ph" "unknown phase"; continue; }
	[ "$QHCA_ID" = 1 ] && { echo "QHCA-FABRIC host=all clear" >/dev/console; \
		[ "$keys" = clear ] || echo "QHCA-FABRIC host=all $keys" >/dev/console; sleep 2; }
	sync_all
	snap
	port=$((port + 1))
	if [ "$ph" = down5def ]; then
		down5def "$port"
	elif [ "$ph" = down5 ]; then
		[ "$QHCA_ID" = 1 ] && ( sleep 4; echo "QHCA-FABRIC host=1 down=1" >/dev/console;
			sleep 5; echo "QHCA-FABRIC host=1 down=0" >/dev/console ) </dev/null >/dev/null 2>&1 &
		vcheck "fabric $ph (host 1's link down 5 s): qhca-verify -q 4 -t 12 -A 18 -R 7, every byte and completion" \
			1 2 600 "$port" "\$PAIR_GIDX" "-q 4 -t 12 -A 18 -R 7 -S 1,8,1000,4096,65536"
	else
		vcheck "fabric $ph ($keys): qhca-verify ${VOPTS%% -S*}, every byte and completion" \
			1 2 600 "$port" "\$PAIR_GIDX" "$VOPTS"
	fi
	case $ph in
	rtt*) RTT_WANT=${ph#rtt}
		[ "$QHCA_ID" = 2 ] && check "fabric $ph: ping's round trip to guest 1 is at least $RTT_WANT ms" \
			c_rtt 30 ;;
	esac
	w=$(phase_want "$ph")
	if [ -n "$w" ]; then
		g=${w%% *} WANT=${w#* } NEVER="retry_exceeded_err"
		# 0: the sum over both guests (a corrupted frame may hit either)
		if [ "$g" = 0 ]; then
			_m=0
			for _c in $(echo "$WANT" | tr '+' ' '); do _m=$((_m + $(moved "$_c"))); done
			[ "$QHCA_ID" = 1 ] && pair_send "$(pair_ip 2)" fabric "phase$ph" "$_m"
			if [ "$QHCA_ID" = 2 ]; then
				_o=$(pair_wait "$(pair_ip 1)" fabric "phase$ph" 30 | awk '{ print $2 }')
				WANT_SUM=$((_m + ${_o:-0}))
				c_sum() { echo "$WANT moved $WANT_SUM on both guests"; [ "$WANT_SUM" -gt 0 ]; }
				check "fabric $ph: the devices counted it ($WANT, both guests)" c_sum
			fi
		elif [ "$QHCA_ID" = "$g" ]; then
			check "fabric $ph: the device counted it ($WANT moved; retry_exceeded_err did not)" c_moved
		fi
	fi
	sync_all
done
[ "$QHCA_ID" = 1 ] && echo "QHCA-FABRIC host=all clear" >/dev/console
pair_notes
pair_stop_mailbox
checks_done
