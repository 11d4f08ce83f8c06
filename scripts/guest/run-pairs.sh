#!/bin/sh
# Run script for N guests on one segment (part three of scripts/test.d/guest):
#   scripts/launch -n 3 --run scripts/guest/run-pairs.sh
# RDMA between every pair of guests (i < j: guest i serves, guest j
# connects): the verifying workload qhca-verify (every byte and completion
# of RC WRITE, READ, SEND, SEND/WRITE with immediate and atomics checked),
# ibv_rc_pingpong (-c: one byte per page) and rping (rdma_cm). Each guest
# reports the checks it takes part in.
. /usr/lib/qhca/lib.sh
qhca_pair_start --dev --mailbox
echo "# pairs: device $PAIR_DEV, RoCE v2 GID index $PAIR_GIDX"
port=18900
step=0
# every guest waits here after each pair (the others are idle meanwhile)
sync_all() {
	step=$((step + 1))
	qhca_barrier $((7120 + step)) 400 || echo "# barrier $step failed"
}
i=1
while [ $i -lt "$QHCA_N" ]; do
	j=$((i + 1))
	while [ $j -le "$QHCA_N" ]; do
		port=$((port + 1))
		vcheck "guest$i <-> guest$j: qhca-verify -q 4 -n 30 (1 B to 64 KiB, all six operations)" \
			"$i" "$j" 120 "$port" "\$PAIR_GIDX" "-q 4 -n 30 -S 1,8,1000,4096,65536,r70000"
		port=$((port + 1))
		_o="-d \$PAIR_DEV -i 1 -g \$PAIR_GIDX -p $port -s 4096 -n 20 -c"
		pcheck "guest$i <-> guest$j: ibv_rc_pingpong -s 4096 -n 20 -c" "$i" "$j" 90 "tcp:$port" \
			"ibv_rc_pingpong $_o" "ibv_rc_pingpong $_o \$SRV" v_pingpong
		port=$((port + 1))
		pcheck "guest$i <-> guest$j: rping -C 10 -S 1024 -V" "$i" "$j" 90 "cm:$port" \
			"rping -s -a \$SRV -p $port -C 10 -S 1024 -V" \
			"rping -c -a \$SRV -p $port -C 10 -S 1024 -V -v" \
			"v_rping 10"
		sync_all
		j=$((j + 1))
	done
	i=$((i + 1))
done
pair_notes
pair_stop_mailbox
checks_done
