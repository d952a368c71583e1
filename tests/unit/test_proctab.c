/* SPDX-License-Identifier: BSD-2-Clause */
/* The process table driven by synthetic perf records: fork, exec, exit and mmap orderings, the exec race. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/proctab.h"

/* Pids no process has (pid_max is at most 2^22): the table can learn nothing of them from /proc. */
#define P1 4500001
#define P2 4500002
#define T1 4500011

/* What the table told, in order. */
struct told {
	char log[64][160];
	size_t n;
	size_t gone[16];	/* tids of thread_gone, in order */
	size_t ngone;
	size_t warns;
};

static void say(struct told *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct told *t, const char *fmt, ...)
{
	va_list ap;

	assert_true(t->n < 64);
	va_start(ap, fmt);
	vsnprintf(t->log[t->n++], sizeof(t->log[0]), fmt, ap);
	va_end(ap);
}

static void on_process(void *ctx, const struct proctab_proc *p)
{
	say(ctx, "process %u comm %s exe %s", p->pid, p->comm, p->exe ? p->exe : "-");
}

static void on_mapping(void *ctx, uint32_t pid, const struct sfu_mapping *m)
{
	say(ctx, "mapping %u %llx-%llx %s", pid, (unsigned long long)m->start,
	    (unsigned long long)m->end, m->path ? m->path : "-");
}

static void on_comm(void *ctx, uint64_t time, uint32_t pid, uint32_t tid, const char *comm)
{
	say(ctx, "comm %llu %u/%u %s", (unsigned long long)time, pid, tid, comm);
}

static void on_exit_ev(void *ctx, uint64_t time, uint32_t pid)
{
	say(ctx, "exit %llu %u", (unsigned long long)time, pid);
}

static void on_gone(void *ctx, uint32_t tid)
{
	struct told *t = ctx;

	assert_true(t->ngone < 16);
	t->gone[t->ngone++] = tid;
}

static void on_warn(void *ctx, uint32_t pid, const char *comm, const char *why)
{
	(void)pid;
	(void)comm;
	(void)why;
	((struct told *)ctx)->warns++;
}

static const struct proctab_ops ops = {
	.process = on_process, .mapping = on_mapping, .comm = on_comm, .exit = on_exit_ev,
	.thread_gone = on_gone, .warn = on_warn,
};

struct fixture {
	struct sfu_cache *cache;
	struct proctab *tab;
	struct told told;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->cache = sfu_cache__new();
	assert_non_null(f->cache);
	f->tab = proctab__new(f->cache, &ops, &f->told);
	assert_non_null(f->tab);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	proctab__free(f->tab);
	sfu_cache__free(f->cache);
	free(f);
	return 0;
}

/* The records, with the sample_id (tid, time) perf appends to each. */
static void mmap2(struct proctab *t, uint32_t pid, uint64_t addr, uint64_t len, uint32_t prot,
		  const char *name, uint64_t time)
{
	uint8_t buf[512] = { 0 };
	struct perf_rec_mmap2 *e = (struct perf_rec_mmap2 *)buf;
	size_t nlen = (strlen(name) + 8) & ~(size_t)7;

	e->header.type = PERF_RECORD_MMAP2;
	e->header.size = offsetof(struct perf_rec_mmap2, filename) + nlen + 16;
	e->pid = e->tid = pid;
	e->addr = addr;
	e->len = len;
	e->prot = prot;
	strcpy(e->filename, name);
	proctab__task_event(t, &e->header, time);
}

static void comm(struct proctab *t, uint32_t pid, uint32_t tid, const char *name, bool exec,
		 uint64_t time)
{
	uint8_t buf[128] = { 0 };
	struct perf_rec_comm *e = (struct perf_rec_comm *)buf;

	e->header.type = PERF_RECORD_COMM;
	e->header.misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0;
	e->header.size = offsetof(struct perf_rec_comm, comm) + 16 + 16;
	e->pid = pid;
	e->tid = tid;
	snprintf(e->comm, 16, "%s", name);
	proctab__task_event(t, &e->header, time);
}

