/* SPDX-License-Identifier: BSD-2-Clause */
/* Process table of a recording: address spaces from /proc and task events, samples unwound and written. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copy_size.h"
#include "procs.h"
#include "sfunwind/cbf.h"

#define MAX_UNWIND 1024	/* frames unwound; the CBF keeps max_depth of them */

/* The perf records we read (include/uapi/linux/perf_event.h describes them in comments only). */
struct rec_mmap2 {
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

struct rec_comm {
	struct perf_event_header header;
	uint32_t pid, tid;
	char comm[];
};

struct rec_task {	/* PERF_RECORD_FORK and PERF_RECORD_EXIT */
	struct perf_event_header header;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct proc {
	uint32_t pid, ppid;
	char comm[SAMPLE_COMM_LEN];
	char *exe;
	struct sfu_addrspace *as;
	uint64_t pid_ns, mnt_ns;
	uint32_t ns_pid;
	bool emitted;		/* its process and mapping records are in the file */
	bool counted;		/* in stats.processes (an exec emits a process again) */
	bool exe_from_mmap;	/* exec'd: the next executable mapping names it */
	bool maps_pending;	/* running at start: /proc/PID/maps is read at its first sample */
	struct rec_mmap2 **pending;	/* mappings not opened yet: until its first sample */
	size_t npending;
	bool exited;		/* kept a while: samples of its last moments come after the exit */
	uint64_t exit_time;
};

/* u32 -> pointer, open addressing; key 0 is never used (pid 0 is the idle task). */
struct u32map {
	struct u32ent {
		uint32_t key;
		void *val;
	} *ents;
	size_t cap, count;
};

struct procs {
	struct profile_writer *w;
	struct sfu_cache *cache;
	struct sfu_unwind_opts opts;
	unsigned max_depth;
	struct u32map procs;
	struct u32map tids;	/* threads already written: their struct copy_size */
	/*
	 * The copy size last learned for a program (a hash of its executable's
	 * path; a collision only shares a guess): its next processes start
	 * there, which matters for programs run again and again (a build).
	 */
	struct u32map learned;
	struct copy_limits copy_lim;
	uint32_t copy_start;	/* bytes copied for a thread not seen yet */
	bool copy_adaptive;	/* sizes follow what the unwinds use */
	int err;		/* the first error writing the file: recording must stop */
	procs_warn_fn warn;
	void *warn_ctx;
	struct procs_stats stats;
	uint64_t last_sweep;	/* event time of the last sweep of exited processes */
	struct sfu_frame frames[MAX_UNWIND];
	uint64_t addrs[MAX_UNWIND];
	uint8_t *ucbf, *kcbf;
	size_t cbf_cap;
};

static struct u32ent *map_slot(const struct u32map *m, uint32_t key)
{
	for (size_t j = (key * 0x9e3779b1u) & (m->cap - 1);; j = (j + 1) & (m->cap - 1))
		if (m->ents[j].key == key || !m->ents[j].key)
			return &m->ents[j];
}

static void *map_get(const struct u32map *m, uint32_t key)
{
	struct u32ent *e;

	if (!m->cap)
		return NULL;
	e = map_slot(m, key);
	return e->key ? e->val : NULL;
}

static int map_put(struct u32map *m, uint32_t key, void *val)
{
	struct u32ent *e;

	if ((m->count + 1) * 2 > m->cap) {
		struct u32map bigger = { calloc(m->cap ? m->cap * 2 : 1024, sizeof(struct u32ent)),
					 m->cap ? m->cap * 2 : 1024, m->count };

		if (!bigger.ents)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->ents[i].key)
				*map_slot(&bigger, m->ents[i].key) = m->ents[i];
		free(m->ents);
		*m = bigger;
	}
	e = map_slot(m, key);
	if (!e->key)
		m->count++;
	e->key = key;
	e->val = val;
	return 0;
}

/* Deletion with backward shift, so probes stay unbroken. */
static void map_del(struct u32map *m, uint32_t key)
{
	size_t i, j;

	if (!m->cap)
		return;
	i = map_slot(m, key) - m->ents;
	if (!m->ents[i].key)
		return;
	m->ents[i].key = 0;
	m->count--;
	for (j = (i + 1) & (m->cap - 1); m->ents[j].key; j = (j + 1) & (m->cap - 1)) {
		struct u32ent e = m->ents[j];

		m->ents[j].key = 0;
		*map_slot(m, e.key) = e;
	}
}

/* A thread is written again (exec) or gone (exit): its copy size goes with it. */
static void forget_thread(struct procs *p, uint32_t tid)
{
	free(map_get(&p->tids, tid));
	map_del(&p->tids, tid);
}

static void drop_pending(struct proc *pr)
{
	for (size_t i = 0; i < pr->npending; i++)
		free(pr->pending[i]);
	free(pr->pending);
	pr->pending = NULL;
	pr->npending = 0;
}

static void proc_free(struct proc *pr)
{
	if (!pr)
		return;
	drop_pending(pr);
	sfu_addrspace__free(pr->as);
	free(pr->exe);
	free(pr);
}

/* Tables derived from .eh_frame are kept on disk: the next recording reads them back. */
static void set_cache_dir(struct sfu_cache *cache)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[4096];

	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/sfprof", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.cache/sfprof", home);
	else
		return;
	sfu_cache__set_dir(cache, dir);
}

