/* SPDX-License-Identifier: BSD-2-Clause */
/* The vDSO images a recording's processes map: read from memory once, made modules with a build ID. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vdso.h"

/* The kernel's vDSO is a few pages; a mapping much larger is not one we read. */
#define VDSO_MAX_BYTES (1u << 20)
/* Distinct images in one recording: one per ABI (64-bit, 32-bit, x32) and a few spare. */
#define VDSO_MAX_IMAGES 8

struct vdso_image {
	uint8_t *bytes;
	uint64_t size;		/* of the ELF image */
	uint64_t map_len;	/* of the mapping it was read from */
	int fd;			/* the memfd the module was opened from */
	struct sfu_module *module;
};

struct vdso_set {
	struct sfu_cache *cache;
	bool own_tried;
	struct vdso_image *own;	/* sfprof's own: the fallback for a process that cannot be read */
	struct vdso_image *images[VDSO_MAX_IMAGES];
	size_t nimages;
};

static bool fits(uint64_t off, uint64_t n, uint64_t len)
{
	return off <= len && n <= len - off;
}

uint64_t vdso_image_size(const uint8_t *data, uint64_t len)
{
	uint64_t end = 0, phoff, shoff;
	unsigned phnum, phent, shnum, shent;
	bool is64;

	if (len < EI_NIDENT || memcmp(data, ELFMAG, SELFMAG))
		return 0;
	is64 = data[EI_CLASS] == ELFCLASS64;
	if (!is64 && data[EI_CLASS] != ELFCLASS32)
		return 0;
	if (is64) {
		Elf64_Ehdr eh;

		if (len < sizeof(eh))
			return 0;
		memcpy(&eh, data, sizeof(eh));
		phoff = eh.e_phoff, phnum = eh.e_phnum, phent = eh.e_phentsize;
		shoff = eh.e_shoff, shnum = eh.e_shnum, shent = eh.e_shentsize;
		end = sizeof(eh);
		if ((phnum && phent < sizeof(Elf64_Phdr)) || (shnum && shent < sizeof(Elf64_Shdr)))
			return 0;
	} else {
		Elf32_Ehdr eh;

		if (len < sizeof(eh))
			return 0;
		memcpy(&eh, data, sizeof(eh));
		phoff = eh.e_phoff, phnum = eh.e_phnum, phent = eh.e_phentsize;
		shoff = eh.e_shoff, shnum = eh.e_shnum, shent = eh.e_shentsize;
		end = sizeof(eh);
		if ((phnum && phent < sizeof(Elf32_Phdr)) || (shnum && shent < sizeof(Elf32_Shdr)))
			return 0;
	}
	if (!fits(phoff, (uint64_t)phnum * phent, len) || !fits(shoff, (uint64_t)shnum * shent, len))
		return 0;
	if (phnum && phoff + (uint64_t)phnum * phent > end)
		end = phoff + (uint64_t)phnum * phent;
	if (shnum && shoff + (uint64_t)shnum * shent > end)
		end = shoff + (uint64_t)shnum * shent;
	for (unsigned i = 0; i < phnum; i++) {
		uint64_t off, filesz;

		if (is64) {
			Elf64_Phdr ph;

			memcpy(&ph, data + phoff + (uint64_t)i * phent, sizeof(ph));
			off = ph.p_offset, filesz = ph.p_filesz;
		} else {
			Elf32_Phdr ph;

			memcpy(&ph, data + phoff + (uint64_t)i * phent, sizeof(ph));
			off = ph.p_offset, filesz = ph.p_filesz;
		}
		if (!fits(off, filesz, len))
			return 0;
		if (off + filesz > end)
			end = off + filesz;
	}
	for (unsigned i = 0; i < shnum; i++) {
		uint64_t off, size;
		uint32_t type;

		if (is64) {
			Elf64_Shdr sh;

			memcpy(&sh, data + shoff + (uint64_t)i * shent, sizeof(sh));
			off = sh.sh_offset, size = sh.sh_size, type = sh.sh_type;
		} else {
			Elf32_Shdr sh;

			memcpy(&sh, data + shoff + (uint64_t)i * shent, sizeof(sh));
			off = sh.sh_offset, size = sh.sh_size, type = sh.sh_type;
		}
		if (type == SHT_NOBITS || type == SHT_NULL)
			continue;
		if (!fits(off, size, len))
			return 0;
		if (off + size > end)
			end = off + size;
	}
	return end;
}

static void image_free(struct vdso_image *im)
{
	if (!im)
		return;
	sfu_module__put(im->module);
	if (im->fd >= 0)
		close(im->fd);
	free(im->bytes);
	free(im);
}

/* @len bytes of process @pid at @start, read whole; NULL with errno set otherwise. */
static uint8_t *read_mem(uint32_t pid, uint64_t start, uint64_t len)
{
	char path[64];
	uint8_t *buf;
	uint64_t got = 0;
	int fd, e;

	if (!len || len > VDSO_MAX_BYTES) {
		errno = E2BIG;
		return NULL;
	}
	buf = malloc(len);
	if (!buf)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(start + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = EIO;
			close(fd);
			goto fail;
		}
		got += n;
	}
	close(fd);
	return buf;