static void task(struct proctab *t, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid,
		 uint64_t time)
{
	struct perf_rec_task e = { { type, 0, sizeof(e) }, pid, ppid, tid, ppid, time };

	proctab__task_event(t, &e.header, time);
}

static const struct proctab_proc *sample(struct fixture *f, uint32_t pid, const char *name)
{
	bool unknown;
	const struct proctab_proc *p = proctab__for_sample(f->tab, pid, name, &unknown);

	assert_non_null(p);
	return p;
}

#define assert_told(f, i, s) assert_string_equal((f)->told.log[i], s)

/* Mappings seen before a process's first sample are told with it, then new ones as they come. */
static void test_mmap_then_sample(void **state)
{
	struct fixture *f = *state;

	comm(f->tab, P1, P1, "app", true, 10);
	mmap2(f->tab, P1, 0x400000, 0x1000, PROT_READ | PROT_EXEC, "/nonexistent/app", 11);
	mmap2(f->tab, P1, 0x600000, 0x1000, PROT_READ | PROT_WRITE, "[heap]", 12);	/* not code */
	assert_int_equal(f->told.n, 0);
	sample(f, P1, "app");
	assert_int_equal(f->told.n, 2);
	assert_told(f, 0, "process 4500001 comm app exe /nonexistent/app");
	assert_told(f, 1, "mapping 4500001 400000-401000 /nonexistent/app");
	mmap2(f->tab, P1, 0x7f0000, 0x2000, PROT_READ | PROT_EXEC, "/nonexistent/lib.so", 13);
	assert_int_equal(f->told.n, 3);
	assert_told(f, 2, "mapping 4500001 7f0000-7f2000 /nonexistent/lib.so");
	/* a second sample tells nothing new */
	sample(f, P1, "app");
	assert_int_equal(f->told.n, 3);
	assert_int_equal(proctab__emitted(f->tab), 1);
}

/* Exec, then a sample before the new image's mappings: told again once they name it. */
static void test_exec_before_mappings(void **state)
{
	struct fixture *f = *state;

	comm(f->tab, P1, P1, "sh", true, 10);
	mmap2(f->tab, P1, 0x400000, 0x1000, PROT_READ | PROT_EXEC, "/bin/nonexistent-sh", 11);
	sample(f, P1, "sh");
	comm(f->tab, P1, P1, "app", true, 20);
	assert_int_equal(f->told.ngone, 2);	/* each exec: the thread is told again */
	assert_int_equal(f->told.gone[1], P1);
	sample(f, P1, "app");
	/* the new name, no mapping yet (the pid is not alive to read /proc from) */
	assert_told(f, f->told.n - 1, "process 4500001 comm app exe -");
	mmap2(f->tab, P1, 0x500000, 0x1000, PROT_READ | PROT_EXEC, "/nonexistent/app", 21);
	sample(f, P1, "app");
	assert_told(f, f->told.n - 2, "process 4500001 comm app exe /nonexistent/app");
	assert_told(f, f->told.n - 1, "mapping 4500001 500000-501000 /nonexistent/app");
	/* the old image's mapping is gone with it; the process is counted once */
	for (size_t i = 0; i < f->told.n; i++)
		if (strstr(f->told.log[i], "400000-401000"))
			assert_true(i < 2);
	assert_int_equal(proctab__emitted(f->tab), 1);
}

/* The exec race with a live process: a sample between exec and mappings reads them from /proc. */
static void test_exec_race_live(void **state)
{
	struct fixture *f = *state;
	uint32_t me = (uint32_t)getpid();
	size_t maps = 0;

	comm(f->tab, me, me, "test_proctab", true, 10);
	sample(f, me, "test_proctab");
	assert_true(strstr(f->told.log[0], "process ") == f->told.log[0]);
	for (size_t i = 1; i < f->told.n; i++)
		maps += strncmp(f->told.log[i], "mapping ", 8) == 0;
	/* this program's own code, at least, is mapped */
	assert_true(maps >= 1);
	assert_int_equal(f->told.warns, 0);
	/* the image's own mapping then comes: it names the same file, nothing is told again */
	assert_non_null(strstr(f->told.log[0], " exe /"));
	maps = f->told.n;
	mmap2(f->tab, me, 0x10000, 0x1000, PROT_READ | PROT_EXEC,
	      strstr(f->told.log[0], " exe /") + 5, 11);
	sample(f, me, "test_proctab");
	for (size_t i = 1; i < f->told.n; i++)
		assert_true(strncmp(f->told.log[i], "process ", 8) != 0);
	/* the new mapping itself is told, as the process was */
	assert_int_equal(f->told.n, maps + 1);
}

