/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared between the sampler's Python frame walk (python.bpf.h) and user/record/python.c: fixed-size types only. */
#ifndef SFPROF_BPF_PY_WALK_H
#define SFPROF_BPF_PY_WALK_H

#ifndef PY_MAX_FRAMES
#define PY_MAX_FRAMES		128	/* Python frames per sample; past it the chain is cut (SAMPLE_PY_F_TRUNCATED) */
#endif
#ifndef PY_MAX_INTERPS
#define PY_MAX_INTERPS		8	/* interpreters searched for a thread's state */
#endif
#ifndef PY_MAX_THREAD_STEPS
#define PY_MAX_THREAD_STEPS	256	/* thread states read in one search, all interpreters together */
#endif
#ifndef PY_MAX_PROCS
#define PY_MAX_PROCS		4096	/* processes running an interpreter */
#endif
#ifndef PY_MAX_THREADS
#define PY_MAX_THREADS		16384	/* threads whose thread state is remembered (LRU) */
#endif
#define PY_FRAME_WINDOW		128	/* bytes of a frame read at once: every field the walk needs is below */
#define PY_OFF_NONE		0xffff	/* py_proc: no such field in this version */

/* py_proc.kind: how a frame is laid out */
#define PY_KIND_310		1	/* PyFrameObject: f_back, f_code, int f_lasti (code units) */
#define PY_KIND_311		2	/* _PyInterpreterFrame with is_entry, prev_instr */
#define PY_KIND_312		3	/* _PyInterpreterFrame with owner (CSTACK shims), prev_instr (3.12) or instr_ptr (3.13+) */

/* py_proc.thread_match */
#define PY_MATCH_TID		1	/* tstate->native_thread_id == the task's tid (3.11+) */
#define PY_MATCH_FSBASE		2	/* tstate->thread_id == pthread_self(), the task's fsbase (3.10, x86-64) */

#define PY_FRAMEOWNER_CSTACK	3	/* FRAME_OWNED_BY_CSTACK (3.12+): the shim of one _PyEval_EvalFrameDefault call */

/*
 * What the walk needs of one process's interpreter (py_procs[tgid]): where
 * its list of interpreters starts and the offsets of the version's structs.
 * Offsets are below PY_FRAME_WINDOW in frames, below 64 KiB elsewhere.
 */
struct py_proc {
	__u64 interp_head;	/* address of _PyRuntime.interpreters.head */
	__u32 version;		/* 310 ... 313 */
	__u16 kind;		/* PY_KIND_* */
	__u16 thread_match;	/* PY_MATCH_* */
	__u16 interp_next;	/* PyInterpreterState.next */
	__u16 interp_threads;	/* PyInterpreterState: its first thread state (tstate_head, threads.head) */
	__u16 ts_next;		/* PyThreadState.next */
	__u16 ts_id;		/* PyThreadState.native_thread_id (3.11+) or thread_id (3.10) */
	__u16 ts_frame;		/* PyThreadState: frame (3.10), cframe (3.11, 3.12), current_frame (3.13+) */
	__u16 cframe_frame;	/* _PyCFrame.current_frame, PY_OFF_NONE: ts_frame is the frame */
	__u16 f_code;		/* the frame's code object (f_code, f_executable) */
	__u16 f_back;		/* the caller's frame (f_back, previous) */
	__u16 f_instr;		/* f_lasti (int, 3.10), prev_instr, instr_ptr */
	__u16 f_entry;		/* is_entry (3.11) or PY_OFF_NONE */
	__u16 f_owner;		/* owner (3.12+) or PY_OFF_NONE */
	__u16 f_window;		/* bytes read of each frame: past every field above */
	/*
	 * The code object's name and file pointers (PY_CHECK_WORDS words from
	 * here, 3.10: co_filename, co_name, 3.11+: then co_qualname): their
	 * hash goes with each frame, so that a code object freed and another
	 * made at its address before user space names it is not named as
	 * the other (sample_py_frame.reserved).
	 */
	__u16 code_check;
	__u16 code_check_words;	/* 1 to PY_CHECK_WORDS */
};

#define PY_CHECK_WORDS	3

/* The hash of a code object's name and file pointers, both sides alike. */
static inline __u32 py_check_hash(const __u64 *w, unsigned n)
{
	__u64 h = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < PY_CHECK_WORDS; i++) {
		if (i >= n)
			break;
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
	}
	h ^= h >> 33;
	return (__u32)(h ^ (h >> 32)) | 1;	/* never 0: 0 is "not checked" */
}

/* The key of py_threads: a thread's state found once, checked again at each sample. */
struct py_thread_key {
	__u32 tgid;
	__u32 tid;
};

#endif
