/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython interpreters found in processes (user/record/python.c): builds, offsets and thread states against live interpreters. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/python.h"

#define DEBIAN "/usr/bin/python3.11"

/* The interpreters of this machine: Debian's and pyenv's 3.10-3.13, those present. */
struct interp {
	char exe[512];		/* the program */
	char lib[512];		/* the file holding _PyRuntime: libpython, or the program */
	unsigned minor;
};

static size_t interpreters(struct interp *out, size_t max)
{
	const char *home = getenv("HOME");
	size_t n = 0;

	if (!access(DEBIAN, X_OK) && n < max) {
		snprintf(out[n].exe, sizeof(out[n].exe), "%s", DEBIAN);
		snprintf(out[n].lib, sizeof(out[n].lib), "%s", DEBIAN);
		out[n++].minor = 11;
	}
	for (unsigned minor = 10; home && minor <= 13 && n < max; minor++) {
		char pattern[512];
		glob_t g;

		snprintf(pattern, sizeof(pattern), "%s/.pyenv/versions/3.%u.*", home, minor);
		if (glob(pattern, 0, NULL, &g))
			continue;
		snprintf(out[n].exe, sizeof(out[n].exe), "%s/bin/python3.%u", g.gl_pathv[0], minor);
		snprintf(out[n].lib, sizeof(out[n].lib), "%s/lib/libpython3.%u.so.1.0",
			 g.gl_pathv[0], minor);
		out[n].minor = minor;
		if (!access(out[n].exe, X_OK) && !access(out[n].lib, R_OK))
			n++;
		globfree(&g);
	}
	return n;
}

/* Each interpreter's build: its version from the file, its offsets the table's (3.13: its own, the same). */
static void test_builds(void **state)
{
	struct interp in[8];
	size_t n = interpreters(in, 8);
	struct python_build b;

	(void)state;
	if (!n)
		skip();
	for (size_t i = 0; i < n; i++) {
		struct py_proc want;
		uint32_t cca;

		assert_int_equal(python_build__read(in[i].lib, &b), 0);
		assert_int_equal(b.minor, in[i].minor);
		assert_int_equal(python_layout__table(in[i].minor, &want, &cca), 0);
		assert_int_equal(b.co_code_adaptive, cca);
		/* 3.13's own offsets say what the table says (the table was read off DWARF) */
		assert_int_equal(b.from_debug_offsets, in[i].minor >= 13);
		assert_memory_equal(&b.proc, &want, sizeof(want));
		assert_true(b.runtime_vaddr != 0);
		assert_true(b.nloads >= 2);
	}
	/* no interpreter: not one */
	assert_int_equal(python_build__read("/bin/sh", &b), -ENOENT);
	assert_int_equal(python_build__read("/nonexistent/libpython3.11.so", &b), -ENOENT);
}

/* 3.13's _Py_DebugOffsets: what is not its layout is refused, never used. */
static void test_debug_offsets(void **state)
{
	uint8_t buf[512] = { 0 };
	struct py_proc p, want;
	uint64_t v;
	uint32_t cca, want_cca;

	(void)state;
	/* a valid one made from the table, as 3.13.0 lays it out */
	assert_int_equal(python_layout__table(13, &want, &want_cca), 0);
	memcpy(buf, PYTHON_DEBUG_COOKIE, 8);
#define PUT(off, val) do { v = (val); memcpy(buf + (off), &v, 8); } while (0)
	PUT(8, 0x030d00f0);
	PUT(40, want.interp_head);
	PUT(64, want.interp_next);
	PUT(72, want.interp_threads);
	PUT(168, want.ts_next);
	PUT(184, want.ts_frame);
	PUT(200, want.ts_id);
	PUT(232, want.f_back);
	PUT(240, want.f_code);
	PUT(248, want.f_instr);
	PUT(264, want.f_owner);
	PUT(280, 112);
	PUT(288, 120);
	PUT(296, 128);
	PUT(344, want_cca);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), 0);
	assert_memory_equal(&p, &want, sizeof(p));
	assert_int_equal(cca, want_cca);

	/* short, another cookie, another version, a free-threaded build: not this layout */
	assert_int_equal(python_layout__debug_offsets(buf, 100, 13, &p, &cca), -ENOENT);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 12, &p, &cca), -ENOENT);
	buf[0] ^= 1;
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -ENOENT);
	buf[0] ^= 1;
	PUT(8, 0x030e00f0);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -ENOENT);
	PUT(8, 0x030d00f0);
	PUT(16, 1);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -ENOENT);
	PUT(16, 0);
	/* offsets the walk cannot use: past a frame's window, past 64 KiB, a wild bytecode start */
	PUT(248, PY_FRAME_WINDOW - 4);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -EBADMSG);
	PUT(248, want.f_instr);
	PUT(168, 1ull << 40);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -EBADMSG);
	PUT(168, want.ts_next);
	PUT(40, 1ull << 62);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -EBADMSG);
	PUT(40, want.interp_head);
	PUT(344, 0);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), -EBADMSG);
	PUT(344, want_cca);
	/* names not next to each other: the check hashes the file's pointer alone */
	PUT(288, 400);
	assert_int_equal(python_layout__debug_offsets(buf, sizeof(buf), 13, &p, &cca), 0);
	assert_int_equal(p.code_check_words, 1);
