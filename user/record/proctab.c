/* SPDX-License-Identifier: BSD-2-Clause */
/* The process table of a recording: address spaces from /proc and task events, told to the file when needed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/hmap.h"
#include "util/mapfile.h"
#include "proctab.h"
#include "pyargv.h"
#include "common/vec.h"
#include "vdso.h"

struct proc {
	struct proctab_proc pub;
	bool emitted;		/* its process and mapping records are in the file */
	bool counted;		/* in emitted_count (an exec emits a process again) */
	bool exe_from_mmap;	/* exec'd: the next executable mapping names it */
	bool maps_pending;	/* /proc/PID/maps is read at its first sample */
	bool before_exec;	/* held: its samples are not recorded until it execs */
	struct perf_rec_mmap2 **pending;	/* mappings not opened yet: until its first sample */
	size_t npending, pending_cap;
	bool told_before;	/* told to an earlier file (window): its warnings were said */
	bool exited;		/* kept a while: samples of its last moments come after the exit */
	int ns_err;		/* its namespaces could not be read: said when it is told */
	uint64_t exit_time;
};

struct proctab {
	struct sfu_cache *cache;
	struct proctab_ops ops;
	void *ctx;
	struct hmap *procs;	/* pid -> struct proc * */
	uint64_t emitted;
	uint64_t last_sweep;	/* event time of the last sweep of exited processes */
	uint64_t own_pid_ns;	/* sfprof's PID namespace: a process in it has its pid as NSpid */
	struct vdso_set *vdso;	/* [vdso] images, read at the first process that maps one */
};

static uint64_t ns_inode(uint32_t pid, const char *ns);

static struct proc *get(const struct proctab *t, uint32_t pid)
{
	uint64_t *v;

	return hmap__find_u64(t->procs, pid, &v) ? NULL : (struct proc *)(uintptr_t)*v;
}

static void drop_pending(struct proc *pr)
{
	for (size_t i = 0; i < pr->npending; i++)
		free(pr->pending[i]);
	free(pr->pending);
	pr->pending = NULL;
	pr->npending = pr->pending_cap = 0;
}

static void proc_free(struct proc *pr)
{
	if (!pr)
		return;
	drop_pending(pr);
	sfu_addrspace__free(pr->pub.as);
	free(pr->pub.exe);
	free(pr->pub.cgroup);
	free(pr->pub.script);
	free(pr);
}

static void forget(struct proctab *t, struct proc *pr)
{
	hmap__delete_u64(t->procs, pr->pub.pid, NULL);
	proc_free(pr);
}

struct proctab *proctab__new(struct sfu_cache *cache, const struct proctab_ops *ops, void *ctx)
{
	struct proctab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cache = cache;
	t->ops = *ops;
	t->ctx = ctx;
	t->procs = hmap__new(HMAP_U64);
	t->own_pid_ns = ns_inode(getpid(), "pid");
	if (!t->procs) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void proc_free_value(void *pr)
{
	proc_free(pr);
}

void proctab__free(struct proctab *t)
{
	if (!t)
		return;
	hmap__free_values(t->procs, proc_free_value);
	vdso_set__free(t->vdso);
	free(t);
}

size_t proctab__count(const struct proctab *t)
{
	return hmap__count(t->procs);
}

uint64_t proctab__emitted(const struct proctab *t)
{
	return t->emitted;
}

void proctab__forget_emitted(struct proctab *t)
{
	size_t pos = 0;
	struct hmap_item it;

	while (!hmap__next(t->procs, &pos, &it)) {
		struct proc *pr = (struct proc *)(uintptr_t)it.val;

		if (pr->emitted)
			pr->told_before = true;
		pr->emitted = false;
	}
}

char *proctab_read_cgroup(uint32_t pid)
{
	char path[64], line[4200], *unified = NULL, *systemd = NULL, *other = NULL, *best;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	/* hierarchy-ID:controllers:path, one line per hierarchy */
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *p;

		if (!c2)
			continue;
		p = c2 + 1;
		p[strcspn(p, "\n")] = '\0';
		if (!strncmp(line, "0::", 3) && !unified)
			unified = strdup(p);
		else if (!strncmp(c1 + 1, "name=systemd:", 13) && !systemd)
			systemd = strdup(p);
		else if (strcmp(p, "/") && !other)
			other = strdup(p);
	}
	fclose(f);
	/* on a hybrid host the unified tree may be unused (everything at its root) */
	if (unified && strcmp(unified, "/"))
		best = unified, unified = NULL;
	else if (systemd && strcmp(systemd, "/"))
		best = systemd, systemd = NULL;
	else if (other)
		best = other, other = NULL;
	else
		best = strdup("/");
	free(unified);
	free(systemd);
	free(other);
	return best;
}

