/* SPDX-License-Identifier: BSD-2-Clause */
/* Loads a profile: images per pid as they change, samples, and each distinct stack resolved once. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildid/sfarchive.h"
#include "report/session_archive.h"
#include "common/hmap.h"
#include "session.h"
#include "sfunwind/cbf.h"
#include "common/vec.h"

#define MAX_FRAMES 4096
/* The deepest inlined chain shown at one address; deeper ones keep their innermost frames. */
#define MAX_INLINED 64
/*
 * The frames all stacks hold together: this many, and this many more per
 * byte of the stack records read. A CBF `rep` makes one byte thousands of
 * frames: what a file claims that way is held only up to this bound.
 */
#define FRAMES_FLOOR (1u << 24)
#define FRAMES_PER_BYTE 16
/* Mappings are allocated this many at a time, so that the trees can point at them. */
#define MAP_CHUNK 4096

struct session {
	struct profile_meta meta;
	struct profile_status status;
	struct session_totals totals;
	struct symbolizer *sym;
	bool sym_borrowed;	/* opts->symbolizer: not freed here */
	bool no_inline;		/* opts->sym.no_inline: no inlined frames */
	bool python_only;	/* opts->sym.python_only: stacks of Python frames alone */
	struct session_archive *archive;	/* an archive's unpacked files, NULL for a profile */
	char **strings;			/* every string the session owns */
	size_t nstrings, strings_cap;
	struct session_image *images;
	size_t nimages, images_cap;
	/*
	 * Per image while reading: its mappings as a search tree (tsearch(3))
	 * ordered by address, none overlapping, made into the sorted
	 * session_image.maps once the file is read.
	 */
	void **map_trees;
	size_t map_trees_cap;
	struct session_map **map_chunks;	/* what the trees point at */
	size_t nmap_chunks, map_chunks_cap, map_chunk_used;
	struct session_module *modules;	/* in the order of their records */
	size_t nmodules, modules_cap;
	struct hmap *module_ids;	/* the file's module id -> index + 1 */
	struct session_sample *samples;
	size_t nsamples, samples_cap;
	struct session_event *events;	/* [0]: the default; then in the order of their records */
	size_t nevents, events_cap;
	struct session_stack *stacks;
	size_t nstacks, stacks_cap;
	struct session_frame *frames;
	size_t nframes, frames_cap;
	struct hmap *by_pid;		/* pid -> current image | PID_SAMPLED */
	struct hmap *by_tid;		/* tid -> string index of its name */
	struct hmap *stack_keys;	/* (image, ustack id << 32 | kstack id) -> stack + 1 */
	/*
	 * (b, a << 32 | is_ra << 8 | kind) -> frame + 1; a user frame's value
	 * holds in bits 32-63 the number of inlined frames made before it.
	 */
	struct hmap *frame_keys;
	struct profile_reader *reader;
	/*
	 * JIT code (perf maps, jitdumps) in the order of its records; after
	 * reading, jit_sorted holds their indexes by (image, start), with
	 * jit_maxend[i] the largest end of jit_sorted[0..i] within the image.
	 */
	struct jit_entry *jits;
	size_t njits, jits_cap;
	uint32_t *jit_sorted;
	uint64_t *jit_maxend;
	/* the kernel's JIT code (BPF programs, pid 0): sorted by (start, record) after reading */
	struct kernel_jit_entry *kjits;
	size_t nkjits, kjits_cap;
	uint64_t frames_held;		/* by all stacks */
	uint64_t stack_bytes;		/* of the stack records resolved */
	/* the file's Python frame id -> flags << 32 | frame index + 1 (the first record of an id) */
	struct hmap *py_ids;
	struct hmap *py_keys;		/* line, qualname, NUL, file -> frame index + 1 */
	/* (native stack, Python chain) -> merged stack index + 1 */
	struct hmap *py_stacks;
	uint8_t py_key[5 + 4 * PROFILE_PY_MAX_DEPTH];
	uint32_t py_frames[PROFILE_PY_MAX_DEPTH], py_flags[PROFILE_PY_MAX_DEPTH];
	uint32_t scratch[MAX_FRAMES];
};

/* A BPF program's function, as the recording saw it loaded. */
struct kernel_jit_entry {
	uint64_t start, end;
	size_t order;		/* its record's: a later one at the same address replaces it */
	const char *name;	/* kept */
};

/* A range of JIT code of one image (a profile_jit record). */
struct jit_entry {
	uint64_t start, end, time_ns;
	uint32_t image, flags;
	const char *name;	/* kept */
	const char *dso;	/* "perf-PID.map", "jit-PID.dump": what perf shows */
	const char *source;	/* the path it was read from */
	const uint8_t *lines;	/* profile_jit.lines, kept; NULL: none */
	size_t lines_len;
};

static const char *keep(struct session *s, const char *str, size_t len)
{
	char *copy;

	if (VEC_RESERVE(s->strings, s->strings_cap, s->nstrings + 1, 256))
		return "";
	copy = strndup(str, len);
	if (!copy)
		return "";
	s->strings[s->nstrings++] = copy;
	return copy;
}

static const char *keep_str(struct session *s, const char *str)
{
	return str ? keep(s, str, strlen(str)) : NULL;
}

/* In by_pid's values: the pid has samples (counted in totals.processes once). */
#define PID_SAMPLED (1ull << 63)

/* A new image of @pid, its current one from now on: by_pid's value @v. */
static int new_image(struct session *s, uint32_t pid, uint32_t *idx, uint64_t **v)
{
	struct session_image *im;

	if (VEC_RESERVE(s->images, s->images_cap, s->nimages + 1, 256) ||
	    VEC_RESERVE(s->map_trees, s->map_trees_cap, s->nimages + 1, 256) ||
	    hmap__entry_u64(s->by_pid, pid, v))
		return -ENOMEM;
	s->map_trees[s->nimages] = NULL;
	im = &s->images[s->nimages];
	memset(im, 0, sizeof(*im));
	im->pid = pid;
	im->comm = "";
	im->exe = "";
	im->cgroup = "";
	im->script = "";
	*idx = s->nimages++;
	**v = *idx | (**v & PID_SAMPLED);
	return 0;
}

/* The current image of @pid, made when new; a @sampled pid is counted the first time. */
static int current_image(struct session *s, uint32_t pid, bool sampled, uint32_t *idx)
{
	uint64_t *v;
	int err;

	if (hmap__find_u64(s->by_pid, pid, &v) && (err = new_image(s, pid, idx, &v)))
		return err;
	*idx = (uint32_t)*v;
	if (sampled && !(*v & PID_SAMPLED)) {
		*v |= PID_SAMPLED;
		s->totals.processes++;
	}
	return 0;
}

