// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host check for the provider module: load it the way libibverbs does
 * (dlopen), but with RTLD_NOW so that any symbol the module needs and
 * libibverbs/libc do not provide fails the load, then check what
 * PROVIDER_DRIVER() exported.  No device is needed.
 *
 *   dlopen-check path/to/libqhca-rdmav34.so
 *
 * Prints TAP: "ok - name" / "not ok - name"; exits non-zero on failure.
 */

#include <config.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/driver.h>

#include "qhca_hw.h"
#include "qhca-abi.h"

static int test_no;
static int failed;

static bool check(bool cond, const char *name)
{
	test_no++;
	printf("%sok - %s\n", cond ? "" : "not ", name);
	if (!cond)
		failed++;
	return cond;
}

static bool has_pci_match(const struct verbs_match_ent *ent)
{
	for (; ent->kind != VERBS_MATCH_SENTINEL; ent++)
		if (ent->kind == VERBS_MATCH_PCI &&
		    ent->vendor == QHCA_PCI_VENDOR_ID &&
		    ent->device == QHCA_PCI_DEVICE_ID)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const struct verbs_device_ops *ops;
	void *handle;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROVIDER.so\n", argv[0]);
		return 2;
	}

	printf("1..5\n");

	handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!check(handle, "dlopen with RTLD_NOW resolves every symbol")) {
		printf("# %s\n", dlerror());
		return 1;
	}

	ops = dlsym(handle, "verbs_provider_qhca");
	if (!check(ops, "verbs_provider_qhca is exported"))
		return 1;

	check(ops->name && strcmp(ops->name, "qhca") == 0,
	      "provider is named qhca");
	check(ops->match_min_abi_version == QHCA_UVERBS_ABI_VERSION &&
	      ops->match_max_abi_version == QHCA_UVERBS_ABI_VERSION,
	      "matches uverbs ABI version QHCA_UVERBS_ABI_VERSION only");
	check(ops->match_table && has_pci_match(ops->match_table) &&
	      ops->alloc_device && ops->uninit_device && ops->alloc_context,
	      "matches the qhca PCI ID and has device/context ops");

	dlclose(handle);
	return failed ? 1 : 0;
}