/* Read @p's cgroup now, while it lives; what was known stays when it cannot be read. */
static void read_cgroup(struct proctab_proc *p)
{
	char *cg = proctab_read_cgroup(p->pid);

	if (cg) {
		free(p->cgroup);
		p->cgroup = cg;
	}
}

/*
 * What @p's interpreter runs (its script or module), read now while it
 * lives, as its cgroup is: at first sight and at each exec. Only a process
 * whose executable is a CPython interpreter's, or not known, has its command
 * line read: the others, most of them, cost nothing more.
 */
static void read_script(struct proctab_proc *p)
{
	free(p->script);
	p->script = NULL;
	if (!p->exe || pyargv_is_interpreter(p->exe))
		p->script = pyargv_read(p->pid, p->exe);
}

static struct proc *proc_new(struct proctab *t, uint32_t pid)
{
	struct proc *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	pr->pub.pid = pid;
	pr->pub.as = sfu_addrspace__new(t->cache, NULL);
	if (!pr->pub.as || hmap__set_u64(t->procs, pid, (uintptr_t)pr)) {
		proc_free(pr);
		return NULL;
	}
	return pr;
}

/* The inode of a namespace link such as "pid:[4026531836]", 0 when unknown (errno says why). */
static uint64_t ns_inode(uint32_t pid, const char *ns)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/ns/%s", pid, ns);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0) {
		if (!n)
			errno = EINVAL;
		return 0;
	}
	link[n] = '\0';
	return strchr(link, '[') ? strtoull(strchr(link, '[') + 1, NULL, 10) : 0;
}

/*
 * The process's namespace @ns ("pid", "mnt") into @inode, where it can be
 * read; what was known stays otherwise. @return 0, or the errno of a link
 * that could not be read while the process lives (said with the process
 * when it is told).
 */
static int read_namespace(const struct proctab_proc *p, const char *ns, uint64_t *inode)
{
	uint64_t v = ns_inode(p->pid, ns);

	if (v)
		*inode = v;
	return v || errno == ENOENT || errno == ESRCH ? 0 : errno;	/* gone: nothing to say */
}

/* Its pid and mount namespaces: read_namespace() of both, the first error. */
static int read_namespaces(struct proctab_proc *p)
{
	int err = read_namespace(p, "pid", &p->pid_ns);
	int mnt_err = read_namespace(p, "mnt", &p->mnt_ns);

	return err ? err : mnt_err;
}

/* PPid and the innermost NSpid from /proc/PID/status. */
static void read_status(struct proctab_proc *p)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	p->ns_pid = p->pid;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "PPid:", 5)) {
			p->ppid = strtoul(line + 5, NULL, 10);
		} else if (!strncmp(line, "NSpid:", 6)) {
			char *s = line + 6, *end;

			for (unsigned long v; (v = strtoul(s, &end, 10)), end != s; s = end)
				p->ns_pid = v;
		}
	}
	fclose(f);
}

/*
 * A known process's pid in its own PID namespace: /proc/PID/status (which
 * the kernel makes at some cost, twice for every short-lived program: its
 * fork and its exec) is read only for a process outside sfprof's namespace.
 */
