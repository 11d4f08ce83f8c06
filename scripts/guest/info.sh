#!/bin/sh
# Default run script: show what the guest has (network, modules, RDMA).
echo "== guest $QHCA_ID ($QHCA_ROLE) ip $QHCA_IP peers: ${QHCA_PEERS:-none}"
cat /etc/qhca-image
[ -s /run/qhca-init-problems ] && echo "init problems: $(cat /run/qhca-init-problems)"
echo "== ip addr"; ip -br addr
echo "== lsmod"; lsmod | cut -c1-60
echo "== rdma link"; rdma link
echo "== ibv_devinfo"; ibv_devinfo
exit 0
