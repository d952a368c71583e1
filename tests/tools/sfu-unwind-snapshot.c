/* SPDX-License-Identifier: BSD-2-Clause */
/* sfu-unwind-snapshot: unwind a self-unwind snapshot (tests/progs/snapshot.h) with libsfunwind. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind.h"
#include "../progs/read_whole.h"

#define SNAP_MAGIC "SFUSNAP1"
#define MAX_NAMES 256

static const char *prog = "sfu-unwind-snapshot";

struct snapshot {
	uint8_t *file;		/* the whole file; the fields below point into it */
	size_t file_len;
	uint32_t arch;
	struct sfu_regs regs;
	struct sfu_snapshot stack;
	const char *maps;
	size_t maps_len;
	const char *chain;	/* NUL-separated names */
	size_t chain_len;
};

struct cursor {
	const uint8_t *p;
	size_t left;
};

static int take(struct cursor *c, size_t len, const uint8_t **out)
{
	if (len > c->left)
		return -EBADMSG;
	*out = c->p;
	c->p += len;
	c->left -= len;
	return 0;
}

static int take_u32(struct cursor *c, uint32_t *v)
{
	const uint8_t *b;

	if (take(c, 4, &b))
		return -EBADMSG;
	*v = 0;
	for (int i = 3; i >= 0; i--)
		*v = *v << 8 | b[i];
	return 0;
}

static int take_u64(struct cursor *c, uint64_t *v)
{
	const uint8_t *b;

	if (take(c, 8, &b))
		return -EBADMSG;
	*v = 0;
	for (int i = 7; i >= 0; i--)
		*v = *v << 8 | b[i];
	return 0;
}


/* Parse the format documented in tests/progs/snapshot.h; @why says what is wrong. */
static int parse_snapshot(struct snapshot *s, const char **why)
{
	struct cursor c = { s->file, s->file_len };
	const uint8_t *b;
	uint64_t base, len;

	*why = "truncated header";
	if (take(&c, 8, &b))
		return -EBADMSG;
	if (memcmp(b, SNAP_MAGIC, 8)) {
		*why = "bad magic (not an SFUSNAP1 file)";
		return -EBADMSG;
	}
	if (take_u32(&c, &s->arch) || take_u64(&c, &s->regs.pc) || take_u64(&c, &s->regs.sp) ||
	    take_u64(&c, &s->regs.fp) || take_u64(&c, &s->regs.lr) || take_u64(&c, &base) ||
	    take_u64(&c, &len))
		return -EBADMSG;
	if (s->arch != SFU_ARCH_X86_64 && s->arch != SFU_ARCH_AARCH64) {
		*why = "unknown arch";
		return -EBADMSG;
	}
	*why = "stack length past the end of the file";
	if (take(&c, len, &b))
		return -EBADMSG;
	s->stack = (struct sfu_snapshot){ base, b, len };

	*why = "maps length past the end of the file";
	if (take_u64(&c, &len) || take(&c, len, &b))
		return -EBADMSG;
	s->maps = (const char *)b;
	s->maps_len = len;

	*why = "chain length past the end of the file";
	if (take_u64(&c, &len) || take(&c, len, &b))
		return -EBADMSG;
	s->chain = (const char *)b;
	s->chain_len = len;
	if (len && b[len - 1] != '\0') {
		*why = "chain not NUL-terminated";
		return -EBADMSG;
	}
	if (c.left) {
		*why = "trailing bytes after the chain";
		return -EBADMSG;
	}
	return 0;
}

/* Split a comma-separated list in place. @return the number of names, or -E2BIG. */
static int split_list(char *list, const char **names, int max)
{
	int n = 0;

	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		if (n == max)
			return -E2BIG;
		names[n++] = tok;
	}
	return n;
}

static int recorded_list(const struct snapshot *s, const char **names, int max)
{
	int n = 0;

	for (size_t off = 0; off < s->chain_len; off += strlen(s->chain + off) + 1) {
		if (n == max)
			return -E2BIG;
		names[n++] = s->chain + off;
	}
	return n;
}

struct frame_info {
	const char *symbol;	/* "??" when unknown */
	uint64_t offset;
	const char *module;	/* basename, "?" when no module */
	int has_symbol;
};

static void describe(const struct sfu_addrspace *as, const struct sfu_frame *f,
		     struct frame_info *fi)
{
	/* a return address may point past the end of its function (a noreturn call) */
	uint64_t lookup = f->kind == SFU_FRAME_RA && f->addr ? f->addr - 1 : f->addr;
	const struct sfu_mapping *m = sfu_addrspace__find(as, lookup);
	const char *slash;