static void read_pid_in_ns(const struct proctab *t, struct proctab_proc *p)
{
	if (t->own_pid_ns && p->pid_ns == t->own_pid_ns)
		p->ns_pid = p->pid;
	else
		read_status(p);
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

bool proctab__read_comm(uint32_t pid, uint32_t tid, char *comm, size_t cap)
{
	char path[64];
	bool got;
	FILE *f;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	got = fgets(comm, (int)cap, f) != NULL;
	fclose(f);
	if (got)
		comm[strcspn(comm, "\n")] = '\0';
	return got;
}

int proctab__scan(struct proctab *t, pid_t pid)
{
	struct proc *pr = get(t, pid);

	if (pr)
		return 0;
	pr = proc_new(t, pid);
	if (!pr)
		return -ENOMEM;
	proctab__read_comm(pid, 0, pr->pub.comm, sizeof(pr->pub.comm));
	pr->pub.exe = read_exe(pid);
	read_status(&pr->pub);
	pr->ns_err = read_namespaces(&pr->pub);
	read_cgroup(&pr->pub);
	read_script(&pr->pub);
	if (!pr->pub.comm[0] && kill(pid, 0) && errno == ESRCH) {
		forget(t, pr);
		return -ESRCH;
	}
	/* most processes are never sampled: their files are opened when one is */
	pr->maps_pending = true;
	return 0;
}

int proctab__scan_all(struct proctab *t)
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
		if (!proctab__scan(t, pid))
			n++;
	}
	closedir(d);
	return n;
}

/* Open the file of a new mapping: through the process if it is alive, checked by build ID. */
static struct sfu_module *open_mapped(struct proctab *t, const struct perf_rec_mmap2 *e,
				      const char *name)
{
	const struct sfu_build_id *want = NULL;
	struct sfu_build_id bid;
	struct sfu_module *m;

	if ((e->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && e->build_id_size &&
	    e->build_id_size <= sizeof(e->build_id)) {
		bid.len = e->build_id_size;
		memcpy(bid.bytes, e->build_id, bid.len);
		want = &bid;
		/*
		 * a build the cache holds (prepared when this mmap was read):
		 * found even when the process has exited and its file is gone
		 */
		if ((m = sfu_cache__find(t->cache, want)))
			return m;
	}
	/*
	 * the mapped file itself, even if deleted or in another mount
	 * namespace; once the process is gone, the same path here if it holds
	 * the same build
	 */
	return mapfile__module(t->cache, e->pid, e->addr, e->addr + e->len, name, want);
}

/* The module of a [vdso] mapping (vdso_set__module()), or NULL. */
static struct sfu_module *vdso_module(struct proctab *t, uint32_t pid, uint64_t start, uint64_t end)
{
	if (!t->vdso && !(t->vdso = vdso_set__new(t->cache)))
		return NULL;
	return vdso_set__module(t->vdso, pid, start, end);
}

/* Give the [vdso] mappings /proc/PID/maps gave (without a module: no file) their image. */
static void attach_vdso(struct proctab *t, struct proc *pr)
{
	const struct sfu_mapping *maps;
	size_t n;

	maps = sfu_addrspace__mappings(pr->pub.as, &n);
	for (size_t i = 0; i < n; i++) {
		struct sfu_mapping mp = maps[i];
		struct sfu_module *m;

		if (mp.module || !mp.path || strcmp(mp.path, "[vdso]"))
			continue;
		m = vdso_module(t, pr->pub.pid, mp.start, mp.end);
		if (!m)
			continue;
		/* replaces the mapping (its fields were copied): the array may move */
		sfu_addrspace__add(pr->pub.as, mp.start, mp.end, mp.file_offset, mp.prot, "[vdso]", m);
		sfu_module__put(m);
		maps = sfu_addrspace__mappings(pr->pub.as, &n);
	}
}

/* Add a mapping to the address space, its file opened and checked now; told if the process was. */
static void apply_mmap2(struct proctab *t, struct proc *pr, const struct perf_rec_mmap2 *e)
{
	const char *name = e->filename;
	struct sfu_module *m = NULL;
	uint32_t prot;

	if (name[0] == '/')
		m = open_mapped(t, e, name);
	else if (!strcmp(name, "[vdso]"))
		m = vdso_module(t, e->pid, e->addr, e->addr + e->len);
	prot = (e->prot & PROT_READ ? PROT_READ : 0) | PROT_EXEC |
	       (e->prot & PROT_WRITE ? PROT_WRITE : 0);
	if (sfu_addrspace__add(pr->pub.as, e->addr, e->addr + e->len, e->pgoff, prot,
			       name[0] ? name : NULL, m) == 0 && pr->emitted && t->ops.mapping) {
		const struct sfu_mapping *mp = sfu_addrspace__find(pr->pub.as, e->addr);

		if (mp)
			t->ops.mapping(t->ctx, pr->pub.pid, mp);
	}
	sfu_module__put(m);
}

/*
 * Say once per image that mapped files could not be opened, and why (as the
 * process's root gives them: /proc/PID/root needs the right to trace it).
 */
static void warn_unopened(struct proctab *t, struct proc *pr)
{
	const struct sfu_mapping *maps, *first = NULL;
	size_t n, files = 0, unopened = 0;
	char path[4200], why[600];
	int fd;

	maps = sfu_addrspace__mappings(pr->pub.as, &n);
	for (size_t i = 0; i < n; i++) {
		if (!maps[i].path || maps[i].path[0] != '/')
			continue;
		files++;
		if (!maps[i].module && !unopened++)
			first = &maps[i];
	}
	if (!unopened || !t->ops.warn)
		return;
	snprintf(path, sizeof(path), "/proc/%u/root%s", pr->pub.pid, first->path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);	/* opened, but no ELF file we can use: not a matter of rights */
		return;
	}
	if (errno == ENOENT || errno == ESRCH)
		return;		/* gone, or a deleted file: nothing the user can change */
	snprintf(why, sizeof(why), "%zu of its %zu mapped files cannot be opened (%.300s: %s): "
		 "their frames are walked by frame pointers alone", unopened, files, path,
		 strerror(errno));
	t->ops.warn(t->ctx, pr->pub.pid, pr->pub.comm, why);
}