/*
 * The order of the map trees: by address, and overlapping ranges compare
 * equal, so that a search with a range finds a mapping it overlaps and a
 * search with [addr, addr + 1) the mapping holding addr. It is a total order
 * over what a tree holds because no two mappings in it overlap.
 */
static int map_cmp(const void *pa, const void *pb)
{
	const struct session_map *a = pa, *b = pb;

	if (a->end <= b->start)
		return -1;
	if (b->end <= a->start)
		return 1;
	return 0;
}

/* Room for one more mapping that the trees can point at. */
static struct session_map *map_alloc(struct session *s)
{
	if (!s->nmap_chunks || s->map_chunk_used == MAP_CHUNK) {
		struct session_map *chunk;

		if (VEC_RESERVE(s->map_chunks, s->map_chunks_cap, s->nmap_chunks + 1, 16) ||
		    !(chunk = malloc(MAP_CHUNK * sizeof(*chunk))))
			return NULL;
		s->map_chunks[s->nmap_chunks++] = chunk;
		s->map_chunk_used = 0;
	}
	return &s->map_chunks[s->nmap_chunks - 1][s->map_chunk_used++];
}

/* The session's module index + 1 of the file's module @id, 0 when none was read. */
static uint32_t module_index(struct session *s, uint32_t id)
{
	uint64_t *v;

	return id && !hmap__find_u64(s->module_ids, id, &v) ? (uint32_t)*v : 0;
}

/*
 * A new mapping replaces every mapping of the image it overlaps, whole, as
 * the records come. Each search either inserts the mapping or finds one it
 * overlaps, and each mapping is removed at most once, so n records cost
 * O(n log n).
 */
static int add_map(struct session *s, const struct profile_mapping *m)
{
	struct session_map *map;
	uint32_t idx;
	void **tree, **node;

	/* the reader passes no empty or wrapping range: they would break the order */
	if (m->end <= m->start)
		return 0;
	if (current_image(s, m->pid, false, &idx))
		return -ENOMEM;
	map = map_alloc(s);
	if (!map)
		return -ENOMEM;
	*map = (struct session_map){ m->start, m->end, m->file_offset, m->prot,
				     module_index(s, m->module_id) };
	tree = &s->map_trees[idx];
	while ((node = tsearch(map, tree, map_cmp)) && *node != map) {
		tdelete(*node, tree, map_cmp);
		s->images[idx].nmaps--;
	}
	if (!node)
		return -ENOMEM;
	s->images[idx].nmaps++;
	return 0;
}

static int add_module(struct session *s, const struct profile_module *m)
{
	struct session_module *mod;
	uint64_t *v;

	if (!m->id)
		return 0;
	if (hmap__entry_u64(s->module_ids, m->id, &v))
		return -ENOMEM;
	if (!*v) {
		/* indexes in the order of the records: an id is a number, not a size */
		if (VEC_RESERVE(s->modules, s->modules_cap, s->nmodules + 1, 64)) {
			hmap__delete_u64(s->module_ids, m->id, NULL);
			return -ENOMEM;
		}
		*v = ++s->nmodules;
	}
	/* a second record of an id replaces the first, for the mappings after it too */
	mod = &s->modules[*v - 1];
	mod->build_id_len = m->build_id_len <= sizeof(mod->build_id) ? m->build_id_len : 0;
	memcpy(mod->build_id, m->build_id, mod->build_id_len);
	mod->path = keep_str(s, m->path);
	mod->file_size = m->file_size;
	mod->sym = NULL;	/* found on first use */
	return 0;
}

/* The mapping of image @image that holds @addr, or NULL. */
static const struct session_map *find_map(struct session *s, uint32_t image, uint64_t addr)
{
	struct session_map key = { .start = addr, .end = addr + 1 };
	void **node;

	if (addr == UINT64_MAX)	/* no mapping ends past it */
		return NULL;
	node = tfind(&key, &s->map_trees[image], map_cmp);
	return node ? *node : NULL;
}

/* Frame @f, new, as the one of key @v (from frame_entry()). */
static int add_frame(struct session *s, const struct session_frame *f, uint64_t *v, uint32_t *idx)
{
	if (VEC_RESERVE(s->frames, s->frames_cap, s->nframes + 1, 256))
		return -ENOMEM;
	s->frames[s->nframes] = *f;
	*idx = s->nframes++;
	*v = *idx + 1;
	return 0;
}

enum { KEY_USER = 1, KEY_KERNEL, KEY_UNMAPPED, KEY_OMIT, KEY_JIT, KEY_OLD_IMAGE };

/*
 * The value of frame key (@kind, @is_ra, @a, @b): the frame's index + 1, in
 * *@idx too, or 0 for a frame not made yet (add_frame() makes it).
 * @return 0 or -ENOMEM.
 */
static int frame_entry(struct session *s, unsigned kind, bool is_ra, uint32_t a, uint64_t b,
		       uint64_t **v, uint32_t *idx)
{
	if (hmap__entry_u128(s->frame_keys, b, (uint64_t)a << 32 | (uint64_t)is_ra << 8 | kind, v))
		return -ENOMEM;
	*idx = (uint32_t)(**v - 1);
	return 0;
}

/*
 * The inlined frames at the address of user frame @f, which names a function
 * of @mod found at ELF address @vaddr, made (innermost first) just before
 * the caller adds @f itself, whose line becomes the outermost call site's:
 * the symbolizer is asked once per (module, offset, is_ra), as the frame
 * is. @return the number made, or -ENOMEM.
 */
static int inlined_frames(struct session *s, struct session_module *mod, uint64_t vaddr,
			  struct session_frame *f)
{
	struct sym_frame chain[MAX_INLINED];
	size_t n;
	uint64_t unused;
	uint32_t idx;

	/* a return address is placed at its call, as its name and line are */
	n = symbolizer__lookup_inlined(s->sym, mod->sym, f->is_ra && vaddr ? vaddr - 1 : vaddr,
				       chain, MAX_INLINED);
	if (n < 2)
		return 0;
	if (n > MAX_INLINED) {
		n = MAX_INLINED;	/* the innermost ones; the real frame keeps its own line */
	} else {
		f->file = chain[n - 1].file;
		f->line = chain[n - 1].line;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		struct session_frame in = *f;

		in.sym = chain[i].name;
		in.file = chain[i].file;
		in.line = chain[i].line;
		in.inlined = true;
		if (add_frame(s, &in, &unused, &idx))
			return -ENOMEM;
	}
	return (int)(n - 1);
}

/*
 * The frame for a user address of an image: *@idx, with *@ninl inlined
 * frames before it (indexes *@idx - *@ninl to *@idx - 1, innermost first).
 */
