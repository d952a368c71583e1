/* SPDX-License-Identifier: BSD-2-Clause */
/* libunwind under test: remote unwinding, as perf's util/unwind-libunwind-local.c does it. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwinder.h"

/*
 * libunwind exports its search of an .eh_frame_hdr table in a remote address
 * space but no installed header declares it; perf's util/unwind-libunwind-local.c
 * declares it the same way, and the benchmark must unwind as perf does.
 */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* An ELF file mapped into the process, read from the file as perf reads a DSO. */
struct elf_image {
	char *path;
	uint8_t *file;
	size_t file_size;
	uint64_t bias;		/* runtime address = ELF vaddr + bias */
	uint64_t lo, hi;	/* runtime range of the PT_LOAD segments */
	const Elf64_Phdr *phdr;
	size_t phnum;
	uint64_t eh_frame_hdr;	/* runtime address; 0: no usable .eh_frame_hdr */
	uint64_t table;		/* runtime address of its search table */
	uint64_t fde_count;
};

struct lu_walker {
	unw_addr_space_t as;
	struct elf_image *images;
	size_t nimages;
	const struct elf_image *last;
	const struct bench_snapshot *snap;	/* the unwind in progress */
};

static const struct elf_image *image_find(struct lu_walker *w, uint64_t addr)
{
	if (w->last && addr >= w->last->lo && addr < w->last->hi)
		return w->last;
	for (size_t i = 0; i < w->nimages; i++) {
		if (addr >= w->images[i].lo && addr < w->images[i].hi)
			return w->last = &w->images[i];
	}
	return NULL;
}

static int image_read(const struct elf_image *img, uint64_t addr, unw_word_t *val)
{
	uint64_t vaddr = addr - img->bias;

	for (size_t i = 0; i < img->phnum; i++) {
		const Elf64_Phdr *ph = &img->phdr[i];

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    ph->p_filesz < sizeof(*val) || vaddr - ph->p_vaddr > ph->p_filesz - sizeof(*val))
			continue;
		memcpy(val, img->file + ph->p_offset + (vaddr - ph->p_vaddr), sizeof(*val));
		return 0;
	}
	return -1;
}

/* The binary search table of .eh_frame_hdr, in the encodings every GNU linker writes. */
static void image_find_eh_frame_hdr(struct elf_image *img)
{
	for (size_t i = 0; i < img->phnum; i++) {
		const Elf64_Phdr *ph = &img->phdr[i];
		const uint8_t *hdr = img->file + ph->p_offset;
		uint32_t count;

		if (ph->p_type != PT_GNU_EH_FRAME || ph->p_filesz < 12)
			continue;
		/* version 1; eh_frame_ptr 4 bytes; fde_count udata4; table datarel sdata4 */
		if (hdr[0] != 1 || ((hdr[1] & 0x0f) != 0x03 && (hdr[1] & 0x0f) != 0x0b) ||
		    hdr[2] != 0x03 || hdr[3] != 0x3b)
			return;
		memcpy(&count, hdr + 8, sizeof(count));
		if (count > (ph->p_filesz - 12) / 8)
			return;
		img->eh_frame_hdr = ph->p_vaddr + img->bias;
		img->table = img->eh_frame_hdr + 12;
		img->fde_count = count;
		return;
	}
}

/* Map @path and place it where the mapping at @start of file offset @offset says. */
static int image_open(struct elf_image *img, const char *path, uint64_t start, uint64_t offset)
{
	const Elf64_Ehdr *eh;
	struct stat st;
	long page = sysconf(_SC_PAGESIZE);
	int fd, err = -ENOEXEC;
	bool placed = false;

	memset(img, 0, sizeof(*img));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(*eh)) {
		close(fd);
		return -ENOEXEC;
	}
	img->file_size = (size_t)st.st_size;
	img->file = mmap(NULL, img->file_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = img->file == MAP_FAILED ? -errno : -ENOEXEC;
	close(fd);
	if (img->file == MAP_FAILED) {
		img->file = NULL;
		return err;
	}
	eh = (const Elf64_Ehdr *)img->file;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > img->file_size ||
	    eh->e_phnum > (img->file_size - eh->e_phoff) / sizeof(Elf64_Phdr))
		goto fail;
	img->phdr = (const Elf64_Phdr *)(img->file + eh->e_phoff);
	img->phnum = eh->e_phnum;
	img->lo = UINT64_MAX;
	for (size_t i = 0; i < img->phnum; i++) {
		const Elf64_Phdr *ph = &img->phdr[i];

		if (ph->p_offset > img->file_size || ph->p_filesz > img->file_size - ph->p_offset)
			goto fail;
		if (ph->p_type != PT_LOAD)
			continue;
		if (!placed && (ph->p_offset & ~(uint64_t)(page - 1)) == offset) {
			img->bias = start - (ph->p_vaddr - (ph->p_offset - offset));
			placed = true;
		}
		if (ph->p_vaddr < img->lo)
			img->lo = ph->p_vaddr;
		if (ph->p_vaddr + ph->p_memsz > img->hi)
			img->hi = ph->p_vaddr + ph->p_memsz;
	}
	if (!placed)
		goto fail;
	img->lo += img->bias;
	img->hi += img->bias;
	image_find_eh_frame_hdr(img);
	img->path = strdup(path);
	if (!img->path) {
		err = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	munmap(img->file, img->file_size);
	img->file = NULL;
	return err;
}

