/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record's and agent's side of the build-ID cache: its directory, the hooks the recording threads call, the summary. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "buildid.h"
#include "buildid_record.h"

struct buildid_keeper *buildid_record__start(const char *cmd, uint64_t max_bytes,
					     uint64_t protect_s)
{
	struct buildid_keeper *k;
	char dir[4096], why[4400];
	int err = buildid_cache_dir(dir, sizeof(dir));

	if (err) {
		fprintf(stderr, "sfprof %s: build-ID cache: %s (set XDG_CACHE_HOME or HOME, "
			"or run with --no-buildid-cache)\n", cmd,
			err == -ENOENT ? "no directory: neither XDG_CACHE_HOME nor HOME is an "
			"absolute path" : strerror(-err));
		return NULL;
	}
	k = buildid_keeper__new(dir, max_bytes, protect_s, why, sizeof(why));
	if (k)
		return k;
	if (errno == EPERM) {
		size_t n = strlen(dir);
		/* a directory someone else can change: "DIR: owned by uid 1000, not by root" */
		const char *what = !strncmp(why, dir, n) && !strncmp(why + n, ": ", 2) ?
				   why + n + 2 : why;

		fprintf(stderr, "sfprof %s: build-ID cache %s: %s: not used (set XDG_CACHE_HOME "
			"to a directory of your own, or run with --no-buildid-cache)\n", cmd, dir,
			what);
	} else {
		fprintf(stderr, "sfprof %s: build-ID cache: %s (--no-buildid-cache runs without "
			"it)\n", cmd, why);
	}
	return NULL;
}

void buildid_record__module(void *ctx, uint32_t pid, const struct sfu_mapping *m)
{
	const struct sfu_build_id *bid = sfu_module__build_id(m->module);

	buildid_keeper__offer(ctx, bid->bytes, bid->len, pid, m->start, m->end, m->path,
			      sfu_module__path(m->module));
}

void buildid_record__map(void *ctx, uint32_t pid, uint64_t start, uint64_t end,
			 const struct sfu_build_id *id, const char *path)
{
	(void)path;	/* the mapped file is held, not what its path names now */
	buildid_keeper__hold(ctx, id->bytes, id->len, pid, start, end);
}

static double mib(uint64_t bytes)
{
	return bytes / 1048576.0;
}

int buildid_record__finish(struct buildid_keeper *k, const char *cmd, FILE *out)
{
	struct buildid_keeper_stats st;
	char dir[4096];
	int err = buildid_keeper__finish(k, &st);

	if (buildid_cache_dir(dir, sizeof(dir)))
		snprintf(dir, sizeof(dir), "?");
	fprintf(out, "sfprof %s: build-ID cache %s: %" PRIu64 " binaries, %" PRIu64 " kept now (%"
		PRIu64 " hard links, %" PRIu64 " copies of %.1f MiB in %.2f s), %" PRIu64
		" there already; %.1f MiB held", cmd, dir, st.offered, st.linked + st.copied, st.linked,
		st.copied, mib(st.copied_bytes), st.copy_ns / 1e9, st.present, mib(st.held_bytes));
	if (st.evicted)
		fprintf(out, ", %" PRIu64 " older entries (%.1f MiB) evicted", st.evicted,
			mib(st.evicted_bytes));
	if (st.held)
		fprintf(out, ", %" PRIu64 " of them through the file held open since it was mapped",
			st.held);
	fputc('\n', out);
	if (st.over_bound)
		fprintf(out, "sfprof %s: build-ID cache: %" PRIu64 " binaries not kept: the cache's "
			"bound (--buildid-cache-size) is smaller than what this recording needs\n",
			cmd, st.over_bound);
	if (st.untrusted)
		fprintf(out, "sfprof %s: build-ID cache: %" PRIu64 " entries others could change "
			"(links of their files) kept again as copies\n", cmd, st.untrusted);
	if (st.unopened || st.mismatched || st.dropped)
		fprintf(out, "sfprof %s: build-ID cache: %" PRIu64 " binaries not kept: %" PRIu64
			" could no longer be opened, %" PRIu64 " were replaced by another build "
			"before they were read, %" PRIu64 " past the bound of files held at once\n",
			cmd, st.unopened + st.mismatched + st.dropped, st.unopened, st.mismatched,
			st.dropped);
	if (err)
		fprintf(out, "sfprof %s: build-ID cache: %" PRIu64 " binaries not kept: %s\n",
			cmd, st.failed, st.first_error);
	return err;
}
