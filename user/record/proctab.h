/* SPDX-License-Identifier: BSD-2-Clause */
/* The processes a recording sees: images and address spaces from /proc and task events. */
#ifndef SFPROF_PROCTAB_H
#define SFPROF_PROCTAB_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample.h"
#include "sfunwind.h"

/* The perf records the table reads (include/uapi/linux/perf_event.h describes them in comments only). */
struct perf_rec_mmap2 {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size;
			uint8_t reserved_1;
			uint16_t reserved_2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
	char filename[];
};

struct perf_rec_comm {
	struct perf_event_header header;
	uint32_t pid, tid;
	char comm[];
};

struct perf_rec_task {	/* PERF_RECORD_FORK and PERF_RECORD_EXIT */
	struct perf_event_header header;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* A process image as the file records it. */
struct proctab_proc {
	uint32_t pid, ppid;
	char comm[SAMPLE_COMM_LEN];
	char *exe;
	struct sfu_addrspace *as;
	uint64_t pid_ns, mnt_ns;
	uint32_t ns_pid;
	char *cgroup;		/* its control group (proctab_read_cgroup()), or NULL */
	char *script;		/* a CPython interpreter's script or "-m MODULE" (pyargv.h), or NULL */
};

/*
 * What the table tells the file, and when: a process image (then each of
 * its mappings) the first time one of its samples needs it, and after that
 * its new mappings, renames and exit as they come. Every callback may be
 * NULL.
 */
struct proctab_ops {
	void (*process)(void *ctx, const struct proctab_proc *p);
	void (*mapping)(void *ctx, uint32_t pid, const struct sfu_mapping *m);
	void (*comm)(void *ctx, uint64_t time, uint32_t pid, uint32_t tid, const char *comm);
	void (*exit)(void *ctx, uint64_t time, uint32_t pid);
	/* a thread's image ended (exec, exit): what is kept of it must go */
	void (*thread_gone)(void *ctx, uint32_t tid);
	/* what cannot be known of a process (its mappings, its namespaces), once per image, as a sentence that says the consequence */
	void (*warn)(void *ctx, uint32_t pid, const char *comm, const char *why);
	/* a thread renamed itself (not an exec): of any process, told or not */
	void (*named)(void *ctx, uint32_t tid, const char *comm);
};

/* A process is forgotten this long after its exit: its last samples come after the event. */
#define PROCTAB_EXIT_GRACE_NS 2000000000ull

struct proctab;

/**
 * proctab__new() - an empty table; files are opened through @cache, which
 * must outlive it. @return the table, or NULL with errno set.
 */
struct proctab *proctab__new(struct sfu_cache *cache, const struct proctab_ops *ops, void *ctx);

/** proctab__free() - accepts NULL. */
void proctab__free(struct proctab *t);

/**
 * proctab__scan() - learn a running process from /proc: its name,
 * executable, parent and namespaces (its mappings when first sampled).
 * @return 0, -ESRCH when it is gone, -ENOMEM.
 */
int proctab__scan(struct proctab *t, pid_t pid);

/**
 * proctab__scan_held() - proctab__scan() of a process about to exec the
 * program to record (the command sfprof starts, held before its exec): its
 * samples before the exec are not the program's, and
 * proctab__before_exec() says so until its exec is applied, as perf starts
 * counting a command at its exec. @return as proctab__scan().
 */
int proctab__scan_held(struct proctab *t, pid_t pid);

/** @return whether a sample of @pid is of a held process before its exec (not to be recorded). */
bool proctab__before_exec(const struct proctab *t, uint32_t pid);

/**
 * proctab__read_comm() - the name /proc gives process @pid (@tid 0) or its
 * thread @tid, into @comm (@cap bytes). @return false when it could not be read.
 */
bool proctab__read_comm(uint32_t pid, uint32_t tid, char *comm, size_t cap);

/** proctab__scan_all() - proctab__scan() every process in /proc. @return their number, or -errno. */
int proctab__scan_all(struct proctab *t);

/** proctab__task_event() - apply an mmap2, comm (exec), fork or exit record at @time. */
void proctab__task_event(struct proctab *t, const struct perf_event_header *e, uint64_t time);

/**
 * proctab__for_sample() - the process of a sample of @pid: learned from
 * /proc now if need be (else made from @comm, *@unknown set), and told to
 * the file, with its mappings, if it was not yet.
 * @return the process, or NULL when out of memory.
 */
const struct proctab_proc *proctab__for_sample(struct proctab *t, uint32_t pid,
					       const char *comm, bool *unknown);

/** @return the processes held (exited ones within their grace time included). */
size_t proctab__count(const struct proctab *t);

/** @return the processes told to the file, each counted once however many images. */
uint64_t proctab__emitted(const struct proctab *t);

/**
 * proctab__forget_emitted() - the file changed (a window was cut): every
 * process image is told again, with its mappings, at its next sample, as if
 * new, so that the next file is a complete profile. What was said of an image
 * (warn) is not said again.
 */
void proctab__forget_emitted(struct proctab *t);

/**
 * proctab_read_cgroup() - the control group of process @pid, from
 * /proc/PID/cgroup: the unified hierarchy's path ("0::PATH") unless it is the
 * root, else the name=systemd hierarchy's, else the first other one that is
 * not the root; "/" when all are. @return a malloc'd path, or NULL when it
 * cannot be read (gone) or out of memory.
 */
char *proctab_read_cgroup(uint32_t pid);

#endif
