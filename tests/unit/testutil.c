/* SPDX-License-Identifier: BSD-2-Clause */
/* Assert helpers shared by the unit suites. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/*
 * In the sanitizer build, undefined behaviour must fail the test rather than
 * print a line nobody reads; the runtime calls this hook when it is linked in.
 */
const char *__ubsan_default_options(void);
__attribute__((used, visibility("default"))) const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
}

static void hexdump_diff(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	size_t n = got_len > want_len ? got_len : want_len;

	for (size_t i = 0; i < n; i++) {
		int g = i < got_len ? got[i] : -1, w = i < want_len ? want[i] : -1;

		if (g != w) {
			print_error("first difference at byte %zu: got %d, want %d\n", i, g, w);
			return;
		}
	}
}

void _assert_bytes_equal(const void *got, size_t got_len, const void *want, size_t want_len,
			 const char *file, int line)
{
	if (got_len == want_len && !memcmp(got, want, got_len))
		return;
	print_error("byte strings differ (got %zu bytes, want %zu)\n", got_len, want_len);
	hexdump_diff(got, got_len, want, want_len);
	_fail(file, line);
}

static bool loc_uses_reg(uint8_t kind)
{
	return kind == SFU_LOC_REG_OFFSET || kind == SFU_LOC_DEREF || kind == SFU_LOC_IN_REG;
}

static int loc_equal(const struct sfu_loc *a, const struct sfu_loc *b)
{
	if (a->kind != b->kind)
		return 0;
	if (loc_uses_reg(a->kind)) {
		if (a->reg != b->reg)
			return 0;
		if (a->reg == SFU_REG_OTHER && a->dwarf_reg != b->dwarf_reg)
			return 0;
	}
	if (a->kind != SFU_LOC_SAME && a->kind != SFU_LOC_UNDEFINED && a->offset != b->offset)
		return 0;
	return 1;
}

static const char *loc_str(const struct sfu_loc *l, char *buf, size_t len)
{
	static const char *const kinds[] = { "same", "undef", "at-cfa", "reg+off", "deref",
					     "in-reg" };
	static const char *const regs[] = { "sp", "fp", "ra", "r" };
	const char *k = l->kind < 6 ? kinds[l->kind] : "?";
	const char *r = l->reg < 4 ? regs[l->reg] : "?";

	if (l->reg == SFU_REG_OTHER)
		snprintf(buf, len, "%s(%s%u%+d)", k, r, l->dwarf_reg, l->offset);
	else
		snprintf(buf, len, "%s(%s%+d)", k, r, l->offset);
	return buf;
}

void _assert_row_equal(const struct sfu_row *got, const struct sfu_row *want,
		       const char *file, int line)
{
	char b[6][48];

	if (got->start == want->start && got->flags == want->flags &&
	    loc_equal(&got->cfa, &want->cfa) && loc_equal(&got->ra, &want->ra) &&
	    loc_equal(&got->fp, &want->fp))
		return;
	print_error("rows differ:\n"
		    "  got  start %#x flags %#x cfa %s ra %s fp %s\n"
		    "  want start %#x flags %#x cfa %s ra %s fp %s\n",
		    got->start, got->flags, loc_str(&got->cfa, b[0], 48),
		    loc_str(&got->ra, b[1], 48), loc_str(&got->fp, b[2], 48),
		    want->start, want->flags, loc_str(&want->cfa, b[3], 48),
		    loc_str(&want->ra, b[4], 48), loc_str(&want->fp, b[5], 48));
	_fail(file, line);
}

void _assert_fde_equal(const struct sfu_fde *got, const struct sfu_fde *want,
		       const char *file, int line)
{
	if (got->start == want->start && got->size == want->size &&
	    got->num_fres == want->num_fres && got->fre_type == want->fre_type &&
	    got->fde_type == want->fde_type && got->pauth_key == want->pauth_key &&
	    got->rep_size == want->rep_size && got->signal_frame == want->signal_frame &&
	    got->info2 == want->info2)
		return;
	print_error("FDEs differ:\n"
		    "  got  start %#llx size %#x fres %u fre_type %u fde_type %u pauth %u rep %u signal %d info2 %#x\n"
		    "  want start %#llx size %#x fres %u fre_type %u fde_type %u pauth %u rep %u signal %d info2 %#x\n",
		    (unsigned long long)got->start, got->size, got->num_fres, got->fre_type,
		    got->fde_type, got->pauth_key, got->rep_size, got->signal_frame, got->info2,
		    (unsigned long long)want->start, want->size, want->num_fres, want->fre_type,
		    want->fde_type, want->pauth_key, want->rep_size, want->signal_frame,
		    want->info2);
	_fail(file, line);
}