#undef PUT
}

/* Instruction offsets as each version keeps them, into bytes of the bytecode. */
static void test_instr_offset(void **state)
{
	struct sample_py_frame f = { .code = 0x10000 };

	(void)state;
	f.instr = 7;
	assert_int_equal(python__instr_offset(10, 0, &f), 14);	/* f_lasti counts code units */
	f.instr = 0xffffffff;
	assert_int_equal(python__instr_offset(10, 0, &f), 0);	/* -1: not started */
	f.instr = 0x10000 + 0xb8 + 40;
	assert_int_equal(python__instr_offset(11, 0xb8, &f), 40);
	f.instr = 0x10000 + 0xb8 - 2;				/* before the first: not started */
	assert_int_equal(python__instr_offset(11, 0xb8, &f), 0);
	f.instr = 0x10000;					/* inside the header: garbage */
	assert_true(python__instr_offset(12, 0xc0, &f) == UINT64_MAX);
	f.instr = 0x10000 + 0xc8 + (64u << 20);			/* past any bytecode */
	assert_true(python__instr_offset(13, 0xc8, &f) == UINT64_MAX);
	f.code = UINT64_MAX - 8;				/* wraps */
	f.instr = 4;
	assert_true(python__instr_offset(13, 0xc8, &f) == UINT64_MAX);
}

/* A child interpreter: two threads, the main one blocked in py_waiter() reading stdin. */
struct child {
	pid_t pid;
	int in, out;
	uint64_t ids[2];	/* the threads' ids as the thread state keeps them */
};

static const char child_script[] =
	"import sys, threading\n"
	"ev = threading.Event()\n"
	"def py_other():\n"
	"    ev.wait()\n"
	"t = threading.Thread(target=py_other)\n"
	"t.start()\n"
	"key = threading.get_native_id if sys.version_info >= (3, 11) else threading.get_ident\n"
	"other = [None]\n"
	"def py_record_other():\n"
	"    other[0] = key()\n"
	"t2 = threading.Thread(target=py_record_other); t2.start(); t2.join()\n"
	"def py_waiter():\n"
	"    print(key(), t.native_id if sys.version_info >= (3, 11) else t.ident, flush=True)\n"
	"    sys.stdin.read()\n"
	"py_waiter()\n"
	"ev.set()\n";

