#!/bin/sh
# Run script: the verbs checks alone (checks-verbs.sh), e.g. between
# two Soft-RoCE guests to validate the harness:
#   scripts/launch --rxe 1,2 --run scripts/guest/run-verbs.sh
# (scripts/test.d/rxe). Helpers are taken from /qhca/ when the launcher
# added them there (--add), else from the image's /usr/lib/qhca/.
. /usr/lib/qhca/lib.sh
_rd=/usr/lib/qhca
[ -f /qhca/checks-verbs.sh ] && _rd=/qhca
echo "# guest $QHCA_ID ($QHCA_ROLE) $QHCA_IP, peers ${QHCA_PEERS:-none}"
# shellcheck source=scripts/guest/checks-verbs.sh
. "$_rd/checks-verbs.sh"
pair_stop_mailbox
echo "# checks done: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
