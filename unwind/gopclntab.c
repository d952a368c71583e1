/* SPDX-License-Identifier: BSD-2-Clause */
/* Go's function table (.gopclntab): header, function search, _func records, pc-value tables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"
#include "gopclntab_internal.h"

/* Longest varint a uint32 takes: 5 groups of 7 bits. */
#define VARINT_MAX 5

/* Where the parts of a table lie, as offsets in its bytes; filled by parse_header(). */
struct layout {
	unsigned version;	/* 116, 118, 120 */
	uint8_t quantum;	/* instruction size unit of pc deltas */
	uint8_t ptr_size;
	uint32_t nfunc;
	uint64_t text_start;	/* 1.18+: what functab entries are relative to */
	size_t funcname_off;	/* funcnametab */
	size_t pctab_off;
	size_t pcln_off;	/* pclntable: functab, then the _func records */
	size_t field;		/* bytes of one functab field */
};

struct sfu_gopclntab {
	struct layout lay;
	const uint8_t *data;	/* the table, in image */
	size_t size;
	size_t image_size;
	uint64_t image_addr;	/* ELF address of image[0]; 0 when only the table is held */
	uint64_t gofunc;	/* moduledata.gofunc (Go 1.18+), 0 when unknown */
	uint8_t *extra;		/* a copy of the segment holding gofunc when image does not */
	size_t extra_size;
	uint64_t extra_addr;
	uint8_t image[];	/* a copy: files are untrusted and may change */
};

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_uptr(const uint8_t *p, unsigned ptr_size)
{
	return ptr_size == 4 ? get_u32(p) : get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* True when [off, off + len) lies inside a buffer of @size bytes. */
static bool fits(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static int parse_header(const uint8_t *d, size_t size, uint64_t text_hint, struct layout *lay,
			struct sfu_diag *diag)
{
	unsigned words, w_name;
	uint64_t off[8];
	uint32_t magic;

	if (size < 8)
		return diag_set(diag, -EBADMSG, "gopclntab: %zu bytes, too short for a header", size);
	magic = get_u32(d);
	if (magic == GOPCLNTAB_MAGIC_116)
		lay->version = 116;
	else if (magic == GOPCLNTAB_MAGIC_118)
		lay->version = 118;
	else if (magic == GOPCLNTAB_MAGIC_120)
		lay->version = 120;
	else
		return diag_set(diag, -ENOTSUP, "gopclntab: unknown magic 0x%08x", magic);
	if (d[4] || d[5])
		return diag_set(diag, -EBADMSG, "gopclntab: header padding is not zero");
	lay->quantum = d[6];
	lay->ptr_size = d[7];
	if (lay->quantum != 1 && lay->quantum != 2 && lay->quantum != 4)
		return diag_set(diag, -EBADMSG, "gopclntab: pc quantum %u", lay->quantum);
	if (lay->ptr_size != 4 && lay->ptr_size != 8)
		return diag_set(diag, -EBADMSG, "gopclntab: pointer size %u", lay->ptr_size);
	/* 1.18 put textStart between nfiles and the offsets */
	words = lay->version == 116 ? 7 : 8;
	if (!fits(size, 8, (uint64_t)words * lay->ptr_size))
		return diag_set(diag, -EBADMSG, "gopclntab: header past the end (%zu bytes)", size);
	for (unsigned i = 0; i < words; i++)
		off[i] = get_uptr(d + 8 + i * lay->ptr_size, lay->ptr_size);
	w_name = lay->version == 116 ? 2 : 3;
	lay->text_start = lay->version == 116 ? 0 : off[2];
	if (lay->version != 116 && !lay->text_start)
		lay->text_start = text_hint;
	lay->field = lay->version == 116 ? lay->ptr_size : 4;
	if (off[w_name] > size || off[w_name + 3] > size || off[w_name + 4] > size)
		return diag_set(diag, -EBADMSG, "gopclntab: a table offset lies past the end");
	lay->funcname_off = off[w_name];
	lay->pctab_off = off[w_name + 3];
	lay->pcln_off = off[w_name + 4];
	/* never trust a count: the function table must fit before a record is read */
	if (off[0] > UINT32_MAX || !fits(size, lay->pcln_off, (off[0] * 2 + 1) * lay->field))
		return diag_set(diag, -EBADMSG, "gopclntab: %llu functions do not fit",
				(unsigned long long)off[0]);
	lay->nfunc = (uint32_t)off[0];
	return 0;
}

struct sfu_gopclntab *sfu_gopclntab__new_in(const void *image, size_t image_size,
					    uint64_t image_addr, size_t off, size_t size,
					    uint64_t text_hint, struct sfu_diag *diag)
{
	struct sfu_gopclntab *t;
	struct layout lay;
	int err;

	if (!fits(image_size, off, size)) {
		diag_set(diag, -EBADMSG, "gopclntab: 0x%zx+0x%zx past the end of its segment", off,
			 size);
		errno = EBADMSG;
		return NULL;
	}
	if ((err = parse_header((const uint8_t *)image + off, size, text_hint, &lay, diag))) {
		errno = -err;
		return NULL;
	}
	t = malloc(sizeof(*t) + image_size);
	if (!t) {
		diag_set(diag, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	t->lay = lay;
	t->image_size = image_size;
	t->image_addr = image_addr;
	t->gofunc = 0;
	t->extra = NULL;
	t->extra_size = 0;
	t->extra_addr = 0;
	memcpy(t->image, image, image_size);
	t->data = t->image + off;
	t->size = size;
	return t;
}

struct sfu_gopclntab *sfu_gopclntab__new(const void *data, size_t size, uint64_t text_hint,
					 struct sfu_diag *diag)
{
	return sfu_gopclntab__new_in(data, size, 0, 0, size, text_hint, diag);
}

void sfu_gopclntab__free(struct sfu_gopclntab *t)
{
	if (t)
		free(t->extra);
	free(t);
}

int sfu_gopclntab__scan(const uint8_t *image, size_t size, size_t *off)
{
	struct layout lay;

	/* the linker aligns the table to at least 8 bytes (32 on x86-64) */
	for (size_t i = 0; i + 8 <= size; i += 8) {
		uint32_t magic = get_u32(image + i);

		if (magic != GOPCLNTAB_MAGIC_116 && magic != GOPCLNTAB_MAGIC_118 &&
		    magic != GOPCLNTAB_MAGIC_120)
			continue;
		if (parse_header(image + i, size - i, 0, &lay, NULL) || !lay.nfunc)
			continue;
		*off = i;
		return 0;
	}
	return -ENOENT;
}

size_t sfu_gopclntab__count(const struct sfu_gopclntab *t)
{
	return t->lay.nfunc;
}

unsigned sfu_gopclntab__version(const struct sfu_gopclntab *t)
{
	return t->lay.version;
}

unsigned sfu_gopclntab__ptr_size(const struct sfu_gopclntab *t)
{
	return t->lay.ptr_size;
}

size_t sfu_gopclntab__memory(const struct sfu_gopclntab *t)
{
	return t ? sizeof(*t) + t->image_size + t->extra_size : 0;
}

/* functab field @k (entry i is fields 2i and 2i+1; field 2 * nfunc is the end of text). */
static uint64_t functab_field(const struct sfu_gopclntab *t, size_t k)
{
	const uint8_t *p = t->data + t->lay.pcln_off + k * t->lay.field;

	return t->lay.field == 4 ? get_u32(p) : get_uptr(p, t->lay.ptr_size);
}

static uint64_t functab_entry(const struct sfu_gopclntab *t, size_t i)
{
	uint64_t v = functab_field(t, 2 * i);

	return t->lay.version == 116 ? v : t->lay.text_start + v;
}

const char *sfu_gopclntab__name(const struct sfu_gopclntab *t, int64_t nameoff)
{
	uint64_t off = t->lay.funcname_off + (uint64_t)nameoff;

	if (nameoff < 0 || off < t->lay.funcname_off || off >= t->size ||
	    !memchr(t->data + off, 0, t->size - off))
		return NULL;
	return (const char *)t->data + off;
}

/* Go 1.16 had no function flags: the runtime's names for the same functions. */
static uint8_t flags_by_name(const char *name)
{
	static const char *const top[] = { "runtime.goexit", "runtime.mstart", "runtime.rt0_go" };
	static const char *const spwrite[] = { "runtime.systemstack", "runtime.mcall",
					       "runtime.morestack" };

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		if (!strcmp(name, top[i]))
			return GO_FUNC_TOPFRAME;
	for (size_t i = 0; i < sizeof(spwrite) / sizeof(spwrite[0]); i++)
		if (!strcmp(name, spwrite[i]))
			return GO_FUNC_SPWRITE;
	return 0;
}

/* Decode the _func record of functab entry @i, whose range is [entry, end). */
static int decode_func(const struct sfu_gopclntab *t, size_t i, uint64_t entry, uint64_t end,
		       struct go_func *out)
{
	const struct layout *lay = &t->lay;
	size_t base = lay->version == 116 ? lay->ptr_size : 4;
	size_t tail = base + (lay->version == 120 ? 36 : 32);
	uint64_t rec = (uint64_t)lay->pcln_off + functab_field(t, 2 * i + 1);
	const uint8_t *p;

	if (rec < lay->pcln_off || !fits(t->size, rec, tail + 4))
		return -EBADMSG;
	p = t->data + rec;
	out->name = sfu_gopclntab__name(t, (int32_t)get_u32(p + base));
	if (!out->name)
		return -EBADMSG;
	out->entry = entry;
	out->end = end;
	out->pcsp = get_u32(p + base + 12);
	out->npcdata = get_u32(p + base + 24);
	out->func_id = p[tail];
	out->flags = p[tail + 1];
	out->nfuncdata = p[tail + 3];
	out->rec = rec;
	if (lay->version == 116 && !out->flags)
		out->flags = flags_by_name(out->name);
	return 0;
}

int sfu_gopclntab__func(const struct sfu_gopclntab *t, size_t i, struct go_func *out)
{
	uint64_t entry, end;

	if (i >= t->lay.nfunc)
		return -ENOENT;
	entry = functab_entry(t, i);
	end = functab_entry(t, i + 1);
	if (end < entry)
		return -EBADMSG;
	return decode_func(t, i, entry, end, out);
}

int sfu_gopclntab__find(const struct sfu_gopclntab *t, uint64_t pc, struct go_func *out)
{
	size_t lo = 0, hi = t->lay.nfunc;
	uint64_t entry, end;

	if (!hi || pc < functab_entry(t, 0) || pc >= functab_entry(t, hi))
		return -ENOENT;
	/* invariant: entry(lo) <= pc < entry(hi) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (functab_entry(t, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	entry = functab_entry(t, lo);
	end = functab_entry(t, lo + 1);
	/* a table unsorted where the search went gives a range that misses pc */
	if (pc < entry || pc >= end)
		return -EBADMSG;
	return decode_func(t, lo, entry, end, out);
}

/* One unsigned varint at *off, bounded by the table's end. */
static int read_varint(const struct sfu_gopclntab *t, size_t *off, uint32_t *v)
{
	uint32_t val = 0;

	for (unsigned i = 0; i < VARINT_MAX; i++) {
		uint8_t b;

		if (*off >= t->size)
			return -EBADMSG;
		b = t->data[(*off)++];
		val |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = val;
			return 0;
		}
	}
	return -EBADMSG;
}

/*
 * The value of the pc-value table at pctab offset @table for @pc in @f: pairs
 * of (zigzag value delta, pc delta in quanta) starting from -1 at the entry;
 * each value holds up to the pc the pair ends at.
 */
static int pcvalue(const struct sfu_gopclntab *t, const struct go_func *f, uint32_t table,
		   uint64_t pc, int32_t *value, uint64_t *run_start)
{
	uint64_t off = (uint64_t)t->lay.pctab_off + table;
	uint64_t at = f->entry;
	uint32_t val = (uint32_t)-1;
	size_t pos;

	if (!table)
		return -ENOENT;
	if (off >= t->size)
		return -EBADMSG;
	if (pc < f->entry || pc >= f->end)
		return -ENOENT;
	pos = (size_t)off;
	/* each pair takes at least two bytes: the table's end bounds the loop */
	for (bool first = true;; first = false) {
		uint32_t uvdelta, pcdelta;
		int err;

		if ((err = read_varint(t, &pos, &uvdelta)))
			return err;
		if (!uvdelta && !first)
			return -ENOENT;
		val += uvdelta & 1 ? ~(uvdelta >> 1) : uvdelta >> 1;
		if ((err = read_varint(t, &pos, &pcdelta)))
			return err;
		if (run_start)
			*run_start = at;
		at += (uint64_t)pcdelta * t->lay.quantum;
		if (pc < at) {
			*value = (int32_t)val;
			return 0;
		}
	}
}

int sfu_gopclntab__spdelta(const struct sfu_gopclntab *t, const struct go_func *f, uint64_t pc,
			   int32_t *delta, uint64_t *run_start)
{
	return pcvalue(t, f, f->pcsp, pc, delta, run_start);
}

/* Size of the fixed part of a _func record. */
static size_t func_fixed(const struct sfu_gopclntab *t)
{
	size_t base = t->lay.version == 116 ? t->lay.ptr_size : 4;

	return base + (t->lay.version == 120 ? 36 : 32) + 4;
}

int sfu_gopclntab__pcdata(const struct sfu_gopclntab *t, const struct go_func *f,
			  uint32_t index, uint64_t pc, int32_t *value)
{
	uint64_t at = (uint64_t)f->rec + func_fixed(t) + (uint64_t)index * 4;

	if (index >= f->npcdata)
		return -ENOENT;
	if (!fits(t->size, at, 4))
		return -EBADMSG;
	return pcvalue(t, f, get_u32(t->data + at), pc, value, NULL);
}

int sfu_gopclntab__funcdata(const struct sfu_gopclntab *t, const struct go_func *f,
			    uint32_t index, uint64_t *value)
{
	uint64_t at = (uint64_t)f->rec + func_fixed(t) + (uint64_t)f->npcdata * 4;

	if (index >= f->nfuncdata)
		return -ENOENT;
	if (t->lay.version == 116) {
		/* pointers, aligned like the records (the table starts aligned) */
		unsigned ps = t->lay.ptr_size;

		at = (at + ps - 1) / ps * ps + (uint64_t)index * ps;
		if (!fits(t->size, at, ps))
			return -EBADMSG;
		*value = get_uptr(t->data + at, ps);
		return *value ? 0 : -ENOENT;
	}
	at += (uint64_t)index * 4;
	if (!fits(t->size, at, 4))
		return -EBADMSG;
	*value = get_u32(t->data + at);
	return *value == UINT32_MAX ? -ENOENT : 0;
}

int sfu_gopclntab__set_gofunc(struct sfu_gopclntab *t, uint64_t gofunc, const void *seg,
			      size_t size, uint64_t addr)
{
	if (seg && size) {
		uint8_t *copy = malloc(size);

		if (!copy)
			return -ENOMEM;
		memcpy(copy, seg, size);
		free(t->extra);
		t->extra = copy;
		t->extra_size = size;
		t->extra_addr = addr;
	}
	t->gofunc = gofunc;
	return 0;
}

int sfu_gopclntab__read(const struct sfu_gopclntab *t, uint64_t addr, void *buf, size_t len)
{
	uint64_t off = addr - t->image_addr;

	if (t->image_addr && addr >= t->image_addr && fits(t->image_size, off, len)) {
		memcpy(buf, t->image + off, len);
		return 0;
	}
	off = addr - t->extra_addr;
	if (t->extra && addr >= t->extra_addr && fits(t->extra_size, off, len)) {
		memcpy(buf, t->extra + off, len);
		return 0;
	}
	return -ENOENT;
}

/* Where moduledata keeps gofunc (runtime/symtab.go): after 19 words, then 19 (1.20: 21) more. */
#define MODULEDATA_TEXT 22
#define MODULEDATA_GOFUNC_118 38
#define MODULEDATA_GOFUNC_120 40

int sfu_gopclntab__find_gofunc(const struct sfu_gopclntab *t, const uint8_t *data, size_t size,
			       uint64_t *gofunc)
{
	unsigned ps = t->lay.ptr_size;
	uint64_t tab = t->image_addr + (uint64_t)(t->data - t->image);
	size_t idx = t->lay.version == 120 ? MODULEDATA_GOFUNC_120 : MODULEDATA_GOFUNC_118;

	if (!t->image_addr || t->lay.version == 116)
		return -ENOENT;
	/* moduledata starts with the table's address, then funcnametab's */
	for (size_t i = 0; i + (idx + 1) * ps <= size; i += ps) {
		const uint8_t *md = data + i;
		uint64_t g;

		if (get_uptr(md, ps) != tab || get_uptr(md + ps, ps) != tab + t->lay.funcname_off ||
		    get_uptr(md + MODULEDATA_TEXT * ps, ps) != t->lay.text_start)
			continue;
		g = get_uptr(md + idx * ps, ps);
		if (!g)
			continue;
		*gofunc = g;
		return 0;
	}
	return -ENOENT;
}

/* inlinedCall (runtime/symtab.go): 20 bytes with a parent index before Go 1.20, 16 after. */
#define INLCALL_SIZE_116 20
#define INLCALL_SIZE_120 16
#define INLINE_DEPTH_MAX 64

int sfu_gopclntab__inlined(const struct sfu_gopclntab *t, const struct go_func *f, uint64_t pc,
			   const char **names, size_t max, size_t *count)
{
	size_t entry_size = t->lay.version == 120 ? INLCALL_SIZE_120 : INLCALL_SIZE_116;
	size_t name_at = t->lay.version == 120 ? 4 : 12, parent_pc_at = name_at + 4;
	uint64_t tree;
	int32_t ix;
	int err;

	*count = 0;
	err = sfu_gopclntab__pcdata(t, f, GO_PCDATA_INLTREE_INDEX, pc, &ix);
	if (err || ix < 0)
		return err == -EBADMSG ? err : 0;
	if ((err = sfu_gopclntab__funcdata(t, f, GO_FUNCDATA_INLTREE, &tree)))
		return err == -ENOENT ? -EBADMSG : err;
	if (t->lay.version != 116) {
		if (!t->gofunc)
			return -ENOENT;
		tree += t->gofunc;
	}
	/* each call site's pc is in the caller one level out: its index there, until none */
	for (unsigned depth = 0; ix >= 0; depth++) {
		uint8_t call[INLCALL_SIZE_116];
		int32_t nameoff, parent_pc;
		const char *name;

		if (depth == INLINE_DEPTH_MAX ||
		    sfu_gopclntab__read(t, tree + (uint64_t)ix * entry_size, call, entry_size))
			return -EBADMSG;
		memcpy(&nameoff, call + name_at, 4);
		memcpy(&parent_pc, call + parent_pc_at, 4);
		if (!(name = sfu_gopclntab__name(t, nameoff)))
			return -EBADMSG;
		if (*count < max)
			names[*count] = name;
		++*count;
		if (parent_pc < 0 || (uint64_t)parent_pc >= f->end - f->entry)
			return -EBADMSG;
		if ((err = sfu_gopclntab__pcdata(t, f, GO_PCDATA_INLTREE_INDEX,
						 f->entry + (uint64_t)parent_pc, &ix)))
			return err == -ENOENT ? 0 : err;
	}
	return 0;
}
