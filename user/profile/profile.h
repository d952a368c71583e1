/* SPDX-License-Identifier: BSD-2-Clause */
/* The profile file: a writer for record and a reader for report, script, export and dump. */
#ifndef SFPROF_PROFILE_H
#define SFPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROFILE_F_SYSTEM_WIDE	0x1
#define PROFILE_F_COMMAND	0x2
/* Sample weights are nanoseconds of wall time (an imported trace), not events. */
#define PROFILE_F_WALL_NS	0x4

/* What the header says of the recording. Strings may be NULL when writing. */
struct profile_meta {
	uint32_t flags;		/* PROFILE_F_* */
	uint64_t created_ns;	/* CLOCK_REALTIME */
	uint32_t freq_hz;
	uint32_t stack_size;
	uint64_t clock_offset_ns;	/* sample time + this = CLOCK_REALTIME */
	const char *host;
	const char *release;
	const char *machine;
	const char *cmdline;	/* arguments joined by spaces */
};

struct profile_process {
	uint32_t pid, ppid;
	const char *comm;
	const char *exe;
	uint64_t pid_ns, mnt_ns;
	uint32_t ns_pid;
	const char *cgroup;	/* its cgroup's path (/proc/PID/cgroup); NULL or "" when unknown */
	/* a CPython interpreter's script, or "-m MODULE"; NULL or "" when none */
	const char *script;
};

struct profile_thread {
	uint32_t pid, tid;
	const char *comm;
};

struct profile_module {
	uint32_t id;		/* set by the writer; from 1 */
	uint64_t file_size;
	const uint8_t *build_id;
	size_t build_id_len;
	const char *path;
};

struct profile_mapping {
	uint32_t pid;
	uint64_t start, end;
	uint64_t file_offset;
	uint8_t prot;
	uint32_t module_id;	/* 0: none */
};

enum profile_space { PROFILE_USER = 0, PROFILE_KERNEL = 1 };

struct profile_stack {
	uint32_t id;		/* from 1 */
	uint8_t space;		/* enum profile_space */
	const uint8_t *cbf;
	size_t len;
};

/* An event's samples weigh nanoseconds (time off the CPU), not events. */
#define PROFILE_EV_F_WEIGHT_NS	0x1
/* profile_event.type for samples taken when a thread blocks, not by perf. */
#define PROFILE_EV_OFF_CPU	0xffffu

/*
 * What a file's samples count when it holds more than the header's default
 * (cpu-clock at meta.freq_hz): each sample names its event by id.
 */
struct profile_event {
	uint32_t id;		/* set by the writer; from 1 */
	uint32_t type;		/* perf_event_attr.type (PERF_TYPE_*), or PROFILE_EV_OFF_CPU */
	uint64_t config;	/* perf_event_attr.config (a tracepoint's id) */
	uint64_t period;	/* events per sample; 0 when sampled by frequency */
	uint32_t freq_hz;	/* samples per second asked; 0 when by period */
	uint32_t flags;		/* PROFILE_EV_F_* */
	const char *name;	/* as perf names it: cpu-clock, page-faults, sched:sched_switch */
};

/*
 * profile_sample.flags: taken inside execve with the user registers of the
 * program it was replacing, whose mappings or memory were gone: no user
 * stack (a reader ignores one given); readers show one frame in its place.
 */
#define PROFILE_SAMPLE_F_EXEC_OLD_IMAGE	0x1
/* profile_sample.flags on the wire: the Python chain was cut at the cap (py_truncated). */
#define PROFILE_SAMPLE_F_PY_TRUNCATED	0x2

/* The most Python frames a sample carries (a reader takes a record with more as malformed). */
#define PROFILE_PY_MAX_DEPTH	4096

#define PROFILE_PY_F_ENTRY	0x1	/* the frame was entered from C: the innermost of one _PyEval_EvalFrameDefault call */

/* A Python frame: a code object at a line, interned by content, which samples name by id. */
struct profile_py_frame {
	uint32_t id;		/* set by the writer (interned by content); from 1 */
	const char *qualname;	/* co_qualname (co_name before 3.11) */
	const char *file;	/* co_filename */
	uint32_t line;		/* the line the frame was at; 0 unknown */
	uint32_t flags;		/* PROFILE_PY_F_* */
};

