#!/bin/sh
# Run script: the loopback checks alone (loopback.sh), in one guest or
# more (each on its own):
#   scripts/launch -n 1 --run scripts/guest/run-loopback.sh \
#       --add scripts/guest/pair.sh --add scripts/guest/loopback.sh
# (add --rxe all for Soft-RoCE). Helpers are taken from /qhca/ when the
# launcher added them there (--add), else from the image's /usr/lib/qhca/.
. /usr/lib/qhca/lib.sh
_vd=/usr/lib/qhca
[ -f /qhca/pair.sh ] && _vd=/qhca
# shellcheck source=scripts/guest/pair.sh
. "$_vd/pair.sh"
pair_setup_dev
mkdir -p "$PAIR_DIR"
echo "# guest $QHCA_ID $QHCA_IP: loopback on $PAIR_DEV"
_lb=$_vd/loopback.sh
[ -f "$_lb" ] || _lb=/usr/lib/qhca/loopback.sh
# shellcheck source=scripts/guest/loopback.sh
. "$_lb"
pair_notes
echo "# checks done: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
