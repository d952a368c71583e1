/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record test program: spends its time in system calls made from known call chains. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe. The system calls are
 * made by a `syscall` instruction inside the program's own functions, not
 * through libc (whose wrappers Debian builds with neither .sframe nor frame
 * pointers), so a sample taken in the kernel has user registers that
 * .sframe covers. Chains, innermost first:
 *
 *   sys_read_zero read_loop sc_outer main     read(2) of /dev/zero, 64 KiB a call
 *   sys_getppid getppid_loop sc_outer main    getppid(2)
 *
 * The driver (tests/integration/record_test.py) holds the same table.
 *
 * Usage: syscalls SECONDS
 */

#define NOIPA __attribute__((noipa))
#define CHUNK 65536

static volatile long sink;
static char buf[CHUNK];

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

NOIPA static long sys_read_zero(int fd)
{
	long ret;

#if defined(__x86_64__)
	__asm__ volatile("syscall" : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(buf), "d"((long)CHUNK)
			 : "rcx", "r11", "memory");
#else
	ret = syscall(SYS_read, fd, buf, CHUNK);
#endif
	sink = ret;
	return ret;
}

NOIPA static long sys_getppid(void)
{
	long ret;

#if defined(__x86_64__)
	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
#else
	ret = syscall(SYS_getppid);
#endif
	sink = ret;
	return ret;
}

NOIPA static long read_loop(int fd)
{
	long r = 0;

	for (int i = 0; i < 256; i++)
		r += sys_read_zero(fd);
	sink = r;
	return r;
}

NOIPA static long getppid_loop(void)
{
	long r = 0;

	for (int i = 0; i < 4096; i++)
		r += sys_getppid();
	sink = r;
	return r;
}

NOIPA static long sc_outer(int fd, long until)
{
	long r = 0;

	while (now_ms() < until) {
		r += read_loop(fd);
		r += getppid_loop();
	}
	sink = r;
	return r;
}

int main(int argc, char **argv)
{
	double secs;
	int fd;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: syscalls SECONDS\n");
		return 2;
	}
	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0) {
		perror("syscalls: /dev/zero");
		return 1;
	}
	sink = sc_outer(fd, now_ms() + (long)(secs * 1000));
	close(fd);
	return 0;
}
