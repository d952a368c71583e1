/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* The sampler's Python frame walk: the sampled thread's state found in its interpreter, then its frame chain, bounded. */
#ifndef SFPROF_PYTHON_BPF_H
#define SFPROF_PYTHON_BPF_H

#include "py_walk.h"
#include "sample.bpf.h"

/* Set by the loader: walk Python frames (the kernel has bpf_loop()). */
const volatile bool python_frames = false;

/* Filled by user/record/python.c when a process maps an interpreter; emptied at its exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct py_proc);
	__uint(max_entries, PY_MAX_PROCS);
} py_procs SEC(".maps");

/*
 * Each thread's state once found, checked at each sample (one read); a
 * thread with none (a native thread, an interpreter not yet started, a new
 * thread before it has bound its state) is searched again only after
 * PY_RETRY_NS, so that it does not walk every interpreter's threads at
 * every sample; short, as a new thread's first milliseconds are its
 * Python code's.
 */
#define PY_RETRY_NS	2000000ull
struct py_thread {
	__u64 tstate;		/* 0: none found */
	__u64 retry_ns;		/* search again from then (tstate 0) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct py_thread_key);
	__type(value, struct py_thread);
	__uint(max_entries, PY_MAX_THREADS);
} py_threads SEC(".maps");

/*
 * Frames' bytes, read at once. From 3.11 a thread's frames are pushed on
 * its data stack, a caller below its callee: one read of up to PY_BLOCK
 * bytes under a frame holds its callers too, where one read per frame was
 * most of the walk's time. A read never starts below the frame's page,
 * which is mapped as the frame is (the data stack's first page may be the
 * first of its mapping). The thread state's fields are read into it too.
 */
#define PY_BLOCK	2048
#define PY_TS_WINDOW	256	/* the thread state's frame and id read at once when this close */
_Static_assert(PY_TS_WINDOW <= PY_BLOCK, "the thread state fits the window");
struct py_window {
	__u8 b[PY_BLOCK + PY_FRAME_WINDOW + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_window);
	__uint(max_entries, 1);
} py_windows SEC(".maps");

static __always_inline __u64 py_read_u64(__u64 addr, bool *fault)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr)) {
		*fault = true;
		return 0;
	}
	return v;
}

struct py_search {
	const struct py_proc *pp;
	__u64 want;		/* the thread id the thread state holds */
	__u64 interp, ts, found;
	__u32 interps;
	bool fault;
};

/* One step of the search: the next thread state, or the next interpreter's first. */
static long py_search_step(__u64 i, struct py_search *s)
{
	const struct py_proc *pp = s->pp;
	__u64 id = 0;

	if (!s->ts) {
		if (!s->interp || ++s->interps >= PY_MAX_INTERPS)
			return 1;
		if (bpf_probe_read_user(&s->interp, sizeof(s->interp),
					(const void *)(s->interp + pp->interp_next)))
			goto fault;
		if (!s->interp)
			return 1;
		if (bpf_probe_read_user(&s->ts, sizeof(s->ts),
					(const void *)(s->interp + pp->interp_threads)))
			goto fault;
		return 0;
	}
	if (bpf_probe_read_user(&id, sizeof(id), (const void *)(s->ts + pp->ts_id)))
		goto fault;
	if (id == s->want) {
		s->found = s->ts;
		return 1;
	}
	if (bpf_probe_read_user(&s->ts, sizeof(s->ts), (const void *)(s->ts + pp->ts_next)))
		goto fault;
	return 0;
fault:
	s->fault = true;
	return 1;
}

/*
 * The thread state's id and frame fields (ts_id, ts_frame) in one read
 * where they are close, else two. @return 0, or -1 when a read failed.
 */
