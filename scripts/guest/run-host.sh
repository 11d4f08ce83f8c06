#!/bin/sh
# Run script of the host group (scripts/test.d/host): two guests whose QEMU
# is the packaged qemu-system-x86_64-qhca running inside a fresh Debian host
# root. Guest 1 serves, guest 2 connects: qhca-verify (every byte and every
# completion of RC WRITE read back, READ, SEND, SEND/WRITE with immediate
# and atomics, 1 B to 64 KiB on 4 QPs), ibv_rc_pingpong -c (RC SEND/RECV)
# and rping -V (rdma_cm, RDMA READ and WRITE, every payload validated).
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# host: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
vcheck "qhca-verify -q 4 -n 30 (1 B to 64 KiB, all six operations)" \
	1 2 180 18601 "\$PAIR_GIDX" "-q 4 -n 30 -S 1,8,1000,4096,65536,r70000"
_o="-d \$PAIR_DEV -i 1 -g \$PAIR_GIDX -p 18602 -s 65536 -n 20 -c"
pcheck "ibv_rc_pingpong -s 65536 -n 20 -c" 1 2 120 tcp:18602 \
	"ibv_rc_pingpong $_o" "ibv_rc_pingpong $_o \$SRV" v_pingpong
pcheck "rping -C 20 -S 4096 -V" 1 2 120 cm:7174 \
	"rping -s -a \$SRV -p 7174 -C 20 -S 4096 -V" \
	"rping -c -a \$SRV -p 7174 -C 20 -S 4096 -V -v" "v_rping 20"
pair_notes
pair_stop_mailbox
checks_done
