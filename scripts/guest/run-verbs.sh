#!/bin/sh
# Run script: the verbs checks alone (checks-verbs.sh), e.g. between
# two Soft-RoCE guests to validate the harness:
#   scripts/launch --rxe 1,2 --run scripts/guest/run-verbs.sh
# (scripts/test.d/rxe). Helpers are taken from /qhca/ when the launcher
# added them there (--add), else from the image's /usr/lib/qhca/.
. /usr/lib/qhca/lib.sh
qhca_pair_start
# shellcheck source=scripts/guest/checks-verbs.sh
. "$(qhca_helper checks-verbs.sh)"
pair_stop_mailbox
checks_done
