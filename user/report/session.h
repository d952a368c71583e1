/* SPDX-License-Identifier: BSD-2-Clause */
/* A profile loaded for reading: processes, mappings and samples with their stacks resolved to frames. */
#ifndef SFPROF_SESSION_H
#define SFPROF_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"

struct session_opts {
	struct symbolizer_opts sym;
	/*
	 * Optional, borrowed: a symbolizer kept across sessions (the agent's
	 * windows), used instead of one made from @sym; it must outlive the
	 * session, and the session's names are its strings.
	 */
	struct symbolizer *symbolizer;
};

/* One resolved frame; frames are interned, equal frames share an index. */
struct session_frame {
	const char *sym;	/* function name, demangled; NULL when unknown */
	const char *dso;	/* module file name, "[kernel.kallsyms]", or "[unknown]" */
	const char *dso_path;	/* as recorded */
	uint64_t addr;		/* the address as sampled */
	uint64_t offset;	/* from the function's start; from the module's start when sym is NULL */
	uint64_t rel;		/* module-relative address: ELF vaddr, or file offset when not found */
	const char *file;	/* source file, or NULL */
	unsigned line;
	uint32_t module;	/* session module index + 1; 0 for kernel and unknown */
	bool kernel;
	bool is_ra;		/* a return address (callers); frame 0 is a precise pc */
	/*
	 * A function inlined into the next frame, at the same address (DWARF's
	 * inlined subroutines, innermost first): its own name, file and line
	 * (the line table's for the innermost, else the call site of the one
	 * before); offset is the real function's. The next frame that is not
	 * inlined is the real function, with the line of the outermost call
	 * site. None without DWARF, or with symbolizer_opts.no_inline.
	 */
	bool inlined;
	uint64_t omitted;	/* not a frame: this many frames were left out here */
	/*
	 * Not code: in place of the user stack of a sample taken inside execve
	 * with the registers of the program it replaced, gone by then
	 * (PROFILE_SAMPLE_F_EXEC_OLD_IMAGE). Named SESSION_EXEC_OLD_IMAGE in
	 * module SESSION_EXEC_OLD_IMAGE_DSO, at address 0; no stack with it is
	 * truncated.
	 */
	bool old_image;
	/*
	 * A Python function's frame (the interpreter's, read at the sample):
	 * sym is "qualname (file.py:line)" with the file's base name, as py-spy
	 * names it; dso and file the code's co_filename, line its line, addr
	 * 0; py_qualname the name alone. Placed just before (innermost first)
	 * the _PyEval_EvalFrameDefault frame running it (docs/FORMAT.md).
	 */
	bool python;
	const char *py_qualname;
};

#define SESSION_EXEC_OLD_IMAGE		"[execve: old image]"
#define SESSION_EXEC_OLD_IMAGE_DSO	"[execve]"

/* A sampled stack, kernel frames first (innermost), then user frames. */
struct session_stack {
	const uint32_t *frames;	/* indexes into session__frame(), innermost first */
	uint32_t count;
	uint32_t kernel;	/* how many of them are kernel frames */
	bool truncated;		/* the user stack's unwinding stopped early */
	bool cut;		/* frames left out at the bound on what stacks hold */
	bool py_truncated;	/* the Python chain was cut at the recording's cap */
	uint32_t python;	/* how many of its frames are Python frames */
};

struct session_map {
	uint64_t start, end, file_offset;
	uint8_t prot;
	uint32_t module;	/* session module index + 1, 0 for none */
};

/* A process image: from a process record (or exec) to the next. */
struct session_image {
	uint32_t pid, ppid;
	const char *comm;
	const char *exe;
	const char *cgroup;	/* its cgroup's path, "" when not recorded */
	const char *script;	/* a CPython interpreter's script or "-m MODULE", "" when none */
	struct session_map *maps;	/* sorted by start */
	size_t nmaps, maps_cap;
};

struct session_module {
	uint8_t build_id[64];
	size_t build_id_len;
	const char *path;
	uint64_t file_size;
	struct sym_module *sym;
};

/* What samples count: the file's event records, or the header's default (cpu-clock). */
struct session_event {
	uint32_t id;		/* the file's id; 0 for the default */
	uint32_t type;		/* PERF_TYPE_*, or PROFILE_EV_OFF_CPU */
	uint64_t config, period;
	uint32_t freq_hz, flags;	/* PROFILE_EV_F_* */
	const char *name;
};

struct session_sample {
	uint64_t time_ns;
	uint32_t pid, tid, cpu, weight;
	uint32_t event;		/* index into session__event(): 0 is the default event */
	uint32_t image;		/* index into session__image() */
	uint32_t stack;		/* index into session__stack() */
	const char *comm;	/* the thread's name */
};

struct session_totals {
	uint64_t samples;
	uint64_t weight;
	uint64_t lost;
	bool lost_unknown;	/* the file's lost count is damaged: lost means nothing */
	uint64_t first_ns, last_ns;
	uint64_t processes;
	uint64_t truncated;	/* samples whose user stack is truncated */
	uint64_t cut;		/* samples whose stack was cut at the bound on frames held */
	uint64_t python;	/* samples with Python frames */
	uint64_t py_truncated;	/* samples whose Python chain was cut at the cap */
};

struct session;

/** session__open() - read a whole profile and resolve its stacks. @return NULL with diag filled. */
struct session *session__open(const char *path, const struct session_opts *opts,
			      struct profile_diag *diag);
void session__free(struct session *s);

struct session_archive;

/** session__keep_archive() - the unpacked archive @s was read from, removed by session__free(). */
void session__keep_archive(struct session *s, struct session_archive *a);

const struct profile_meta *session__meta(const struct session *s);
const struct profile_status *session__status(const struct session *s);
const struct session_totals *session__totals(const struct session *s);

size_t session__nsamples(const struct session *s);
const struct session_sample *session__sample(const struct session *s, size_t i);
const struct session_stack *session__stack(const struct session *s, uint32_t i);
const struct session_frame *session__frame(const struct session *s, uint32_t i);
size_t session__nframes(const struct session *s);
size_t session__nimages(const struct session *s);
const struct session_image *session__image(const struct session *s, uint32_t i);
size_t session__nmodules(const struct session *s);
/** The events samples name; index 0 is the header's default (cpu-clock), always there. */
size_t session__nevents(const struct session *s);
const struct session_event *session__event(const struct session *s, uint32_t i);

/**
 * session__only_event() - leave only the samples of event @event, and the
 * totals theirs: for views that add weights, which mean one thing per event
 * (a sample, a page fault, nanoseconds off the CPU).
 */
void session__only_event(struct session *s, uint32_t event);
const struct session_module *session__module(const struct session *s, uint32_t i);

/**
 * session_eval_frame() - whether @f is a frame of CPython's interpreter loop
 * (_PyEval_EvalFrameDefault, or a .cold/.part piece of it), where Python frames go.
 */
bool session_eval_frame(const struct session_frame *f);

/** A frame's function name for display: the symbol, or "dso+0xoffset". Valid until the next call. */
const char *session_frame_name(const struct session_frame *f, char *buf, size_t cap);

#endif
