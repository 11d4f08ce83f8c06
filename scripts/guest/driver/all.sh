#!/bin/sh
# Every driver test, in both guests of one boot (guest-driver/README.md;
# scripts/test.d/driver runs it):
#
#   scripts/launch -n 2 --timeout 1500 --run scripts/guest/driver/all.sh \
#       $(for f in scripts/guest/driver/*.sh; do echo --add $f; done) \
#       --add build/guest-driver/ktest/qhca_ktest.ko \
#       --add build/guest-driver/qhca-uverbs-smoke \
#       --add build/guest-driver/qhca-verbs-caps
#
# Runs smoke.sh, caps.sh, events.sh, rdmacm.sh, verbs.sh, ktest.sh, loadloop.sh and
# deadtest.sh from the directory of this script, each line of theirs
# prefixed with the test's name, counted by lib.sh's counters; ends with
# "# tests done: P passed, F failed" (scripts/test.d/driver waits for it)
# and exits 1 if any case failed or a test exited non-zero.
. /usr/lib/qhca/lib.sh
DIR=$(dirname "$0")
for t in smoke caps events rdmacm verbs ktest loadloop deadtest; do
	if [ ! -f "$DIR/$t.sh" ]; then
		not_ok "$t: $DIR/$t.sh missing"
		continue
	fi
	sh "$DIR/$t.sh" >/tmp/all.$t 2>&1
	rc=$?
	sed "s/^\(\(not \)\{0,1\}ok - \)/\1$t: /" /tmp/all.$t
	nf=$(grep -c '^not ok - ' /tmp/all.$t)
	PASSED=$((PASSED + $(grep -c '^ok - ' /tmp/all.$t)))
	FAILED=$((FAILED + nf))
	if [ $rc -ne 0 ]; then
		echo "# $t.sh exit $rc"
		# a failure no case line stands for still fails the run
		[ "$nf" -gt 0 ] || FAILED=$((FAILED + 1))
	fi
	# the peer may still be in the same test: meet before the next
	[ -n "$QHCA_PEERS" ] && qhca_barrier 7190 600 >/dev/null 2>&1
done
checks_done tests