struct profile_sample {
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint32_t pid, tid, cpu;
	uint32_t weight;
	uint32_t event;		/* id of its event record; 0: the header's default (cpu-clock) */
	uint32_t flags;		/* PROFILE_SAMPLE_F_* */
	/* writing: the CBF bytes (len 0 = none); reading: the interned stacks, NULL = none */
	const uint8_t *ustack, *kstack;
	size_t ustack_len, kstack_len;
	/*
	 * Ids, 0 = none. Writing: used when the bytes are not given, ids
	 * from profile_writer__stack().
	 */
	uint32_t ustack_id, kstack_id;
	const uint32_t *py_frames;	/* ids from profile_writer__py_frame(), innermost first; NULL = none */
	size_t py_depth;
	bool py_truncated;		/* the Python chain was cut at the cap */
};

/* The longest string field a reader keeps whole (a path, a JIT code's 4,096-byte name); longer ones are cut. */
#define PROFILE_STR_MAX 8192

/* A profile_jit's range holds code from a perf map: named at any time of its process image. */
#define PROFILE_JIT_F_MAP	0x1
/* A profile_jit's range holds no code from its time on (the code moved or was freed). */
#define PROFILE_JIT_F_UNLOAD	0x2
/* Most lines one profile_jit record carries. */
#define PROFILE_JIT_MAX_LINES	65536

/*
 * Code a JIT runtime made in a process (a perf map's line, a jitdump's code
 * load): its range and name, and its source lines (from jitdump DEBUG_INFO).
 */
struct profile_jit {
	uint64_t time_ns;	/* CLOCK_MONOTONIC: when the code was made (ignored with F_MAP) */
	uint32_t pid;
	uint64_t start, end;	/* end exclusive, after start */
	uint32_t flags;		/* PROFILE_JIT_F_* */
	const char *name;	/* "" with F_UNLOAD */
	const char *source;	/* where the name came from: "/tmp/perf-PID.map", "jit-PID.dump" */
	/*
	 * Source lines, in the file's encoding: (varint offset from start,
	 * varint line, str file) each, in address order; an empty file is
	 * the previous entry's. NULL or length 0: none.
	 */
	const uint8_t *lines;
	size_t lines_len;
};

/* One entry of profile_jit.lines. */
struct profile_jit_line {
	uint64_t offset;	/* from the code's start */
	uint64_t line;
	const char *file;	/* file_len bytes, not NUL-terminated; NULL: the previous entry's */
	size_t file_len;
};

/* The most bytes profile_jit_line__put() writes besides the file name. */
#define PROFILE_JIT_LINE_FIXED 30

/**
 * profile_jit_line__next() - the entry of a jit record's lines at *@p, before
 * @end; *@p moves past it. @return 1, 0 at the end, -EBADMSG when it overruns.
 */
int profile_jit_line__next(const uint8_t **p, const uint8_t *end, struct profile_jit_line *out);

/**
 * profile_jit_line__put() - @in encoded at @buf, which has room for
 * PROFILE_JIT_LINE_FIXED bytes and the file name. @return the bytes written.
 */
size_t profile_jit_line__put(uint8_t *buf, const struct profile_jit_line *in);

struct profile_lost {
	uint64_t time_ns;
	uint32_t cpu;
	uint64_t count;
};

struct profile_exit {
	uint64_t time_ns;
	uint32_t pid;
};

struct profile_comm {
	uint64_t time_ns;
	uint32_t pid, tid;
	const char *comm;
};

struct profile_diag {
	char reason[256];
};

/* --- writing --- */

struct profile_writer;

/**
 * profile_writer__create() - start a new profile file.
 *
 * An existing @path is renamed to @path.old first; the new file is created
 * owner-only with O_EXCL.
 *
 * @return the writer, or NULL with errno set and @diag->reason filled.
 */
struct profile_writer *profile_writer__create(const char *path, const struct profile_meta *meta,
					      struct profile_diag *diag);

/**
 * profile_writer__create_fd() - a profile written to @fd (owned: closed at
 * close), which must be empty; @name is for messages. Nothing is renamed or
 * unlinked: for files in memory (a memfd) or made by the caller.
 * @return the writer, or NULL with errno set and @diag->reason filled.
 */
struct profile_writer *profile_writer__create_fd(int fd, const char *name,
						 const struct profile_meta *meta,
						 struct profile_diag *diag);

/*
 * The records. Each returns 0 or a negative errno: -EINVAL, with nothing
 * written, for what a reader would take as damage (docs/FORMAT.md): a time
 * past INT64_MAX ns (the kernel's clocks are signed), a mapping whose end is
 * not past its start.
 */