/*
 * Whether /proc/PID/exe names @exe (" (deleted)" set on a file removed since
 * is the same file): 1 it does, 0 it names another, -1 it cannot be read
 * (the process is gone, or hidden from us).
 */
static int exe_is(uint32_t pid, const char *exe)
{
	static const char deleted[] = " (deleted)";
	const size_t dl = sizeof(deleted) - 1;
	char *now = read_exe(pid);
	size_t n, e = strlen(exe);
	int same;

	if (!now)
		return -1;
	n = strlen(now);
	if (n >= dl && !strcmp(now + n - dl, deleted))
		n -= dl;
	if (e >= dl && !strcmp(exe + e - dl, deleted))
		e -= dl;
	same = n == e && !memcmp(now, exe, n);
	free(now);
	return same;
}

/*
 * Read an image's mappings from /proc, at its first sample. The process may
 * have exec'd since the image was learned (a sample taken inside execve,
 * handled after it): /proc then shows the next image, whose mappings would
 * put wrong names on this one's frames. Kept only when its executable is the
 * image's before and after the read; said once otherwise, with the reason.
 */
static void load_maps(struct proctab *t, struct proc *pr)
{
	const char *exe = pr->pub.exe;
	struct sfu_diag diag = { 0, "" };
	char why[400];
	int err;

	pr->maps_pending = false;
	if (exe && exe_is(pr->pub.pid, exe) == 0) {
		err = -ESTALE;
	} else {
		err = sfu_addrspace__load_pid(pr->pub.as, pr->pub.pid, &diag);
		if (!err && exe && exe_is(pr->pub.pid, exe) == 0)
			err = -ESTALE;
	}
	if (err == -ESTALE) {
		struct sfu_addrspace *empty = sfu_addrspace__new(t->cache, NULL);

		if (empty) {
			sfu_addrspace__free(pr->pub.as);
			pr->pub.as = empty;
		}
		snprintf(why, sizeof(why), "it ran another program before its first sample was "
			 "handled, and the mappings of %.200s went with it: its user stacks before "
			 "that are walked by frame pointers alone", exe);
	} else if (err && diag.err != -ESRCH) {
		snprintf(why, sizeof(why), "%s: its user stacks are walked by frame pointers alone",
			 diag.reason[0] ? diag.reason : strerror(-diag.err));
	} else {
		return;
	}
	/* said once: the image is told once */
	if (t->ops.warn)
		t->ops.warn(t->ctx, pr->pub.pid, pr->pub.comm, why);
}