static int child_start(const char *exe, struct child *c)
{
	int in[2], out[2];
	char line[128];
	FILE *f;
	ssize_t n;

	if (pipe(in) || pipe(out))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(exe, exe, "-S", "-c", child_script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = out[0];
	f = fdopen(dup(c->out), "r");
	if (!f)
		return -errno;
	n = fgets(line, sizeof(line), f) ? 0 : -1;
	fclose(f);
	if (n || sscanf(line, "%lu %lu", (unsigned long *)&c->ids[0], (unsigned long *)&c->ids[1]) != 2)
		return -EIO;
	return 0;
}

static void child_stop(struct child *c)
{
	int status;

	close(c->in);	/* its read returns: it exits */
	close(c->out);
	for (int i = 0; i < 200; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			return;
		usleep(10000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
}

#if defined(__aarch64__)
#define READ_NR "63"
#else
#define READ_NR "0"
#endif

/* Wait (bounded) until @pid's main thread is blocked in read(2), past its print. */
static void wait_in_read(pid_t pid)
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		bool in_read = f && fgets(buf, sizeof(buf), f) && !strncmp(buf, READ_NR " ", strlen(READ_NR) + 1);

		if (f)
			fclose(f);
		if (in_read)
			return;
		usleep(4000);
	}
	fail_msg("%d: not in read(2) after 2 s", pid);
}

static uint64_t peek(int mem, uint64_t addr)
{
	uint64_t v = 0;

	if (pread(mem, &v, sizeof(v), (off_t)addr) != sizeof(v))
		return 0;
	return v;
}

/* The walk the sampler makes (python.bpf.h), in user space: a thread's frames' code objects. */
static size_t walk(int mem, const struct py_proc *p, uint64_t tstate, struct sample_py_frame *out,
		   size_t max)
{
	uint64_t frame = peek(mem, tstate + p->ts_frame);
	size_t n = 0;

	if (p->cframe_frame != PY_OFF_NONE && frame)
		frame = peek(mem, frame + p->cframe_frame);
	for (int steps = 0; frame && n < max && steps < 64; steps++) {
		uint8_t owner = 0;

		if (p->f_owner != PY_OFF_NONE)
			pread(mem, &owner, 1, (off_t)(frame + p->f_owner));
		if (p->kind != PY_KIND_312 || owner != PY_FRAMEOWNER_CSTACK) {
			out[n].code = peek(mem, frame + p->f_code);
			out[n].instr = peek(mem, frame + p->f_instr);
			if (p->kind == PY_KIND_310)
				out[n].instr &= 0xffffffff;
			out[n].flags = out[n].reserved = 0;
			n++;
		}
		frame = peek(mem, frame + p->f_back);
	}
	return n;
}

static int updates;

static int count_update(void *ctx, uint32_t pid, const struct py_proc *proc)
{
	(void)ctx;
	(void)pid;
	(void)proc;
	updates++;
	return 0;
}

/*
 * Each interpreter found in a live process from its mappings alone; its
 * threads' states in the interpreter's list where the offsets say, holding
 * the ids the threads give; the main thread's frames py_waiter, <module>.
 */
static void test_live(void **state)
{
	const struct python_map_ops ops = { .update = count_update };
	struct interp in[8];
	size_t n = interpreters(in, 8);

	(void)state;
	if (!n)
		skip();
	for (size_t i = 0; i < n; i++) {
		struct python *py = python__new(&ops);
		struct sample_py_frame frames[16];
		uint64_t interp, ts, found = 0, main_ts = 0;
		struct pycode_info info;
		struct py_proc p;
		struct child c;
		char path[64];
		size_t depth;
		int mem;

		assert_non_null(py);
		assert_int_equal(child_start(in[i].exe, &c), 0);
		wait_in_read(c.pid);
		updates = 0;
		assert_int_equal(python__scan(py, c.pid), 1);
		assert_int_equal(updates, 1);
		assert_int_equal(python__scan(py, c.pid), 0);	/* known: kept */
		assert_int_equal(python__proc(py, c.pid, &p), 0);
		assert_int_equal(p.version, 300 + in[i].minor);
		snprintf(path, sizeof(path), "/proc/%d/mem", c.pid);
		mem = open(path, O_RDONLY);
		assert_true(mem >= 0);
		interp = peek(mem, p.interp_head);
		assert_true(interp != 0);
		/* the threads: both ids, in one interpreter's list, bounded */
		ts = peek(mem, interp + p.interp_threads);
		for (int k = 0; ts && k < 16; k++, ts = peek(mem, ts + p.ts_next)) {
			uint64_t id = peek(mem, ts + p.ts_id);

			if (id == c.ids[0]) {
				found |= 1;
				main_ts = ts;
			}
			if (id == c.ids[1])
				found |= 2;
		}
		assert_int_equal(found, 3);
		/* the main thread's frames, named as record names them */
		depth = walk(mem, &p, main_ts, frames, 16);
		assert_int_equal(depth, 2);
		assert_int_equal(python__resolve(py, c.pid, &frames[0], &info), 0);
		assert_string_equal(info.qualname, "py_waiter");
		assert_string_equal(info.file, "<string>");
		assert_int_equal(info.line, 14);	/* sys.stdin.read() */
		assert_int_equal(python__resolve(py, c.pid, &frames[1], &info), 0);
		assert_string_equal(info.qualname, "<module>");
		assert_int_equal(info.line, 15);
		/* a frame whose code object's names the sampler saw otherwise: another object */
		frames[0].reserved = 0x12345;
		assert_int_equal(python__resolve(py, c.pid, &frames[0], &info), -ESTALE);
		assert_int_equal(python__stats(py)->stale, 1);
		frames[0].reserved = 0;
		/* exited: still named for its last samples; its pid found again is another process's */
		python__exited(py, c.pid, 1000);
		assert_int_equal(python__resolve(py, c.pid, &frames[1], &info), 0);
		assert_string_equal(info.qualname, "<module>");
		updates = 0;
		assert_int_equal(python__scan(py, c.pid), 1);
		assert_int_equal(updates, 1);
		assert_int_equal(python__proc(py, c.pid, &p), 0);
		close(mem);
		python__forget(py, c.pid);
		assert_int_equal(python__proc(py, c.pid, &p), -ENOENT);
		assert_int_equal(python__resolve(py, c.pid, &frames[0], &info), -ENOENT);
		child_stop(&c);
		python__free(py);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builds),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_instr_offset),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
