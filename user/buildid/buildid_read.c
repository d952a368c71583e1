/* SPDX-License-Identifier: BSD-2-Clause */
/* The build ID an ELF file's notes carry: the one parser of NT_GNU_BUILD_ID notes in user/. */
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "buildid.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Elf32_Nhdr and Elf64_Nhdr alike: three 4-byte words. */
#define NHDR_SIZE 12

size_t buildid_from_notes(const void *notes, size_t size, size_t align, uint8_t *out)
{
	const uint8_t *p = notes;
	uint64_t a = align == 8 ? 8 : 4, off = 0;

	/* 64-bit sums of 32-bit sizes: none wraps */
	while (off <= size && size - off >= NHDR_SIZE) {
		uint32_t namesz, descsz, type;
		uint64_t name_off = off + NHDR_SIZE, desc_off;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		desc_off = (name_off + namesz + a - 1) & ~(a - 1);
		if (desc_off > size || descsz > size - desc_off)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == sizeof("GNU") &&
		    !memcmp(p + name_off, "GNU", sizeof("GNU")) && descsz >= 2 &&
		    descsz <= BUILDID_MAX) {
			memcpy(out, p + desc_off, descsz);
			return descsz;
		}
		off = (desc_off + descsz + a - 1) & ~(a - 1);
	}
	return 0;
}

size_t buildid_read(int fd, uint8_t *out)
{
	size_t found = 0, phnum;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out;
	for (size_t i = 0; i < phnum && !found; i++) {
		size_t align;
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		align = ph.p_align == 8 ? 8 : 4;
		/* the note headers in the host's byte order; libelf checks the range against the file */
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && d->d_buf)
			found = buildid_from_notes(d->d_buf, d->d_size, align, out);
	}
out:
	elf_end(elf);
	return found;
}