	fi->symbol = "??";
	fi->offset = 0;
	fi->module = "?";
	fi->has_symbol = 0;
	if (!m)
		return;
	if (m->path) {
		slash = strrchr(m->path, '/');
		fi->module = slash ? slash + 1 : m->path;
	}
	if (m->module && !sfu_module__symbolize(m->module, lookup - m->bias, &fi->symbol,
						&fi->offset)) {
		fi->offset += f->addr - lookup;
		fi->has_symbol = 1;
	} else {
		fi->symbol = "??";
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [OPTIONS] SNAPSHOT\n"
		"\n"
		"Unwind a snapshot written by a test program (tests/progs/snapshot.h) and print\n"
		"one line per frame: #N 0xADDR kind source symbol+0xoff module, then the stop reason;\n"
		"an address no symbol covers prints as ??, outside any module as ?.\n"
		"\n"
		"  --expect a,b,c        the innermost frames' symbols must be exactly these\n"
		"  --expect-recorded     the same, with the chain recorded in the snapshot\n"
		"  --expect-source NAME  frames 1.. of the expected chain must come from NAME\n"
		"                        (sframe, eh_frame, fp)\n"
		"  --no-fp-fallback      do not walk frame pointers where no table covers\n"
		"  --pac-mask MASK       AArch64: bits to clear from signed return addresses\n"
		"  --max N               at most N frames (default 256)\n"
		"  --print-chain         print the recorded chain and exit\n"
		"\n"
		"Exit status: 0 ok, 1 an expectation failed, 2 bad usage or unreadable input.\n",
		prog);
}

static void print_mismatch(const struct sfu_frame *frames, const struct frame_info *info,
			   size_t count, const char **want, int nwant, int bad, const char *what)
{
	size_t rows = count > (size_t)nwant ? count : (size_t)nwant;

	fprintf(stderr, "%s: FAIL: %s at frame #%d\n", prog, what, bad);
	fprintf(stderr, "  %-4s %-36s %-36s %s\n", "", "expected", "got", "source");
	for (size_t i = 0; i < rows; i++) {
		const char *w = i < (size_t)nwant ? want[i] : "";
		const char *g = i < count ? info[i].symbol : "(no frame)";
		const char *src = i < count ? sfu_source_name(frames[i].source) : "";
		int differs = i < (size_t)nwant && (i >= count || strcmp(w, g));

		fprintf(stderr, "%s #%-3zu %-36s %-36s %s\n", differs || (int)i == bad ? ">" : " ", i,
			w, g, src);
	}
}