static __always_inline int py_ts_fields(const struct py_proc *pp, struct py_window *win, __u64 ts,
					__u64 *id, __u64 *frame)
{
	__u64 lo = pp->ts_id < pp->ts_frame ? pp->ts_id : pp->ts_frame;
	__u64 hi = pp->ts_id < pp->ts_frame ? pp->ts_frame : pp->ts_id;
	__u64 io, fo;

	if (hi - lo > PY_TS_WINDOW - 8) {
		bool fault = false;

		*id = py_read_u64(ts + pp->ts_id, &fault);
		*frame = py_read_u64(ts + pp->ts_frame, &fault);
		return fault ? -1 : 0;
	}
	if (bpf_probe_read_user(win->b, PY_TS_WINDOW, (const void *)(ts + lo)))
		return -1;
	io = (pp->ts_id - lo) & (PY_TS_WINDOW - 8);
	fo = (pp->ts_frame - lo) & (PY_TS_WINDOW - 8);
	*id = *(__u64 *)(win->b + io);
	*frame = *(__u64 *)(win->b + fo);
	return 0;
}

/*
 * The thread state of the current task, 0 when it has none (or it cannot
 * be read); its current frame field (ts_frame) in @frame.
 */
static __always_inline __u64 py_thread_state(const struct py_proc *pp, struct py_window *win,
					     __u32 tgid, __u32 tid, struct task_struct *task,
					     __u64 now, __u64 *frame)
{
	struct py_thread_key key = { tgid, tid };
	struct py_search s = { .pp = pp };
	struct py_thread *t, nt = {};
	__u64 id;

	if (pp->thread_match == PY_MATCH_TID) {
		s.want = tid;
	} else {
#if defined(__TARGET_ARCH_x86)
		s.want = task->thread.fsbase;	/* glibc's pthread_self() */
#else
		return 0;	/* 3.10 keeps pthread_self(): not derived from arm64's tpidr_el0 here */
#endif
	}
	t = bpf_map_lookup_elem(&py_threads, &key);
	if (t) {
		if (t->tstate) {
			if (!py_ts_fields(pp, win, t->tstate, &id, frame) && id == s.want)
				return t->tstate;
		} else if (now < t->retry_ns) {
			return 0;
		}
	}
	s.interp = py_read_u64(pp->interp_head, &s.fault);
	if (s.interp && !s.fault)
		s.ts = py_read_u64(s.interp + pp->interp_threads, &s.fault);
	if (s.interp && !s.fault)
		bpf_loop(PY_MAX_THREAD_STEPS, py_search_step, &s, 0);
	nt.tstate = s.found;
	nt.retry_ns = now + PY_RETRY_NS;
	bpf_map_update_elem(&py_threads, &key, &nt, BPF_ANY);
	if (s.found && (py_ts_fields(pp, win, s.found, &id, frame) || id != s.want))
		return 0;
	return s.found;
}

/*
 * The names' hash of the code objects this CPU read last, reused for
 * PY_CODE_TTL_NS: reading it costs as much as reading the frame. A code
 * object freed and another made at its address within that time gives a
 * frame the old one's hash, which user space finds differs from the
 * memory's: the frame goes unnamed, never misnamed. That happens: a
 * module's body is freed once it has run, and the next function compiled
 * may take its place; so the time is short, some samples of the same
 * thread at the usual rates.
 */
#define PY_CODE_SLOTS	1024
#define PY_CODE_TTL_NS	10000000ull
struct py_code_slot {
	__u64 code;
	__u64 time_ns;
	__u32 hash;
	__u32 tgid;	/* whose address: processes running one program share addresses' low bits */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_code_slot);
	__uint(max_entries, PY_CODE_SLOTS);
} py_codes SEC(".maps");

struct py_walk {
	const struct py_proc *pp;
	struct scratch *sc;
	struct py_window *win;
	__u64 frame;
	__u64 now;
	__u64 blk_lo, blk_hi;	/* the bytes in win: [blk_lo, blk_hi) of the process */
	bool slots;		/* names' hashes from py_codes when recent (else always read) */
	__u64 check[PY_CHECK_WORDS];
	__u32 base;		/* where in sc->data the first record goes */
	__u32 n;
	bool fault, truncated;
};

#define PY_REC_LIMIT	(MAX_KSTACK_DEPTH * 8 + MAX_USTACK_BYTES)
_Static_assert(PY_MAX_FRAMES == 128 && PY_REC_LIMIT < 0x80000, "py_record()'s masks");

