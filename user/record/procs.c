/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path after the ring: samples unwound in their process, encoded, and written with what they need. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_size.h"
#include "jit.h"
#include "common/hmap.h"
#include "procs.h"
#include "proctab.h"
#include "python.h"
#include "stack_enc.h"

#define MAX_UNWIND 1024	/* frames unwound; the CBF keeps max_depth of them */
#define MAX_WEIGHT (86400ull * 1000000000ull)	/* of one sample from the ring: a day in ns */

/*
 * A thread seen: its name and the size of its stack copy. The sampler
 * leaves the name out of the samples of a thread it has a copy size for
 * (SAMPLE_F_NO_COMM), so the name is kept here for as long as the size can
 * be there: till its exit or exec, or a window it was not sampled in.
 */
struct thread {
	struct copy_size copy;
	uint32_t pid;
	char comm[SAMPLE_COMM_LEN + 1];
	bool written;	/* its record is in the file being written */
};

struct procs {
	struct profile_writer *w;
	pthread_mutex_t *wlock;	/* the writer is shared with other procs */
	struct sfu_cache *cache;	/* shared too, and thread-safe */
	struct proctab *tab;
	struct sfu_unwind_opts opts;
	struct stack_cut cut;
	struct hmap *threads;	/* tid -> struct thread * */
	/*
	 * A program's own copy size (its executable's path -> struct
	 * copy_size *), fed by the samples of all its processes: new threads
	 * start there, which matters for programs run again and again for
	 * less than a run of samples each (a build).
	 */
	struct hmap *learned;
	struct copy_limits copy_lim;
	uint32_t copy_start;	/* bytes copied for a thread not seen yet */
	bool copy_adaptive;	/* sizes follow what the unwinds use */
	struct procs_stats stats;
	int err;		/* the first error writing the file: recording must stop */
	procs_warn_fn warn;
	void *warn_ctx;
	procs_module_fn module_hook;
	void *module_ctx;
	struct sfu_frame frames[MAX_UNWIND];
	struct procs_unwound own;	/* procs__sample()'s */
	struct jit_recorder *jit;	/* the JIT code of this table's processes */
	bool jit_off;			/* procs__set_jit() */
	struct procs_unwound redo;	/* a sample unwound again with rows for its JIT code */
	struct stack_enc kstack;
	struct python *py;		/* the interpreters of this table's processes */
	bool py_off;			/* procs__set_python(): no Python frames */
	unsigned py_shard, py_shards;	/* the processes whose pid % py_shards is py_shard are this table's */
	uint32_t py_ids[PY_MAX_FRAMES];	/* a sample's Python frames, as the writer interned them */
	struct hmap *py_memo;		/* struct py_memo_key -> the frame's id in w (py_memo_clear()) */
	struct hmap *py_last;		/* tid -> struct py_last *, its last sample's chain */
};

/* Keep the first error of a write to the file. @return @err. */
static int wrote(struct procs *p, int err)
{
	if (err && !p->err)
		__atomic_store_n(&p->err, err, __ATOMIC_RELAXED);
	return err;
}

/* A call of the shared writer, under its lock: @return what it returned. */
#define WRITE(p, call) ({						\
	int err_;							\
	if ((p)->wlock)							\
		pthread_mutex_lock((p)->wlock);				\
	err_ = (call);							\
	if ((p)->wlock)							\
		pthread_mutex_unlock((p)->wlock);			\
	wrote((p), err_);						\
})

/* --- the emitter: what the process table tells, written to the file --- */

static void emit_mapping(void *ctx, uint32_t pid, const struct sfu_mapping *m)
{
	struct procs *p = ctx;
	struct profile_mapping rec = {
		.pid = pid, .start = m->start, .end = m->end, .file_offset = m->file_offset,
		.prot = m->prot,
	};

	/* rows this recording made for JIT code (no path): the file knows its memory as anonymous */
	if (m->module && !jit_module_is(m->module)) {
		const struct sfu_build_id *bid = sfu_module__build_id(m->module);
		struct profile_module mod = {
			.file_size = sfu_module__file_size(m->module),
			.build_id = bid->bytes,
			.build_id_len = bid->len,
			.path = m->path ? m->path : sfu_module__path(m->module),
		};

		WRITE(p, profile_writer__module(p->w, &mod, &rec.module_id));
		if (p->module_hook)
			p->module_hook(p->module_ctx, pid, m);
	} else if (m->path) {
		/* a file we could not open: keep its name for the report */
		struct profile_module mod = { .path = m->path };

		WRITE(p, profile_writer__module(p->w, &mod, &rec.module_id));
	}
	WRITE(p, profile_writer__mapping(p->w, &rec));
}

