#!/bin/sh
# Run script: the loopback checks alone (loopback.sh), in one guest or
# more (each on its own):
#   scripts/launch -n 1 --run scripts/guest/run-loopback.sh \
#       --add scripts/guest/pair.sh --add scripts/guest/loopback.sh
# (add --rxe all for Soft-RoCE). Helpers are taken from /qhca/ when the
# launcher added them there (--add), else from the image's /usr/lib/qhca/.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev
echo "# guest $QHCA_ID $QHCA_IP: loopback on $PAIR_DEV"
# shellcheck source=scripts/guest/loopback.sh
. "$(qhca_helper loopback.sh)"
pair_notes
checks_done