static int user_frame(struct session *s, uint32_t image, uint64_t addr, bool is_ra, uint32_t *idx,
		      uint32_t *ninl)
{
	/* a return address belongs with its call, which may end the mapping before it */
	const struct session_map *m = find_map(s, image, is_ra && addr ? addr - 1 : addr);
	struct session_frame f = { .addr = addr, .is_ra = is_ra };
	struct session_module *mod;
	struct sym_info info;
	uint64_t off, *v;
	int err, n = 0;

	*ninl = 0;
	if (!m || !m->module) {
		if ((err = frame_entry(s, KEY_UNMAPPED, is_ra, image, addr, &v, idx)) || *v)
			return err;
		f.dso = m ? "[anon]" : "[unknown]";
		f.offset = addr;
		f.rel = addr;
		return add_frame(s, &f, v, idx);
	}
	off = addr - m->start + m->file_offset;
	if ((err = frame_entry(s, KEY_USER, is_ra, m->module, off, &v, idx)) || *v) {
		*ninl = (uint32_t)(*v >> 32);
		return err;
	}
	mod = &s->modules[m->module - 1];
	if (!mod->sym && mod->path)
		mod->sym = symbolizer__module(s->sym, mod->build_id, mod->build_id_len, mod->path);
	f.module = m->module;
	f.dso = mod->sym ? sym_module__name(mod->sym) : "[unknown]";
	f.dso_path = mod->path;
	if (symbolizer__lookup_mapped(s->sym, mod->sym, addr,
				      &(struct sym_mapping){ m->start, m->file_offset, m->prot },
				      is_ra, &info)) {
		f.sym = info.name;
		f.offset = info.offset;
		f.file = info.file;
		f.line = info.line;
		f.rel = info.vaddr;
		/* @v points into the hmap, which adding frames does not change */
		if (!s->no_inline && (n = inlined_frames(s, mod, info.vaddr, &f)) < 0)
			return n;
	} else {
		/*
		 * module+0xADDR names the address in the ELF file, the one the
		 * frame's rel (script's address column) shows: in a non-PIE
		 * executable it is not the file offset. A file not found: the
		 * file offset, both.
		 */
		f.offset = info.vaddr;
	}
	f.rel = info.vaddr;
	if ((err = add_frame(s, &f, v, idx)))
		return err;
	*v |= (uint64_t)n << 32;
	*ninl = (uint32_t)n;
	return 0;
}

static int kernel_frame(struct session *s, uint64_t addr, bool is_ra, uint32_t *idx)
{
	struct session_frame f = { .addr = addr, .is_ra = is_ra, .kernel = true,
				   .dso = "[kernel.kallsyms]" };
	struct sym_info info;
	uint64_t *v;
	int err;

	if ((err = frame_entry(s, KEY_KERNEL, is_ra, 0, addr, &v, idx)) || *v)
		return err;
	/* a return address is named after its call: a noreturn call may end the function */
	if (symbolizer__kernel(s->sym, is_ra && addr ? addr - 1 : addr, &info)) {
		f.sym = info.name;
		f.offset = info.offset;
	} else {
		f.offset = addr;
	}
	f.rel = addr;
	return add_frame(s, &f, v, idx);
}

static int omit_frame(struct session *s, uint64_t count, uint32_t *idx)
{
	struct session_frame f = { .dso = "", .omitted = count };
	uint64_t *v;
	int err;

	if ((err = frame_entry(s, KEY_OMIT, false, 0, count, &v, idx)) || *v)
		return err;
	return add_frame(s, &f, v, idx);
}

/* The frame in place of the user stack of a program an execve replaced (session_frame.old_image). */
static int old_image_frame(struct session *s, uint32_t *idx)
{
	struct session_frame f = { .sym = SESSION_EXEC_OLD_IMAGE, .dso = SESSION_EXEC_OLD_IMAGE_DSO,
				   .old_image = true };
	uint64_t *v;
	int err;

	if ((err = frame_entry(s, KEY_OLD_IMAGE, false, 0, 0, &v, idx)) || *v)
		return err;
	return add_frame(s, &f, v, idx);
}

/*
 * Decode one CBF stack into frames appended at s->scratch[*n], at most
 * @limit in all (*@cut set when that ended it). Returns whether it was truncated.
 */
static bool decode_stack(struct session *s, const uint8_t *cbf, size_t len, bool kernel,
			 uint32_t image, size_t *n, size_t limit, bool *cut)
{
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f;
	bool truncated = false;

	sfu_cbf_dec__init(&dec, cbf, len, 0, NULL);
	while (!sfu_cbf_dec__next(&dec, &f)) {
		uint32_t idx, ninl = 0;
		int err;

		if (f.kind == SFU_CBF_END)
			break;
		if (f.kind == SFU_CBF_TRUNCATED) {
			truncated = true;
			break;
		}
		if (*n >= limit) {
			truncated = true;
			*cut |= limit < MAX_FRAMES;
			break;
		}
		if (f.kind == SFU_CBF_OMIT)
			err = omit_frame(s, f.value, &idx);
		else if (kernel)
			err = kernel_frame(s, f.value, f.kind != SFU_CBF_PC, &idx);
		else
			err = user_frame(s, image, f.value, f.kind != SFU_CBF_PC, &idx, &ninl);
		if (err)
			break;
		if (ninl && *n + ninl + 1 > limit) {
			/* a frame is shown with all of its inlined ones or not at all */
			truncated = true;
			*cut |= limit < MAX_FRAMES;
			break;
		}
		for (uint32_t k = ninl; k > 0; k--)
			s->scratch[(*n)++] = idx - k;
		s->scratch[(*n)++] = idx;
	}
	return truncated;
}