int profile_writer__process(struct profile_writer *w, const struct profile_process *p);
int profile_writer__thread(struct profile_writer *w, const struct profile_thread *t);
int profile_writer__exit(struct profile_writer *w, const struct profile_exit *e);
int profile_writer__comm(struct profile_writer *w, const struct profile_comm *c);
int profile_writer__lost(struct profile_writer *w, const struct profile_lost *l);
int profile_writer__mapping(struct profile_writer *w, const struct profile_mapping *m);
/** profile_writer__jit() - record JIT code; -EINVAL for an empty or wrapping range or a bad time. */
int profile_writer__jit(struct profile_writer *w, const struct profile_jit *j);

/**
 * profile_writer__module() - record a module once; the same build ID and path
 * give the same id. @return the id (from 1) in @id, 0 or a negative errno.
 */
int profile_writer__module(struct profile_writer *w, const struct profile_module *m, uint32_t *id);

/**
 * profile_writer__event() - record an event that samples will name; each
 * call gives a new id. @return the id (from 1) in @id, 0 or a negative errno.
 */
int profile_writer__event(struct profile_writer *w, const struct profile_event *e, uint32_t *id);

/**
 * profile_writer__stack() - intern a stack of @space (enum profile_space)
 * without a sample, for samples that give its id rather than its bytes.
 * @return its id in @id (0 for an empty stack), 0 or a negative errno.
 */
int profile_writer__stack(struct profile_writer *w, uint8_t space, const uint8_t *cbf, size_t len,
			  uint32_t *id);

/**
 * profile_writer__py_frame() - intern a Python frame: the same qualname,
 * file, line and flags give the same id, its record written the first time.
 * @return 0 with its id in @id, or -errno (-EINVAL for a NULL name).
 */
int profile_writer__py_frame(struct profile_writer *w, const struct profile_py_frame *f, uint32_t *id);

/**
 * profile_writer__sample() - record a sample; its stacks are interned, so a
 * stack seen before costs only its id. A stack given by id alone must have
 * come from profile_writer__stack() of the same space: else -EINVAL. Its
 * Python frames must be ids given by profile_writer__py_frame(), at most
 * PROFILE_PY_MAX_DEPTH of them: else -EINVAL.
 * @return 0 or a negative errno.
 */
int profile_writer__sample(struct profile_writer *w, const struct profile_sample *s);

/**
 * profile_writer__set_stack_bound() - hold at most about @bytes in the index
 * that finds a stack's id (its slots and the copies of the stacks' CBF
 * bytes; one growth of its slots may pass it); past it the index
 * starts again, and a stack seen before is written again under a new id when
 * next seen. 0 (the default): no bound. Memory then stays bounded over a long
 * recording whose processes keep making new stacks (each new PIE process has
 * new addresses), at the price of some stacks written twice. The index of
 * Python frames (profile_writer__py_frame()) has the same bound of its own.
 */
void profile_writer__set_stack_bound(struct profile_writer *w, size_t bytes);

/** @return the bytes the index of stacks holds now (what set_stack_bound() bounds). */
size_t profile_writer__stack_memory(const struct profile_writer *w);

/** @return how many times the stack index started again. */
uint64_t profile_writer__stack_resets(const struct profile_writer *w);

/** profile_writer__flush() - write the current block out now. @return 0 or -errno. */
int profile_writer__flush(struct profile_writer *w);

/**
 * profile_writer__tick() - write the current block out if it is older than a
 * second, so that an idle recording still reaches the disk. @return 0 or -errno.
 */
int profile_writer__tick(struct profile_writer *w);

/** @return bytes written to the file so far (blocks complete on disk). */
uint64_t profile_writer__bytes(const struct profile_writer *w);

/** @return samples recorded so far. */
uint64_t profile_writer__samples(const struct profile_writer *w);

/**
 * profile_writer__written() - what the file holds: @samples and @lost counts
 * in whole blocks on disk; @unwritten: samples given that are not there (in
 * a block a write error cut away, or given after it), or still in the block
 * being filled (none after profile_writer__flush()).
 */
void profile_writer__written(const struct profile_writer *w, uint64_t *samples, uint64_t *lost,
			     uint64_t *unwritten);

/**
 * profile_writer__close() - flush, write the trailer and close.
 * @failed: the recording stopped early because of an error (noted in the trailer).
 *
 * Frees @w whatever happens. @return 0 or the first error met while writing.
 */
