/* SPDX-License-Identifier: BSD-2-Clause */
/* The vDSO images a recording reads: the image's size from its headers, cut and forged headers refused, this process's image made a module. */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/vdso.h"

/* This process's [vdso]: its start and the length of its mapping, or 0 when it has none. */
static uint64_t own_vdso(uint64_t *len)
{
	uint64_t start = getauxval(AT_SYSINFO_EHDR);
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	*len = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && lo == start && strstr(line, "[vdso]"))
			*len = hi - lo;
	}
	fclose(f);
	return *len ? start : 0;
}

static void test_image_size(void **state)
{
	uint64_t len, start = own_vdso(&len), size;
	const uint8_t *image = (const uint8_t *)(uintptr_t)start;
	uint8_t *copy;
	const Elf64_Ehdr *eh;

	(void)state;
	if (!start)
		skip();
	size = vdso_image_size(image, len);
	eh = (const Elf64_Ehdr *)image;
	/* the section headers come last in the kernel's image */
	assert_int_equal(size, eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize);
	assert_true(size <= len);
	/* cut anywhere before its end: not an image that fits */
	static const uint64_t cuts[] = { 0, 3, sizeof(Elf64_Ehdr) - 1, sizeof(Elf64_Ehdr) };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		assert_int_equal(vdso_image_size(image, cuts[i]), 0);
	assert_int_equal(vdso_image_size(image, size - 1), 0);
	assert_int_equal(vdso_image_size(image, size), size);

	copy = malloc(len);
	assert_non_null(copy);
	struct {
		size_t off;
		uint8_t byte;
	} forged[] = {
		{ 0, 0x7e },					/* magic */
		{ EI_CLASS, 7 },				/* class */
		{ offsetof(Elf64_Ehdr, e_shoff) + 7, 0x40 },	/* section headers far away */
		{ offsetof(Elf64_Ehdr, e_phentsize), 1 },	/* program headers too small */
		{ offsetof(Elf64_Ehdr, e_shnum) + 1, 0xff },	/* too many sections */
	};
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		memcpy(copy, image, len);
		copy[forged[i].off] = forged[i].byte;
		assert_int_equal(vdso_image_size(copy, len), 0);
	}
	free(copy);
}

static void test_own_module(void **state)
{
	uint64_t len, start = own_vdso(&len), vaddr, gettime;
	struct sfu_cache *cache = sfu_cache__new();
	struct vdso_set *v = vdso_set__new(cache);
	struct sfu_module *m, *again;
	const char *name;

	(void)state;
	assert_non_null(v);
	if (!start) {
		vdso_set__free(v);
		sfu_cache__free(cache);
		skip();
	}
	m = vdso_set__module(v, getpid(), start, start + len);
	assert_non_null(m);
	assert_int_not_equal(sfu_module__build_id(m)->len, 0);
	/* the same bytes: the same image, however often asked */
	again = vdso_set__module(v, getpid(), start, start + len);
	assert_ptr_equal(again, m);
	sfu_module__put(again);
	/* a mapping of another length, this process unreadable there: no image */
	errno = 0;
	assert_null(vdso_set__module(v, getpid(), start, start));
	/* named as perf names it: the global alias of clock_gettime */
	assert_int_equal(sfu_module__symbol_addr(m, "__vdso_clock_gettime", &vaddr), 0);
	assert_int_equal(sfu_module__symbolize(m, vaddr, &name, &gettime), 0);
	assert_int_equal(gettime, 0);
	sfu_module__put(m);
	vdso_set__free(v);
	sfu_cache__free(cache);
}

/*
 * A process's [vdso] is a private mapping it may write to: a child that
 * rewrites a byte of its copy (inside the image, past the ELF header, the
 * build ID kept) is
 * given sfprof's own image, never its own under the kernel's build ID.
 */
static void test_rewritten_copy(void **state)
{
	uint64_t len, start = own_vdso(&len);
	struct sfu_cache *cache = sfu_cache__new();
	struct vdso_set *v = vdso_set__new(cache);
	struct sfu_module *own, *got;
	int ready[2], status;
	char c;
	pid_t pid;

	(void)state;
	assert_non_null(v);
	if (!start || pipe(ready)) {
		vdso_set__free(v);
		sfu_cache__free(cache);
		skip();
	}
	own = vdso_set__module(v, getpid(), start, start + len);
	assert_non_null(own);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		uint8_t *p = (uint8_t *)(uintptr_t)start;

		c = mprotect(p, len, PROT_READ | PROT_WRITE | PROT_EXEC) ? 'n' : 'y';
		if (c == 'y')
			p[len / 4] ^= 0xff;	/* inside the image (its size is less than the mapping's) */
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	if (c == 'y') {
		got = vdso_set__module(v, (uint32_t)pid, start, start + len);
		assert_ptr_equal(got, own);
		sfu_module__put(got);
	}
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(ready[0]);
	close(ready[1]);
	sfu_module__put(own);
	vdso_set__free(v);
	sfu_cache__free(cache);
	if (c != 'y')
		skip();	/* the kernel refused to make the vDSO writable */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_size),
		cmocka_unit_test(test_own_module),
		cmocka_unit_test(test_rewritten_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