static void emit_process(void *ctx, const struct proctab_proc *pr)
{
	struct procs *p = ctx;
	struct profile_process rec = {
		.pid = pr->pid, .ppid = pr->ppid, .comm = pr->comm, .exe = pr->exe,
		.pid_ns = pr->pid_ns, .mnt_ns = pr->mnt_ns, .ns_pid = pr->ns_pid,
		.cgroup = pr->cgroup,
		.script = pr->script,
	};

	WRITE(p, profile_writer__process(p->w, &rec));
}

static void emit_comm(void *ctx, uint64_t time, uint32_t pid, uint32_t tid, const char *comm)
{
	struct procs *p = ctx;
	struct profile_comm rec = { time, pid, tid, comm };

	WRITE(p, profile_writer__comm(p->w, &rec));
}

static void emit_exit(void *ctx, uint64_t time, uint32_t pid)
{
	struct procs *p = ctx;
	struct profile_exit rec = { time, pid };

	/* a map written at exit (Java's DumpPerfMapAtExit) is there now */
	jit_recorder__exit(p->jit, pid, time);
	WRITE(p, profile_writer__exit(p->w, &rec));
}

static int emit_jit(void *ctx, const struct profile_jit *j)
{
	struct procs *p = ctx;

	return WRITE(p, profile_writer__jit(p->w, j));
}

/* A thread is written again (exec) or gone (exit): its copy size goes with it. */
static void thread_gone(void *ctx, uint32_t tid)
{
	struct procs *p = ctx;
	uint64_t val;

	if (!hmap__delete_u64(p->threads, tid, &val))
		free((struct thread *)(uintptr_t)val);
}

/* A thread renamed itself: what is kept of its name follows, for the next file's thread record. */
static void thread_named(void *ctx, uint32_t tid, const char *comm)
{
	struct procs *p = ctx;
	uint64_t *v;

	if (!hmap__find_u64(p->threads, tid, &v))
		snprintf(((struct thread *)(uintptr_t)*v)->comm, SAMPLE_COMM_LEN + 1, "%s", comm);
}

static void warn(void *ctx, uint32_t pid, const char *comm, const char *why)
{
	struct procs *p = ctx;

	if (p->warn)
		p->warn(p->warn_ctx, pid, comm, why);
}

struct sfu_cache *procs__new_cache(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct sfu_cache *cache = sfu_cache__new();
	char dir[4096];
	int err;

	if (!cache)
		return NULL;
	/* recording unwinds and never names a function: no symbol tables */
	sfu_cache__set_flags(cache, SFU_MODULE_OPEN_NO_SYMBOLS);
	/* tables derived from .eh_frame are kept on disk: the next recording reads them back */
	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/sfprof", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.cache/sfprof", home);
	else
		return cache;
	err = sfu_cache__set_dir(cache, dir);
	if (err == -EPERM) {
		/* tables someone else could write would unwind nothing right: derived anew */
		fprintf(stderr, "sfprof: unwind tables derived from .eh_frame: %s: a directory "
			"someone other than this user or root can change (it, or one on the way "
			"to it): not used\n", dir);
	} else if (err) {
		sfu_cache__free(cache);
		errno = -err;
		return NULL;
	}
	return cache;
}

/*
 * A thread's last Python chain as the sampler gave it, with the ids its
 * frames were written under: the next sample of the thread shares most of
 * it (all but its innermost frames), found by comparing the records.
 */
struct py_last {
	uint32_t n;
	struct sample_py_frame raw[PY_MAX_FRAMES];
	uint32_t ids[PY_MAX_FRAMES];
	bool reusable[PY_MAX_FRAMES];	/* named, and its names checked by the sampler */
};
#define PY_LAST_MAX	256	/* threads remembered; past it they are forgotten together */

/* Forget the Python frames' ids: a new writer, or a process gone (its pid may come again). */
static void py_memo_clear(struct procs *p)
{
	hmap__free(p->py_memo);
	p->py_memo = NULL;
	hmap__free_values(p->py_last, free);
	p->py_last = NULL;
}