static __always_inline struct sample_py_frame *py_record(struct py_walk *w, __u32 n)
{
	__u64 base = w->base, idx = n;

	if (n >= PY_MAX_FRAMES)
		return NULL;
	/* in 64 bits, masked, so that the verifier keeps the bounds the compiler proved */
	asm volatile("%[i] &= 0x7f" : [i] "+r"(idx));
	asm volatile("%[b] &= 0x7ffff" : [b] "+r"(base));
	if (base > PY_REC_LIMIT)
		return NULL;
	return (struct sample_py_frame *)(w->sc->data + base + idx * sizeof(struct sample_py_frame));
}

/* One frame into the sample; @return 1 at the end of the chain. */
static long py_walk_step(__u64 i, struct py_walk *w)
{
	const struct py_proc *pp = w->pp;
	struct sample_py_frame *rec;
	__u8 *b = w->win->b;
	__u64 code, back, instr;
	__u32 len = pp->f_window, flags = 0, words, slot_key;
	struct py_code_slot *slot;

	if (!w->frame)
		return 1;
	if (w->n >= PY_MAX_FRAMES)
		return 1;	/* w->frame left set: the chain went on */
	if (!len || len > PY_FRAME_WINDOW) {
		w->fault = true;
		return 1;
	}
	if (w->frame < w->blk_lo || w->frame + len > w->blk_hi) {
		__u64 lo = w->frame, size;

		/* 3.10's frames are objects of their own, anywhere */
		if (pp->kind != PY_KIND_310) {
			lo = w->frame - (PY_BLOCK - 8);
			if (lo > w->frame || lo < (w->frame & ~4095ull))
				lo = w->frame & ~4095ull;
		}
		size = w->frame + len - lo;
		if (size > PY_BLOCK + PY_FRAME_WINDOW || !size ||
		    bpf_probe_read_user(w->win->b, size, (const void *)lo)) {
			w->fault = true;
			return 1;
		}
		w->blk_lo = lo;
		w->blk_hi = lo + size;
	}
	/* below PY_BLOCK: the block starts at most PY_BLOCK - 8 bytes under the frame */
	b += (w->frame - w->blk_lo) & (PY_BLOCK - 1);
	code = *(__u64 *)(b + (pp->f_code & (PY_FRAME_WINDOW - 1)));
	back = *(__u64 *)(b + (pp->f_back & (PY_FRAME_WINDOW - 1)));
	if (pp->kind == PY_KIND_310) {
		instr = (__u64)(__s64)*(__s32 *)(b + (pp->f_instr & (PY_FRAME_WINDOW - 1)));
		flags = SAMPLE_PY_F_ENTRY;	/* each frame its own _PyEval_EvalFrameDefault call */
	} else {
		instr = *(__u64 *)(b + (pp->f_instr & (PY_FRAME_WINDOW - 1)));
		if (pp->kind == PY_KIND_311 && b[pp->f_entry & (PY_FRAME_WINDOW - 1)])
			flags = SAMPLE_PY_F_ENTRY;
		if (pp->kind == PY_KIND_312 &&
		    b[pp->f_owner & (PY_FRAME_WINDOW - 1)] == PY_FRAMEOWNER_CSTACK) {
			/* a call's shim: the frame inside it, the one before, was entered from C */
			if (w->n) {
				rec = py_record(w, w->n - 1);
				if (rec)
					rec->flags |= SAMPLE_PY_F_ENTRY;
			}
			w->frame = back;
			return 0;
		}
	}
	if (!code) {
		w->fault = true;
		return 1;
	}
	rec = py_record(w, w->n);
	if (!rec) {
		w->fault = true;
		return 1;
	}
	rec->code = code;
	rec->instr = instr;
	rec->flags = flags;
	rec->reserved = 0;
	words = pp->code_check_words;
	slot_key = ((code >> 4) ^ (code >> 12)) & (PY_CODE_SLOTS - 1);
	slot = bpf_map_lookup_elem(&py_codes, &slot_key);
	if (slot && w->slots && slot->code == code && slot->tgid == w->sc->h.pid &&
	    w->now - slot->time_ns < PY_CODE_TTL_NS) {
		rec->reserved = slot->hash;
	} else if (words && words <= PY_CHECK_WORDS &&
		   /* all PY_CHECK_WORDS words, whatever is hashed: the code object is longer */
		   !bpf_probe_read_user(w->check, sizeof(w->check),
					(const void *)(code + pp->code_check))) {
		rec->reserved = py_check_hash(w->check, words);
		if (slot) {
			slot->code = code;
			slot->tgid = w->sc->h.pid;
			slot->time_ns = w->now;
			slot->hash = rec->reserved;
		}
	}
	w->n++;
	w->frame = back;
	return 0;
}

