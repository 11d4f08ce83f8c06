#!/bin/sh
# The kernel verbs self-test between two guests, run inside both
# (scripts/launch -n 2 --add build/guest-driver/ktest/qhca_ktest.ko):
# guest 1 loads qhca_ktest.ko as the server, guest 2 as the client.  See
# ktest/qhca_ktest.c for what it covers.  The module's
# "qhca_ktest: ok/not ok - NAME" lines are printed as the checks.
. /usr/lib/qhca/lib.sh

KO=/qhca/qhca_ktest.ko
[ -f "$KO" ] || { not_ok "qhca_ktest.ko in /qhca (launch --add it)"; exit 1; }
BEFORE=$(qhca_dmesg_lines)
qhca_barrier 7141 120 || { not_ok barrier; exit 1; }
if [ "$QHCA_ROLE" = server ]; then
	insmod "$KO" role=server
else
	sleep 3	# the server listens first
	insmod "$KO" role=client peer="$QHCA_PEER_IP"
fi
rc=$?
qhca_dmesg_after "$BEFORE" >/tmp/ktest.dmesg
sed -n 's/.*qhca_ktest: \(\(not \)\{0,1\}ok - .*\)/\1/p' /tmp/ktest.dmesg
if [ $rc -eq 0 ]; then
	ok "qhca_ktest $QHCA_ROLE passed"
	rmmod qhca_ktest
else
	not_ok "qhca_ktest $QHCA_ROLE (insmod exit $rc)" "$(grep -E 'qhca' /tmp/ktest.dmesg | tail -n 15)"
fi
qhca_dmesg_since "$BEFORE" 'WARNING:|BUG:|Oops|Call Trace|refcount_t:|general protection' \
	"no kernel warnings"
[ "$FAILED" -eq 0 ]
