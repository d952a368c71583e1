/* SPDX-License-Identifier: BSD-2-Clause */
/* The build ID of an ELF file open at a descriptor, from its PT_NOTE segments (common/buildid_note.c parses them). */
#include <gelf.h>
#include <libelf.h>

#include "buildid.h"

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