struct procs *procs__new(struct profile_writer *w, pthread_mutex_t *wlock, struct sfu_cache *cache,
			 enum sfu_arch arch, unsigned max_depth)
{
	static const struct proctab_ops ops = {
		.process = emit_process, .mapping = emit_mapping, .comm = emit_comm,
		.exit = emit_exit, .thread_gone = thread_gone, .named = thread_named, .warn = warn,
	};
	struct procs *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->w = w;
	p->wlock = wlock;
	p->cache = cache;
	p->cut.max_frames = max_depth;
	SFU_OPTS_RESET(&p->opts, .arch = arch);
	p->copy_lim = (struct copy_limits){ MIN_USTACK_BYTES, MAX_USTACK_BYTES, STACK_CHUNK };
	p->copy_start = 16384;
	p->opts.cache = sfu_unwind_cache__new();
	p->threads = hmap__new(HMAP_U64);
	p->learned = hmap__new(HMAP_BYTES);
	p->tab = proctab__new(p->cache, &ops, p);
	p->jit = jit_recorder__new(arch, &(struct jit_ops){ emit_jit, warn, p });
	p->py = python__new(NULL);
	p->py_off = true;	/* until procs__set_python() */
	if (!p->opts.cache || !p->threads || !p->learned || !p->tab || !p->jit || !p->py) {
		procs__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void procs__free(struct procs *p)
{
	if (!p)
		return;
	proctab__free(p->tab);
	jit_recorder__free(p->jit);
	python__free(p->py);
	py_memo_clear(p);
	procs__unwound_release(&p->redo);
	hmap__free_values(p->threads, free);
	hmap__free_values(p->learned, free);
	sfu_unwind_cache__free(p->opts.cache);
	procs__unwound_release(&p->own);
	stack_enc__release(&p->kstack);
	free(p);
}

void procs__set_warn(struct procs *p, procs_warn_fn fn, void *ctx)
{
	p->warn = fn;
	p->warn_ctx = ctx;
}

void procs__set_module_hook(struct procs *p, procs_module_fn fn, void *ctx)
{
	p->module_hook = fn;
	p->module_ctx = ctx;
}

int procs__error(const struct procs *p)
{
	return __atomic_load_n(&p->err, __ATOMIC_RELAXED);
}

void procs__set_fp_only(struct procs *p, bool fp_only)
{
	p->opts.fp_only = fp_only;
}

void procs__set_copy_sizes(struct procs *p, uint32_t start, bool adaptive)
{
	p->copy_start = start;
	p->copy_adaptive = adaptive;
}

const struct procs_stats *procs__stats(const struct procs *p)
{
	return &p->stats;
}

int procs__set_python(struct procs *p, const struct python_map_ops *ops, unsigned shard,
		      unsigned shards)
{
	struct python *py;

	if (!ops) {
		p->py_off = true;
		return 0;
	}
	py = python__new(ops);
	if (!py)
		return -errno;
	python__free(p->py);
	p->py = py;
	p->py_off = false;
	p->py_shard = shard;
	p->py_shards = shards ? shards : 1;
	return 0;
}

const struct python_stats *procs__python_stats(const struct procs *p)
{
	return python__stats(p->py);
}

/* Whether this table looks after @pid's interpreter: one table of those sharing the map does. */
static bool python_owns(const struct procs *p, uint32_t pid)
{
	return !p->py_off && pid % p->py_shards == p->py_shard;
}

/* A process learned from /proc: its interpreter, if it runs one, found in its mappings. */
static void python_scan(struct procs *p, pid_t pid)
{
	if (python_owns(p, pid))
		python__scan(p->py, pid);
}

int procs__scan(struct procs *p, pid_t pid)
{
	int err = proctab__scan(p->tab, pid);

	if (!err)
		python_scan(p, pid);
	return err;
}

int procs__scan_held(struct procs *p, pid_t pid)
{
	int err = proctab__scan_held(p->tab, pid);

	if (!err)
		python_scan(p, pid);
	return err;
}

int procs__scan_all(struct procs *p)
{
	int n = proctab__scan_all(p->tab);
	struct dirent *d;
	DIR *dir;

	if (n < 0 || p->py_off || !(dir = opendir("/proc")))
		return n;
	while ((d = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(d->d_name, &end, 10);

		if (*end || !pid || pid > INT32_MAX)
			continue;
		python_scan(p, (pid_t)pid);
	}
	closedir(dir);
	return n;
}

/* The task events that tell where an interpreter is, and when it goes. */

static void python_task_event(struct procs *p, const struct perf_event_header *e, uint64_t time)
{
	const struct perf_rec_mmap2 *mm = (const struct perf_rec_mmap2 *)e;
	const struct perf_rec_comm *c = (const struct perf_rec_comm *)e;
	const struct perf_rec_task *t = (const struct perf_rec_task *)e;
	size_t at = offsetof(struct perf_rec_mmap2, filename);

	/* pid is at the same place in the three */
	if (e->size < sizeof(*e) + 4 || !python_owns(p, mm->pid))
		return;
	switch (e->type) {
	case PERF_RECORD_MMAP2:
		/* libpython mapped by the loader or a dlopen; an interpreter's executable at exec */
		if (e->size > at && memchr(mm->filename, '\0', e->size - at))
			python__mapped(p->py, mm->pid, mm->filename, mm->addr, mm->pgoff);
		break;
	case PERF_RECORD_COMM:
		if (e->size >= sizeof(*c) && (e->misc & PERF_RECORD_MISC_COMM_EXEC)) {
			python__forget(p->py, c->pid);
			py_memo_clear(p);
		}
		break;
	case PERF_RECORD_FORK:
		/* the parent may be another table's: the child's own maps say */
		if (e->size >= sizeof(*t) && t->pid != t->ppid)
			python_scan(p, t->pid);
		break;
	case PERF_RECORD_EXIT:
		/* its last samples may still be queued: named from what was read while it ran */
		if (e->size >= sizeof(*t) && t->pid == t->tid)
			python__exited(p->py, t->pid, time);
		break;
	}
}

void procs__task_event(struct procs *p, const struct perf_event_header *e, uint64_t time)
{
	const struct perf_rec_mmap2 *mm = (const struct perf_rec_mmap2 *)e;
	size_t at = offsetof(struct perf_rec_mmap2, filename);

	/* a jitdump is mapped so that profilers find it */
	if (e->type == PERF_RECORD_MMAP2 && e->size > at && !p->jit_off &&
	    memchr(mm->filename, '\0', e->size - at))
		jit_recorder__mmap(p->jit, mm->pid, mm->addr, mm->addr + mm->len, mm->filename);
	proctab__task_event(p->tab, e, time);
	if (!p->py_off)
		python_task_event(p, e, time);
}

void procs__jit_flush(struct procs *p, uint64_t time)
{
	jit_recorder__flush(p->jit, time);
}

const struct jit_stats *procs__jit_stats(const struct procs *p)
{
	return jit_recorder__stats(p->jit);
}

void procs__set_jit(struct procs *p, bool on)
{
	p->jit_off = !on;
}

void procs__set_writer(struct procs *p, struct profile_writer *w)
{
	p->w = w;
	py_memo_clear(p);
}

int procs__forget_written(struct procs *p)
{
	struct hmap *threads = hmap__new(HMAP_U64);
	struct hmap_item it;
	size_t pos = 0;
	int err = 0;

	if (!threads)
		return -ENOMEM;
	/*
	 * Every thread is written again at its next sample. One sampled in the
	 * window just ended keeps its name and its copy size; one that was not
	 * goes, so that an exit the events missed does not hold it for good.
	 */
	while (!hmap__next(p->threads, &pos, &it)) {
		struct thread *th = (struct thread *)(uintptr_t)it.val;

		if (th->written && !(err = hmap__set_u64(threads, it.key, it.val)))
			th->written = false;
		else
			free(th);
	}
	hmap__free(p->threads);
	p->threads = threads;
	proctab__forget_emitted(p->tab);
	jit_recorder__forget_written(p->jit);
	return err;
}

size_t procs__held(const struct procs *p)
{
	return proctab__count(p->tab);
}

/* --- the sample path --- */

/* A stack copy that remembers how far up the unwinder read, and whether it wanted more. */
struct watched_copy {
	struct sfu_snapshot snap;
	uint64_t high;		/* the end of the highest read inside the copy */
	bool past_end;		/* a read began at or past its end */
};

static int watched_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct watched_copy *c = ctx;
	int err = sfu_snapshot_read(&c->snap, addr, buf, len);

	if (!err && addr + len > c->high)
		c->high = addr + len;
	/* just past the end (not a wild address): a bigger copy would have had it */
	if (err && addr >= c->snap.base + c->snap.size &&
	    addr - (c->snap.base + c->snap.size) < MAX_USTACK_BYTES)
		c->past_end = true;
	return err;
}

_Static_assert(JIT_PCS_MAX == sizeof(((struct procs_unwound *)0)->jit_pcs) / sizeof(uint64_t),
	       "procs_unwound holds JIT_PCS_MAX pcs");

/*
 * The code addresses of frames in memory no file backs whose caller no table
 * gave (frame pointers did, or the walk ended there): JIT code. *@seen says
 * there is some (the process's map is worth reading); they are handed over
 * (@pcs, the count returned) only from a walk that did not reach the
 * outermost frame, for rows from what the runtime wrote. A complete walk is
 * left as it is: frame pointers serve JIT code that keeps them (V8, Java's
 * PreserveFramePointer).
 */
static size_t jit_pcs(const struct sfu_addrspace *as, const struct sfu_frame *frames, size_t n,
		      int stop, uint64_t *pcs, bool *seen)
{
	size_t k = 0;

	*seen = false;
	for (size_t i = 0; i < n && k < JIT_PCS_MAX; i++) {
		uint64_t pc = frames[i].addr;
		const struct sfu_mapping *m;

		if (i + 1 < n ? frames[i + 1].source != SFU_SRC_FP : stop == SFU_STOP_OUTERMOST)
			continue;
		if (frames[i].kind == SFU_FRAME_RA && pc)
			pc--;
		m = sfu_addrspace__find(as, pc);
		if (!m || m->module)
			continue;
		*seen = true;
		if (stop == SFU_STOP_OUTERMOST)
			break;
		pcs[k++] = pc;
	}
	return k;
}

/*
 * Whether @h was taken inside execve with the user registers of the program
 * it replaces, with nothing of that program to unwind them in: the new
 * address space was in already (the sampler saw it: its memory at sp is not
 * the stack), or the pc is in none of @as's mappings (the image the process
 * is known by is the next one: it was learned after the exec). A pc in a
 * mapping of @as before the switch is the image the process has: unwound.
 */
static bool exec_old_image(const struct sfu_addrspace *as, const struct sample_hdr *h)
{
	if (!(h->flags & SAMPLE_F_EXECVE))
		return false;
	return (h->flags & SAMPLE_F_EXEC_NEW_MM) || !sfu_addrspace__find(as, h->pc);
}

void procs__unwind(struct procs *self, const struct sfu_addrspace *as, const struct sample_hdr *h,
		   const uint8_t *ustack, struct procs_unwound *u)
{
	struct sfu_regs regs = { .pc = h->pc, .sp = h->sp, .fp = h->fp, .lr = h->lr };
	struct watched_copy copy = { { h->sp, ustack, h->ustack_len }, h->sp, false };
	size_t n = 0;
	int stop;

	u->cbf = NULL;
	u->len = 0;
	u->complete = false;
	u->old_image = false;
	u->err = 0;
	u->njit = 0;
	u->jit_seen = false;
	memset(&u->use, 0, sizeof(u->use));
	if (!as || !(h->flags & SAMPLE_F_USER_REGS) || !h->pc)
		return;
	if (exec_old_image(as, h)) {
		u->old_image = true;
		return;
	}
	stop = sfu_unwind(as, &self->opts, &regs, watched_read, &copy, self->frames, MAX_UNWIND,
			  &n);
	u->use.copied = h->ustack_len;
	u->use.used = copy.high - h->sp;
	/*
	 * The copy ran out: the unwind did not reach the outermost frame and
	 * asked for bytes just past the copy on its way (the stop itself may
	 * then be the frame-pointer fallback's, not the read's).
	 */
	u->use.ran_out = stop != SFU_STOP_OUTERMOST && copy.past_end;
	u->use.unwound = true;
	u->complete = stop == SFU_STOP_OUTERMOST;
	u->njit = jit_pcs(as, self->frames, n, stop, u->jit_pcs, &u->jit_seen);
	u->err = stack_enc__frames(&u->enc, self->frames, n, &self->cut,
				   stop != SFU_STOP_OUTERMOST, &u->cbf, &u->len);
	if (u->err)
		u->len = 0;
}

void procs__unwound_release(struct procs_unwound *u)
{
	stack_enc__release(&u->enc);
}

/* The copy size of @pr's program, made at the default when new; NULL when out of memory. */
static struct copy_size *program_size(struct procs *p, const struct proctab_proc *pr)
{
	const char *name = pr->exe ? pr->exe : pr->comm;
	struct copy_size *cs;
	uint64_t *v;

	if (hmap__entry(p->learned, name, strlen(name), &v, NULL))
		return NULL;
	if (!*v) {
		cs = malloc(sizeof(*cs));
		if (!cs) {
			hmap__delete(p->learned, name, strlen(name), NULL);
			return NULL;
		}
		copy_size__init(cs, p->copy_start);
		*v = (uintptr_t)cs;
	}
	return (struct copy_size *)(uintptr_t)*v;
}

/*
 * The name of thread @tid of @pr for its record, when its sample has none
 * (SAMPLE_F_NO_COMM) and it is not kept: the sampler knew it before a
 * window this table forgot it in. As /proc has it now, or its process's.
 */
static void thread_comm(const struct proctab_proc *pr, uint32_t tid, char *comm)
{
	if (!proctab__read_comm(pr->pid, tid, comm, SAMPLE_COMM_LEN + 1))
		snprintf(comm, SAMPLE_COMM_LEN + 1, "%s", pr->comm);
}

/*
 * The thread of a sample of @pr, its record written at its first sample in
 * the file. *@fresh when written now. NULL: no memory.
 */
static struct thread *thread_of(struct procs *p, const struct proctab_proc *pr,
				const struct copy_size *prog, const struct sample_hdr *h, bool *fresh)
{
	struct profile_thread rec = { h->pid, h->tid, NULL };
	struct thread *th;
	uint64_t *v;
	bool known;

	*fresh = false;
	known = !hmap__find_u64(p->threads, h->tid, &v);
	if (known) {
		th = (struct thread *)(uintptr_t)*v;
		/* another process's thread under its number: the exit of the one before was missed */
		known = th->pid == h->pid;
		if (known && th->written)
			return th;
	} else {
		th = malloc(sizeof(*th));
		if (!th)
			return NULL;
		if (hmap__set_u64(p->threads, h->tid, (uintptr_t)th)) {
			free(th);
			return NULL;
		}
	}
	if (!known) {
		copy_size__init(&th->copy, p->copy_adaptive && prog ? prog->size : p->copy_start);
		th->pid = h->pid;
	}
	if (!(h->flags & SAMPLE_F_NO_COMM)) {
		memcpy(th->comm, h->comm, SAMPLE_COMM_LEN);
		th->comm[SAMPLE_COMM_LEN] = '\0';
	} else if (!known) {
		thread_comm(pr, h->tid, th->comm);
	}
	rec.comm = th->comm;
	WRITE(p, profile_writer__thread(p->w, &rec));
	th->written = true;
	*fresh = true;
	return th;
}

const struct proctab_proc *procs__sample_process(struct procs *p, const struct sample_hdr *h)
{
	const struct proctab_proc *pr;
	bool unknown;

	if (proctab__before_exec(p->tab, h->pid)) {
		p->stats.before_exec++;
		return NULL;
	}
	pr = proctab__for_sample(p->tab, h->pid, h->flags & SAMPLE_F_NO_COMM ? "" : h->comm,
				 &unknown);
	if (!pr) {
		wrote(p, -ENOMEM);
		return NULL;
	}
	p->stats.unknown_pid += unknown;
	/* read by the progress line on another thread */
	__atomic_store_n(&p->stats.processes, proctab__emitted(p->tab), __ATOMIC_RELAXED);
	return pr;
}

/*
 * Rows for the sample's JIT code from what its runtime wrote, and the sample
 * unwound again with them: @return the unwind to write.
 */
static const struct procs_unwound *jit_unwind(struct procs *p, const struct proctab_proc *pr,
					      const struct sample_hdr *h, const uint8_t *ustack,
					      const struct procs_unwound *u)
{
	/* each round gives rows to the first JIT code the last walk could not pass */
	for (int round = 0; round < 8; round++) {
		if (!jit_recorder__sample(p->jit, pr, h->time_ns, u->jit_pcs, u->njit, u->jit_seen))
			break;
		procs__unwind(p, pr->as, h, ustack, &p->redo);
		jit_recorder__count_reunwound(p->jit);
		u = &p->redo;
		if (!u->njit)
			break;
	}
	return u;
}

/*
 * Keep @tid's chain (@raw, @n records, their ids in p->py_ids) for its next
 * sample; a frame is reused only where @reusable says it was named from
 * names the sampler checked (what the memo holds).
 */
static void py_last_keep(struct procs *p, uint32_t tid, const uint8_t *raw, size_t n,
			 const bool *reusable)
{
	struct py_last *last = NULL;
	uint64_t *v;

	if (!p->py_last || !p->py_memo)
		return;
	if (!hmap__find_u64(p->py_last, tid, &v)) {
		last = (struct py_last *)(uintptr_t)*v;
	} else {
		if (hmap__count(p->py_last) >= PY_LAST_MAX) {
			hmap__free_values(p->py_last, free);
			p->py_last = hmap__new(HMAP_U64);
		}
		last = malloc(sizeof(*last));
		if (!last || !p->py_last || hmap__set_u64(p->py_last, tid, (uintptr_t)last)) {
			free(last);
			return;
		}
	}
	last->n = (uint32_t)n;
	memcpy(last->raw, raw, n * sizeof(struct sample_py_frame));
	memcpy(last->ids, p->py_ids, n * sizeof(uint32_t));
	memcpy(last->reusable, reusable, n * sizeof(bool));
}

/*
 * A frame the sampler read, as named and interned before: the code object's
 * address and the names' hash it had (so never another object's name), the
 * instruction (so the line) and the entry flag.
 */
struct py_memo_key {
	uint32_t pid, flags, check, pad;
	uint64_t code, instr;
};
#define PY_MEMO_MAX	65536	/* frames remembered; past it the memo starts again */

/*
 * The Python frames after @h's user stack (@raw, unaligned) named and
 * interned into @s. A frame whose code object cannot be read is written as
 * "?" in its file "?": the chain keeps its shape. @return 0, or -errno of
 * the writer (kept as the table's error).
 */
static int python_frames(struct procs *p, const struct sample_hdr *h, const uint8_t *raw,
			 struct profile_sample *s)
{
	size_t n = h->py_depth < PY_MAX_FRAMES ? h->py_depth : PY_MAX_FRAMES, same = 0;
	bool reusable[PY_MAX_FRAMES];
	struct py_last *last = NULL;
	struct pycode_info info;
	uint64_t *v;
	int err = 0;

	if (!p->py_memo)
		p->py_memo = hmap__new(HMAP_BYTES);	/* none: every frame named the long way */
	if (!p->py_last)
		p->py_last = hmap__new(HMAP_U64);
	if (p->py_last && !hmap__find_u64(p->py_last, h->tid, &v))
		last = (struct py_last *)(uintptr_t)*v;
	/* the outer frames the thread's last sample had, as they were: their ids again */
	while (last && same < n && same < last->n &&
	       last->reusable[last->n - 1 - same] &&
	       !memcmp(raw + (n - 1 - same) * sizeof(struct sample_py_frame),
		       &last->raw[last->n - 1 - same], sizeof(struct sample_py_frame))) {
		p->py_ids[n - 1 - same] = last->ids[last->n - 1 - same];
		reusable[n - 1 - same] = true;
		python__count_named(p->py);
		same++;
	}
	/* the writer's lock once for the chain, not once a frame: most names come from the cache */
	if (p->wlock)
		pthread_mutex_lock(p->wlock);
	for (size_t i = 0; i < n; i++) {
		struct sample_py_frame f;
		struct profile_py_frame rec = { 0 };
		struct py_memo_key key;
		bool named;

		memcpy(&f, raw + i * sizeof(f), sizeof(f));
		if (f.flags & SAMPLE_PY_F_TRUNCATED)
			s->py_truncated = true;
		if (i >= n - same)
			continue;
		reusable[i] = false;
		if (err)
			continue;
		rec.flags = f.flags & SAMPLE_PY_F_ENTRY ? PROFILE_PY_F_ENTRY : 0;
		/* a frame seen before costs a lookup, not a name, a line and an interning */
		key = (struct py_memo_key){ .pid = h->pid, .flags = rec.flags, .check = f.reserved,
					    .code = f.code, .instr = f.instr };
		if (f.reserved && p->py_memo && !hmap__find(p->py_memo, &key, sizeof(key), &v)) {
			p->py_ids[i] = (uint32_t)*v;
			reusable[i] = true;
			python__count_named(p->py);
			continue;
		}
		named = !python__resolve(p->py, h->pid, &f, &info);
		rec.qualname = named ? info.qualname : "?";
		rec.file = named ? info.file : "?";
		rec.line = named ? info.line : 0;
		err = profile_writer__py_frame(p->w, &rec, &p->py_ids[i]);
		/* unchecked names are not kept: the object at the address may change */
		if (err || !named || !f.reserved || !p->py_memo)
			continue;
		reusable[i] = true;
		if (hmap__count(p->py_memo) >= PY_MEMO_MAX ||
		    hmap__set(p->py_memo, &key, sizeof(key), p->py_ids[i]))
			py_memo_clear(p);
	}
	if (p->wlock)
		pthread_mutex_unlock(p->wlock);
	if (wrote(p, err))
		return err;
	s->py_frames = n ? p->py_ids : NULL;
	s->py_depth = n;
	py_last_keep(p, h->tid, raw, n, reusable);
	return 0;
}

void procs__sample_write(struct procs *p, const struct proctab_proc *pr, const struct sample_hdr *h,
			 const uint64_t *kstack, const uint8_t *ustack,
			 const struct procs_unwound *u, struct procs_copy_use *use)
{
	struct profile_sample s = {
		.time_ns = h->time_ns, .pid = h->pid, .tid = h->tid, .cpu = h->cpu,
		.event = h->event, .ustack = u->cbf, .ustack_len = u->len,
		.flags = u->old_image ? PROFILE_SAMPLE_F_EXEC_OLD_IMAGE : 0,
	};
	uint64_t weight = h->weight ? h->weight : 1;

	/* no block the sampler sees is longer than its recording: a day bounds what one sample writes */
	if (weight > MAX_WEIGHT)
		weight = MAX_WEIGHT;
	size_t kn = h->kstack_depth < MAX_UNWIND ? h->kstack_depth : MAX_UNWIND;
	struct copy_size *prog = NULL;
	struct thread *th;
	bool fresh;

	if (u->use.unwound && !u->err && !p->jit_off)
		u = jit_unwind(p, pr, h, ustack, u);
	*use = u->use;
	if (p->copy_adaptive)
		prog = program_size(p, pr);
	th = thread_of(p, pr, prog, h, &fresh);
	p->stats.unnamed += !!(h->flags & SAMPLE_F_NO_COMM);
	if (wrote(p, u->err))
		return;
	if (u->use.unwound) {
		p->stats.user_stacks++;
		p->stats.complete += u->complete;
	}
	p->stats.exec_old_image += u->old_image;
	/* cut by the copy's end: its size, or the thread's top */
	if (th && use->ran_out && (use->copied >= th->copy.size ||
				   (th->copy.top && h->sp + use->copied >= th->copy.top)))
		p->stats.copy_ran_out++;
	if (th && p->copy_adaptive) {
		bool top = use->unwound &&
			   copy_size__observe_top(&th->copy, h->sp, use->copied, use->used,
						  use->ran_out, u->complete);

		if ((use->unwound && copy_size__observe(&th->copy, &p->copy_lim, use->copied,
							use->used, use->ran_out)) || top)
			use->new_size = th->copy.size;
		else if (fresh && th->copy.size != p->copy_start)
			use->new_size = th->copy.size;	/* what its program needs */
		use->new_top = th->copy.top;
		/* the program learns from every thread: its next ones start right */
		if (prog && use->unwound)
			copy_size__observe(prog, &p->copy_lim, use->copied, use->used,
					   use->ran_out);
	}
	if (kn && wrote(p, stack_enc__addrs(&p->kstack, kstack, kn, &p->cut,
					    kn == MAX_KSTACK_DEPTH, &s.kstack, &s.kstack_len)))
		return;
	if ((h->flags & SAMPLE_F_PYTHON) && !p->py_off && python_frames(p, h, ustack + h->ustack_len, &s))
		return;
	/* a weight is 32 bits: a longer one (over 4.29 s off the CPU) in several samples */
	do {
		s.weight = weight > UINT32_MAX ? UINT32_MAX : (uint32_t)weight;
		weight -= s.weight;
		if (WRITE(p, profile_writer__sample(p->w, &s)))
			return;
		p->stats.samples++;
	} while (weight);
}

void procs__sample(struct procs *p, const struct sample_hdr *h, const uint64_t *kstack,
		   const uint8_t *ustack, struct procs_copy_use *use)
{
	const struct proctab_proc *pr = procs__sample_process(p, h);

	memset(use, 0, sizeof(*use));
	if (!pr)
		return;
	procs__unwind(p, pr->as, h, ustack, &p->own);
	procs__sample_write(p, pr, h, kstack, ustack, &p->own, use);
}