int proctab__scan_held(struct proctab *t, pid_t pid)
{
	int err = proctab__scan(t, pid);
	struct proc *pr = get(t, pid);

	if (!err && pr)
		pr->before_exec = true;
	return err;
}

bool proctab__before_exec(const struct proctab *t, uint32_t pid)
{
	const struct proc *pr = get(t, pid);

	return pr && pr->before_exec;
}

/* Tell the file of a process image: its mappings first made current. */
static void emit_process(struct proctab *t, struct proc *pr)
{
	const struct sfu_mapping *maps;
	size_t n;

	if (pr->maps_pending)
		load_maps(t, pr);
	if (pr->ns_err && t->ops.warn) {
		char why[200];

		snprintf(why, sizeof(why), "/proc/%u/ns: %s: recorded without its %s namespaces",
			 pr->pub.pid, strerror(pr->ns_err), pr->pub.pid_ns ? "mount" : "pid and mount");
		t->ops.warn(t->ctx, pr->pub.pid, pr->pub.comm, why);
		pr->ns_err = 0;
	}
	pr->maps_pending = false;
	for (size_t i = 0; i < pr->npending; i++)
		apply_mmap2(t, pr, pr->pending[i]);
	drop_pending(pr);
	attach_vdso(t, pr);
	if (!pr->told_before)
		warn_unopened(t, pr);
	if (t->ops.process)
		t->ops.process(t->ctx, &pr->pub);
	maps = sfu_addrspace__mappings(pr->pub.as, &n);
	for (size_t i = 0; i < n && t->ops.mapping; i++)
		t->ops.mapping(t->ctx, pr->pub.pid, &maps[i]);
	pr->emitted = true;
	if (!pr->counted)
		t->emitted++;
	pr->counted = true;
}

const struct proctab_proc *proctab__for_sample(struct proctab *t, uint32_t pid,
					       const char *comm, bool *unknown)
{
	struct proc *pr = get(t, pid);

	*unknown = false;
	if (!pr) {
		/* started before the events reached us, or missed: ask /proc while it lives */
		if (proctab__scan(t, pid) == 0)
			pr = get(t, pid);
		if (!pr) {
			*unknown = true;
			pr = proc_new(t, pid);
			if (!pr)
				return NULL;
			snprintf(pr->pub.comm, sizeof(pr->pub.comm), "%.*s",
				 (int)sizeof(pr->pub.comm) - 1, comm);
		}
	}
	if (!pr->emitted)
		emit_process(t, pr);
	return &pr->pub;
}

static void on_mmap2(struct proctab *t, const struct perf_rec_mmap2 *e, size_t size)
{
	const char *name = e->filename;
	struct perf_rec_mmap2 *copy;
	struct proc *pr;

	if (size <= offsetof(struct perf_rec_mmap2, filename) ||
	    !memchr(name, '\0', size - offsetof(struct perf_rec_mmap2, filename)))
		return;
	if (!(e->prot & PROT_EXEC))
		return;
	pr = get(t, e->pid);
	if (!pr && !(pr = proc_new(t, e->pid)))
		return;
	if (pr->exe_from_mmap && name[0] == '/') {
		pr->exe_from_mmap = false;
		/* sampled between exec and this mapping under another name: told again, named right */
		if (!pr->pub.exe || strcmp(pr->pub.exe, name)) {
			free(pr->pub.exe);
			pr->pub.exe = strdup(name);
			pr->emitted = false;
			/* the script read at the exec was another image's if this is no interpreter */
			if (pr->pub.script && !pyargv_is_interpreter(pr->pub.exe)) {
				free(pr->pub.script);
				pr->pub.script = NULL;
			}
		}
	}
	if (pr->emitted) {
		apply_mmap2(t, pr, e);
		return;
	}
	/* most processes are never sampled: open their files only when one is */
	if (VEC_RESERVE(pr->pending, pr->pending_cap, pr->npending + 1, 8))
		return;
	copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, e, size);
	pr->pending[pr->npending++] = copy;
}