static int lu_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			     int need_unwind_info, void *arg)
{
	const struct elf_image *img = image_find(arg, ip);
	unw_dyn_info_t di;

	if (!img || !img->eh_frame_hdr)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = img->lo;
	di.end_ip = img->hi;
	di.u.rti.segbase = img->eh_frame_hdr;
	di.u.rti.table_data = img->table;
	di.u.rti.table_len = img->fde_count * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

static void lu_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int lu_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as;
	(void)dilap;
	(void)arg;
	return -UNW_ENOINFO;
}

/* The stack from the snapshot, text and unwind tables from the ELF files. */
static int lu_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_walker *w = arg;
	const struct bench_snapshot *s = w->snap;
	const struct elf_image *img;
	uint64_t off = addr - s->base;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= s->base && s->size >= sizeof(*valp) && off <= s->size - sizeof(*valp)) {
		memcpy(valp, s->stack + off, sizeof(*valp));
		return 0;
	}
	img = image_find(w, addr);
	if (!img || image_read(img, addr, valp))
		return -UNW_EINVAL;
	return 0;
}

static int lu_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write,
			 void *arg)
{
	const struct bench_snapshot *s = ((struct lu_walker *)arg)->snap;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	switch (reg) {
	case UNW_X86_64_RIP:
		*valp = s->regs.pc;
		return 0;
	case UNW_X86_64_RSP:
		*valp = s->regs.sp;
		return 0;
	case UNW_X86_64_RBP:
		*valp = s->regs.fp;
		return 0;
	default:
		return -UNW_EBADREG;
	}
}

static int lu_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			   void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EINVAL;
}

static int lu_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

static int lu_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			    unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_EINVAL;
}

static unw_accessors_t lu_accessors = {
	.find_proc_info = lu_find_proc_info,
	.put_unwind_info = lu_put_unwind_info,
	.get_dyn_info_list_addr = lu_get_dyn_info_list_addr,
	.access_mem = lu_access_mem,
	.access_reg = lu_access_reg,
	.access_fpreg = lu_access_fpreg,
	.resume = lu_resume,
	.get_proc_name = lu_get_proc_name,
};

static size_t lu_walk(void *state, const struct bench_snapshot *s, uint64_t *out, size_t max,
		      const char **why)
{
	struct lu_walker *w = state;
	const char *stop = "depth limit";
	unw_cursor_t cursor;
	unw_word_t ip;
	size_t n = 0;
	int ret;

	w->snap = s;
	ret = unw_init_remote(&cursor, w->as, w);
	if (ret) {
		stop = unw_strerror(ret);
		goto out;
	}
	for (;;) {
		ret = unw_get_reg(&cursor, UNW_REG_IP, &ip);
		if (ret) {
			stop = unw_strerror(ret);
			break;
		}
		if (out)
			out[n] = ip;
		if (++n == max)
			break;
		ret = unw_step(&cursor);
		if (ret <= 0) {
			stop = ret ? unw_strerror(ret) : "outermost frame";
			break;
		}
	}
out:
	if (why)
		*why = stop;
	return n;
}

/* Every ELF file of /proc/self/maps, placed by its first mapping. */
static int lu_load_images(struct lu_walker *w)
{
	char line[4096];
	size_t cap = 0;
	int err = 0;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, offset;
		int path_at = 0;
		char *path;
		bool seen = false;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &start, &end,
			   &offset, &path_at) < 3 || !path_at)
			continue;
		path = line + path_at;
		path[strcspn(path, "\n")] = '\0';
		if (path[0] != '/')
			continue;
		for (size_t i = 0; i < w->nimages && !seen; i++)
			seen = !strcmp(w->images[i].path, path);
		if (seen)
			continue;
		if (w->nimages == cap) {
			struct elf_image *grown;

			cap = cap ? cap * 2 : 16;
			grown = realloc(w->images, cap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			w->images = grown;
		}
		/* files that are not ELF (locale archives) are skipped */
		if (!image_open(&w->images[w->nimages], path, start, offset))
			w->nimages++;
	}
	fclose(f);
	return err;
}

static void lu_walker__free(void *state)
{
	struct lu_walker *w = state;

	if (!w)
		return;
	if (w->as)
		unw_destroy_addr_space(w->as);
	for (size_t i = 0; i < w->nimages; i++) {
		munmap(w->images[i].file, w->images[i].file_size);
		free(w->images[i].path);
	}
	free(w->images);
	free(w);
}

int unwinder_libunwind__init(struct unwinder *u)
{
	struct lu_walker *w;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "bench_unwind: libunwind: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	*u = (struct unwinder){ "libunwind", lu_walk, lu_walker__free, w };
	err = lu_load_images(w);
	if (err) {
		fprintf(stderr, "bench_unwind: libunwind: reading /proc/self/maps: %s\n",
			strerror(-err));
		return err;
	}
	w->as = unw_create_addr_space(&lu_accessors, 0);
	if (!w->as) {
		fprintf(stderr, "bench_unwind: libunwind: cannot create an address space\n");
		return -ENOMEM;
	}
	/* warm caches: register states are kept per IP across unwinds */
	unw_set_caching_policy(w->as, UNW_CACHE_GLOBAL);
	return 0;
}
