// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rn_shim_loader PLUGIN: dlopen a plugin locally and run it, as UCX does. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int (*run)(void);
	void *plugin;

	if (argc != 2) {
		fprintf(stderr, "usage: rn_shim_loader PLUGIN\n");
		return 2;
	}
	plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!plugin) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	run = (int (*)(void))dlsym(plugin, "plugin_run");
	if (!run) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 2;
	}
	return run();
}