/* The resolved stack of a sample, resolved once per (image, user stack, kernel stack). */
static int resolve(struct session *s, uint32_t image, const struct profile_sample *ps,
		   uint32_t *idx)
{
	bool old_image = ps->flags & PROFILE_SAMPLE_F_EXEC_OLD_IMAGE;
	/* such a sample has no user stack: one given is not shown */
	uint64_t uid = old_image ? 0 : ps->ustack_id;
	struct session_stack *st;
	uint32_t *frames;
	size_t n = 0, nk, limit = MAX_FRAMES;
	uint64_t *v, allowed;
	bool cut = false;

	if (hmap__entry_u128(s->stack_keys, (uint64_t)old_image << 32 | image,
			     uid << 32 | ps->kstack_id, &v))
		return -ENOMEM;
	if (*v) {
		*idx = (uint32_t)(*v - 1);
		return 0;
	}
	if (VEC_RESERVE(s->stacks, s->stacks_cap, s->nstacks + 1, 256))
		return -ENOMEM;
	st = &s->stacks[s->nstacks];
	memset(st, 0, sizeof(*st));
	s->stack_bytes += (ps->kstack ? ps->kstack_len : 0) + (ps->ustack ? ps->ustack_len : 0);
	allowed = FRAMES_FLOOR + FRAMES_PER_BYTE * s->stack_bytes;
	if (allowed < s->frames_held + MAX_FRAMES)
		limit = allowed > s->frames_held ? allowed - s->frames_held : 0;
	if (ps->kstack)
		decode_stack(s, ps->kstack, ps->kstack_len, true, image, &n, limit, &cut);
	nk = n;
	if (old_image) {
		if (n < limit && !old_image_frame(s, &s->scratch[n]))
			n++;
	} else if (ps->ustack) {
		st->truncated = decode_stack(s, ps->ustack, ps->ustack_len, false, image, &n, limit,
					     &cut);
	}
	st->cut = cut;
	s->frames_held += n;
	frames = malloc((n ? n : 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	memcpy(frames, s->scratch, n * sizeof(*frames));
	st->frames = frames;
	st->count = n;
	st->kernel = nk;
	*idx = s->nstacks++;
	*v = *idx + 1;	/* decoding added frames, not stacks: @v still points at the entry */
	return 0;
}

/* --- Python frames: the interpreter's, merged into the native stacks --- */

bool session_eval_frame(const struct session_frame *f)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";

	/* gcc's pieces of a function: .cold (its unlikely paths), .part.N, .isra.N */
	return f->sym && !f->python && !f->kernel && !f->inlined &&
	       !strncmp(f->sym, eval, sizeof(eval) - 1) &&
	       (!f->sym[sizeof(eval) - 1] || f->sym[sizeof(eval) - 1] == '.');
}

/* A py_frame record: its frame, shared by every id of the same name, file and line. */
static int add_py_frame(struct session *s, const struct profile_py_frame *pf)
{
	size_t qlen = strlen(pf->qualname), flen = strlen(pf->file), klen = 4 + qlen + 1 + flen;
	const char *base = strrchr(pf->file, '/');
	uint64_t *v;
	uint8_t *key;
	char *name;
	uint32_t idx;
	int err, n;

	if (!hmap__find_u64(s->py_ids, pf->id, &v))
		return 0;	/* a second record of an id: the first stands */
	key = malloc(klen);
	if (!key)
		return -ENOMEM;
	memcpy(key, &pf->line, 4);
	memcpy(key + 4, pf->qualname, qlen);
	key[4 + qlen] = '\0';
	memcpy(key + 5 + qlen, pf->file, flen);
	err = hmap__entry(s->py_keys, key, klen, &v, NULL);
	free(key);
	if (err)
		return err;
	if (!*v) {
		struct session_frame f = { .python = true };

		/* py-spy's names: the file's base name and the line */
		base = base && base[1] ? base + 1 : pf->file;
		n = pf->line ? asprintf(&name, "%s (%s:%u)", pf->qualname, base, pf->line) :
			       asprintf(&name, "%s (%s)", pf->qualname, base);
		if (n < 0)
			return -ENOMEM;
		f.sym = keep_str(s, name);
		free(name);
		f.py_qualname = keep_str(s, pf->qualname);
		f.dso = f.dso_path = f.file = keep_str(s, pf->file);
		f.line = pf->line;
		if (!f.sym[0])
			return -ENOMEM;	/* keep() gives "" when out of memory: the name is never empty */
		if ((err = add_frame(s, &f, v, &idx)))
			return err;
	}
	idx = (uint32_t)(*v - 1);
	return hmap__set_u64(s->py_ids, pf->id, (uint64_t)pf->flags << 32 | (idx + 1));
}

/*
 * The frames of native stack @native with the Python chain of @ps merged in
 * (docs/FORMAT.md): split after each entry frame into one segment per
 * interpreter call, innermost first; each segment goes just before
 * (innermost first) the next _PyEval_EvalFrameDefault frame, and what is
 * left with the outermost one; with none, outside the outermost user frame.
 * A segment goes before the frames inlined into the eval frame too, which
 * views take as part of the frame after them. With python_only, the Python
 * frames alone. @return the number of frames in @out.
 */
static size_t py_merge(struct session *s, const struct session_stack *nat, size_t depth,
		       uint32_t *out)
{
	size_t n = 0, next = 0, evals = 0, seen = 0;

	if (s->python_only) {
		memcpy(out, s->py_frames, depth * sizeof(*out));
		return depth;
	}
	for (uint32_t k = nat->kernel; k < nat->count; k++)
		evals += session_eval_frame(&s->frames[nat->frames[k]]);
	for (uint32_t k = 0; k < nat->count; k++) {
		uint32_t fi = nat->frames[k], group = k;

		if (k >= nat->kernel && session_eval_frame(&s->frames[fi])) {
			/* the inlined frames before it belong to it: the segment goes before them */
			while (group > nat->kernel && s->frames[nat->frames[group - 1]].inlined)
				group--;
			n -= k - group;
			/* one segment, or all that are left for the outermost */
			while (next < depth) {
				bool entry = s->py_flags[next] & PROFILE_PY_F_ENTRY;

				out[n++] = s->py_frames[next++];
				if (entry && seen + 1 < evals)
					break;
			}
			seen++;
			for (uint32_t g = group; g < k; g++)
				out[n++] = nat->frames[g];
		}
		out[n++] = fi;
	}
	while (next < depth)
		out[n++] = s->py_frames[next++];
	return n;
}

/* The stack of a sample with Python frames: native stack @native merged with its chain. */
static int py_stack(struct session *s, uint32_t native, const struct profile_sample *ps,
		    uint32_t *idx)
{
	size_t depth = 0, klen, n, total, limit = MAX_FRAMES;
	bool truncated = ps->py_truncated;
	struct session_stack *st;
	uint32_t *frames, key_native = s->python_only ? UINT32_MAX : native, npy = 0;
	uint64_t *v, allowed;

	for (size_t i = 0; i < ps->py_depth && i < PROFILE_PY_MAX_DEPTH; i++) {
		/* the reader passes defined ids only: one missing here is a chain cut */
		if (hmap__find_u64(s->py_ids, ps->py_frames[i], &v)) {
			truncated = true;
			break;
		}
		s->py_frames[depth] = (uint32_t)*v - 1;
		s->py_flags[depth++] = (uint32_t)(*v >> 32);
	}
	memcpy(s->py_key, &key_native, 4);
	s->py_key[4] = truncated;
	memcpy(s->py_key + 5, s->py_frames, depth * 4);
	for (size_t i = 0; i < depth; i++)	/* the flags place the frames */
		s->py_key[5 + 4 * i + 3] ^= (uint8_t)(s->py_flags[i] << 7);
	klen = 5 + 4 * depth;
	if (hmap__entry(s->py_stacks, s->py_key, klen, &v, NULL))
		return -ENOMEM;
	if (*v) {
		*idx = (uint32_t)(*v - 1);
		return 0;
	}
	if (VEC_RESERVE(s->stacks, s->stacks_cap, s->nstacks + 1, 256))
		return -ENOMEM;
	total = s->stacks[native].count + depth;
	frames = malloc((total ? total : 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	n = py_merge(s, &s->stacks[native], depth, frames);
	st = &s->stacks[s->nstacks];
	if (s->python_only) {
		*st = (struct session_stack){ .truncated = truncated };
	} else {
		*st = s->stacks[native];
		st->py_truncated = truncated;
	}
	/*
	 * Each merged stack copies its native frames again: what a file claims
	 * that way is held within the bound resolve() keeps, a chain's ids
	 * counted as the bytes they take at least. Views hold MAX_FRAMES frames
	 * of a stack: the outermost beyond go.
	 */
	s->stack_bytes += ps->py_depth;
	allowed = FRAMES_FLOOR + FRAMES_PER_BYTE * s->stack_bytes;
	if (allowed < s->frames_held + MAX_FRAMES)
		limit = allowed > s->frames_held ? allowed - s->frames_held : 0;
	if (n > limit) {
		n = limit;
		st->truncated = true;
		st->cut |= limit < MAX_FRAMES;
	}
	for (size_t i = 0; i < n; i++)
		npy += s->frames[frames[i]].python;
	st->frames = frames;
	st->count = (uint32_t)n;
	st->kernel = st->kernel < n ? st->kernel : (uint32_t)n;
	st->python = npy;
	s->frames_held += n;
	*idx = s->nstacks++;
	*v = *idx + 1;
	return 0;
}

static const char *thread_comm(struct session *s, uint32_t tid, const struct session_image *im)
{
	uint64_t *v;

	if (!hmap__find_u64(s->by_tid, tid, &v))
		return s->strings[*v];
	return im->comm;
}

static int add_event(struct session *s, const struct profile_event *pe)
{
	struct session_event *e;

	if (VEC_RESERVE(s->events, s->events_cap, s->nevents + 1, 4))
		return -ENOMEM;
	e = &s->events[s->nevents];
	*e = (struct session_event){ pe->id, pe->type, pe->config, pe->period, pe->freq_hz,
				     pe->flags, keep_str(s, pe->name) };
	if (!e->name)
		return -ENOMEM;
	s->nevents++;
	return 0;
}

/* The index of the event of file id @id; one named "event-ID" when no record defined it. */
static int event_index(struct session *s, uint32_t id, uint32_t *idx)
{
	char name[32];
	int err;

	for (uint32_t i = 0; i < s->nevents; i++)
		if (s->events[i].id == id) {
			*idx = i;
			return 0;
		}
	snprintf(name, sizeof(name), "event-%u", id);
	if ((err = add_event(s, &(struct profile_event){ .id = id, .name = name })))
		return err;
	*idx = s->nevents - 1;
	return 0;
}

/* @sm in the totals. */
static void count_sample(struct session *s, const struct session_sample *sm)
{
	if (!s->totals.samples || sm->time_ns < s->totals.first_ns)
		s->totals.first_ns = sm->time_ns;
	if (sm->time_ns > s->totals.last_ns)
		s->totals.last_ns = sm->time_ns;
	s->totals.samples++;
	s->totals.weight += sm->weight;
	s->totals.truncated += s->stacks[sm->stack].truncated;
	s->totals.cut += s->stacks[sm->stack].cut;
	s->totals.python += s->stacks[sm->stack].python > 0;
	s->totals.py_truncated += s->stacks[sm->stack].py_truncated;
}

static int add_sample(struct session *s, const struct profile_sample *ps)
{
	uint32_t event = 0;
	struct session_sample *out;
	uint32_t image, stack;
	int err;

	if ((err = current_image(s, ps->pid, true, &image)) ||
	    (err = resolve(s, image, ps, &stack)) ||
	    ((ps->py_depth || s->python_only) && (err = py_stack(s, stack, ps, &stack))) ||
	    (ps->event && (err = event_index(s, ps->event, &event))))
		return err;
	if (VEC_RESERVE(s->samples, s->samples_cap, s->nsamples + 1, 256))
		return -ENOMEM;
	out = &s->samples[s->nsamples++];
	*out = (struct session_sample){ ps->time_ns, ps->pid, ps->tid, ps->cpu, ps->weight, event,
					image, stack, thread_comm(s, ps->tid, &s->images[image]) };
	count_sample(s, out);
	return 0;
}

/* --- JIT code: frames in memory no file backs, named by what their runtime wrote --- */

/* Most entries looked at for one address: nested ranges past it go unnamed, not slow. */
#define JIT_SCAN_MAX 4096

static int add_jit(struct session *s, const struct profile_jit *j)
{
	struct jit_entry *e;
	const char *base;
	uint32_t image;
	char dso[64];

	if (!j->pid) {
		/* pid 0: the kernel's code (record's kernel_jit.c) */
		if (VEC_RESERVE(s->kjits, s->kjits_cap, s->nkjits + 1, 64))
			return -ENOMEM;
		s->kjits[s->nkjits] = (struct kernel_jit_entry){ j->start, j->end, s->nkjits,
								 keep_str(s, j->name) };
		s->nkjits++;
		return 0;
	}
	if (current_image(s, j->pid, false, &image) ||
	    VEC_RESERVE(s->jits, s->jits_cap, s->njits + 1, 64))
		return -ENOMEM;
	e = &s->jits[s->njits];
	*e = (struct jit_entry){ .start = j->start, .end = j->end, .time_ns = j->time_ns,
				 .image = image, .flags = j->flags };
	/* perf's names: symbols of a perf map are in "perf-PID.map", jitdump code in "jit-PID.dump" */
	base = strrchr(j->source, '/');
	base = base ? base + 1 : j->source;
	snprintf(dso, sizeof(dso), "%.63s", base[0] ? base : "[jit]");
	e->name = keep_str(s, j->name);
	e->dso = keep_str(s, dso);
	e->source = keep_str(s, j->source);
	if (j->lines_len) {
		uint8_t *copy = malloc(j->lines_len);

		if (!copy)
			return -ENOMEM;
		memcpy(copy, j->lines, j->lines_len);
		e->lines = copy;
		e->lines_len = j->lines_len;
	}
	s->njits++;
	return 0;
}

static int jit_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct jit_entry *jits = ctx;
	const struct jit_entry *a = &jits[*(const uint32_t *)pa];
	const struct jit_entry *b = &jits[*(const uint32_t *)pb];

	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/*
 * Whether entry @a names an address both cover, at a time both apply, rather
 * than @b: code made later replaces what was there (a jitdump's code by
 * time, then by record), and a jitdump's code wins over a perf map's line,
 * whose code has no time; of two perf map lines, the later one.
 */
static bool jit_newer(const struct jit_entry *a, uint32_t ia, const struct jit_entry *b,
		      uint32_t ib)
{
	bool amap = a->flags & PROFILE_JIT_F_MAP, bmap = b->flags & PROFILE_JIT_F_MAP;

	if (amap != bmap)
		return bmap;
	if (!amap && a->time_ns != b->time_ns)
		return a->time_ns > b->time_ns;
	return ia > ib;
}

/*
 * The entry naming user address @addr of image @image at time @t: the newest
 * that covers it and was made by then; -1 when none (or the newest is an
 * unload).
 */
static int64_t jit_find(struct session *s, uint32_t image, uint64_t addr, uint64_t t)
{
	size_t lo = 0, hi = s->njits, scanned = 0;
	int64_t best = -1;

	/* the first sorted position past (image, addr) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct jit_entry *e = &s->jits[s->jit_sorted[mid]];

		if (e->image < image || (e->image == image && e->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0 && scanned++ < JIT_SCAN_MAX) {
		uint32_t i = s->jit_sorted[lo];
		const struct jit_entry *e = &s->jits[i];

		if (e->image != image || s->jit_maxend[lo] <= addr)
			break;
		if (addr >= e->end || (!(e->flags & PROFILE_JIT_F_MAP) && e->time_ns > t))
			continue;
		if (best < 0 || jit_newer(e, i, &s->jits[best], (uint32_t)best))
			best = i;
	}
	if (best >= 0 && (s->jits[best].flags & PROFILE_JIT_F_UNLOAD))
		return -1;
	return best;
}

/* The source line of offset @off in @e's code: the last line entry at or before it. */
static void jit_line(struct session *s, const struct jit_entry *e, uint64_t off,
		     struct session_frame *f)
{
	const uint8_t *c = e->lines, *end = e->lines + e->lines_len;
	struct profile_jit_line ln, found = { 0 };
	const char *file = NULL;
	size_t file_len = 0, found_len = 0;
	const char *found_file = NULL;

	for (unsigned n = 0; n < PROFILE_JIT_MAX_LINES; n++) {
		if (profile_jit_line__next(&c, end, &ln) != 1 || ln.offset > off)
			break;
		if (ln.file) {
			file = ln.file;
			file_len = ln.file_len;
		}
		found = ln;
		found_file = file;
		found_len = file_len;
	}
	if (found_file && found.line && found.line <= UINT32_MAX) {
		f->file = keep(s, found_file, found_len);
		f->line = (unsigned)found.line;
	}
}

/* The frame of JIT entry @i for user address @addr. */
static int jit_frame(struct session *s, uint32_t i, uint64_t addr, bool is_ra, uint32_t *idx)
{
	const struct jit_entry *e = &s->jits[i];
	struct session_frame f = { .addr = addr, .is_ra = is_ra };
	uint64_t *v;
	int err;

	if ((err = frame_entry(s, KEY_JIT, is_ra, i, addr, &v, idx)) || *v)
		return err;
	f.sym = e->name[0] ? e->name : NULL;
	f.dso = e->dso;
	f.dso_path = e->source;
	/* a return address is named, offset and line, at its call */
	f.offset = (is_ra && addr > e->start ? addr - 1 : addr) - e->start;
	f.rel = addr - e->start;
	if (e->lines)
		jit_line(s, e, f.offset, &f);
	return add_frame(s, &f, v, idx);
}

/*
 * Whether a mapping's recorded name is memory no file backs, where JIT code
 * lives: perf's "//anon", the kernel's "[anon:NAME]" (prctl names), a memfd
 * (runtimes that map their code twice).
 */
static bool anon_memory(const char *path)
{
	return !path || !path[0] || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       !strncmp(path, "/memfd:", 7);
}

/*
 * A stack of image @image at time @t with its frames in memory no file backs
 * named by JIT entries: the index of that stack in *@out (a new one, or
 * @stack itself when no frame changes).
 */
static int jit_restack(struct session *s, uint32_t stack, uint32_t image, uint64_t t,
		       uint32_t *out)
{
	const struct session_stack *st = &s->stacks[stack];
	bool changed = false;
	uint32_t *frames;

	for (uint32_t k = 0; k < st->count && k < MAX_FRAMES; k++) {
		uint32_t fi = st->frames[k];
		const struct session_frame *f = &s->frames[fi];
		int64_t e;

		s->scratch[k] = fi;
		/* JIT code is in a mapping: an address none holds (a pc from before an exec) is not */
		if (f->kernel || f->omitted || f->sym ||
		    (f->module ? !anon_memory(s->modules[f->module - 1].path) :
				 strcmp(f->dso, "[anon]")))
			continue;
		e = jit_find(s, image, f->is_ra && f->addr ? f->addr - 1 : f->addr, t);
		if (e < 0)
			continue;
		/* @f points into s->frames, which jit_frame() may move */
		if (jit_frame(s, (uint32_t)e, s->frames[fi].addr, s->frames[fi].is_ra, &s->scratch[k]))
			return -ENOMEM;
		changed = true;
	}
	if (!changed) {
		*out = stack;
		return 0;
	}
	if (VEC_RESERVE(s->stacks, s->stacks_cap, s->nstacks + 1, 256))
		return -ENOMEM;
	st = &s->stacks[stack];
	frames = malloc((st->count ? st->count : 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	memcpy(frames, s->scratch, st->count * sizeof(*frames));
	s->stacks[s->nstacks] = *st;
	s->stacks[s->nstacks].frames = frames;
	*out = s->nstacks++;
	return 0;
}

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

static int kjit_cmp(const void *pa, const void *pb)
{
	const struct kernel_jit_entry *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Most recorded functions looked at for one address (BPF code does not nest). */
#define KERNEL_JIT_SCAN_MAX 64

/*
 * Kernel frames in a BPF program the recording saw loaded are named from
 * it: this machine's kallsyms names them only while that program is still
 * loaded, and may hold another program at that address now. Kernel frames
 * are shared by address, so each is renamed once, in place.
 */
static void name_kernel_jit_frames(struct session *s)
{
	if (!s->nkjits)
		return;
	qsort(s->kjits, s->nkjits, sizeof(*s->kjits), kjit_cmp);
	for (size_t i = 0; i < s->nframes; i++) {
		struct session_frame *f = &s->frames[i];
		uint64_t addr = f->is_ra && f->addr ? f->addr - 1 : f->addr;
		const struct kernel_jit_entry *best = NULL;
		size_t lo = 0, hi = s->nkjits;

		if (!f->kernel || f->omitted)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (s->kjits[mid].start <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo, n = 0; k-- > 0 && n < KERNEL_JIT_SCAN_MAX; n++)
			if (s->kjits[k].end > addr && (!best || s->kjits[k].order > best->order))
				best = &s->kjits[k];
		if (!best)
			continue;
		f->sym = best->name;
		f->offset = addr - best->start;
		f->file = NULL;
		f->line = 0;
	}
}

/*
 * Once the file is read (a perf map is often written when its process
 * exits, after its samples): the samples' frames in memory no file backs,
 * named by the JIT code their image held at their time. A sample's names
 * change only when code is made or freed, so a stack is named once per
 * (stack, number of timed JIT records of its image made by the sample's time).
 */
static int name_jit_frames(struct session *s)
{
	uint64_t *times = NULL;
	size_t *img_lo = NULL, *img_times = NULL;
	struct hmap *done = NULL;
	int err = -ENOMEM;

	if (!s->njits)
		return 0;
	if (s->njits > UINT32_MAX ||
	    !(s->jit_sorted = malloc(s->njits * sizeof(*s->jit_sorted))) ||
	    !(s->jit_maxend = malloc(s->njits * sizeof(*s->jit_maxend))) ||
	    !(times = malloc(s->njits * sizeof(*times))) ||
	    !(img_lo = calloc(s->nimages + 1, sizeof(*img_lo))) ||
	    !(img_times = calloc(s->nimages + 1, sizeof(*img_times))) ||
	    !(done = hmap__new(HMAP_U128)))
		goto out;
	for (size_t i = 0; i < s->njits; i++)
		s->jit_sorted[i] = (uint32_t)i;
	qsort_r(s->jit_sorted, s->njits, sizeof(*s->jit_sorted), jit_cmp, s->jits);
	for (size_t i = 0; i < s->njits; i++) {
		const struct jit_entry *e = &s->jits[s->jit_sorted[i]];
		bool first = !i || s->jits[s->jit_sorted[i - 1]].image != e->image;

		s->jit_maxend[i] = first || e->end > s->jit_maxend[i - 1] ? e->end :
			s->jit_maxend[i - 1];
	}
	/* each image's times of timed records, sorted: a sample's epoch is how many are at or before it */
	for (size_t i = 0; i < s->njits; i++)
		if (!(s->jits[i].flags & PROFILE_JIT_F_MAP))
			img_times[s->jits[i].image + 1]++;
	for (size_t i = 1; i <= s->nimages; i++)
		img_lo[i] = img_lo[i - 1] + img_times[i];
	memset(img_times, 0, (s->nimages + 1) * sizeof(*img_times));
	for (size_t i = 0; i < s->njits; i++)
		if (!(s->jits[i].flags & PROFILE_JIT_F_MAP)) {
			uint32_t im = s->jits[i].image;

			times[img_lo[im] + img_times[im]++] = s->jits[i].time_ns;
		}
	for (size_t im = 0; im < s->nimages; im++)
		qsort(times + img_lo[im], img_times[im], sizeof(*times), u64_cmp);
	for (size_t i = 0; i < s->nsamples; i++) {
		struct session_sample *sm = &s->samples[i];
		const uint64_t *t = times + img_lo[sm->image];
		size_t lo = 0, hi = img_times[sm->image];
		uint64_t *v;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t[mid] <= sm->time_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (hmap__entry_u128(done, sm->stack, lo, &v))
			goto out;
		if (!*v) {
			uint32_t to;

			if (jit_restack(s, sm->stack, sm->image, sm->time_ns, &to))
				goto out;
			*v = (uint64_t)to + 1;
		}
		sm->stack = (uint32_t)(*v - 1);
	}
	err = 0;
out:
	free(times);
	free(img_lo);
	free(img_times);
	hmap__free(done);
	return err;
}

static int set_thread(struct session *s, uint32_t tid, const char *comm)
{
	size_t n = s->nstrings;

	keep_str(s, comm ? comm : "");
	if (s->nstrings == n)
		return -ENOMEM;
	return hmap__set_u64(s->by_tid, tid, s->nstrings - 1);
}

static int apply(struct session *s, const struct profile_record *r)
{
	uint32_t idx;
	uint64_t *v;

	switch (r->type) {
	case PROFILE_REC_PROCESS:
		if (new_image(s, r->process.pid, &idx, &v))
			return -ENOMEM;
		s->images[idx].ppid = r->process.ppid;
		s->images[idx].comm = keep_str(s, r->process.comm);
		s->images[idx].exe = keep_str(s, r->process.exe);
		s->images[idx].cgroup = keep_str(s, r->process.cgroup ? r->process.cgroup : "");
		s->images[idx].script = keep_str(s, r->process.script ? r->process.script : "");
		/* after exec the main thread has the new name, whatever it was called before */
		return set_thread(s, r->process.pid, r->process.comm);
	case PROFILE_REC_THREAD:
		return set_thread(s, r->thread.tid, r->thread.comm);
	case PROFILE_REC_COMM:
		return set_thread(s, r->comm.tid, r->comm.comm);
	case PROFILE_REC_MODULE:
		return add_module(s, &r->module);
	case PROFILE_REC_MAPPING:
		return add_map(s, &r->mapping);
	case PROFILE_REC_SAMPLE:
		return add_sample(s, &r->sample);
	case PROFILE_REC_EVENT:
		return add_event(s, &r->event);
	case PROFILE_REC_JIT:
		return add_jit(s, &r->jit);
	case PROFILE_REC_PY_FRAME:
		return add_py_frame(s, &r->py_frame);
	default:
		return 0;
	}
}

static void flatten_visit(const void *node, VISIT which, void *arg)
{
	struct session_image *im = arg;

	/* in order: an inner node between its subtrees, a leaf once */
	if (which == postorder || which == leaf)
		im->maps[im->nmaps++] = **(struct session_map *const *)node;
}

static void no_free(void *map)
{
	(void)map;	/* in map_chunks */
}

/* Each image's tree of mappings made into its sorted array, and the trees freed. */
static int flatten_maps(struct session *s)
{
	for (size_t i = 0; i < s->nimages; i++) {
		struct session_image *im = &s->images[i];
		size_t n = im->nmaps;

		if (!n)
			continue;
		im->maps = malloc(n * sizeof(*im->maps));
		if (!im->maps)
			return -ENOMEM;
		im->maps_cap = n;
		im->nmaps = 0;
		twalk_r(s->map_trees[i], flatten_visit, im);
		tdestroy(s->map_trees[i], no_free);
		s->map_trees[i] = NULL;
	}
	for (size_t i = 0; i < s->nmap_chunks; i++)
		free(s->map_chunks[i]);
	free(s->map_chunks);
	s->map_chunks = NULL;
	s->nmap_chunks = s->map_chunks_cap = 0;
	return 0;
}

struct session *session__open(const char *path, const struct session_opts *opts,
			      struct profile_diag *diag)
{
	struct session *s = calloc(1, sizeof(*s));
	struct profile_record rec;
	int ret;

	/* sfprof archive's output: the profile and the files it needs, read in place */
	if (sfarchive_is(path) == 1) {
		free(s);
		return session_archive__open(path, opts, diag);
	}
	if (s && opts && opts->symbolizer) {
		s->sym = opts->symbolizer;
		s->sym_borrowed = true;
	} else if (s) {
		s->sym = symbolizer__new(opts ? &opts->sym : NULL);
	}
	if (s) {
		s->no_inline = opts && opts->sym.no_inline;
		s->python_only = opts && opts->sym.python_only;
	}
	if (!s || !s->sym ||
	    !(s->by_pid = hmap__new(HMAP_U64)) || !(s->by_tid = hmap__new(HMAP_U64)) ||
	    !(s->stack_keys = hmap__new(HMAP_U128)) || !(s->frame_keys = hmap__new(HMAP_U128)) ||
	    !(s->module_ids = hmap__new(HMAP_U64)) || !(s->py_ids = hmap__new(HMAP_U64)) ||
	    !(s->py_keys = hmap__new(HMAP_BYTES)) || !(s->py_stacks = hmap__new(HMAP_BYTES))) {
		snprintf(diag->reason, sizeof(diag->reason), "out of memory");
		session__free(s);
		return NULL;
	}
	s->reader = profile_reader__open(path, diag);
	if (!s->reader) {
		session__free(s);
		return NULL;
	}
	s->meta = *profile_reader__meta(s->reader);
	/* the header's event: what samples naming no event record count */
	ret = s->meta.flags & PROFILE_F_WALL_NS ?
		add_event(s, &(struct profile_event){ .flags = PROFILE_EV_F_WEIGHT_NS,
						      .name = "wall-time" }) :
		add_event(s, &(struct profile_event){ .type = 1 /* PERF_TYPE_SOFTWARE */,
						      .freq_hz = s->meta.freq_hz,
						      .name = "cpu-clock" });
	while (ret >= 0 && (ret = profile_reader__next(s->reader, &rec)) > 0) {
		if (apply(s, &rec)) {
			ret = -ENOMEM;
			break;
		}
	}
	if (ret >= 0)
		ret = flatten_maps(s);
	if (ret >= 0)
		ret = name_jit_frames(s);
	if (ret >= 0)
		name_kernel_jit_frames(s);
	if (ret < 0) {
		snprintf(diag->reason, sizeof(diag->reason), "%s: %s", path, strerror(-ret));
		session__free(s);
		return NULL;
	}
	s->status = *profile_reader__status(s->reader);
	/* checked by the reader against what the recording could have lost */
	s->totals.lost = s->status.lost;
	s->totals.lost_unknown = s->status.lost_implausible;
	return s;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nstacks; i++)
		free((void *)s->stacks[i].frames);
	for (size_t i = 0; i < s->nimages; i++) {
		free(s->images[i].maps);
		if (s->map_trees[i])
			tdestroy(s->map_trees[i], no_free);
	}
	for (size_t i = 0; i < s->nmap_chunks; i++)
		free(s->map_chunks[i]);
	free(s->map_chunks);
	free(s->map_trees);
	for (size_t i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->images);
	free(s->modules);
	free(s->samples);
	free(s->events);
	free(s->stacks);
	free(s->frames);
	hmap__free(s->by_pid);
	hmap__free(s->by_tid);
	hmap__free(s->stack_keys);
	hmap__free(s->frame_keys);
	hmap__free(s->module_ids);
	hmap__free(s->py_ids);
	hmap__free(s->py_keys);
	hmap__free(s->py_stacks);
	for (size_t i = 0; i < s->njits; i++)
		free((void *)s->jits[i].lines);
	free(s->jits);
	free(s->kjits);
	free(s->jit_sorted);
	free(s->jit_maxend);
	profile_reader__free(s->reader);
	if (!s->sym_borrowed)
		symbolizer__free(s->sym);
	session_archive__free(s->archive);
	free(s);
}

void session__keep_archive(struct session *s, struct session_archive *a)
{
	s->archive = a;
}

const struct profile_meta *session__meta(const struct session *s) { return &s->meta; }
const struct profile_status *session__status(const struct session *s) { return &s->status; }
const struct session_totals *session__totals(const struct session *s) { return &s->totals; }
size_t session__nsamples(const struct session *s) { return s->nsamples; }
size_t session__nframes(const struct session *s) { return s->nframes; }
size_t session__nimages(const struct session *s) { return s->nimages; }
size_t session__nmodules(const struct session *s) { return s->nmodules; }
size_t session__nevents(const struct session *s) { return s->nevents; }

const struct session_event *session__event(const struct session *s, uint32_t i)
{
	return &s->events[i];
}

void session__only_event(struct session *s, uint32_t event)
{
	size_t n = 0;

	s->totals.samples = s->totals.weight = s->totals.truncated = s->totals.cut = 0;
	s->totals.first_ns = s->totals.last_ns = 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		if (s->samples[i].event != event)
			continue;
		s->samples[n] = s->samples[i];
		count_sample(s, &s->samples[n++]);
	}
	s->nsamples = n;
}

const struct session_sample *session__sample(const struct session *s, size_t i)
{
	return &s->samples[i];
}

const struct session_stack *session__stack(const struct session *s, uint32_t i)
{
	return &s->stacks[i];
}

const struct session_frame *session__frame(const struct session *s, uint32_t i)
{
	return &s->frames[i];
}

const struct session_image *session__image(const struct session *s, uint32_t i)
{
	return &s->images[i];
}

const struct session_module *session__module(const struct session *s, uint32_t i)
{
	return &s->modules[i];
}

const char *session_frame_name(const struct session_frame *f, char *buf, size_t cap)
{
	if (f->sym)
		return f->sym;
	if (f->omitted)
		snprintf(buf, cap, "[%" PRIu64 " frames omitted]", f->omitted);
	else
		snprintf(buf, cap, "%s+0x%" PRIx64, f->dso, f->offset);
	return buf;
}