int profile_writer__close(struct profile_writer *w, bool failed, struct profile_diag *diag);

/**
 * profile_writer__close_whole() - the same, but a profile that cannot be
 * written whole is not kept: the file is deleted and the one renamed away
 * comes back, as with profile_writer__discard(). For profiles made from
 * inputs that are still there (an import), where a part is worth nothing.
 */
int profile_writer__close_whole(struct profile_writer *w, bool failed, struct profile_diag *diag);

/**
 * profile_writer__discard() - close and delete the file, restoring @path.old
 * if the writer had renamed one. For a recording that never started.
 */
void profile_writer__discard(struct profile_writer *w);

/* --- reading --- */

enum profile_rec {
	PROFILE_REC_PROCESS = 1,
	PROFILE_REC_THREAD = 2,
	PROFILE_REC_MODULE = 3,
	PROFILE_REC_MAPPING = 4,
	PROFILE_REC_STACK = 5,
	PROFILE_REC_SAMPLE = 6,
	PROFILE_REC_LOST = 7,
	PROFILE_REC_EXIT = 8,
	PROFILE_REC_COMM = 9,
	PROFILE_REC_EVENT = 10,
	PROFILE_REC_JIT = 11,
	PROFILE_REC_PY_FRAME = 12,
};

struct profile_record {
	enum profile_rec type;
	union {
		struct profile_process process;
		struct profile_thread thread;
		struct profile_module module;
		struct profile_mapping mapping;
		struct profile_stack stack;
		struct profile_sample sample;
		struct profile_lost lost;
		struct profile_exit exit;
		struct profile_comm comm;
		struct profile_event event;
		struct profile_jit jit;
		struct profile_py_frame py_frame;
	};
};

/* How reading went, for the "file truncated / damaged" notices. */
struct profile_status {
	uint64_t file_size;
	uint64_t blocks;		/* read whole */
	uint64_t bad_blocks;		/* damaged and skipped */
	uint64_t bytes_recovered;	/* header and whole blocks */
	uint64_t unknown_stacks;	/* stack references to stacks lost with a damaged block */
	uint64_t unknown_py_frames;	/* Python frame references to records never read (left out) */
	bool truncated;			/* no trailer: cut short or still being written */
	bool has_trailer;
	bool trailer_failed;		/* the writer noted it stopped on an error */
	uint64_t trailer_samples, trailer_lost;	/* what the writer counted */
	/*
	 * Samples lost: the larger of the lost records' sum and the trailer's
	 * count. A count more than the recording could have sampled in its time
	 * (docs/FORMAT.md) is damage: its record is skipped, and then
	 * lost_implausible says how many were lost is not known.
	 */
	uint64_t lost;
	bool lost_implausible;
	char first_error[256];		/* the first damage met, in words */
};

/**
 * profile_status_damaged() - whether reading met damage: blocks skipped,
 * malformed records, counts the file's contents do not bear out, stacks
 * never defined. A file merely cut short (truncated) is not damaged.
 */
static inline bool profile_status_damaged(const struct profile_status *st)
{
	return st->bad_blocks || st->unknown_stacks || st->unknown_py_frames ||
	       st->lost_implausible || st->first_error[0];
}

struct profile_reader;

/**
 * profile_reader__open() - open a profile and check its header.
 * @diag: optional; its reason is filled on failure.
 *
 * @return the reader, or NULL with errno set (ENOENT, EACCES, EBADMSG for
 * "not a profile" or a damaged header, ENOTSUP for an unknown version).
 */
struct profile_reader *profile_reader__open(const char *path, struct profile_diag *diag);

/** @return the header's content; strings valid while the reader lives. */
const struct profile_meta *profile_reader__meta(const struct profile_reader *r);

/**
 * profile_reader__next() - the next record, in file order. Damaged blocks are
 * skipped and counted in the status. Pointers in @rec stay valid until the
 * next call, except stack bytes of samples, valid while the reader lives.
 *
 * @return 1 with @rec filled, 0 at the end, or a negative errno (-EIO, -ENOMEM).
 */
int profile_reader__next(struct profile_reader *r, struct profile_record *rec);

/** @return how reading went so far (complete once next() returned 0). */
const struct profile_status *profile_reader__status(const struct profile_reader *r);

/** profile_reader__free() - accepts NULL. */
void profile_reader__free(struct profile_reader *r);

#endif