fail:
	e = errno;
	free(buf);
	errno = e;
	return NULL;
}

/* An image of @bytes (taken over, even on failure) read from a mapping of @map_len. */
static struct vdso_image *image_new(struct sfu_cache *cache, uint8_t *bytes, uint64_t map_len)
{
	struct vdso_image *im = calloc(1, sizeof(*im));
	char path[64];
	uint64_t done = 0;
	int e;

	if (!im) {
		free(bytes);
		return NULL;
	}
	im->bytes = bytes;
	im->map_len = map_len;
	im->fd = -1;
	im->size = vdso_image_size(bytes, map_len);
	if (!im->size) {
		errno = EBADMSG;
		goto fail;
	}
	/* a file the module opens and the build-ID cache copies, gone with its last descriptor */
	im->fd = memfd_create("sfprof-vdso", MFD_CLOEXEC);
	if (im->fd < 0)
		goto fail;
	while (done < im->size) {
		ssize_t n = write(im->fd, bytes + done, im->size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = EIO;
			goto fail;
		}
		done += n;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", im->fd);
	im->module = sfu_cache__open(cache, path, NULL, NULL);
	if (!im->module)
		goto fail;
	if (!sfu_module__build_id(im->module)->len) {
		/* nothing to keep it by in the build-ID cache, nor to name it by in report */
		errno = ENOENT;
		goto fail;
	}
	return im;
fail:
	e = errno;
	image_free(im);
	errno = e;
	return NULL;
}

struct vdso_set *vdso_set__new(struct sfu_cache *cache)
{
	struct vdso_set *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->cache = cache;
	return v;
}

void vdso_set__free(struct vdso_set *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nimages; i++)
		image_free(v->images[i]);
	free(v);
}

/* The length of sfprof's own [vdso] mapping at @start, from /proc/self/maps; 0 when not found. */
static uint64_t own_map_len(uint64_t start)
{
	char line[512];
	uint64_t len = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && lo == start && hi > lo &&
		    strstr(line, "[vdso]")) {
			len = hi - lo;
			break;
		}
	}
	fclose(f);
	return len;
}

/* The image of the same bytes, or of @bytes made new (taken over); NULL when none. */
static struct vdso_image *intern(struct vdso_set *v, uint8_t *bytes, uint64_t map_len)
{
	uint64_t size = vdso_image_size(bytes, map_len);
	struct vdso_image *im;

	for (size_t i = 0; size && i < v->nimages; i++) {
		im = v->images[i];
		if (im->size == size && im->map_len == map_len && !memcmp(im->bytes, bytes, size)) {
			free(bytes);
			return im;
		}
	}
	if (v->nimages == VDSO_MAX_IMAGES) {
		free(bytes);
		errno = ENOSPC;
		return NULL;
	}
	im = image_new(v->cache, bytes, map_len);
	if (im)
		v->images[v->nimages++] = im;
	return im;
}

static bool same_build_id(const struct sfu_module *a, const struct sfu_module *b)
{
	const struct sfu_build_id *x = sfu_module__build_id(a), *y = sfu_module__build_id(b);

	return x && y && x->len && x->len == y->len && !memcmp(x->bytes, y->bytes, x->len);
}

static void load_own(struct vdso_set *v)
{
	uint64_t start = getauxval(AT_SYSINFO_EHDR), len;
	uint8_t *bytes;

	v->own_tried = true;
	if (!start || !(len = own_map_len(start)) || len > VDSO_MAX_BYTES ||
	    !(bytes = malloc(len)))
		return;
	memcpy(bytes, (const void *)(uintptr_t)start, len);
	v->own = intern(v, bytes, len);
}

struct sfu_module *vdso_set__module(struct vdso_set *v, uint32_t pid, uint64_t start,
				    uint64_t end)
{
	struct vdso_image *im = NULL;
	uint8_t *bytes;

	if (!v->own_tried)
		load_own(v);
	if (end <= start) {
		errno = EINVAL;
		return NULL;
	}
	bytes = read_mem(pid, start, end - start);
	if (bytes)
		im = intern(v, bytes, end - start);
	/*
	 * The process's copy is private: it may have written to it. An image
	 * that says it is the kernel's own (sfprof's build ID) but is not
	 * byte for byte is not kept under that build ID: sfprof's is used.
	 */
	if (im && v->own && im != v->own && same_build_id(im->module, v->own->module))
		im = v->own;
	else if (!bytes && v->own && v->own->map_len == end - start)
		im = v->own;	/* gone, or not ours to read: the kernel maps one image per ABI */
	if (!im) {
		if (!errno)
			errno = ENOENT;
		return NULL;
	}
	return sfu_module__get(im->module);
}
