#!/bin/sh
# Run script for the wire capture check (part wire of scripts/test.d/guest):
# two qhca guests, guest 1's RDMA netdev captured by the launcher
# (--capture); one pair check runs wire-traffic.sh (SEND, WRITE, READ and
# both atomics at once). The host then runs scripts/pcap-check on the
# capture.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# wire: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
pcheck "wire traffic: send/write/read 16 KiB, CMP_SWAP, FETCH_ADD (5 perftests at once)" \
	1 2 180 tcp:18701,18702,18703,18704,18705 \
	"/usr/bin/dash $QHCA_HELPERS/wire-traffic.sh server" \
	"/usr/bin/dash $QHCA_HELPERS/wire-traffic.sh client \$SRV"
pair_stop_mailbox
checks_done
