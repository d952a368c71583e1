// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: open the input as an ELF module, then symbolize and bias addresses in it. */
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
#include "memfd_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PROBED_FDES 64

static volatile uint64_t sink;
static const char *input_path;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_elf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void symbolize(const struct sfu_module *m, uint64_t vaddr)
{
	const char *name = NULL;
	uint64_t offset = 0, addr;
	int err = sfu_module__symbolize(m, vaddr, &name, &offset);

	if (err == -ENOENT)
		return;
	if (err)
		broken("symbolize(%#llx) returned %d, not 0 or -ENOENT",
		       (unsigned long long)vaddr, err);
	if (!name)
		broken("symbolize(%#llx) succeeded without a name", (unsigned long long)vaddr);
	if (offset > vaddr)
		broken("symbolize(%#llx) gave %s+%#llx, a symbol above the address",
		       (unsigned long long)vaddr, name, (unsigned long long)offset);
	sink += strlen(name);
	if (sfu_module__symbol_addr(m, name, &addr) == 0)
		sink += addr;
}

static void probe_segments(const struct sfu_module *m)
{
	size_t count = 0;
	const struct sfu_segment *segs = sfu_module__segments(m, &count);

	if (count && !segs)
		broken("%zu segments but no array", count);
	for (size_t i = 0; i < count; i++) {
		const struct sfu_segment *s = &segs[i];
		uint64_t bias;

		symbolize(m, s->vaddr);
		symbolize(m, s->vaddr + s->memsz / 2);
		symbolize(m, s->vaddr + s->memsz - 1);
		/* As if mapped at a typical PIE base, page-aligned as mmap would. */
		if (sfu_module__bias(m, 0x555555554000ULL + (s->vaddr & ~0xfffULL),
				     s->offset & ~0xfffULL, &bias) == 0)
			sink += bias;
	}
}

static void probe_sframe(const struct sfu_module *m, bool eh_frame)
{
	const struct sfu_sframe *sf = eh_frame ? sfu_module__eh_frame_table(m) : sfu_module__sframe(m);
	size_t count;

	if (!sf) {
		const char *why = eh_frame ? sfu_module__eh_frame_error(m) : sfu_module__sframe_error(m);

		sink += why ? strlen(why) : 0;
		return;
	}
	count = sfu_sframe__fde_count(sf);
	if (count > MAX_PROBED_FDES)
		count = MAX_PROBED_FDES;
	for (size_t i = 0; i < count; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);
		const struct sfu_fde *found;
		const struct sfu_row *row;

		if (!fde)
			broken("FDE %zu of %zu is NULL", i, sfu_sframe__fde_count(sf));
		symbolize(m, fde->start);
		if (sfu_sframe__find(sf, fde->start, &found, &row) == 0)
			sink += row->cfa.offset;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_diag diag = { 0 };
	struct sfu_module *m;

	input_path = memfd_input("fuzz_elf", data, size);
	m = sfu_module__open(input_path, &diag);
	if (!m)
		return 0;
	if (sfu_module__file_size(m) != size)
		broken("file size %llu, wrote %zu", (unsigned long long)sfu_module__file_size(m),
		       size);
	if (sfu_module__build_id(m)->len > SFU_BUILD_ID_MAX)
		broken("build ID of %u bytes", sfu_module__build_id(m)->len);
	sink += sfu_module__machine(m) + sfu_module__is_dyn(m) + sfu_module__sframe_origin(m);
	sink += strlen(sfu_module__path(m));
	probe_segments(m);
	probe_sframe(m, false);
	/* the table derived from .eh_frame, made on first use */
	probe_sframe(m, true);
	/* Addresses the input chooses. */
	for (size_t off = 0; off + 8 <= size && off < 64; off += 16) {
		uint64_t v;

		memcpy(&v, data + size - 8 - off, sizeof(v));
		symbolize(m, v);
	}
	sfu_module__put(sfu_module__get(m));
	sfu_module__put(m);
	return 0;
}