/* A new process with the pid of one that exited: the old one is gone for good. */
static void forget_exited(struct proctab *t, uint32_t pid)
{
	struct proc *pr = get(t, pid);

	if (pr && pr->exited)
		forget(t, pr);
}

static void on_comm(struct proctab *t, const struct perf_rec_comm *e, size_t size, uint64_t time)
{
	struct proc *pr = get(t, e->pid);

	if (size <= offsetof(struct perf_rec_comm, comm) ||
	    !memchr(e->comm, '\0', size - offsetof(struct perf_rec_comm, comm)))
		return;
	if (e->header.misc & PERF_RECORD_MISC_COMM_EXEC) {
		if (pr)
			pr->before_exec = false;
		/* a new image: new mappings follow, a new process record at its next sample */
		if (pr && pr->exited) {
			forget_exited(t, e->pid);
			pr = NULL;
		}
		if (!pr && !(pr = proc_new(t, e->pid)))
			return;
		if (t->ops.thread_gone)
			t->ops.thread_gone(t->ctx, e->tid);	/* told again, with the new name */
		sfu_addrspace__free(pr->pub.as);
		pr->pub.as = sfu_addrspace__new(t->cache, NULL);
		drop_pending(pr);
		/*
		 * A sample can come before the new image's mappings do (the
		 * kernel tells the exec first): its /proc maps are read then,
		 * while it lives, and the mappings that follow replace them.
		 */
		pr->maps_pending = true;
		pr->emitted = false;
		pr->told_before = false;	/* a new image: what is said of it is new */
		pr->exe_from_mmap = true;
		/* until its first mapping says, the image the process runs now */
		free(pr->pub.exe);
		pr->pub.exe = read_exe(pr->pub.pid);
		/*
		 * an exec often follows an unshare of the mount namespace: that
		 * now, while it lives (its PID namespace is the one it was
		 * forked in: an unshare changes its children's), unless it was
		 * never known before
		 */
		if (pr->pub.pid_ns) {
			pr->ns_err = read_namespace(&pr->pub, "mnt", &pr->pub.mnt_ns);
		} else {
			pr->ns_err = read_namespaces(&pr->pub);
			read_pid_in_ns(t, &pr->pub);
		}
		read_cgroup(&pr->pub);
		read_script(&pr->pub);
	} else {
		if (t->ops.named)
			t->ops.named(t->ctx, e->tid, e->comm);
		if (pr && pr->emitted && t->ops.comm)
			t->ops.comm(t->ctx, time, e->pid, e->tid, e->comm);
	}
	if (pr && e->pid == e->tid)
		snprintf(pr->pub.comm, sizeof(pr->pub.comm), "%s", e->comm);
}