struct sfu_sframe *sframe_new_exact(const void *data, size_t len, uint64_t addr,
				    struct sfu_diag *diag)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct sfu_sframe *sf;
	int saved;

	assert_non_null(copy);
	if (len)
		memcpy(copy, data, len);
	/* a zero-length section still gets a valid pointer: the decoder must not touch it */
	sf = sfu_sframe__new(copy, len, addr, diag);
	saved = errno;
	free(copy);
	errno = saved;
	return sf;
}

void *memdup_exact_or_fail(const void *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	assert_non_null(copy);
	if (len)
		memcpy(copy, data, len);
	return copy;
}

static const char *cbf_str(const struct sfu_cbf_frame *f, char *buf, size_t len)
{
	const char *name = sfu_cbf_kind_name(f->kind);

	snprintf(buf, len, "%s %#llx", name ? name : "kind?", (unsigned long long)f->value);
	return buf;
}

void _assert_cbf_frames_equal(const struct sfu_cbf_frame *got, size_t got_n,
			      const struct sfu_cbf_frame *want, size_t want_n,
			      const char *file, int line)
{
	size_t n = got_n < want_n ? got_n : want_n;
	char g[64], w[64];

	for (size_t i = 0; i < n; i++) {
		if (got[i].kind == want[i].kind && got[i].value == want[i].value)
			continue;
		print_error("CBF result %zu differs: got %s, want %s (%zu results, want %zu)\n", i,
			    cbf_str(&got[i], g, sizeof(g)), cbf_str(&want[i], w, sizeof(w)),
			    got_n, want_n);
		_fail(file, line);
	}
	if (got_n != want_n) {
		print_error("got %zu CBF results, want %zu; next: %s\n", got_n, want_n,
			    got_n > n ? cbf_str(&got[n], g, sizeof(g)) : cbf_str(&want[n], w, sizeof(w)));
		_fail(file, line);
	}
}

void _assert_sframe_rejects(const void *data, size_t len, int want_errno,
			    const char *file, int line)
{
	struct sfu_diag diag;
	struct sfu_sframe *sf;

	memset(&diag, 0, sizeof(diag));
	errno = 0;
	sf = sframe_new_exact(data, len, 0x400000, &diag);
	if (sf) {
		sfu_sframe__free(sf);
		print_error("section of %zu bytes decoded, want errno %d (%s)\n", len, want_errno,
			    strerror(want_errno));
		_fail(file, line);
		return;
	}
	if (errno != want_errno) {
		print_error("errno %d (%s), want %d (%s); reason \"%s\"\n", errno, strerror(errno),
			    want_errno, strerror(want_errno), diag.reason);
		_fail(file, line);
	}
	if (diag.err != -want_errno) {
		print_error("diag.err %d, want %d; reason \"%s\"\n", diag.err, -want_errno,
			    diag.reason);
		_fail(file, line);
	}
	if (getenv("SFU_TEST_VERBOSE"))
		print_message("rejected (%s): %s\n", strerror(want_errno), diag.reason);
	if (!diag.reason[0] || !memchr(diag.reason, '\0', sizeof(diag.reason))) {
		print_error("empty or unterminated diag reason\n");
		_fail(file, line);
	}
}

void *read_file_or_fail(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size = 0;

	if (!f)
		fail_msg("%s: cannot open", path);
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		fail_msg("%s: cannot seek", path);
	buf = malloc(size ? size : 1);
	assert_non_null(buf);
	if (fread(buf, 1, size, f) != (size_t)size)
		fail_msg("%s: short read", path);
	fclose(f);
	*len = size;
	return buf;
}

void bb_init(struct bytebuf *b, bool big_endian)
{
	b->len = 0;
	b->big_endian = big_endian;
}

void bb_set(struct bytebuf *b, size_t at, uint64_t v, unsigned size)
{
	assert_true(size == 1 || size == 2 || size == 4 || size == 8);
	assert_true(at + size <= sizeof(b->data));
	for (unsigned i = 0; i < size; i++) {
		unsigned shift = b->big_endian ? 8 * (size - 1 - i) : 8 * i;

		b->data[at + i] = (uint8_t)(v >> shift);
	}
}

