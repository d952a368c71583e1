// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as /proc/PID/maps text, loaded into an address space
 * as the recorder loads a process's (sfu_addrspace__load_maps(), files opened
 * under a root directory, here one that holds only the system's library
 * trees), then the address space checked: sorted, never overlapping, each
 * mapping found at its ends, and the same text loaded twice giving the same
 * address space (mmap's rule: the last mapping of an address wins).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sfunwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;
static struct sfu_cache *cache;
static char root[256];

/* The trees a maps file's paths may name; /proc, /sys and /dev are not among them. */
static const char *const trees[] = { "usr", "lib", "lib64", "bin", "sbin" };

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_maps: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void remove_root(void)
{
	char link[300];

	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		snprintf(link, sizeof(link), "%s/%s", root, trees[i]);
		unlink(link);
	}
	rmdir(root);
}

/* A root of symbolic links to the library trees, and a module cache as the recorder's. */
static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char link[300], target[16];

	cache = sfu_cache__new();
	if (!cache)
		broken("sfu_cache__new: %s", strerror(errno));
	sfu_cache__set_flags(cache, SFU_MODULE_OPEN_NO_SYMBOLS);
	snprintf(root, sizeof(root), "%s/fuzz_maps-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		broken("mkdtemp %s: %s", root, strerror(errno));
	atexit(remove_root);
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		snprintf(target, sizeof(target), "/%s", trees[i]);
		snprintf(link, sizeof(link), "%s/%s", root, trees[i]);
		if (!access(target, F_OK) && symlink(target, link))
			broken("symlink %s: %s", link, strerror(errno));
	}
}

static void check_space(const struct sfu_addrspace *as, int err, const struct sfu_diag *diag)
{
	const struct sfu_mapping *maps;
	size_t n;

	if (err && err != -EBADMSG && err != -ENOMEM)
		broken("load_maps returned %d", err);
	if (err && (diag->err != err || !diag->reason[0]))
		broken("load_maps returned %d, diag %d \"%s\"", err, diag->err, diag->reason);
	maps = sfu_addrspace__mappings(as, &n);
	for (size_t i = 0; i < n; i++) {
		const struct sfu_mapping *m = &maps[i];
		uint64_t vaddr;

		if (m->start >= m->end)
			broken("mapping %zu: [%#llx, %#llx)", i, (unsigned long long)m->start,
			       (unsigned long long)m->end);
		if (i && m->start < maps[i - 1].end)
			broken("mapping %zu at %#llx overlaps the one ending at %#llx", i,
			       (unsigned long long)m->start, (unsigned long long)maps[i - 1].end);
		if (!(m->prot & PROT_EXEC))
			broken("mapping %zu is not executable", i);
		if (sfu_addrspace__find(as, m->start) != m || sfu_addrspace__find(as, m->end - 1) != m)
			broken("mapping %zu not found at its ends", i);
		/*
		 * A module's mapping was placed by its segments when added; what is
		 * left of it after a later mapping cut its start keeps that bias,
		 * its offset moved on with the start, maybe past the segment.
		 */
		if (m->module && !sfu_module__map_vaddr(m->module, m->file_offset, m->prot, &vaddr))
			sink += vaddr;
		if (m->path)
			sink += strlen(m->path);
	}
	if (n && sfu_addrspace__find(as, maps[n - 1].end) &&
	    sfu_addrspace__find(as, maps[n - 1].end)->start < maps[n - 1].end)
		broken("the address after the last mapping is found in one");
}

static void same_spaces(const struct sfu_addrspace *a, const struct sfu_addrspace *b)
{
	const struct sfu_mapping *ma, *mb;
	size_t na, nb;

	ma = sfu_addrspace__mappings(a, &na);
	mb = sfu_addrspace__mappings(b, &nb);
	if (na != nb)
		broken("loaded once: %zu mappings; twice: %zu", na, nb);
	for (size_t i = 0; i < na; i++) {
		if (ma[i].start != mb[i].start || ma[i].end != mb[i].end ||
		    ma[i].file_offset != mb[i].file_offset || ma[i].prot != mb[i].prot ||
		    ma[i].module != mb[i].module || ma[i].bias != mb[i].bias ||
		    !ma[i].path != !mb[i].path || (ma[i].path && strcmp(ma[i].path, mb[i].path)))
			broken("mapping %zu differs loaded once ([%#llx, %#llx) at %#llx) and twice "
			       "([%#llx, %#llx) at %#llx)", i, (unsigned long long)ma[i].start,
			       (unsigned long long)ma[i].end, (unsigned long long)ma[i].file_offset,
			       (unsigned long long)mb[i].start, (unsigned long long)mb[i].end,
			       (unsigned long long)mb[i].file_offset);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_diag diag1 = { 0 }, diag2 = { 0 };
	struct sfu_addrspace *once, *twice;
	char *text;
	int err1, err2;

	if (!cache)
		setup();
	/* paths stay under the root: ".." would climb out of it through the links */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	for (size_t i = 0; i + 1 < size; i++)
		if (text[i] == '.' && text[i + 1] == '.')
			text[i + 1] = '_';
	once = sfu_addrspace__new(cache, root);
	twice = sfu_addrspace__new(cache, root);
	if (!once || !twice)
		broken("sfu_addrspace__new: %s", strerror(errno));
	err1 = sfu_addrspace__load_maps(once, text, size, &diag1);
	check_space(once, err1, &diag1);
	err2 = sfu_addrspace__load_maps(twice, text, size, &diag2);
	if (err2 == err1)
		err2 = sfu_addrspace__load_maps(twice, text, size, &diag2);
	check_space(twice, err2, &diag2);
	/* out of memory, the two may have stopped at different lines */
	if (err1 != -ENOMEM && err2 != -ENOMEM) {
		if (err1 != err2)
			broken("loaded once: %d; twice: %d", err1, err2);
		same_spaces(once, twice);
	}
	sfu_addrspace__free(once);
	sfu_addrspace__free(twice);
	free(text);
	return 0;
}