/* A child starts as a copy of its parent. */
static void on_fork(struct proctab *t, const struct perf_rec_task *e)
{
	struct proc *parent, *child;
	const struct sfu_mapping *maps;
	size_t n;

	if (e->pid == e->ppid)
		return;	/* a new thread */
	forget_exited(t, e->pid);
	if (get(t, e->pid))
		return;	/* known already (seen in /proc) */
	parent = get(t, e->ppid);
	if (!parent) {
		proctab__scan(t, e->pid);
		return;
	}
	child = proc_new(t, e->pid);
	if (!child)
		return;
	child->pub.ppid = e->ppid;
	memcpy(child->pub.comm, parent->pub.comm, sizeof(child->pub.comm));
	child->pub.exe = parent->pub.exe ? strdup(parent->pub.exe) : NULL;
	child->pub.pid_ns = parent->pub.pid_ns;
	child->pub.mnt_ns = parent->pub.mnt_ns;
	child->pub.ns_pid = child->pub.pid;
	/*
	 * A child starts in its parent's cgroup and mount namespace: read
	 * again at its exec, which is when they change (a container runtime's
	 * child joins its cgroup and namespaces, then execs; a clone into new
	 * ones execs too). Its PID namespace is read now, while it lives: it
	 * is the one the parent's children get (an unshare -p then a fork),
	 * and an exec does not change it.
	 */
	child->pub.cgroup = parent->pub.cgroup ? strdup(parent->pub.cgroup) : NULL;
	/* a fork runs the same script (a gunicorn worker is its master's) */
	child->pub.script = parent->pub.script ? strdup(parent->pub.script) : NULL;
	child->ns_err = read_namespace(&child->pub, "pid", &child->pub.pid_ns);
	read_pid_in_ns(t, &child->pub);
	if (parent->maps_pending || parent->npending) {
		/*
		 * The parent's files were never opened here (not sampled, or
		 * another thread's process): the child inherits what is known of
		 * them, its /proc maps read at its first sample if the parent's
		 * were to be, and the parent's mappings since then. A short-lived
		 * child is then known without /proc.
		 */
		child->maps_pending = parent->maps_pending;
		if (VEC_RESERVE(child->pending, child->pending_cap, parent->npending, 8)) {
			child->maps_pending = true;
			return;
		}
		for (size_t i = 0; i < parent->npending; i++) {
			size_t size = parent->pending[i]->header.size;
			struct perf_rec_mmap2 *copy = malloc(size);

			if (!copy) {
				child->maps_pending = true;
				break;
			}
			memcpy(copy, parent->pending[i], size);
			child->pending[child->npending++] = copy;
		}
		return;
	}
	maps = sfu_addrspace__mappings(parent->pub.as, &n);
	for (size_t i = 0; i < n; i++)
		sfu_addrspace__add(child->pub.as, maps[i].start, maps[i].end, maps[i].file_offset,
				   maps[i].prot, maps[i].path, maps[i].module);
}

static void on_exit_event(struct proctab *t, const struct perf_rec_task *e, uint64_t time)
{
	struct proc *pr = get(t, e->pid);

	if (t->ops.thread_gone)
		t->ops.thread_gone(t->ctx, e->tid);
	if (!pr || e->pid != e->tid || pr->exited)
		return;
	if (pr->emitted && t->ops.exit)
		t->ops.exit(t->ctx, time, e->pid);
	/* the exit event comes before the address space is torn down: samples follow */
	pr->exited = true;
	pr->exit_time = time;
}

/* Forget processes that exited more than PROCTAB_EXIT_GRACE_NS ago; at most once a second. */
static void sweep_exited(struct proctab *t, uint64_t time)
{
	struct proc **gone = NULL;
	size_t ngone = 0, cap = 0, pos = 0;
	struct hmap_item it;

	if (time - t->last_sweep < 1000000000ull)
		return;
	t->last_sweep = time;
	/* collected first: the map must not change during the walk */
	while (!hmap__next(t->procs, &pos, &it)) {
		struct proc *pr = (struct proc *)(uintptr_t)it.val;

		if (pr->exited && time - pr->exit_time > PROCTAB_EXIT_GRACE_NS &&
		    !VEC_RESERVE(gone, cap, ngone + 1, 64))
			gone[ngone++] = pr;
	}
	for (size_t i = 0; i < ngone; i++)
		forget(t, gone[i]);
	free(gone);
}

void proctab__task_event(struct proctab *t, const struct perf_event_header *e, uint64_t time)
{
	sweep_exited(t, time);
	switch (e->type) {
	case PERF_RECORD_MMAP2:
		on_mmap2(t, (const struct perf_rec_mmap2 *)e, e->size);
		break;
	case PERF_RECORD_COMM:
		on_comm(t, (const struct perf_rec_comm *)e, e->size, time);
		break;
	case PERF_RECORD_FORK:
		if (e->size >= sizeof(struct perf_rec_task))
			on_fork(t, (const struct perf_rec_task *)e);
		break;
	case PERF_RECORD_EXIT:
		if (e->size >= sizeof(struct perf_rec_task))
			on_exit_event(t, (const struct perf_rec_task *)e, time);
		break;
	}
}
