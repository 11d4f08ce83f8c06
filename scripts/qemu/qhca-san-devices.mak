# Devices of build/qemu-san (scripts/build qemu-san), configured with
# --without-default-devices: what the qhca qtests and QEMU's generic-fuzz
# for qhca put on the command line, and what those select in Kconfig.
# The full device set is build/qemu's; this one keeps the sanitizer build
# (clang, ASan, UBSan, libFuzzer: about three times the work of build/qemu)
# short from a cold cache.  A qtest that needs another device adds it here:
# scripts/test qtest-san fails when a qtest lists fewer cases against
# build/qemu-san than against build/qemu.
CONFIG_Q35=y
# the qos-graph qtests (qhca-test) run on the pc machine
CONFIG_I440FX=y
CONFIG_PCIE_PORT=y
CONFIG_XIO3130=y
CONFIG_PCIE_PCI_BRIDGE=y
# pcie-pci-bridge calls pci_bridge_dev_plug_cb() and friends of
# pci_bridge_dev.c, which its Kconfig entry does not select (QEMU 10.0)
CONFIG_PCI_BRIDGE=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
# the NIC of qhca-port-test's steering captures
CONFIG_RTL8139_PCI=y
CONFIG_QHCA=y