struct procs *procs__new(struct profile_writer *w, enum sfu_arch arch, unsigned max_depth)
{
	struct procs *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->w = w;
	p->max_depth = max_depth;
	p->copy_lim = (struct copy_limits){ MIN_USTACK_BYTES, MAX_USTACK_BYTES, STACK_CHUNK };
	p->copy_start = 16384;
	p->opts.arch = arch;
	p->cache = sfu_cache__new();
	p->opts.cache = sfu_unwind_cache__new();
	if (p->cache)
		set_cache_dir(p->cache);
	p->cbf_cap = SFU_CBF_BOUND(MAX_UNWIND);
	p->ucbf = malloc(p->cbf_cap);
	p->kcbf = malloc(p->cbf_cap);
	if (!p->cache || !p->opts.cache || !p->ucbf || !p->kcbf) {
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
	for (size_t i = 0; i < p->procs.cap; i++)
		if (p->procs.ents[i].key)
			proc_free(p->procs.ents[i].val);
	free(p->procs.ents);
	for (size_t i = 0; i < p->tids.cap; i++)
		if (p->tids.ents[i].key)
			free(p->tids.ents[i].val);
	free(p->tids.ents);
	free(p->learned.ents);
	sfu_cache__free(p->cache);
	sfu_unwind_cache__free(p->opts.cache);
	free(p->ucbf);
	free(p->kcbf);
	free(p);
}

void procs__set_warn(struct procs *p, procs_warn_fn fn, void *ctx)
{
	p->warn = fn;
	p->warn_ctx = ctx;
}

int procs__error(const struct procs *p)
{
	return p->err;
}

/* Keep the first error of a write to the file. @return @err. */
static int wrote(struct procs *p, int err)
{
	if (err && !p->err)
		p->err = err;
	return err;
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

static struct proc *proc_new(struct procs *p, uint32_t pid)
{
	struct proc *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	pr->pid = pid;
	pr->as = sfu_addrspace__new(p->cache, NULL);
	if (!pr->as || map_put(&p->procs, pid, pr)) {
		proc_free(pr);
		return NULL;
	}
	return pr;
}

/* The inode of a namespace link such as "pid:[4026531836]", 0 when unknown. */
static uint64_t ns_inode(uint32_t pid, const char *ns)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/ns/%s", pid, ns);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strchr(link, '[') ? strtoull(strchr(link, '[') + 1, NULL, 10) : 0;
}

/* The process's pid and mount namespaces, where they can be read; what was known stays otherwise. */
static void read_namespaces(struct proc *pr)
{
	uint64_t pid_ns = ns_inode(pr->pid, "pid"), mnt_ns = ns_inode(pr->pid, "mnt");

	if (pid_ns)
		pr->pid_ns = pid_ns;
	if (mnt_ns)
		pr->mnt_ns = mnt_ns;
}

/* PPid and the innermost NSpid from /proc/PID/status. */
static void read_status(struct proc *pr)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pr->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	pr->ns_pid = pr->pid;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "PPid:", 5)) {
			pr->ppid = strtoul(line + 5, NULL, 10);
		} else if (!strncmp(line, "NSpid:", 6)) {
			char *s = line + 6, *end;

			for (unsigned long v; (v = strtoul(s, &end, 10)), end != s; s = end)
				pr->ns_pid = v;
		}
	}
	fclose(f);
}

