#!/bin/sh
# Run script for four guests on a simulated fabric (part "fabric-incast" of
# scripts/test.d/guest, in the on-demand group "fabric"):
#   scripts/launch -n 4 --fabric hosts=4,rate=100m,limit=256k,ecn=32k \
#       --run scripts/guest/run-incast.sh --add build/guest-driver/qhca-verify
# 3-to-1 incast: guest 1 serves guests 2, 3 and 4 at once, each on a host
# of its own, so that the three streams meet at the switch's port to guest
# 1's host. Every client runs the verifying workload for QHCA_INCAST_SECONDS
# (default 15) with WRITE-heavy sizes, every byte and every completion
# checked on both sides; each client prints its rate on a line
# "# incast-result: ID MB/s" for the host, which computes Jain's index.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
SECS=${QHCA_INCAST_SECONDS:-15}
port=19500
echo "# incast: device $PAIR_DEV, GID index $PAIR_GIDX, $SECS s"
if [ "$QHCA_ID" = 1 ]; then
	for c in 2 3 4; do
		qhca_timeout $((SECS + 120)) "$PAIR_VERIFY" -d "$PAIR_DEV" -g "$PAIR_GIDX" \
			-p $((port + c)) >/tmp/incast.srv$c 2>&1 &
		eval "srv$c=\$!"
	done
fi
qhca_barrier 7601 300 || echo "# barrier 1 failed"
if [ "$QHCA_ID" = 1 ]; then
	for c in 2 3 4; do
		eval "wait \$srv$c"
		_rc=$?
		_v=$(grep '^verify: ' /tmp/incast.srv$c | tail -n 1)
		case $_v in
		"verify: all ok "*)
			ok "incast: the server of guest $c's stream: every request checked" ;;
		*)
			not_ok "incast: the server of guest $c's stream: every request checked" \
				"exit $_rc" "$(tail -n 6 /tmp/incast.srv$c)" ;;
		esac
	done
else
	sleep 1
	qhca_timeout $((SECS + 120)) "$PAIR_VERIFY" -d "$PAIR_DEV" -g "$PAIR_GIDX" \
		-p $((port + QHCA_ID)) -q 2 -t "$SECS" -S 4096,65536,r70000 "$(pair_ip 1)" \
		>/tmp/incast.out 2>&1
	_rc=$?
	_v=$(grep '^verify: ' /tmp/incast.out | tail -n 1)
	case $_v in
	"verify: all ok "*)
		ok "incast: guest $QHCA_ID -> guest 1 with two others at once: qhca-verify -q 2 -t $SECS, every byte and completion"
		echo "# incast-result: $QHCA_ID $(echo "$_v" | sed -n 's/.* MB\/s=\([0-9.]*\).*/\1/p')"
		echo "# incast: guest $QHCA_ID: ${_v#verify: all ok }" ;;
	*)
		not_ok "incast: guest $QHCA_ID -> guest 1 with two others at once: qhca-verify -q 2 -t $SECS, every byte and completion" \
			"exit $_rc" "$(grep '^not ok\|^# error' /tmp/incast.out | head -n 6)" \
			"$(tail -n 4 /tmp/incast.out)" ;;
	esac
fi
qhca_barrier 7602 300 || echo "# barrier 2 failed"
pair_stop_mailbox
checks_done
