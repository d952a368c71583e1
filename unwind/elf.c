/* SPDX-License-Identifier: BSD-2-Clause */
/* ELF modules: read build ID, PT_LOAD segments, SFrame data and function symbols once. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buildid_note.h"
#include "common/elf_sym.h"
#include "diag_internal.h"
#include "ehframe_internal.h"
#include "gopclntab_internal.h"
#include "module_internal.h"
#include "sframe_internal.h"
#include "sfunwind/ehframe.h"

#ifndef SHT_GNU_SFRAME
#define SHT_GNU_SFRAME 0x6ffffff4
#endif
#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554
#endif
#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif
#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001
#endif

/* Largest page size a mapping's file offset can be rounded down by (AArch64 64K pages). */
#define MAX_PAGE_SIZE 0x10000u

#define NO_PARENT UINT32_MAX

/* A function symbol, in the address-sorted table. */
struct sym {
	uint64_t addr;
	uint64_t end;		/* exclusive */
	uint32_t name;		/* offset in sfu_module.names */
	uint32_t parent;	/* an earlier symbol still open at addr, or NO_PARENT */
};

/* A function symbol, in the name-sorted table: aliases the address table dropped. */
struct sym_name {
	uint64_t addr;
	uint32_t name;
};

#define PLT_RANGES_MAX 4

struct plt_range {
	uint64_t start, end;
};

struct sfu_module {
	unsigned long refs;
	char *path;
	struct sfu_file_id file_id;
	struct sfu_build_id build_id;
	uint16_t machine;
	bool is_dyn;
	struct sfu_segment *segments;
	size_t segment_count;
	struct sfu_sframe *sframe;
	struct plt_range plt[PLT_RANGES_MAX];	/* .plt, .plt.sec, .iplt: stubs that keep the RA in LR */
	size_t plt_count;
	uint64_t entry_start;		/* the entry routine (sfu_module__entry()), or 0, 0 */
	uint64_t entry_end;
	enum sfu_sframe_origin sframe_origin;
	char *sframe_error;
	struct sym *syms;		/* by address, one per address */
	size_t sym_count;
	struct sym_name *by_name;	/* by name, every (name, address) pair */
	size_t by_name_count;
	char *names;			/* NUL-terminated names, copied from the string tables */
	struct sfu_gopclntab *gopclntab;	/* a Go program's own function table, or NULL */
	uint64_t go_sigreturn;		/* entry of Go's sa_restorer (runtime.sigreturn), or 0 */

	/*
	 * The table derived from .eh_frame, made on first use: the sections
	 * are copied at open (eh_bytes, which eh_in points into) and dropped
	 * once converted. eh_done is set, under eh_lock, when eh_table and
	 * eh_error are final; readers that see it set need no lock.
	 */
	pthread_mutex_t eh_lock;
	bool eh_done;
	bool eh_present;		/* there is an .eh_frame to convert */
	bool eh_from_disk;		/* the table came from the disk cache */
	struct sfu_eh_frame eh_in;
	uint8_t *eh_bytes;
	struct sfu_sframe *eh_table;
	struct sfu_eh_frame_stats eh_stats;
	char *eh_error;
	char *cache_dir;		/* where derived tables are kept on disk, or NULL */
	size_t mem_fixed;		/* bytes of what open made that does not change: symbols, segments */
	size_t eh_mem;			/* of eh_bytes, then of eh_table (atomic: read without eh_lock) */
};

/* State of one sfu_module__open(). */
struct reader {
	Elf *elf;
	const uint8_t *image;	/* the whole file, as libelf mapped it */
	uint64_t size;		/* bytes readable at image */
	GElf_Ehdr ehdr;
	size_t shnum;
	size_t shstrndx;
	size_t phnum;
	struct sfu_diag *diag;
};

/* A function symbol while the tables are built. */
struct raw_sym {
	uint64_t addr;
	uint64_t size;
	uint64_t limit;		/* end of its section, UINT64_MAX when unknown */
	const char *str;	/* the name, set once the names buffer stops moving */
	uint32_t name;		/* offset of the name in the names buffer */
	uint8_t bind;		/* STB_*: which alias names an address (elf_sym_alias_cmp) */
	uint8_t rank;		/* lower is the symbol a name means: global, weak, local; .symtab's */
};

/* Builds the symbol tables: names are appended to one growing buffer. */
struct sym_builder {
	struct raw_sym *syms;
	size_t count, cap;
	char *names;
	size_t names_len, names_cap;
};

void sfu_file_id__from_stat(struct sfu_file_id *id, const struct stat *st)
{
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->mtime_sec = st->st_mtim.tv_sec;
	id->mtime_nsec = st->st_mtim.tv_nsec;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

int sfu_file_id__cmp(const struct sfu_file_id *a, const struct sfu_file_id *b)
{
	int c;

	if ((c = cmp_u64(a->dev, b->dev)) || (c = cmp_u64(a->ino, b->ino)) ||
	    (c = cmp_u64(a->size, b->size)) || (c = cmp_u64(a->mtime_sec, b->mtime_sec)))
		return c;
	return cmp_u64(a->mtime_nsec, b->mtime_nsec);
}

int sfu_build_id__cmp(const struct sfu_build_id *a, const struct sfu_build_id *b)
{
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->bytes, b->bytes, a->len < SFU_BUILD_ID_MAX ? a->len : SFU_BUILD_ID_MAX);
}