int main(int argc, char **argv)
{
	enum { OPT_EXPECT = 256, OPT_RECORDED, OPT_SOURCE, OPT_NO_FP, OPT_PAC, OPT_MAX, OPT_CHAIN };
	static const struct option longopts[] = {
		{ "expect", required_argument, NULL, OPT_EXPECT },
		{ "expect-recorded", no_argument, NULL, OPT_RECORDED },
		{ "expect-source", required_argument, NULL, OPT_SOURCE },
		{ "no-fp-fallback", no_argument, NULL, OPT_NO_FP },
		{ "pac-mask", required_argument, NULL, OPT_PAC },
		{ "max", required_argument, NULL, OPT_MAX },
		{ "print-chain", no_argument, NULL, OPT_CHAIN },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	SFU_OPTS(sfu_unwind_opts, opts);
	struct snapshot snap = { 0 };
	struct sfu_addrspace *as = NULL;
	struct sfu_frame *frames = NULL;
	struct frame_info *info = NULL;
	struct sfu_diag diag = { 0 };
	const char *want[MAX_NAMES];
	char *expect_arg = NULL;
	const char *expect_source = NULL, *why, *path;
	int expect_recorded = 0, print_chain = 0, nwant = -1, opt, stop, err, ret = 2;
	size_t max = 256, count = 0, nmaps;
	const struct sfu_mapping *maps;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_EXPECT:
			expect_arg = optarg;
			break;
		case OPT_RECORDED:
			expect_recorded = 1;
			break;
		case OPT_SOURCE:
			expect_source = optarg;
			break;
		case OPT_NO_FP:
			opts.no_fp_fallback = 1;
			break;
		case OPT_PAC:
			opts.pac_mask = strtoull(optarg, NULL, 0);
			break;
		case OPT_MAX:
			max = strtoul(optarg, NULL, 0);
			if (!max) {
				fprintf(stderr, "%s: --max needs a positive number\n", prog);
				return 2;
			}
			break;
		case OPT_CHAIN:
			print_chain = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || (expect_arg && expect_recorded)) {
		usage(stderr);
		return 2;
	}
	path = argv[optind];

	err = read_whole(path, (void **)&snap.file, &snap.file_len);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(-err));
		return 2;
	}
	if (parse_snapshot(&snap, &why)) {
		fprintf(stderr, "%s: %s: not a valid snapshot: %s\n", prog, path, why);
		goto out;
	}
	if (print_chain) {
		for (size_t off = 0; off < snap.chain_len; off += strlen(snap.chain + off) + 1)
			printf("%s%s", off ? "," : "", snap.chain + off);
		printf("\n");
		ret = 0;
		goto out;
	}
	if (expect_arg)
		nwant = split_list(expect_arg, want, MAX_NAMES);
	else if (expect_recorded)
		nwant = recorded_list(&snap, want, MAX_NAMES);
	if (nwant == -E2BIG) {
		fprintf(stderr, "%s: more than %d expected names\n", prog, MAX_NAMES);
		goto out;
	}
	if ((expect_arg || expect_recorded) && nwant == 0) {
		fprintf(stderr, "%s: %s: empty expectation\n", prog, path);
		goto out;
	}

	opts.arch = snap.arch;
	as = sfu_addrspace__new(NULL, NULL);
	if (!as) {
		fprintf(stderr, "%s: cannot create an address space: %s\n", prog, strerror(errno));
		goto out;
	}
	err = sfu_addrspace__load_maps(as, snap.maps, snap.maps_len, &diag);
	if (err) {
		fprintf(stderr, "%s: %s: recorded maps do not load: %s (%s)\n", prog, path,
			diag.reason[0] ? diag.reason : "no reason given", strerror(-err));
		goto out;
	}
	/* a file missing on this machine makes every frame in it unknown: say which */
	maps = sfu_addrspace__mappings(as, &nmaps);
	for (size_t i = 0; i < nmaps; i++)
		if (maps[i].path && maps[i].path[0] == '/' && !maps[i].module)
			fprintf(stderr, "%s: note: %s: mapping without a module (file unreadable?)\n",
				prog, maps[i].path);

	frames = calloc(max, sizeof(*frames));
	info = calloc(max, sizeof(*info));
	if (!frames || !info) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	stop = sfu_unwind(as, &opts, &snap.regs, sfu_snapshot_read, &snap.stack, frames, max,
			  &count);

	printf("snapshot %s: %s pc 0x%" PRIx64 " sp 0x%" PRIx64 " fp 0x%" PRIx64 " lr 0x%" PRIx64
	       " stack %zu bytes\n",
	       path, snap.arch == SFU_ARCH_AARCH64 ? "aarch64" : "x86-64", snap.regs.pc,
	       snap.regs.sp, snap.regs.fp, snap.regs.lr, snap.stack.size);
	for (size_t i = 0; i < count; i++) {
		char where[32] = "";

		describe(as, &frames[i], &info[i]);
		if (info[i].has_symbol)
			snprintf(where, sizeof(where), "+0x%" PRIx64, info[i].offset);
		printf("#%zu 0x%" PRIx64 " %s %s %s%s %s\n", i, frames[i].addr,
		       frames[i].kind == SFU_FRAME_PC ? "pc" : "ra",
		       sfu_source_name(frames[i].source), info[i].symbol, where, info[i].module);
	}
	printf("stop: %s\n", sfu_stop_name(stop));
	fflush(stdout);

	ret = 0;
	if (nwant > 0) {
		for (int i = 0; i < nwant; i++) {
			if ((size_t)i >= count || strcmp(want[i], info[i].symbol)) {
				print_mismatch(frames, info, count, want, nwant, i,
					       (size_t)i >= count ? "the unwind stopped early"
								  : "unexpected symbol");
				ret = 1;
				goto out;
			}
		}
		if (expect_source) {
			for (int i = 1; i < nwant; i++) {
				if (strcmp(sfu_source_name(frames[i].source), expect_source)) {
					print_mismatch(frames, info, count, want, nwant, i,
						       "unexpected frame source");
					ret = 1;
					goto out;
				}
			}
		}
		printf("expect: ok, %d frames match\n", nwant);
	}
out:
	free(info);
	free(frames);
	sfu_addrspace__free(as);
	free(snap.file);
	return ret;
}