uint64_t bb_get(const struct bytebuf *b, size_t at, unsigned size)
{
	uint64_t v = 0;

	assert_true(at + size <= b->len);
	for (unsigned i = 0; i < size; i++) {
		unsigned shift = b->big_endian ? 8 * (size - 1 - i) : 8 * i;

		v |= (uint64_t)b->data[at + i] << shift;
	}
	return v;
}

void bb_put(struct bytebuf *b, uint64_t v, unsigned size)
{
	bb_set(b, b->len, v, size);
	b->len += size;
}

void bb_bytes(struct bytebuf *b, const void *p, size_t n)
{
	assert_true(b->len + n <= sizeof(b->data));
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void rng_seed(struct test_rng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t rng_next(struct test_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

int64_t rng_range(struct test_rng *r, int64_t lo, int64_t hi)
{
	uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;

	if (!span)
		return (int64_t)rng_next(r);
	return (int64_t)((uint64_t)lo + rng_next(r) % span);
}

char *make_temp_dir_or_fail(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (asprintf(&dir, "%s/sfu-test-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		fail_msg("out of memory");
	if (!mkdtemp(dir))
		fail_msg("%s: cannot create", dir);
	return dir;
}

void remove_temp_dir(char *dir)
{
	struct dirent *e;
	DIR *d;

	if (!dir)
		return;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char *path;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		path = path_join_or_fail(dir, e->d_name);
		unlink(path);
		free(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
}

char *path_join_or_fail(const char *dir, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		fail_msg("out of memory");
	return path;
}

void write_file_or_fail(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		fail_msg("%s: cannot create", path);
	if (len && fwrite(data, 1, len, f) != len)
		fail_msg("%s: short write", path);
	if (fclose(f))
		fail_msg("%s: cannot write", path);
}

static const void *raw_at(const uint8_t *image, size_t len, uint64_t off, uint64_t size)
{
	if (off > len || size > len - off)
		fail_msg("ELF image: 0x%llx+0x%llx past the end (%zu bytes)",
			 (unsigned long long)off, (unsigned long long)size, len);
	return image + off;
}

size_t raw_elf_build_id(const uint8_t *image, size_t len, uint8_t *id, size_t id_max)
{
	const Elf64_Ehdr *eh = raw_at(image, len, 0, sizeof(*eh));

	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = raw_at(image, len, eh->e_phoff + i * sizeof(*ph), sizeof(*ph));
		const uint8_t *notes;
		size_t align = ph->p_align == 8 ? 8 : 4, off = 0;

		if (ph->p_type != PT_NOTE)
			continue;
		notes = raw_at(image, len, ph->p_offset, ph->p_filesz);
		while (off + sizeof(Elf64_Nhdr) <= ph->p_filesz) {
			Elf64_Nhdr nh;
			size_t name_at = off + sizeof(nh), desc_at;

			memcpy(&nh, notes + off, sizeof(nh));
			/* name and descriptor are padded relative to the note's start */
			desc_at = (name_at + nh.n_namesz + align - 1) & ~(align - 1);
			off = (desc_at + nh.n_descsz + align - 1) & ~(align - 1);
			if (desc_at + nh.n_descsz > ph->p_filesz)
				fail_msg("ELF image: note runs past its segment");
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(notes + name_at, "GNU", 4)) {
				if (nh.n_descsz > id_max)
					fail_msg("ELF image: build ID of %u bytes", nh.n_descsz);
				memcpy(id, notes + desc_at, nh.n_descsz);
				return nh.n_descsz;
			}
		}
	}
	return 0;
}

uint64_t raw_elf_symbol_value(const uint8_t *image, size_t len, const char *name)
{
	const Elf64_Ehdr *eh = raw_at(image, len, 0, sizeof(*eh));

	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = raw_at(image, len, eh->e_shoff + i * sizeof(*sh), sizeof(*sh));
		const Elf64_Shdr *strsh;
		const char *strs;

		if (sh->sh_type != SHT_SYMTAB)
			continue;
		strsh = raw_at(image, len, eh->e_shoff + sh->sh_link * sizeof(*sh), sizeof(*sh));
		strs = raw_at(image, len, strsh->sh_offset, strsh->sh_size);
		for (uint64_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
			const Elf64_Sym *sym = raw_at(image, len, sh->sh_offset + k * sizeof(*sym),
						      sizeof(*sym));
			size_t left = strsh->sh_size - sym->st_name;

			if (sym->st_name < strsh->sh_size && strnlen(strs + sym->st_name, left) < left &&
			    !strcmp(strs + sym->st_name, name))
				return sym->st_value;
		}
	}
	fail_msg("ELF image: no symbol %s in .symtab", name);
	return 0;
}
