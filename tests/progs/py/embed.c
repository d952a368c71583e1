// SPDX-License-Identifier: BSD-2-Clause
/*
 * An embedding program that loads an interpreter with dlopen(3), well after
 * it started: usage: embed LIBPYTHON SCRIPT [ARG]. Runs SCRIPT with ARG as
 * sys.argv[1], as `python SCRIPT ARG` would; no Python header needed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	void (*initialize)(void), (*finalize)(void);
	int (*run)(const char *);
	char code[4096];
	struct timespec t = { 0, 50 * 1000 * 1000 };
	void *lib;

	if (argc < 3) {
		fprintf(stderr, "usage: embed LIBPYTHON SCRIPT [ARG]\n");
		return 2;
	}
	nanosleep(&t, NULL);	/* mapped after the start: found by the mapping event */
	lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "embed: %s\n", dlerror());
		return 1;
	}
	initialize = (void (*)(void))dlsym(lib, "Py_Initialize");
	finalize = (void (*)(void))dlsym(lib, "Py_Finalize");
	run = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
	if (!initialize || !finalize || !run)
		return 1;
	initialize();
	snprintf(code, sizeof(code),
		 "import sys, runpy\nsys.argv = [%s%s%s, %s%s%s]\n"
		 "runpy.run_path(sys.argv[0], run_name='__main__')\n",
		 "'", argv[2], "'", "'", argc > 3 ? argv[3] : "0.1", "'");
	if (run(code))
		return 1;
	finalize();
	return 0;
}
