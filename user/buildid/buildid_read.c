/* SPDX-License-Identifier: BSD-2-Clause */
/* The build ID an ELF file's notes carry, read through libelf. */
#include <gelf.h>
#include <libelf.h>
#include <string.h>

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
		GElf_Phdr ph;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		while (d && !found && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz >= 2 && nh.n_descsz <= BUILDID_MAX) {
				memcpy(out, (const uint8_t *)d->d_buf + desc_off, nh.n_descsz);
				found = nh.n_descsz;
			}
		}
	}
out:
	elf_end(elf);
	return found;
}