/* The executable a live process runs, or NULL. */
static char *read_exe(uint32_t pid)
{
	char path[64], exe[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	return strdup(exe);
}

int procs__scan(struct procs *p, pid_t pid)
{
	char path[64];
	struct proc *pr = map_get(&p->procs, pid);
	FILE *f;

	if (pr)
		return 0;
	pr = proc_new(p, pid);
	if (!pr)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(pr->comm, sizeof(pr->comm), f))
			pr->comm[strcspn(pr->comm, "\n")] = '\0';
		fclose(f);
	}
	pr->exe = read_exe(pid);
	read_status(pr);
	read_namespaces(pr);
	if (!pr->comm[0] && kill(pid, 0) && errno == ESRCH) {
		map_del(&p->procs, pid);
		proc_free(pr);
		return -ESRCH;
	}
	/* most processes are never sampled: their files are opened when one is */
	pr->maps_pending = true;
	return 0;
}

int procs__scan_all(struct procs *p)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || !pid)
			continue;
		if (!procs__scan(p, pid))
			n++;
	}
	closedir(d);
	return n;
}

/* Write one mapping (and its module, once) to the file. */
static void emit_mapping(struct procs *p, uint32_t pid, const struct sfu_mapping *m)
{
	struct profile_mapping rec = {
		.pid = pid, .start = m->start, .end = m->end, .file_offset = m->file_offset,
		.prot = m->prot,
	};

	if (m->module) {
		const struct sfu_build_id *bid = sfu_module__build_id(m->module);
		struct profile_module mod = {
			.file_size = sfu_module__file_size(m->module),
			.build_id = bid->bytes,
			.build_id_len = bid->len,
			.path = m->path ? m->path : sfu_module__path(m->module),
		};

		wrote(p, profile_writer__module(p->w, &mod, &rec.module_id));
	} else if (m->path) {
		/* a file we could not open: keep its name for the report */
		struct profile_module mod = { .path = m->path };

		wrote(p, profile_writer__module(p->w, &mod, &rec.module_id));
	}
	wrote(p, profile_writer__mapping(p->w, &rec));
}


/* Open the file of a new mapping: through the process if it is alive, checked by build ID. */
static struct sfu_module *open_mapped(struct procs *p, const struct rec_mmap2 *e,
				      const char *name)
{
	const struct sfu_build_id *want = NULL;
	struct sfu_build_id bid;
	struct sfu_module *m;
	char path[4200];

	if ((e->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && e->build_id_size &&
	    e->build_id_size <= sizeof(e->build_id)) {
		bid.len = e->build_id_size;
		memcpy(bid.bytes, e->build_id, bid.len);
		want = &bid;
	}
	/* the mapped file itself, even if deleted or in another mount namespace */
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", e->pid,
		 (unsigned long long)e->addr, (unsigned long long)(e->addr + e->len));
	m = sfu_cache__open(p->cache, path, want, NULL);
	if (m)
		return m;
	snprintf(path, sizeof(path), "/proc/%u/root%s", e->pid, name);
	m = sfu_cache__open(p->cache, path, want, NULL);
	if (m)
		return m;
	/* the process is gone: the same path here, if it holds the same build */
	return sfu_cache__open(p->cache, name, want, NULL);
}

/* Add a mapping to the address space: its file opened and checked now. */
static void apply_mmap2(struct procs *p, struct proc *pr, const struct rec_mmap2 *e)
{
	const char *name = e->filename;
	struct sfu_module *m = NULL;
	uint32_t prot;

	if (name[0] == '/')
		m = open_mapped(p, e, name);
	prot = (e->prot & PROT_READ ? PROT_READ : 0) | PROT_EXEC |
	       (e->prot & PROT_WRITE ? PROT_WRITE : 0);
	if (sfu_addrspace__add(pr->as, e->addr, e->addr + e->len, e->pgoff, prot,
			       name[0] ? name : NULL, m) == 0 && pr->emitted) {
		const struct sfu_mapping *mp = sfu_addrspace__find(pr->as, e->addr);

		if (mp)
			emit_mapping(p, pr->pid, mp);
	}
	sfu_module__put(m);
}

