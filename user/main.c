/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof: the command line, one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"

static const struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "record", cmd_record, "sample stacks into a profile file" },
	{ "agent", cmd_agent, "profile the whole system until stopped: windows kept and pushed to a server" },
	{ "report", cmd_report, "where the samples were: shares per command, module and symbol" },
	{ "script", cmd_script, "every sample and its stack, in the text of perf script" },
	{ "export", cmd_export, "the profile for other tools: markup, collapsed, pprof, svg" },
	{ "diff", cmd_diff, "compare two profiles: per-symbol baseline and delta, as perf diff" },
	{ "import", cmd_import, "make a profile from another tool's trace: xray" },
	{ "archive", cmd_archive, "pack a profile with the binaries its frames need, for another machine" },
	{ "buildid-list", cmd_buildid_list, "the build IDs of the modules a profile's samples hit" },
	{ "symbolize", cmd_symbolize, "replace symbolizer markup in text with names: a filter, as llvm-symbolizer --filter-markup" },
	{ "dump", cmd_dump, "print every record of a profile file" },
	{ "xray", cmd_xray, "look into an XRay trace: dump" },
	{ "sframe", cmd_sframe, "print the SFrame tables of an ELF file" },
	{ "cbf", cmd_cbf, "decode or encode a Compact Backtrace Format stack" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: sfprof COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-12s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nsfprof COMMAND --help for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name)) {
			sfprof_command_set(cmds[i].name);
			return cmds[i].run(argc - 1, argv + 1);
		}
	fprintf(stderr, "sfprof: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
