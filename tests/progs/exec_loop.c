/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record test program: processes that exec themselves again and again, with memory to give back and arguments to copy. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe. The driver
 * (tests/integration/exec_sample_test.py) records it and looks at the
 * samples taken inside execve(2). Each image of a child touches MIB MiB of
 * memory, which its exec gives back after the kernel has put the new address
 * space in (samples there have the old image's user registers and no old
 * address space), and passes ARGKIB KiB of arguments, which the kernel copies
 * out of the old address space before that (samples there can be unwound).
 * The system call is made by a `syscall` (`svc`) instruction in the
 * program's own code, so that such a sample's user stack is, innermost first,
 *
 *   sys_execve_raw exec_step exec_child main
 *
 * and nothing of libc. A thread of each image spins in spin_leaf until the
 * exec ends it; the parent forks one child after another until SECONDS have
 * passed, each exec'ing itself EXECS times.
 *
 * Usage: exec_loop SECONDS MIB ARGKIB [EXECS]
 *        exec_loop --child EXECS MIB ARGKIB [PADDING...]
 */

#define NOIPA __attribute__((noipa))
#define PAD_BYTES 4000		/* each padding argument: a page of arguments, about */

static volatile long sink;

NOIPA static void *spin_leaf(void *arg)
{
	(void)arg;
	for (;;)
		for (int i = 0; i < 1000; i++)
			sink += i;
	return NULL;
}

NOIPA static long sys_execve_raw(const char *path, char *const argv[], char *const envp[])
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(59L), "D"(path), "S"(argv), "d"(envp)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = 221;
	register long x0 __asm__("x0") = (long)path;
	register long x1 __asm__("x1") = (long)argv;
	register long x2 __asm__("x2") = (long)envp;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
#else
#error "exec_loop knows x86-64 and aarch64"
#endif
}

NOIPA static long exec_step(char **argv)
{
	extern char **environ;
	long r = sys_execve_raw("/proc/self/exe", argv, environ);

	sink += r;
	return r;
}

/* This image: its memory, its spinning thread, then the next image. */
NOIPA static int exec_child(long execs, long mib, long argkib)
{
	size_t bytes = (size_t)mib << 20, npad = (size_t)argkib * 1024 / PAD_BYTES;
	char n[24], m[24], a[24], *pad, **argv;
	pthread_t spinner;
	char *mem;

	if (execs <= 0)
		return 0;
	mem = malloc(bytes ? bytes : 1);
	pad = malloc(PAD_BYTES + 1);
	argv = calloc(npad + 6, sizeof(*argv));
	if (!mem || !pad || !argv)
		return 1;
	memset(mem, (int)execs, bytes);
	memset(pad, 'x', PAD_BYTES);
	pad[PAD_BYTES] = '\0';
	if (pthread_create(&spinner, NULL, spin_leaf, NULL))
		return 1;
	snprintf(n, sizeof(n), "%ld", execs - 1);
	snprintf(m, sizeof(m), "%ld", mib);
	snprintf(a, sizeof(a), "%ld", argkib);
	argv[0] = "exec_loop";
	argv[1] = "--child";
	argv[2] = n;
	argv[3] = m;
	argv[4] = a;
	for (size_t i = 0; i < npad; i++)
		argv[5 + i] = pad;
	exec_step(argv);
	perror("exec_loop: execve /proc/self/exe");
	return 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs, end;
	long mib, argkib, execs = 20, children = 0;

	if (argc >= 5 && !strcmp(argv[1], "--child")) {
		/* not a tail call: main stays on the stack, under exec_child */
		volatile int r = exec_child(atol(argv[2]), atol(argv[3]), atol(argv[4]));

		return r;
	}
	if (argc < 4 || argc > 5 || (secs = atof(argv[1])) <= 0 || (mib = atol(argv[2])) < 0 ||
	    (argkib = atol(argv[3])) < 0 || (argc == 5 && (execs = atol(argv[4])) <= 0)) {
		fprintf(stderr, "usage: exec_loop SECONDS MIB ARGKIB [EXECS]\n");
		return 2;
	}
	end = now_s() + secs;
	while (now_s() < end) {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("exec_loop: fork");
			return 1;
		}
		if (!pid)
			_exit(exec_child(execs, mib, argkib));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "exec_loop: child %d failed (status 0x%x)\n", (int)pid, status);
			return 1;
		}
		children++;
	}
	printf("exec_loop: %ld children, %ld execs each\n", children, execs);
	return 0;
}