/*
 * The frame a _PyCFrame at @cf points to (3.11, 3.12). The innermost is a
 * local of the running _PyEval_EvalFrameDefault call, on the native stack
 * the sample has just copied (the last of the @base bytes of sc->data):
 * read from the copy when it is there.
 */
static __always_inline __u64 py_cframe_frame(struct scratch *sc, __u64 base,
					     const struct py_proc *pp, __u64 cf, bool *fault)
{
	__u64 at = cf + pp->cframe_frame, sp = sc->h.sp, ulen = sc->h.ustack_len, off;

	if (at >= sp && at - sp < ulen && ulen - (at - sp) >= 8 && base >= ulen) {
		off = base - ulen + (at - sp);
		/* in 64 bits, masked, so that the verifier keeps the bound */
		asm volatile("%[o] &= 0x7ffff" : [o] "+r"(off));
		if (off + 8 <= sizeof(sc->data))
			return *(__u64 *)(sc->data + off);
	}
	return py_read_u64(at, fault);
}

/*
 * The current task's Python frames into @sc after @base bytes of its data
 * (kernel then user stack), innermost first. @return how many; a read that
 * fails ends the chain (counted), a chain past PY_MAX_FRAMES is cut (its
 * outermost record says so, counted).
 */
static __always_inline __u32 py_frames(struct scratch *sc, __u64 base, __u32 tgid, __u32 tid,
				       struct task_struct *task, __u64 now, bool slots, __u32 *fault,
				       __u32 *truncated)
{
	struct py_walk w = { .sc = sc, .slots = slots };
	const struct py_proc *pp;
	struct sample_py_frame *rec;
	__u32 zero = 0;
	__u64 tstate;

	pp = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!pp || base > PY_REC_LIMIT)
		return 0;
	w.pp = pp;
	w.base = base;
	w.now = now;
	w.win = bpf_map_lookup_elem(&py_windows, &zero);
	if (!w.win)
		return 0;
	tstate = py_thread_state(pp, w.win, tgid, tid, task, now, &w.frame);
	if (!tstate)
		return 0;
	if (pp->cframe_frame != PY_OFF_NONE && w.frame)
		w.frame = py_cframe_frame(sc, base, pp, w.frame, &w.fault);
	if (!w.fault)
		/* a shim (3.12+) between each two frames at most */
		bpf_loop(2 * PY_MAX_FRAMES + 1, py_walk_step, &w, 0);
	w.truncated = w.frame && !w.fault;
	*fault = w.fault;
	*truncated = w.truncated;
	if (w.truncated && w.n) {
		rec = py_record(&w, w.n - 1);
		if (rec)
			rec->flags |= SAMPLE_PY_F_TRUNCATED;
	}
	return w.n;
}

/*
 * The current task's Python frames into its sample in @sc, whose kernel
 * and user stacks (@kbytes, then h.ustack_len) are in: py_depth and the
 * flag set, failures and cuts counted. @slots: the code objects' names
 * hashes may come from py_codes (the on-CPU sampler, whose rate makes them
 * worth keeping), else each is read.
 */
static __always_inline void py_sample(struct scratch *sc, __u64 kbytes, __u32 tgid, __u32 tid,
				      struct task_struct *task, __u64 now, bool slots)
{
	__u32 fault = 0, cut = 0;

	sc->h.py_depth = py_frames(sc, kbytes + sc->h.ustack_len, tgid, tid, task, now, slots,
				   &fault, &cut);
	if (sc->h.py_depth)
		sc->h.flags |= SAMPLE_F_PYTHON;
	if (fault)
		count(COUNTER_PY_FAULT);
	if (cut)
		count(COUNTER_PY_TRUNCATED);
}

#endif