static void emit_process(struct procs *p, struct proc *pr)
{
	struct profile_process rec = {
		.pid = pr->pid, .ppid = pr->ppid, .comm = pr->comm, .exe = pr->exe,
		.pid_ns = pr->pid_ns, .mnt_ns = pr->mnt_ns, .ns_pid = pr->ns_pid,
	};
	const struct sfu_mapping *maps;
	size_t n;

	if (pr->maps_pending) {
		struct sfu_diag diag = { 0, "" };

		/* said once: the process is written once per image */
		if (sfu_addrspace__load_pid(pr->as, pr->pid, &diag) && diag.err != -ESRCH && p->warn)
			p->warn(p->warn_ctx, pr->pid, pr->comm, diag.reason[0] ? diag.reason :
				strerror(-diag.err));
	}
	pr->maps_pending = false;
	for (size_t i = 0; i < pr->npending; i++)
		apply_mmap2(p, pr, pr->pending[i]);
	drop_pending(pr);
	wrote(p, profile_writer__process(p->w, &rec));
	maps = sfu_addrspace__mappings(pr->as, &n);
	for (size_t i = 0; i < n; i++)
		emit_mapping(p, pr->pid, &maps[i]);
	pr->emitted = true;
	if (!pr->counted)
		p->stats.processes++;
	pr->counted = true;
}

static void on_mmap2(struct procs *p, const struct rec_mmap2 *e, size_t size)
{
	const char *name = e->filename;
	struct rec_mmap2 **q, *copy;
	struct proc *pr;

	if (size <= offsetof(struct rec_mmap2, filename) ||
	    !memchr(name, '\0', size - offsetof(struct rec_mmap2, filename)))
		return;
	if (!(e->prot & PROT_EXEC))
		return;
	pr = map_get(&p->procs, e->pid);
	if (!pr && !(pr = proc_new(p, e->pid)))
		return;
	if (pr->exe_from_mmap && name[0] == '/') {
		free(pr->exe);
		pr->exe = strdup(name);
		pr->exe_from_mmap = false;
		/* sampled between exec and this mapping: write the process again, named right */
		pr->emitted = false;
	}
	if (pr->emitted) {
		apply_mmap2(p, pr, e);
		return;
	}
	/* most processes are never sampled: open their files only when one is */
	q = realloc(pr->pending, (pr->npending + 1) * sizeof(*q));
	copy = malloc(size);
	if (!q || !copy) {
		free(copy);
		if (q)
			pr->pending = q;
		return;
	}
	memcpy(copy, e, size);
	pr->pending = q;
	pr->pending[pr->npending++] = copy;
}

/* A new process with the pid of one that exited: the old one is gone for good. */
static void forget_exited(struct procs *p, uint32_t pid)
{
	struct proc *pr = map_get(&p->procs, pid);

	if (pr && pr->exited) {
		map_del(&p->procs, pid);
		proc_free(pr);
	}
}

static void on_comm(struct procs *p, const struct rec_comm *e, size_t size, uint64_t time)
{
	struct proc *pr = map_get(&p->procs, e->pid);
	size_t max = size - offsetof(struct rec_comm, comm);

	if (size <= offsetof(struct rec_comm, comm) || !memchr(e->comm, '\0', max))
		return;
	if (e->header.misc & PERF_RECORD_MISC_COMM_EXEC) {
		/* a new image: new mappings follow, a new process record at its next sample */
		if (pr && pr->exited) {
			forget_exited(p, e->pid);
			pr = NULL;
		}
		if (!pr && !(pr = proc_new(p, e->pid)))
			return;
		forget_thread(p, e->tid);	/* its thread record again, with the new name */
		sfu_addrspace__free(pr->as);
		pr->as = sfu_addrspace__new(p->cache, NULL);
		drop_pending(pr);
		pr->maps_pending = false;
		pr->emitted = false;
		pr->exe_from_mmap = true;
		/* until its first mapping says, the image the process runs now */
		free(pr->exe);
		pr->exe = read_exe(pr->pid);
		/* an exec often follows an unshare: its namespaces now, while it lives */
		read_status(pr);
		read_namespaces(pr);
	} else if (pr && pr->emitted) {
		struct profile_comm rec = { time, e->pid, e->tid, e->comm };

		wrote(p, profile_writer__comm(p->w, &rec));
	}
	if (pr && e->pid == e->tid)
		snprintf(pr->comm, sizeof(pr->comm), "%s", e->comm);
}

