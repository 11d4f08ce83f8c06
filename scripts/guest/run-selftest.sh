#!/bin/sh
# Run script: self-test of the pair-check harness (pair.sh) itself, on two
# guests (scripts/test.d/rxe runs it): each failure mode must be reported as
# a failure, on both guests, within seconds rather than at a timeout. The
# programs are stand-ins (nc, sleep, false), no RDMA device is needed.
# Every check here asserts that an inner pair check FAILED (or passed) as
# it must and that it took no longer than it should.
. /usr/lib/qhca/lib.sh
qhca_pair_start --mailbox
PAIR_READY_TIMEOUT=8

# expect NAME WANT(ok|fail) MAX_SECONDS READY SRV_CMD CLI_CMD [VERIFY]
expect() {
	E_NAME=$1 E_WANT=$2 E_MAX=$3 E_READY=$4 E_S=$5 E_C=$6 E_V=${7:-}
	check "harness: $E_NAME: reported $E_WANT within ${E_MAX}s" _expect_fn 120
}
_expect_fn() {
	_t0=$(qhca_now)
	if pair_test "$E_NAME" 1 2 60 "$E_READY" "$E_S" "$E_C" "$E_V" >"$PAIR_DIR/inner" 2>&1; then _got=ok; else _got=fail; fi
	_dt=$(($(qhca_now) - _t0))
	echo "inner result: $_got after ${_dt}s"
	sed 's/^/  /' "$PAIR_DIR/inner"
	[ "$_got" = "$E_WANT" ] && [ "$_dt" -le "$E_MAX" ]
}

expect "both programs succeed" ok 15 tcp:18991 \
	"nc -l -p 18991 </dev/null" "echo hi | nc -w 2 \$SRV 18991"
expect "server fails before it listens" fail 15 tcp:18992 \
	"false" "sleep 100"
expect "server never listens" fail 25 tcp:18993 \
	"sleep 100" "sleep 100"
expect "client fails at once (server waits forever)" fail 20 tcp:18994 \
	"nc -l -p 18994 </dev/null; sleep 100" "false"
expect "server dies after READY (client waits forever)" fail 25 tcp:18995 \
	"nc -l -p 18995 </dev/null & sleep 3; exit 3" "sleep 100"
expect "client connects before the server listens (retried)" ok 20 sleep:0 \
	"sleep 3; nc -l -p 18996 </dev/null" "echo hi | nc -w 2 \$SRV 18996 || { echo Connection refused; exit 1; }"
# shellcheck disable=SC2016
expect "the client's output fails verification" fail 15 tcp:18997 \
	"nc -l -p 18997 </dev/null" "echo hi | nc -w 2 \$SRV 18997" \
	'[ "$ROLE" = server ] || { echo "bad data"; false; }'
# A known tool crash (a fault in librdmacm, faked here through /dev/kmsg)
# is retried once, and only once.
FAKE="echo 'traps: fake[1] general protection fault ip:0 sp:0 error:0 in librdmacm.so.1.3.56.1[0,0+0]' >/dev/kmsg"
expect "a known tool crash is retried once" ok 30 tcp:18998 \
	"nc -l -p 18998 </dev/null" \
	"if [ ! -f /tmp/pair/faked ]; then : >/tmp/pair/faked; $FAKE; exit 1; fi; echo hi | nc -w 2 \$SRV 18998"
expect "a known tool crash twice fails" fail 30 tcp:18999 \
	"nc -l -p 18999 </dev/null" "$FAKE; exit 1"
pair_stop_mailbox
checks_done