/* True when [off, off + len) lies inside the file. */
static bool in_file(const struct reader *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

static int read_headers(struct reader *r)
{
	size_t entsize;

	if (!gelf_getehdr(r->elf, &r->ehdr))
		return diag_set(r->diag, -EBADMSG, "no ELF header: %s", elf_errmsg(-1));
	if (elf_getphdrnum(r->elf, &r->phnum))
		return diag_set(r->diag, -EBADMSG, "bad program header count: %s", elf_errmsg(-1));
	if (elf_getshdrnum(r->elf, &r->shnum))
		return diag_set(r->diag, -EBADMSG, "bad section count: %s", elf_errmsg(-1));
	if (r->shnum && elf_getshdrstrndx(r->elf, &r->shstrndx))
		return diag_set(r->diag, -EBADMSG, "bad section name table index: %s",
				elf_errmsg(-1));

	/*
	 * libelf reports no sections when their headers lie past the end of
	 * the file, which would read as a stripped file: trust the ELF header's
	 * counts too. Extended numbering (e_shnum 0, e_phnum PN_XNUM) keeps the
	 * real count in section header 0, which libelf read if it could.
	 */
	if (r->ehdr.e_shoff && r->ehdr.e_shnum > r->shnum)
		r->shnum = r->ehdr.e_shnum;
	if (r->ehdr.e_shoff && !r->shnum)
		r->shnum = 1;
	if (r->ehdr.e_phnum != PN_XNUM && r->ehdr.e_phnum > r->phnum)
		r->phnum = r->ehdr.e_phnum;

	/* libelf reads the tables in place; make sure they are wholly in the file first */
	entsize = gelf_fsize(r->elf, ELF_T_PHDR, 1, EV_CURRENT);
	if (r->phnum && (r->ehdr.e_phentsize != entsize || r->phnum > r->size / entsize ||
			 !in_file(r, r->ehdr.e_phoff, r->phnum * entsize)))
		return diag_set(r->diag, -EBADMSG,
				"%zu program headers of %u bytes at 0x%llx do not fit in the file",
				r->phnum, r->ehdr.e_phentsize,
				(unsigned long long)r->ehdr.e_phoff);
	entsize = gelf_fsize(r->elf, ELF_T_SHDR, 1, EV_CURRENT);
	if (r->shnum && (r->ehdr.e_shentsize != entsize || r->shnum > r->size / entsize ||
			 !in_file(r, r->ehdr.e_shoff, r->shnum * entsize)))
		return diag_set(r->diag, -EBADMSG,
				"%zu section headers of %u bytes at 0x%llx do not fit in the file",
				r->shnum, r->ehdr.e_shentsize,
				(unsigned long long)r->ehdr.e_shoff);
	if (r->phnum > INT32_MAX)
		return diag_set(r->diag, -EBADMSG, "%zu program headers are too many", r->phnum);
	if (r->shnum && r->shstrndx >= r->shnum)
		return diag_set(r->diag, -EBADMSG, "section name table index %zu out of %zu",
				r->shstrndx, r->shnum);
	return 0;
}

static int read_phdr(struct reader *r, size_t i, GElf_Phdr *phdr)
{
	if (!gelf_getphdr(r->elf, (int)i, phdr))
		return diag_set(r->diag, -EBADMSG, "program header %zu: %s", i, elf_errmsg(-1));
	return 0;
}

static int read_segments(struct sfu_module *m, struct reader *r)
{
	GElf_Phdr phdr;
	size_t n = 0;
	int err;

	for (size_t i = 0; i < r->phnum; i++) {
		if ((err = read_phdr(r, i, &phdr)))
			return err;
		if (phdr.p_type == PT_LOAD)
			n++;
	}
	if (!n)
		return 0;
	m->segments = calloc(n, sizeof(*m->segments));
	if (!m->segments)
		return diag_set(r->diag, -ENOMEM, "out of memory");

	for (size_t i = 0; i < r->phnum; i++) {
		struct sfu_segment *seg = &m->segments[m->segment_count];

		if ((err = read_phdr(r, i, &phdr)))
			return err;
		if (phdr.p_type != PT_LOAD)
			continue;
		/*
		 * The file range is not checked against the file size: separate
		 * debug files keep the original program headers over stripped
		 * contents, and nothing here reads through a segment.
		 */
		if (phdr.p_offset + phdr.p_filesz < phdr.p_offset ||
		    phdr.p_vaddr + phdr.p_memsz < phdr.p_vaddr)
			return diag_set(r->diag, -EBADMSG,
					"program header %zu: PT_LOAD range wraps around", i);
		seg->vaddr = phdr.p_vaddr;
		seg->memsz = phdr.p_memsz;
		seg->offset = phdr.p_offset;
		seg->filesz = phdr.p_filesz;
		seg->flags = phdr.p_flags & (PF_R | PF_W | PF_X);
		m->segment_count++;
	}
	return 0;
}

/* Looks for the GNU build ID in note data (common/buildid_note.c). @return 1 when found, 0, or -EBADMSG. */
static int find_build_id(struct sfu_module *m, struct reader *r, Elf_Data *data, size_t align)
{
	size_t len = 0;
	int found;

	_Static_assert(BUILDID_MAX == SFU_BUILD_ID_MAX, "one bound for build IDs");
	found = buildid_note_find(data->d_buf, data->d_size, align, m->build_id.bytes, &len);
	/* a longer ID could only be kept truncated, and would then collide in the cache */
	if (found == -EMSGSIZE)
		return diag_set(r->diag, -EBADMSG, "build ID longer than %d bytes", SFU_BUILD_ID_MAX);
	if (found == 1)
		m->build_id.len = len;
	return found;
}

static int read_build_id(struct sfu_module *m, struct reader *r)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	Elf_Data *data;
	int err;

	for (size_t i = 0; i < r->phnum; i++) {
		if ((err = read_phdr(r, i, &phdr)))
			return err;
		if (phdr.p_type != PT_NOTE || !phdr.p_filesz)
			continue;
		if (!in_file(r, phdr.p_offset, phdr.p_filesz))
			return diag_set(r->diag, -EBADMSG,
					"program header %zu: notes at 0x%llx+0x%llx past the end of the file",
					i, (unsigned long long)phdr.p_offset,
					(unsigned long long)phdr.p_filesz);
		data = elf_getdata_rawchunk(r->elf, phdr.p_offset, phdr.p_filesz,
					    phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!data)
			return diag_set(r->diag, -EBADMSG, "program header %zu: %s", i,
					elf_errmsg(-1));
		if ((err = find_build_id(m, r, data, phdr.p_align == 8 ? 8 : 4)))
			return err < 0 ? err : 0;
	}

	/* relocatable objects and debug files have note sections but no PT_NOTE */
	while ((scn = elf_nextscn(r->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			return diag_set(r->diag, -EBADMSG, "section %zu: %s", elf_ndxscn(scn),
					elf_errmsg(-1));
		if (shdr.sh_type != SHT_NOTE || !shdr.sh_size)
			continue;
		if (!in_file(r, shdr.sh_offset, shdr.sh_size))
			return diag_set(r->diag, -EBADMSG,
					"section %zu: notes at 0x%llx+0x%llx past the end of the file",
					elf_ndxscn(scn), (unsigned long long)shdr.sh_offset,
					(unsigned long long)shdr.sh_size);
		data = elf_getdata(scn, NULL);
		if (!data)
			return diag_set(r->diag, -EBADMSG, "section %zu: %s", elf_ndxscn(scn),
					elf_errmsg(-1));
		if ((err = find_build_id(m, r, data, shdr.sh_addralign == 8 ? 8 : 4)))
			return err < 0 ? err : 0;
	}
	return 0;
}

static int section_name(struct reader *r, Elf_Scn *scn, const GElf_Shdr *shdr,
			const char **name)
{
	*name = elf_strptr(r->elf, r->shstrndx, shdr->sh_name);
	if (!*name)
		return diag_set(r->diag, -EBADMSG, "section %zu: name offset %u: %s",
				elf_ndxscn(scn), shdr->sh_name, elf_errmsg(-1));
	return 0;
}

/*
 * Decodes the SFrame bytes at [off, off + size). Bad bounds or contents
 * leave the module without a table and with a reason; only running out of
 * memory fails the open.
 */
static int decode_sframe(struct sfu_module *m, struct reader *r, const char *what,
			 uint64_t off, uint64_t size, uint64_t addr)
{
	struct sfu_diag sdiag = { 0 };
	char reason[sizeof(sdiag.reason) + 64];

	if (!in_file(r, off, size)) {
		snprintf(reason, sizeof(reason), "%s: 0x%llx+0x%llx past the end of the file",
			 what, (unsigned long long)off, (unsigned long long)size);
	} else {
		m->sframe = sfu_sframe__new(r->image + off, size, addr, &sdiag);
		if (m->sframe)
			return 0;
		if (errno == ENOMEM)
			return diag_set(r->diag, -ENOMEM, "out of memory");
		snprintf(reason, sizeof(reason), "%s: %s", what,
			 sdiag.reason[0] ? sdiag.reason : strerror(errno));
	}
	m->sframe_error = strdup(reason);
	if (!m->sframe_error)
		return diag_set(r->diag, -ENOMEM, "out of memory");
	return 0;
}

/* Where the PLT stubs are, for unwinding from inside one (see sfu_module__in_plt()). */
static int read_plt(struct sfu_module *m, struct reader *r)
{
	Elf_Scn *scn = NULL;
	const char *name;
	GElf_Shdr shdr;
	int err;

	while ((scn = elf_nextscn(r->elf, scn)) && m->plt_count < PLT_RANGES_MAX) {
		if (!gelf_getshdr(scn, &shdr))
			return diag_set(r->diag, -EBADMSG, "section %zu: %s", elf_ndxscn(scn),
					elf_errmsg(-1));
		if ((err = section_name(r, scn, &shdr, &name)))
			return err;
		if ((strcmp(name, ".plt") && strcmp(name, ".plt.sec") && strcmp(name, ".iplt")) ||
		    !(shdr.sh_flags & SHF_EXECINSTR) || shdr.sh_addr + shdr.sh_size < shdr.sh_addr)
			continue;
		m->plt[m->plt_count++] = (struct plt_range){ shdr.sh_addr, shdr.sh_addr + shdr.sh_size };
	}
	return 0;
}

/*
 * The entry routine's extent: e_entry's bytes from the executable PT_LOAD
 * that holds them, decoded up to its first call. 64 bytes hold every
 * libc's _start through that call (glibc's x86-64 _start calls at +0x1b,
 * its AArch64 one at +0x2c, ld.so's x86-64 _start at +0x3).
 */
#define ENTRY_DECODE_MAX	64

static void read_entry(struct sfu_module *m, struct reader *r)
{
	enum sfu_arch arch;
	uint64_t off, len;
	GElf_Phdr phdr;

	if (r->ehdr.e_machine == EM_X86_64)
		arch = SFU_ARCH_X86_64;
	else if (r->ehdr.e_machine == EM_AARCH64)
		arch = SFU_ARCH_AARCH64;
	else
		return;
	if (!r->ehdr.e_entry)
		return;
	for (size_t i = 0; i < r->phnum; i++) {
		if (!gelf_getphdr(r->elf, (int)i, &phdr) || phdr.p_type != PT_LOAD ||
		    !(phdr.p_flags & PF_X) || r->ehdr.e_entry < phdr.p_vaddr ||
		    r->ehdr.e_entry - phdr.p_vaddr >= phdr.p_filesz)
			continue;
		off = phdr.p_offset + (r->ehdr.e_entry - phdr.p_vaddr);
		len = phdr.p_filesz - (r->ehdr.e_entry - phdr.p_vaddr);
		if (len > ENTRY_DECODE_MAX)
			len = ENTRY_DECODE_MAX;
		if (off < phdr.p_offset || !in_file(r, off, len))
			return;
		if (!sfu_code__entry_end(arch, r->ehdr.e_entry, r->image + off, len, &m->entry_end))
			m->entry_start = r->ehdr.e_entry;
		return;
	}
}

bool sfu_module__entry(const struct sfu_module *m, uint64_t *start, uint64_t *end)
{
	if (!m->entry_start)
		return false;
	*start = m->entry_start;
	*end = m->entry_end;
	return true;
}

bool sfu_module__in_plt(const struct sfu_module *m, uint64_t vaddr)
{
	for (size_t i = 0; i < m->plt_count; i++)
		if (vaddr >= m->plt[i].start && vaddr < m->plt[i].end)
			return true;
	return false;
}

static int read_sframe(struct sfu_module *m, struct reader *r)
{
	Elf_Scn *scn = NULL, *by_type = NULL;
	GElf_Shdr shdr, type_shdr;
	const char *name;
	char what[64];
	GElf_Phdr phdr;
	int err;

	while ((scn = elf_nextscn(r->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			return diag_set(r->diag, -EBADMSG, "section %zu: %s", elf_ndxscn(scn),
					elf_errmsg(-1));
		if ((err = section_name(r, scn, &shdr, &name)))
			return err;
		if (!strcmp(name, ".sframe")) {
			m->sframe_origin = SFU_SFRAME_SECTION_NAME;
			if (shdr.sh_type == SHT_NOBITS)
				shdr.sh_size = 0;
			snprintf(what, sizeof(what), "section %zu (.sframe)", elf_ndxscn(scn));
			return decode_sframe(m, r, what, shdr.sh_offset, shdr.sh_size,
					     shdr.sh_addr);
		}
		if (shdr.sh_type == SHT_GNU_SFRAME && !by_type) {
			by_type = scn;
			type_shdr = shdr;
		}
	}
	if (by_type) {
		m->sframe_origin = SFU_SFRAME_SECTION_TYPE;
		snprintf(what, sizeof(what), "section %zu (SHT_GNU_SFRAME)", elf_ndxscn(by_type));
		return decode_sframe(m, r, what, type_shdr.sh_offset, type_shdr.sh_size,
				     type_shdr.sh_addr);
	}
	for (size_t i = 0; i < r->phnum; i++) {
		if ((err = read_phdr(r, i, &phdr)))
			return err;
		if (phdr.p_type != PT_GNU_SFRAME)
			continue;
		m->sframe_origin = SFU_SFRAME_SEGMENT;
		snprintf(what, sizeof(what), "program header %zu (PT_GNU_SFRAME)", i);
		return decode_sframe(m, r, what, phdr.p_offset, phdr.p_filesz, phdr.p_vaddr);
	}
	return 0;
}

/* The bytes of an allocated section, or false when it has none in the file. */
static bool section_bytes(const struct reader *r, const GElf_Shdr *shdr)
{
	return shdr->sh_type != SHT_NOBITS && shdr->sh_size && in_file(r, shdr->sh_offset, shdr->sh_size);
}

/*
 * Keep a copy of .eh_frame and .eh_frame_hdr for sfu_module__eh_frame_table().
 * Only what the converter can use is kept: 64-bit x86-64 or AArch64 files
 * whose addresses are final (not relocatable objects). Bad bounds leave the
 * module without one and with a reason; only running out of memory fails.
 */
static int read_eh_frame(struct sfu_module *m, struct reader *r)
{
	GElf_Shdr shdr, eh = { 0 }, hdr = { 0 }, got = { 0 }, gotplt = { 0 };
	Elf_Scn *scn = NULL;
	bool have_eh = false, have_hdr = false;
	const char *name;
	int err;

	if (r->ehdr.e_ident[EI_CLASS] != ELFCLASS64 || r->ehdr.e_type == ET_REL ||
	    (r->ehdr.e_machine != EM_X86_64 && r->ehdr.e_machine != EM_AARCH64))
		return 0;
	while ((scn = elf_nextscn(r->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			return diag_set(r->diag, -EBADMSG, "section %zu: %s", elf_ndxscn(scn),
					elf_errmsg(-1));
		if ((err = section_name(r, scn, &shdr, &name)))
			return err;
		if (!strcmp(name, ".eh_frame") && !have_eh &&
		    (shdr.sh_type == SHT_PROGBITS || shdr.sh_type == SHT_X86_64_UNWIND)) {
			eh = shdr;
			have_eh = true;
		} else if (!strcmp(name, ".eh_frame_hdr") && !have_hdr) {
			hdr = shdr;
			have_hdr = true;
		} else if (!strcmp(name, ".got")) {
			got = shdr;
		} else if (!strcmp(name, ".got.plt")) {
			gotplt = shdr;
		}
	}
	if (!have_eh || eh.sh_type == SHT_NOBITS || !eh.sh_size)
		return 0;	/* none, or a debug file's placeholder */
	if (!section_bytes(r, &eh)) {
		m->eh_error = strdup(".eh_frame: past the end of the file");
		return m->eh_error ? 0 : diag_set(r->diag, -ENOMEM, "out of memory");
	}
	if (have_hdr && !section_bytes(r, &hdr))
		have_hdr = false;	/* the search table is an index: walk .eh_frame instead */

	m->eh_bytes = malloc(eh.sh_size + (have_hdr ? hdr.sh_size : 0));
	if (!m->eh_bytes)
		return diag_set(r->diag, -ENOMEM, "out of memory");
	memcpy(m->eh_bytes, r->image + eh.sh_offset, eh.sh_size);
	m->eh_mem = eh.sh_size + (have_hdr ? hdr.sh_size : 0);
	m->eh_in = (struct sfu_eh_frame){
		.data = m->eh_bytes,
		.size = eh.sh_size,
		.addr = eh.sh_addr,
		.machine = r->ehdr.e_machine,
		.big_endian = r->ehdr.e_ident[EI_DATA] == ELFDATA2MSB,
		/* DW_EH_PE_datarel is relative to the GOT, as libgcc's i386 unwinder has it */
		.data_base = gotplt.sh_addr ? gotplt.sh_addr : got.sh_addr,
	};
	if (have_hdr) {
		memcpy(m->eh_bytes + eh.sh_size, r->image + hdr.sh_offset, hdr.sh_size);
		m->eh_in.hdr = m->eh_bytes + eh.sh_size;
		m->eh_in.hdr_size = hdr.sh_size;
		m->eh_in.hdr_addr = hdr.sh_addr;
	}
	m->eh_present = true;
	return 0;
}

static int builder_add(struct sym_builder *b, struct reader *r, const GElf_Sym *sym,
		       const char *name, size_t len, uint64_t limit, uint8_t rank)
{
	if (b->count == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct raw_sym *syms = reallocarray(b->syms, cap, sizeof(*syms));

		if (!syms)
			return diag_set(r->diag, -ENOMEM, "out of memory");
		b->syms = syms;
		b->cap = cap;
	}
	if (len + 1 > b->names_cap - b->names_len) {
		size_t cap = b->names_cap ? b->names_cap : 4096;
		char *names;

		while (len + 1 > cap - b->names_len)
			cap *= 2;
		if (cap > UINT32_MAX)
			return diag_set(r->diag, -EBADMSG, "symbol names exceed 4 GiB");
		names = realloc(b->names, cap);
		if (!names)
			return diag_set(r->diag, -ENOMEM, "out of memory");
		b->names = names;
		b->names_cap = cap;
	}
	b->syms[b->count++] = (struct raw_sym){
		.addr = sym->st_value,
		.size = sym->st_size,
		.limit = limit,
		.name = (uint32_t)b->names_len,
		.bind = GELF_ST_BIND(sym->st_info),
		.rank = rank,
	};
	memcpy(b->names + b->names_len, name, len + 1);
	b->names_len += len + 1;
	return 0;
}

/* End of the allocated section a symbol is defined in, bounding a zero size. */
static uint64_t section_limit(struct reader *r, const GElf_Sym *sym)
{
	GElf_Shdr shdr;
	Elf_Scn *scn;

	if (sym->st_shndx >= SHN_LORESERVE || sym->st_shndx >= r->shnum)
		return UINT64_MAX;
	scn = elf_getscn(r->elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC) ||
	    shdr.sh_addr + shdr.sh_size < shdr.sh_addr || shdr.sh_addr + shdr.sh_size <= sym->st_value)
		return UINT64_MAX;
	return shdr.sh_addr + shdr.sh_size;
}

static int read_symtab(struct reader *r, struct sym_builder *b, Elf_Scn *scn,
		       const GElf_Shdr *shdr, uint8_t source)
{
	size_t idx = elf_ndxscn(scn), nsyms, entsize;
	Elf_Data *symdata, *strdata;
	Elf_Scn *strscn;
	GElf_Shdr strshdr;
	int err;

	/* a debug file's .dynsym, for one, is NOBITS */
	if (shdr->sh_type == SHT_NOBITS || !shdr->sh_size)
		return 0;
	if (!in_file(r, shdr->sh_offset, shdr->sh_size))
		return diag_set(r->diag, -EBADMSG,
				"section %zu: symbols at 0x%llx+0x%llx past the end of the file",
				idx, (unsigned long long)shdr->sh_offset,
				(unsigned long long)shdr->sh_size);
	if (shdr->sh_link == 0 || shdr->sh_link >= r->shnum)
		return diag_set(r->diag, -EBADMSG, "section %zu: string table index %u out of %zu",
				idx, shdr->sh_link, r->shnum);
	strscn = elf_getscn(r->elf, shdr->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strshdr))
		return diag_set(r->diag, -EBADMSG, "section %u: %s", shdr->sh_link,
				elf_errmsg(-1));
	if (strshdr.sh_type != SHT_STRTAB || !in_file(r, strshdr.sh_offset, strshdr.sh_size))
		return diag_set(r->diag, -EBADMSG,
				"section %u: not a string table inside the file", shdr->sh_link);
	symdata = elf_getdata(scn, NULL);
	strdata = elf_getdata(strscn, NULL);
	if (!symdata || !strdata)
		return diag_set(r->diag, -EBADMSG, "section %zu: %s", idx, elf_errmsg(-1));

	entsize = gelf_fsize(r->elf, ELF_T_SYM, 1, EV_CURRENT);
	nsyms = symdata->d_size / entsize;
	if (nsyms > INT32_MAX)
		return diag_set(r->diag, -EBADMSG, "section %zu: %zu symbols are too many", idx,
				nsyms);
	for (size_t i = 1; i < nsyms; i++) {
		enum elf_sym_kind kind;
		GElf_Shdr sec;
		const char *name;
		GElf_Sym sym;
		Elf_Scn *in;
		size_t left;

		if (!gelf_getsym(symdata, (int)i, &sym))
			return diag_set(r->diag, -EBADMSG, "section %zu: symbol %zu: %s", idx, i,
					elf_errmsg(-1));
		/* the one rule sfprof's symbolizer keeps too; labels are not functions to unwind by */
		kind = elf_sym_in_section(&sym, r->shnum) &&
		       (in = elf_getscn(r->elf, sym.st_shndx)) && gelf_getshdr(in, &sec) ?
		       elf_sym_code_kind(&sym, &sec) : ELF_SYM_NONE;
		if (kind != ELF_SYM_FUNC)
			continue;
		if (sym.st_name >= strdata->d_size)
			return diag_set(r->diag, -EBADMSG,
					"section %zu: symbol %zu: name offset %u past the end of the string table",
					idx, i, sym.st_name);
		name = (const char *)strdata->d_buf + sym.st_name;
		left = strdata->d_size - sym.st_name;
		if (strnlen(name, left) == left)
			return diag_set(r->diag, -EBADMSG,
					"section %zu: symbol %zu: name runs past the end of the string table",
					idx, i);
		if (!elf_sym_code_name(kind, name))
			continue;
		/* a name means its global symbol first, then its weak one (sfu_module__symbol_addr) */
		err = builder_add(b, r, &sym, name, strlen(name), section_limit(r, &sym),
				  (GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 0 :
				   GELF_ST_BIND(sym.st_info) == STB_WEAK ? 2 : 4) + source);
		if (err)
			return err;
	}
	return 0;
}

static int raw_by_addr(const void *pa, const void *pb)
{
	const struct raw_sym *a = pa, *b = pb;
	int c;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	/* the alias that names an address first, as sfprof's symbolizer and perf choose it */
	c = elf_sym_alias_cmp(&(struct elf_sym_alias){ a->str, a->size, a->bind },
			      &(struct elf_sym_alias){ b->str, b->size, b->bind });
	if (c)
		return c;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int raw_by_name(const void *pa, const void *pb)
{
	const struct raw_sym *a = pa, *b = pb;
	int c = strcmp(a->str, b->str);

	if (c)
		return c;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return cmp_u64(a->addr, b->addr);
}

/* End of the PT_LOAD segment holding @addr, or UINT64_MAX. */
static uint64_t segment_limit(const struct sfu_module *m, uint64_t addr)
{
	for (size_t i = 0; i < m->segment_count; i++) {
		const struct sfu_segment *s = &m->segments[i];

		if (addr >= s->vaddr && addr - s->vaddr < s->memsz)
			return s->vaddr + s->memsz;
	}
	return UINT64_MAX;
}

static int build_symbols(struct sfu_module *m, struct reader *r, struct sym_builder *b)
{
	size_t n = 0;

	if (!b->count)
		return 0;
	if (b->count >= NO_PARENT)
		return diag_set(r->diag, -EBADMSG, "%zu function symbols are too many", b->count);
	m->syms = calloc(b->count, sizeof(*m->syms));
	m->by_name = calloc(b->count, sizeof(*m->by_name));
	if (!m->syms || !m->by_name)
		return diag_set(r->diag, -ENOMEM, "out of memory");
	for (size_t i = 0; i < b->count; i++)
		b->syms[i].str = b->names + b->syms[i].name;

	qsort(b->syms, b->count, sizeof(*b->syms), raw_by_name);
	for (size_t i = 0; i < b->count; i++) {
		const struct raw_sym *s = &b->syms[i];

		/* .symtab and .dynsym both hold the exported functions */
		if (n && m->by_name[n - 1].addr == s->addr && !strcmp(b->syms[i - 1].str, s->str))
			continue;
		m->by_name[n++] = (struct sym_name){ .addr = s->addr, .name = s->name };
	}
	m->by_name_count = n;

	qsort(b->syms, b->count, sizeof(*b->syms), raw_by_addr);
	n = 0;
	for (size_t i = 0, j; i < b->count; i = j) {
		const struct raw_sym *s = &b->syms[i];
		uint64_t size = s->size, limit = s->limit, end;

		/* aliases of one address: the first has the preferred name, take the longest size */
		for (j = i + 1; j < b->count && b->syms[j].addr == s->addr; j++)
			if (b->syms[j].size > size)
				size = b->syms[j].size;
		if (limit == UINT64_MAX)
			limit = segment_limit(m, s->addr);
		if (size)
			end = s->addr + size < s->addr ? UINT64_MAX : s->addr + size;
		else
			end = j < b->count && b->syms[j].addr < limit ? b->syms[j].addr : limit;
		m->syms[n++] = (struct sym){ .addr = s->addr, .end = end, .name = s->name };
	}
	m->sym_count = n;

	/*
	 * A symbol may lie inside a larger one (a local label typed as a
	 * function); link each to the nearest earlier symbol still open at its
	 * start, so a lookup that misses the nearest symbol can walk outwards.
	 * The parent chain is the stack of open symbols, so this is linear.
	 */
	for (size_t i = 0; i < n; i++) {
		uint32_t p = i ? (uint32_t)(i - 1) : NO_PARENT;

		while (p != NO_PARENT && m->syms[p].end <= m->syms[i].addr)
			p = m->syms[p].parent;
		m->syms[i].parent = p;
	}

	m->names = b->names;
	m->mem_fixed += b->names_cap + m->sym_count * sizeof(*m->syms) +
			m->by_name_count * sizeof(*m->by_name);
	b->names = NULL;
	return 0;
}

static int read_symbols(struct sfu_module *m, struct reader *r)
{
	static const uint32_t types[] = { SHT_SYMTAB, SHT_DYNSYM };
	struct sym_builder b = { 0 };
	GElf_Shdr shdr;
	int err = 0;

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(r->elf, scn))) {
			if (!gelf_getshdr(scn, &shdr)) {
				err = diag_set(r->diag, -EBADMSG, "section %zu: %s",
					       elf_ndxscn(scn), elf_errmsg(-1));
				goto out;
			}
			if (shdr.sh_type != types[t])
				continue;
			err = read_symtab(r, &b, scn, &shdr, (uint8_t)t);
			if (err)
				goto out;
		}
	}
	err = build_symbols(m, r, &b);
out:
	free(b.syms);
	free(b.names);
	return err;
}

/* Go's sa_restorer: its address is the return address of every Go signal handler. */
static void find_go_sigreturn(struct sfu_module *m)
{
	size_t n = sfu_gopclntab__count(m->gopclntab);
	struct go_func f;

	for (size_t i = 0; i < n; i++) {
		if (sfu_gopclntab__func(m->gopclntab, i, &f))
			continue;
		/* renamed when Go 1.20 gave each signal return its own function */
		if (!strcmp(f.name, "runtime.sigreturn") ||
		    !strcmp(f.name, "runtime.sigreturn__sigaction")) {
			m->go_sigreturn = f.entry;
			return;
		}
	}
}

/* The PT_LOAD segment whose file bytes hold [off, off + size), or false. */
static bool segment_holding(struct reader *r, uint64_t off, uint64_t size, GElf_Phdr *out)
{
	for (size_t i = 0; i < r->phnum; i++) {
		if (read_phdr(r, i, out) || out->p_type != PT_LOAD ||
		    !in_file(r, out->p_offset, out->p_filesz))
			continue;
		if (off >= out->p_offset && size <= out->p_filesz &&
		    off - out->p_offset <= out->p_filesz - size)
			return true;
	}
	return false;
}

/*
 * go:func.*, where Go 1.18+ keeps inline trees: from the moduledata in a
 * writable segment; the segment holding it is kept when the table's is not it.
 */
static int find_gofunc(struct sfu_module *m, struct reader *r, const GElf_Phdr *table_seg)
{
	GElf_Phdr phdr, seg;
	uint64_t gofunc;

	for (size_t i = 0; i < r->phnum; i++) {
		if (read_phdr(r, i, &phdr) || phdr.p_type != PT_LOAD || !(phdr.p_flags & PF_W) ||
		    !in_file(r, phdr.p_offset, phdr.p_filesz) ||
		    sfu_gopclntab__find_gofunc(m->gopclntab, r->image + phdr.p_offset, phdr.p_filesz,
					       &gofunc))
			continue;
		if (gofunc >= table_seg->p_vaddr && gofunc - table_seg->p_vaddr < table_seg->p_filesz)
			return sfu_gopclntab__set_gofunc(m->gopclntab, gofunc, NULL, 0, 0);
		for (size_t k = 0; k < r->phnum; k++) {
			if (read_phdr(r, k, &seg) || seg.p_type != PT_LOAD ||
			    !in_file(r, seg.p_offset, seg.p_filesz) || gofunc < seg.p_vaddr ||
			    gofunc - seg.p_vaddr >= seg.p_filesz)
				continue;
			return sfu_gopclntab__set_gofunc(m->gopclntab, gofunc, r->image + seg.p_offset,
							 seg.p_filesz, seg.p_vaddr);
		}
		return 0;
	}
	return 0;
}

/*
 * A Go program's .gopclntab: by its section, else (no section headers at
 * all) by its magic in the read-only segments. The segment that holds it is
 * kept with it for the inline trees beside it, unless symbols are not wanted
 * (unwinding needs the table only). A damaged table leaves the module
 * without one; only running out of memory fails the open.
 */
static int read_gopclntab(struct sfu_module *m, struct reader *r, unsigned flags)
{
	GElf_Shdr shdr, tab = { 0 };
	uint64_t text = 0, off = 0, size = 0;
	Elf_Scn *scn = NULL;
	const char *name;
	GElf_Phdr seg;

	/* a section table too damaged to read is no Go program's: the open goes on without */
	while ((scn = elf_nextscn(r->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) ||
		    !(name = elf_strptr(r->elf, r->shstrndx, shdr.sh_name)))
			return 0;
		/* a position-independent Go program keeps it in RELRO: .data.rel.ro.gopclntab */
		if ((!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab")) &&
		    section_bytes(r, &shdr))
			tab = shdr;
		else if (!strcmp(name, ".text"))
			text = shdr.sh_addr;
	}
	if (tab.sh_size) {
		off = tab.sh_offset;
		size = tab.sh_size;
		if (!segment_holding(r, off, size, &seg))
			seg = (GElf_Phdr){ .p_offset = off, .p_filesz = size };
	} else if (!r->shnum) {
		/* sstrip and the like drop the section headers: Go's table is still there */
		for (size_t i = 0; i < r->phnum && !size; i++) {
			size_t at;

			if (read_phdr(r, i, &seg) || seg.p_type != PT_LOAD || (seg.p_flags & PF_X) ||
			    !in_file(r, seg.p_offset, seg.p_filesz) ||
			    sfu_gopclntab__scan(r->image + seg.p_offset, seg.p_filesz, &at))
				continue;
			off = seg.p_offset + at;
			size = seg.p_filesz - at;
		}
	}
	if (!size)
		return 0;
	if (flags & SFU_MODULE_OPEN_NO_SYMBOLS)
		seg = (GElf_Phdr){ .p_offset = off, .p_filesz = size,
				   .p_vaddr = seg.p_vaddr + (off - seg.p_offset) };
	m->gopclntab = sfu_gopclntab__new_in(r->image + seg.p_offset, seg.p_filesz, seg.p_vaddr,
					     off - seg.p_offset, size, text, NULL);
	if (!m->gopclntab)
		return errno == ENOMEM ? diag_set(r->diag, -ENOMEM, "out of memory") : 0;
	find_go_sigreturn(m);
	if (!(flags & SFU_MODULE_OPEN_NO_SYMBOLS) && find_gofunc(m, r, &seg))
		return diag_set(r->diag, -ENOMEM, "out of memory");
	m->mem_fixed += sfu_gopclntab__memory(m->gopclntab);
	return 0;
}

struct sfu_module *sfu_module__open(const char *path, struct sfu_diag *diag)
{
	return sfu_module__open_flags(path, 0, diag);
}

struct sfu_module *sfu_module__open_flags(const char *path, unsigned flags, struct sfu_diag *diag)
{
	struct reader r = { .diag = diag };
	struct sfu_module *m = NULL;
	size_t image_size = 0;
	struct stat st;
	int fd = -1, err;

	m = calloc(1, sizeof(*m));
	if (!m) {
		err = diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	m->refs = 1;
	pthread_mutex_init(&m->eh_lock, NULL);
	m->path = strdup(path);
	if (!m->path) {
		err = diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	/* O_NONBLOCK: a FIFO at the path must not hang the open */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st)) {
		err = diag_set(diag, -errno, "%s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = diag_set(diag, -EBADMSG, "not a regular file");
		goto out;
	}
	sfu_file_id__from_stat(&m->file_id, &st);

	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = diag_set(diag, -ENOTSUP, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	r.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!r.elf) {
		err = diag_set(diag, -EBADMSG, "%s", elf_errmsg(-1));
		goto out;
	}
	if (elf_kind(r.elf) != ELF_K_ELF) {
		err = diag_set(diag, -EBADMSG, "not an ELF file");
		goto out;
	}
	r.image = (const uint8_t *)elf_rawfile(r.elf, &image_size);
	if (!r.image) {
		err = diag_set(diag, -EBADMSG, "%s", elf_errmsg(-1));
		goto out;
	}
	r.size = image_size < (uint64_t)st.st_size ? image_size : (uint64_t)st.st_size;

	if ((err = read_headers(&r)))
		goto out;
	m->machine = r.ehdr.e_machine;
	m->is_dyn = r.ehdr.e_type == ET_DYN;
	if ((err = read_segments(m, &r)) || (err = read_build_id(m, &r)) ||
	    (!(flags & SFU_MODULE_OPEN_NO_UNWIND) &&
	     ((err = read_sframe(m, &r)) || (err = read_eh_frame(m, &r)) ||
	      (err = read_plt(m, &r)))) ||
	    (!(flags & SFU_MODULE_OPEN_NO_SYMBOLS) && (err = read_symbols(m, &r))) ||
	    (err = read_gopclntab(m, &r, flags)))
		goto out;
	if (!(flags & SFU_MODULE_OPEN_NO_UNWIND))
		read_entry(m, &r);
	m->mem_fixed += sizeof(*m) + strlen(m->path) + 1 +
			m->segment_count * sizeof(*m->segments);
	err = 0;
out:
	if (r.elf)
		elf_end(r.elf);
	if (fd >= 0)
		close(fd);
	if (err) {
		sfu_module__put(m);
		errno = -err;
		return NULL;
	}
	return m;
}

struct sfu_module *sfu_module__new(const char *name, const struct sfu_build_id *build_id,
				   uint16_t machine, const struct sfu_segment *segs,
				   size_t num_segs, struct sfu_sframe *sframe)
{
	struct sfu_module *m = calloc(1, sizeof(*m));

	if (!m)
		goto err_nomem;
	m->refs = 1;
	pthread_mutex_init(&m->eh_lock, NULL);
	/* owned from the start, so the failure paths free it with the module */
	m->sframe = sframe;
	m->machine = machine;
	if (build_id && build_id->len <= SFU_BUILD_ID_MAX)
		m->build_id = *build_id;
	m->path = strdup(name);
	if (!m->path)
		goto err_nomem;
	if (num_segs) {
		m->segments = calloc(num_segs, sizeof(*m->segments));
		if (!m->segments)
			goto err_nomem;
		memcpy(m->segments, segs, num_segs * sizeof(*segs));
		m->segment_count = num_segs;
	}
	return m;

err_nomem:
	if (m)
		sfu_module__put(m);
	else
		sfu_sframe__free(sframe);
	errno = ENOMEM;
	return NULL;
}

struct sfu_module *sfu_module__get(struct sfu_module *m)
{
	if (m)
		__atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
	return m;
}

unsigned sfu_module__refs(const struct sfu_module *m)
{
	return __atomic_load_n(&m->refs, __ATOMIC_ACQUIRE);
}

void sfu_module__put(struct sfu_module *m)
{
	if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL))
		return;
	sfu_sframe__free(m->sframe);
	free(m->sframe_error);
	sfu_sframe__free(m->eh_table);
	free(m->eh_bytes);
	free(m->eh_error);
	free(m->cache_dir);
	pthread_mutex_destroy(&m->eh_lock);
	free(m->segments);
	free(m->syms);
	free(m->by_name);
	free(m->names);
	sfu_gopclntab__free(m->gopclntab);
	free(m->path);
	free(m);
}

const char *sfu_module__path(const struct sfu_module *m)
{
	return m->path;
}

const struct sfu_build_id *sfu_module__build_id(const struct sfu_module *m)
{
	return &m->build_id;
}

uint16_t sfu_module__machine(const struct sfu_module *m)
{
	return m->machine;
}

bool sfu_module__is_dyn(const struct sfu_module *m)
{
	return m->is_dyn;
}

size_t sfu_module__memory(const struct sfu_module *m)
{
	return m->mem_fixed + sframe_memory(m->sframe) +
	       __atomic_load_n(&m->eh_mem, __ATOMIC_RELAXED);
}

uint64_t sfu_module__file_size(const struct sfu_module *m)
{
	return m->file_id.size;
}

const struct sfu_file_id *sfu_module__file_id(const struct sfu_module *m)
{
	return &m->file_id;
}

const struct sfu_segment *sfu_module__segments(const struct sfu_module *m, size_t *count)
{
	*count = m->segment_count;
	return m->segments;
}

const struct sfu_sframe *sfu_module__sframe(const struct sfu_module *m)
{
	return m->sframe;
}

enum sfu_sframe_origin sfu_module__sframe_origin(const struct sfu_module *m)
{
	return m->sframe_origin;
}

const char *sfu_module__sframe_error(const struct sfu_module *m)
{
	return m->sframe_error;
}

/*
 * Sections smaller than this are converted in less time than a file of the
 * disk cache takes to read or write (a small program's is 212 bytes): they
 * are never stored, and a churn of short-lived unique binaries costs the
 * cache no files.
 */
#define EHCACHE_MIN_BYTES 4096

/* Convert (or load from the disk cache) under m->eh_lock. Sets eh_table or eh_error. */
static void derive_eh_frame(struct sfu_module *m)
{
	bool cached = m->cache_dir && m->build_id.len && m->eh_in.size >= EHCACHE_MIN_BYTES;
	struct sfu_diag diag = { 0 };
	size_t size = 0;
	void *buf = NULL;
	int err;

	if (cached &&
	    ehcache_load(m->cache_dir, &m->build_id, m->machine, &m->eh_table) == 0) {
		m->eh_from_disk = true;
		goto out;
	}
	err = sfu_eh_frame_encode(&m->eh_in, &buf, &size, &m->eh_stats, &diag);
	if (!err) {
		m->eh_table = sfu_sframe__new(buf, size, 0, &diag);
		err = m->eh_table ? 0 : -errno;
	}
	if (err) {
		if (asprintf(&m->eh_error, ".eh_frame: %s",
			     diag.reason[0] ? diag.reason : strerror(-err)) < 0)
			m->eh_error = NULL;
		goto out;
	}
	/* a table that cannot be kept on disk is still good in memory */
	if (cached)
		ehcache_store(m->cache_dir, &m->build_id, buf, size);
out:
	free(buf);
	/* the copy of the sections is not needed again, whatever happened */
	free(m->eh_bytes);
	m->eh_bytes = NULL;
	__atomic_store_n(&m->eh_mem, sframe_memory(m->eh_table), __ATOMIC_RELAXED);
	memset(&m->eh_in, 0, sizeof(m->eh_in));
}

const struct sfu_sframe *sfu_module__eh_frame_table(const struct sfu_module *cm)
{
	/* logically const: the table is a cache of what the file says */
	struct sfu_module *m = (struct sfu_module *)cm;

	if (__atomic_load_n(&m->eh_done, __ATOMIC_ACQUIRE))
		return m->eh_table;
	if (!m->eh_present)
		return NULL;
	pthread_mutex_lock(&m->eh_lock);
	if (!m->eh_done) {
		derive_eh_frame(m);
		__atomic_store_n(&m->eh_done, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&m->eh_lock);
	return m->eh_table;
}

const char *sfu_module__eh_frame_error(const struct sfu_module *m)
{
	/* a bound error is set at open, a conversion error once eh_done is */
	if (!m->eh_present || __atomic_load_n(&m->eh_done, __ATOMIC_ACQUIRE))
		return m->eh_error;
	return NULL;
}

const struct sfu_eh_frame_stats *sfu_module__eh_frame_stats(const struct sfu_module *m)
{
	if (!__atomic_load_n(&m->eh_done, __ATOMIC_ACQUIRE) || !m->eh_present || m->eh_from_disk)
		return NULL;
	return &m->eh_stats;
}

bool sfu_module__eh_frame_from_disk(const struct sfu_module *m)
{
	return __atomic_load_n(&m->eh_done, __ATOMIC_ACQUIRE) && m->eh_from_disk;
}

int sfu_module__set_cache_dir(struct sfu_module *m, const char *dir)
{
	char *copy = NULL;

	if (dir && !(copy = strdup(dir)))
		return -ENOMEM;
	pthread_mutex_lock(&m->eh_lock);
	free(m->cache_dir);
	m->cache_dir = copy;
	pthread_mutex_unlock(&m->eh_lock);
	return 0;
}

int sfu_module__symbolize(const struct sfu_module *m, uint64_t vaddr, const char **name,
			  uint64_t *offset)
{
	size_t lo = 0, hi = m->sym_count;
	uint32_t i;

	/* the last symbol starting at or before vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	i = (uint32_t)(lo - 1);
	while (i != NO_PARENT && m->syms[i].end <= vaddr)
		i = m->syms[i].parent;
	if (i == NO_PARENT)
		return -ENOENT;
	*name = m->names + m->syms[i].name;
	*offset = vaddr - m->syms[i].addr;
	return 0;
}

int sfu_module__symbol_addr(const struct sfu_module *m, const char *name, uint64_t *vaddr)
{
	size_t lo = 0, hi = m->by_name_count;

	/* the first entry of that name: the global one, when there are several */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m->names + m->by_name[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == m->by_name_count || strcmp(m->names + m->by_name[lo].name, name))
		return -ENOENT;
	*vaddr = m->by_name[lo].addr;
	return 0;
}

int sfu_module__map_vaddr(const struct sfu_module *m, uint64_t file_offset, uint32_t prot,
			  uint64_t *vaddr)
{
	const struct sfu_segment *best = NULL;
	int best_score = -1;

	for (size_t i = 0; i < m->segment_count; i++) {
		const struct sfu_segment *s = &m->segments[i];
		int score = 0;

		/*
		 * The kernel maps a segment from its offset rounded down to a
		 * page, so a mapping's offset may lie up to a page before it.
		 */
		if (!s->filesz || file_offset >= s->offset + s->filesz ||
		    (file_offset < s->offset && s->offset - file_offset >= MAX_PAGE_SIZE))
			continue;
		/* protections tell shared pages apart; RELRO may have dropped PROT_WRITE */
		if (!(s->flags & PF_X) == !(prot & PROT_EXEC))
			score += 4;
		if (!(s->flags & PF_W) == !(prot & PROT_WRITE))
			score += 2;
		if (file_offset >= s->offset)
			score += 1;
		if (score > best_score) {
			best = s;
			best_score = score;
		}
	}
	if (!best)
		return -ENOENT;
	/* file offset O of the segment holds vaddr O - p_offset + p_vaddr */
	*vaddr = file_offset - best->offset + best->vaddr;
	return 0;
}

int sfu_module__bias(const struct sfu_module *m, uint64_t map_start, uint64_t file_offset,
		     uint64_t *bias)
{
	uint64_t vaddr;
	/* an unwinder asks about code: prefer the executable segment */
	int err = sfu_module__map_vaddr(m, file_offset, PROT_READ | PROT_EXEC, &vaddr);

	if (!err)
		*bias = map_start - vaddr;
	return err;
}

const struct sfu_gopclntab *sfu_module__gopclntab(const struct sfu_module *m, uint64_t *sigreturn)
{
	if (sigreturn)
		*sigreturn = m->go_sigreturn;
	return m->gopclntab;
}

/* What the public API gives of a function of the table. */
static void go_func_public(const struct go_func *f, struct sfu_go_func *out)
{
	out->name = f->name;
	out->entry = f->entry;
	out->end = f->end;
	out->flags = f->flags;
}

int sfu_module__go_func(const struct sfu_module *m, uint64_t vaddr, struct sfu_go_func *out)
{
	struct go_func f;
	int err;

	if (!m->gopclntab)
		return -ENOENT;
	if ((err = sfu_gopclntab__find(m->gopclntab, vaddr, &f)))
		return err;
	go_func_public(&f, out);
	return 0;
}

size_t sfu_module__go_func_count(const struct sfu_module *m)
{
	return m->gopclntab ? sfu_gopclntab__count(m->gopclntab) : 0;
}

int sfu_module__go_func_at(const struct sfu_module *m, size_t i, struct sfu_go_func *out)
{
	struct go_func f;
	int err;

	if (!m->gopclntab)
		return -ENOENT;
	if ((err = sfu_gopclntab__func(m->gopclntab, i, &f)))
		return err;
	go_func_public(&f, out);
	return 0;
}

int sfu_module__go_inlined(const struct sfu_module *m, uint64_t vaddr, const char **names,
			   size_t max, size_t *count)
{
	struct go_func f;
	size_t n = 0;
	int err;

	*count = 0;
	if (!m->gopclntab)
		return -ENOENT;
	if ((err = sfu_gopclntab__find(m->gopclntab, vaddr, &f)) ||
	    (err = sfu_gopclntab__inlined(m->gopclntab, &f, vaddr, names, max, &n)))
		return err;
	if (n < max)
		names[n] = f.name;
	*count = n + 1;
	return 0;
}