/* A child starts as a copy of its parent. */
static void on_fork(struct procs *p, const struct rec_task *e)
{
	struct proc *parent, *child;
	const struct sfu_mapping *maps;
	size_t n;

	if (e->pid == e->ppid)
		return;	/* a new thread */
	forget_exited(p, e->pid);
	if (map_get(&p->procs, e->pid))
		return;	/* known already (seen in /proc) */
	parent = map_get(&p->procs, e->ppid);
	if (!parent) {
		procs__scan(p, e->pid);
		return;
	}
	child = proc_new(p, e->pid);
	if (!child)
		return;
	child->ppid = e->ppid;
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	child->exe = parent->exe ? strdup(parent->exe) : NULL;
	child->pid_ns = parent->pid_ns;
	child->mnt_ns = parent->mnt_ns;
	child->ns_pid = child->pid;
	/* its pid and namespaces (clone may have made new ones), while it lives */
	read_status(child);
	read_namespaces(child);
	if (parent->maps_pending || parent->npending) {
		/* the parent's files were never opened: the child's own maps, when sampled */
		child->maps_pending = true;
		return;
	}
	maps = sfu_addrspace__mappings(parent->as, &n);
	for (size_t i = 0; i < n; i++)
		sfu_addrspace__add(child->as, maps[i].start, maps[i].end, maps[i].file_offset,
				   maps[i].prot, maps[i].path, maps[i].module);
}

static void on_exit_event(struct procs *p, const struct rec_task *e, uint64_t time)
{
	struct proc *pr = map_get(&p->procs, e->pid);

	forget_thread(p, e->tid);
	if (!pr || e->pid != e->tid || pr->exited)
		return;
	if (pr->emitted) {
		struct profile_exit rec = { time, e->pid };

		wrote(p, profile_writer__exit(p->w, &rec));
	}
	/* the exit event comes before the address space is torn down: samples follow */
	pr->exited = true;
	pr->exit_time = time;
}

#define EXIT_GRACE_NS 2000000000ull

/* Forget processes that exited more than EXIT_GRACE_NS ago; at most once a second. */
static void sweep_exited(struct procs *p, uint64_t time)
{
	if (time - p->last_sweep < 1000000000ull)
		return;
	p->last_sweep = time;
	for (size_t i = 0; i < p->procs.cap; i++) {
		struct u32ent *e = &p->procs.ents[i];
		struct proc *pr = e->val;

		if (e->key && pr->exited && time - pr->exit_time > EXIT_GRACE_NS) {
			map_del(&p->procs, e->key);
			proc_free(pr);
			i--;	/* the backward shift may have moved an entry here */
		}
	}
}


void procs__task_event(struct procs *p, const struct perf_event_header *e, uint64_t time)
{
	sweep_exited(p, time);
	switch (e->type) {
	case PERF_RECORD_MMAP2:
		on_mmap2(p, (const struct rec_mmap2 *)e, e->size);
		break;
	case PERF_RECORD_COMM:
		on_comm(p, (const struct rec_comm *)e, e->size, time);
		break;
	case PERF_RECORD_FORK:
		if (e->size >= sizeof(struct rec_task))
			on_fork(p, (const struct rec_task *)e);
		break;
	case PERF_RECORD_EXIT:
		if (e->size >= sizeof(struct rec_task))
			on_exit_event(p, (const struct rec_task *)e, time);
		break;
	}
}

/* A stack with exact pcs past frame 0, which sfu_cbf_encode_stack() cannot say; cut at max_depth. */
static int encode_kinds(struct procs *p, struct sfu_cbf_enc *enc, size_t n, bool truncated)
{
	if (n > p->max_depth) {
		n = p->max_depth;
		truncated = true;
	}
	for (size_t i = 0; i < n; i++) {
		int err = sfu_cbf_enc__frame(enc, p->frames[i].kind == SFU_FRAME_PC ? SFU_CBF_PC :
					     SFU_CBF_RA, p->addrs[i]);

		if (err)
			return err;
	}
	return sfu_cbf_enc__end(enc, truncated);
}

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

/* CBF of a user stack; returns its length, 0 when there is none. */
static size_t user_stack(struct procs *p, struct proc *pr, const struct sample_hdr *h,
			 const uint8_t *ustack, struct procs_copy_use *use)
{
	struct sfu_regs regs = { .pc = h->pc, .sp = h->sp, .fp = h->fp, .lr = h->lr };
	struct watched_copy copy = { { h->sp, ustack, h->ustack_len }, h->sp, false };
	struct sfu_cbf_enc enc;
	size_t n = 0;
	int stop;

	if (!(h->flags & SAMPLE_F_USER_REGS) || !h->pc)
		return 0;
	bool exact_below = false;

	stop = sfu_unwind(pr->as, &p->opts, &regs, watched_read, &copy, p->frames, MAX_UNWIND,
			  &n);
	use->copied = h->ustack_len;
	use->used = copy.high - h->sp;
	/*
	 * The copy ran out: the unwind did not reach the outermost frame and
	 * asked for bytes just past the copy on its way (the stop itself may
	 * then be the frame-pointer fallback's, not the read's).
	 */
	use->ran_out = stop != SFU_STOP_OUTERMOST && copy.past_end;
	use->unwound = true;
	for (size_t i = 0; i < n; i++) {
		p->addrs[i] = p->frames[i].addr;
		exact_below |= i > 0 && p->frames[i].kind == SFU_FRAME_PC;
	}
	if (sfu_cbf_enc__init(&enc, 64, p->ucbf, p->cbf_cap))
		return 0;
	if (exact_below) {
		/* below a signal frame: the interrupted pc is exact, not a return address */
		if (encode_kinds(p, &enc, n, stop != SFU_STOP_OUTERMOST))
			return 0;
	} else if (sfu_cbf_encode_stack(&enc, p->addrs, n, p->max_depth, stop != SFU_STOP_OUTERMOST)) {
		return 0;
	}
	p->stats.user_stacks++;
	if (stop == SFU_STOP_OUTERMOST)
		p->stats.complete++;
	return sfu_cbf_enc__len(&enc);
}

