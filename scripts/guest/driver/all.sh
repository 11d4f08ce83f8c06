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
# prefixed with the test's name; exits 1 if any failed.
. /usr/lib/qhca/lib.sh
DIR=$(dirname "$0")
FAILED=0
for t in smoke caps events rdmacm verbs ktest loadloop deadtest; do
	if [ ! -f "$DIR/$t.sh" ]; then
		echo "not ok - $t: $DIR/$t.sh missing"
		FAILED=$((FAILED + 1))
		continue
	fi
	sh "$DIR/$t.sh" >/tmp/all.$t 2>&1
	rc=$?
	sed "s/^\(\(not \)\{0,1\}ok - \)/\1$t: /" /tmp/all.$t
	[ $rc -eq 0 ] || { echo "# $t.sh exit $rc"; FAILED=$((FAILED + 1)); }
	# the peer may still be in the same test: meet before the next
	[ -n "$QHCA_PEERS" ] && qhca_barrier 7190 600 >/dev/null 2>&1
done
echo "# tests done, $FAILED failed"
[ "$FAILED" -eq 0 ]