/* A child of this test held before it execs @prog; *@go lets it. */
static pid_t held_child(const char *prog, int *go)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char b;

		close(fds[1]);
		if (read(fds[0], &b, 1) == 1)
			execl(prog, prog, "30", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

/* Let the child exec and wait, 5 s at most, until /proc says it did; the child is stopped on failure. */
static void let_exec(pid_t pid, int go, const char *prog)
{
	char link[64], exe[PATH_MAX];

	assert_int_equal(write(go, "x", 1), 1);
	close(go);
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	for (int i = 0; i < 500; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', !strcmp(exe, prog)))
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("pid %d did not exec %s within 5 s", pid, prog);
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* How many mappings were told naming @path, and whether the process record names @exe. */
static size_t told_maps_of(const struct told *t, const char *path)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += !strncmp(t->log[i], "mapping ", 8) && strstr(t->log[i], path);
	return n;
}

/*
 * The exec race: a process learned before it exec'd, whose first sample (taken
 * inside the exec) is handled after it. /proc then holds the next program:
 * its mappings must not be told as the old image's. The image has none, and
 * says why once.
 */
static void test_exec_race_scanned(void **state)
{
	struct fixture *f = *state;
	char self[PATH_MAX], sleep_exe[PATH_MAX], want[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int go;
	pid_t pid;

	assert_true(n > 0);
	self[n] = '\0';
	assert_non_null(realpath("/bin/sleep", sleep_exe));
	pid = held_child(sleep_exe, &go);
	assert_int_equal(proctab__scan(f->tab, pid), 0);
	let_exec(pid, go, sleep_exe);
	sample(f, pid, "test_proctab");
	stop_child(pid);
	snprintf(want, sizeof(want), "process %d comm test_proctab exe %s", pid, self);
	assert_told(f, 0, want);
	assert_int_equal(told_maps_of(&f->told, sleep_exe), 0);
	assert_int_equal(f->told.warns, 1);
}

/* The command sfprof starts: held until its exec, then recorded as the program it runs. */
static void test_held_until_exec(void **state)
{
	struct fixture *f = *state;
	uint32_t me = (uint32_t)getpid();

	assert_int_equal(proctab__scan_held(f->tab, me), 0);
	assert_true(proctab__before_exec(f->tab, me));
	assert_false(proctab__before_exec(f->tab, P1));
	/* a rename is no exec */
	comm(f->tab, me, me, "renamed", false, 10);
	assert_true(proctab__before_exec(f->tab, me));
	comm(f->tab, me, me, "app", true, 11);
	assert_false(proctab__before_exec(f->tab, me));
	/* nothing was told of the image before */
	assert_int_equal(f->told.n, 0);
}

/* A child starts with its parent's mappings; a new thread is no process. */
static void test_fork(void **state)
{
	struct fixture *f = *state;

	comm(f->tab, P1, P1, "parent", true, 10);
	mmap2(f->tab, P1, 0x400000, 0x1000, PROT_READ | PROT_EXEC, "/nonexistent/parent", 11);
	sample(f, P1, "parent");
	task(f->tab, PERF_RECORD_FORK, P1, P1, T1, 12);	/* a thread */
	task(f->tab, PERF_RECORD_FORK, P2, P1, P2, 13);
	f->told.n = 0;
	sample(f, P2, "parent");
	assert_int_equal(f->told.n, 2);
	assert_told(f, 0, "process 4500002 comm parent exe /nonexistent/parent");
	assert_told(f, 1, "mapping 4500002 400000-401000 /nonexistent/parent");
	assert_int_equal(proctab__count(f->tab), 2);
}

/* Exit is told for a process told before; it is kept for its late samples, then forgotten. */
static void test_exit_and_grace(void **state)
{
	struct fixture *f = *state;
	const uint64_t s = 1000000000ull;

	comm(f->tab, P1, P1, "app", true, 1 * s);
	sample(f, P1, "app");
	comm(f->tab, P2, P2, "quiet", true, 1 * s);
	task(f->tab, PERF_RECORD_EXIT, P1, P1, P1, 2 * s);
	task(f->tab, PERF_RECORD_EXIT, P2, P2, P2, 2 * s);
	/* only the process the file knows has its exit written */
	assert_told(f, f->told.n - 1, "exit 2000000000 4500001");
	assert_int_equal(f->told.gone[f->told.ngone - 1], P2);
	/* a late sample finds it, with nothing told again */
	f->told.n = 0;
	sample(f, P1, "app");
	assert_int_equal(f->told.n, 0);
	assert_int_equal(proctab__count(f->tab), 2);
	/* any event past the grace time forgets both */
	comm(f->tab, P2 + 1, P2 + 1, "other", false, 2 * s + PROCTAB_EXIT_GRACE_NS + s);
	assert_int_equal(proctab__count(f->tab), 0);
}

/* A pid used again after an exit is a new process, not the old one's image. */
static void test_pid_reuse(void **state)
{
	struct fixture *f = *state;

	comm(f->tab, P1, P1, "first", true, 10);
	mmap2(f->tab, P1, 0x400000, 0x1000, PROT_READ | PROT_EXEC, "/nonexistent/first", 11);
	sample(f, P1, "first");
	task(f->tab, PERF_RECORD_EXIT, P1, P1, P1, 12);
	task(f->tab, PERF_RECORD_FORK, P2, 1, P2, 13);	/* an unknown parent */
	comm(f->tab, P1, P1, "second", true, 14);
	f->told.n = 0;
	sample(f, P1, "second");
	assert_int_equal(f->told.n, 1);
	assert_told(f, 0, "process 4500001 comm second exe -");
}

/* Records too short, or with names that do not end, change nothing. */
static void test_malformed(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[256];
	struct perf_rec_mmap2 *m = (struct perf_rec_mmap2 *)buf;
	struct perf_rec_comm *c = (struct perf_rec_comm *)buf;
	struct perf_rec_task *t = (struct perf_rec_task *)buf;

	memset(buf, 'x', sizeof(buf));
	m->header = (struct perf_event_header){ PERF_RECORD_MMAP2, 0, sizeof(buf) };
	m->pid = P1;
	m->prot = PROT_EXEC;
	proctab__task_event(f->tab, &m->header, 1);	/* no NUL in the name */
	m->header.size = offsetof(struct perf_rec_mmap2, filename);
	proctab__task_event(f->tab, &m->header, 1);
	memset(buf, 'x', sizeof(buf));
	c->header = (struct perf_event_header){ PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC,
						sizeof(buf) };
	c->pid = c->tid = P2;
	proctab__task_event(f->tab, &c->header, 1);
	t->header = (struct perf_event_header){ PERF_RECORD_EXIT, 0, sizeof(*t) - 1 };
	proctab__task_event(f->tab, &t->header, 1);
	assert_int_equal(proctab__count(f->tab), 0);
	assert_int_equal(f->told.n, 0);
	assert_int_equal(f->told.ngone, 0);
}

/* A sample of a pid never seen: a process of its comm, said to be unknown. */
static void test_unknown(void **state)
{
	struct fixture *f = *state;
	bool unknown = false;
	const struct proctab_proc *p = proctab__for_sample(f->tab, P1, "ghost-with-a-long-name",
							   &unknown);

	assert_non_null(p);
	assert_true(unknown);
	assert_string_equal(p->comm, "ghost-with-a-lo");
	assert_told(f, 0, "process 4500001 comm ghost-with-a-lo exe -");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mmap_then_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_before_mappings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_race_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_race_scanned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_until_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_and_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