static size_t kernel_stack(struct procs *p, const struct sample_hdr *h, const uint64_t *kstack)
{
	struct sfu_cbf_enc enc;
	size_t n = h->kstack_depth < MAX_UNWIND ? h->kstack_depth : MAX_UNWIND;

	if (!n)
		return 0;
	if (sfu_cbf_enc__init(&enc, 64, p->kcbf, p->cbf_cap) ||
	    sfu_cbf_encode_stack(&enc, kstack, n, p->max_depth, n == MAX_KSTACK_DEPTH))
		return 0;
	return sfu_cbf_enc__len(&enc);
}

/* The key of a program in procs.learned: never 0, the map's empty key. */
static uint32_t program_key(const struct proc *pr)
{
	const char *name = pr->exe ? pr->exe : pr->comm;
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h ? h : 1;
}

void procs__sample(struct procs *p, const struct sample_hdr *h, const uint64_t *kstack,
		   const uint8_t *ustack, struct procs_copy_use *use)
{
	struct profile_sample s = {
		.time_ns = h->time_ns, .pid = h->pid, .tid = h->tid, .cpu = h->cpu, .weight = 1,
	};
	struct proc *pr = map_get(&p->procs, h->pid);
	struct copy_size *cs;
	bool fresh = false;

	if (!pr) {
		/* started before the events reached us, or missed: ask /proc while it lives */
		if (procs__scan(p, h->pid) == 0)
			pr = map_get(&p->procs, h->pid);
		if (!pr) {
			p->stats.unknown_pid++;
			pr = proc_new(p, h->pid);
			if (!pr)
				return;
			memcpy(pr->comm, h->comm, sizeof(pr->comm));
			pr->comm[sizeof(pr->comm) - 1] = '\0';
		}
	}
	if (!pr->emitted)
		emit_process(p, pr);
	cs = map_get(&p->tids, h->tid);
	if (!cs) {
		char comm[SAMPLE_COMM_LEN + 1];
		struct profile_thread t = { h->pid, h->tid, comm };

		memcpy(comm, h->comm, SAMPLE_COMM_LEN);
		comm[SAMPLE_COMM_LEN] = '\0';
		wrote(p, profile_writer__thread(p->w, &t));
		cs = malloc(sizeof(*cs));
		if (cs) {
			uint32_t start = (uint32_t)(uintptr_t)map_get(&p->learned, program_key(pr));

			fresh = true;
			copy_size__init(cs, p->copy_adaptive && start ? start : p->copy_start);
			if (map_put(&p->tids, h->tid, cs)) {
				free(cs);
				cs = NULL;
			}
		}
	}
	s.ustack = p->ucbf;
	memset(use, 0, sizeof(*use));
	s.ustack_len = user_stack(p, pr, h, ustack, use);
	if (cs && use->ran_out && use->copied >= cs->size)
		p->stats.copy_ran_out++;
	if (cs && p->copy_adaptive) {
		if (use->unwound &&
		    copy_size__observe(cs, &p->copy_lim, use->copied, use->used, use->ran_out))
			use->new_size = cs->size;
		else if (fresh && cs->size != p->copy_start)
			use->new_size = cs->size;	/* what its program needed before */
		if (use->new_size)
			map_put(&p->learned, program_key(pr), (void *)(uintptr_t)use->new_size);
	}
	s.kstack = p->kcbf;
	s.kstack_len = kernel_stack(p, h, kstack);
	if (!wrote(p, profile_writer__sample(p->w, &s)))
		p->stats.samples++;
}
