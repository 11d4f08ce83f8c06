// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host check for the provider module: load it the way libibverbs does
 * (dlopen), but with RTLD_NOW so that any symbol the module needs and
 * libibverbs/libc do not provide fails the load, then check what
 * PROVIDER_DRIVER() exported.  No device is needed.
 *
 *   dlopen-check path/to/libqhca-rdmav34.so [GTEST-OPTIONS]
 *
 * A GLib test program (g_test, run with --tap by meson test): one case,
 * each check in it named (tests/unit/unit-check.h).
 */

#include <config.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/driver.h>

#include "qhca_hw.h"
#include "qhca-abi.h"
#include "unit-check.h"

#define check(cond, name) unit_check(cond, "%s", name)

static const char *provider_path;

static bool has_pci_match(const struct verbs_match_ent *ent)
{
	for (; ent->kind != VERBS_MATCH_SENTINEL; ent++)
		if (ent->kind == VERBS_MATCH_PCI &&
		    ent->vendor == QHCA_PCI_VENDOR_ID &&
		    ent->device == QHCA_PCI_DEVICE_ID)
			return true;
	return false;
}

static void test_dlopen(void)
{
	const struct verbs_device_ops *ops;
	void *handle;

	handle = dlopen(provider_path, RTLD_NOW | RTLD_LOCAL);
	if (!check(handle, "dlopen with RTLD_NOW resolves every symbol")) {
		printf("# %s\n", dlerror());
		return;
	}

	ops = dlsym(handle, "verbs_provider_qhca");
	if (check(ops, "verbs_provider_qhca is exported")) {
		check(ops->name && strcmp(ops->name, "qhca") == 0,
		      "provider is named qhca");
		check(ops->match_min_abi_version == QHCA_UVERBS_ABI_VERSION &&
		      ops->match_max_abi_version == QHCA_UVERBS_ABI_VERSION,
		      "matches uverbs ABI version QHCA_UVERBS_ABI_VERSION only");
		check(ops->match_table && has_pci_match(ops->match_table) &&
		      ops->alloc_device && ops->uninit_device &&
		      ops->alloc_context,
		      "matches the qhca PCI ID and has device/context ops");
	}
	dlclose(handle);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	if (argc != 2) {
		fprintf(stderr, "usage: %s PROVIDER.so [GTEST-OPTIONS]\n",
			argv[0]);
		return 2;
	}
	provider_path = argv[1];
	g_test_add_func("/provider/dlopen", test_dlopen);
	return g_test_run();
}
