// SPDX-License-Identifier: BSD-2-Clause
/* The kernel's JIT code (BPF programs) written into a profile, as perf's KSYMBOL events keep it. */
#include "kernel_jit.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/vec.h"

/*
 * A BPF program's frames are named by /proc/kallsyms only while it is
 * loaded: the sampler's own programs are gone when report runs, and another
 * program may sit at their address by then. So the ranges go into the file.
 */

/* Most functions of one program read (a program of many subprograms keeps the first). */
#define FUNCS_MAX 256

struct ksym_name {
	uint64_t addr;
	char *name;
};

struct kernel_jit {
	/* addresses written to the current window, sorted */
	uint64_t *written;
	size_t nwritten, written_cap;
	/* names /proc/kallsyms gave BPF code, sorted by address: read again only for one unknown */
	struct ksym_name *names;
	size_t nnames, names_cap;
};

struct kernel_jit *kernel_jit__new(void)
{
	return calloc(1, sizeof(struct kernel_jit));
}

static void free_names(struct kernel_jit *k)
{
	for (size_t i = 0; i < k->nnames; i++)
		free(k->names[i].name);
	k->nnames = 0;
}

void kernel_jit__free(struct kernel_jit *k)
{
	if (!k)
		return;
	free_names(k);
	free(k->names);
	free(k->written);
	free(k);
}

void kernel_jit__new_window(struct kernel_jit *k)
{
	k->nwritten = 0;
}

static int addr_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int name_cmp(const void *a, const void *b)
{
	return addr_cmp(&((const struct ksym_name *)a)->addr, &((const struct ksym_name *)b)->addr);
}

/* The [bpf] lines of /proc/kallsyms: what every other tool calls these functions. */
static void read_names(struct kernel_jit *k)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return;
	free_names(k);
	while (getline(&line, &cap, f) > 0) {
		unsigned long long addr;
		int name = 0, name_end = 0;
		char type, *copy;

		if (!strstr(line, "\t[bpf]") ||
		    sscanf(line, "%llx %c %n%*s%n", &addr, &type, &name, &name_end) != 2 ||
		    !name_end || !addr)
			continue;
		if (VEC_RESERVE(k->names, k->names_cap, k->nnames + 1, 64) ||
		    !(copy = strndup(line + name, name_end - name)))
			break;
		k->names[k->nnames++] = (struct ksym_name){ addr, copy };
	}
	free(line);
	fclose(f);
	if (k->nnames)
		qsort(k->names, k->nnames, sizeof(*k->names), name_cmp);
}

static const char *find_name(const struct kernel_jit *k, uint64_t addr)
{
	const struct ksym_name key = { .addr = addr };
	const struct ksym_name *n = k->nnames ? bsearch(&key, k->names, k->nnames,
							 sizeof(*k->names), name_cmp) : NULL;

	return n ? n->name : NULL;
}

/* @name for @addr in the names read, kept in address order. @return 0 or -ENOMEM. */
static int add_name(struct kernel_jit *k, uint64_t addr, const char *name)
{
	size_t i = k->nnames;
	char *copy;

	if (VEC_RESERVE(k->names, k->names_cap, k->nnames + 1, 64) || !(copy = strdup(name)))
		return -ENOMEM;
	while (i && k->names[i - 1].addr > addr) {
		k->names[i] = k->names[i - 1];
		i--;
	}
	k->names[i] = (struct ksym_name){ addr, copy };
	k->nnames++;
	return 0;
}

/*
 * The name /proc/kallsyms gives the only function of program @fd (the
 * kernel's bpf_get_prog_name()): "bpf_prog_", its tag, then "_" and the
 * name its BTF gives the function, else "_" and the program's name (@info's,
 * which has the tag and name). Reading kallsyms (120,000 lines, 0.2-0.4 s of
 * wall time on a busy machine) at a recording's start and end is then only
 * for programs of several functions, whose others' tags no call gives.
 * @return false when the BTF name cannot be read.
 */
static bool main_name(int fd, const struct bpf_prog_info *info, char *buf, size_t len)
{
	struct bpf_func_info fi = { 0 };
	struct bpf_prog_info fin;
	uint32_t fin_len = sizeof(fin);
	const struct btf_type *t;
	const char *fname = NULL;
	struct btf *btf;
	bool named;
	int n;

	n = snprintf(buf, len, "bpf_prog_");
	for (int b = 0; b < BPF_TAG_SIZE; b++)
		n += snprintf(buf + n, len - n, "%02x", info->tag[b]);
	if (!info->nr_func_info) {
		if (info->name[0])
			snprintf(buf + n, len - n, "_%.*s", (int)sizeof(info->name), info->name);
		return true;
	}
	if (!info->btf_id || info->func_info_rec_size < sizeof(fi))
		return false;
	memset(&fin, 0, sizeof(fin));
	fin.nr_func_info = 1;
	fin.func_info_rec_size = sizeof(fi);
	fin.func_info = (uint64_t)(uintptr_t)&fi;
	if (bpf_obj_get_info_by_fd(fd, &fin, &fin_len) || !fin.nr_func_info ||
	    fin.btf_id != info->btf_id)
		return false;
	btf = btf__load_from_kernel_by_id(info->btf_id);
	if (!btf)
		return false;
	t = btf__type_by_id(btf, fi.type_id);
	if (t)
		fname = btf__name_by_offset(btf, t->name_off);
	named = fname && *fname;
	if (named)
		snprintf(buf + n, len - n, "_%s", fname);
	btf__free(btf);	/* fname points into it */
	return named;
}

static bool was_written(const struct kernel_jit *k, uint64_t addr)
{
	return k->nwritten && bsearch(&addr, k->written, k->nwritten, sizeof(*k->written), addr_cmp);
}

static int note_written(struct kernel_jit *k, uint64_t addr)
{
	size_t i = k->nwritten;

	if (VEC_RESERVE(k->written, k->written_cap, k->nwritten + 1, 64))
		return -ENOMEM;
	while (i && k->written[i - 1] > addr) {
		k->written[i] = k->written[i - 1];
		i--;
	}
	k->written[i] = addr;
	k->nwritten++;
	return 0;
}

/* The functions of program @fd: their addresses and lengths; 0 when it has none we may see. */
static uint32_t prog_funcs(int fd, struct bpf_prog_info *info, uint64_t *addrs, uint32_t *lens)
{
	uint32_t len = sizeof(*info), n;

	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len))
		return 0;
	n = info->nr_jited_ksyms < info->nr_jited_func_lens ? info->nr_jited_ksyms :
		info->nr_jited_func_lens;
	if (!n)
		return 0;
	if (n > FUNCS_MAX)
		n = FUNCS_MAX;
	memset(info, 0, sizeof(*info));
	info->nr_jited_ksyms = n;
	info->jited_ksyms = (uint64_t)(uintptr_t)addrs;
	info->nr_jited_func_lens = n;
	info->jited_func_lens = (uint64_t)(uintptr_t)lens;
	len = sizeof(*info);
	if (bpf_obj_get_info_by_fd(fd, info, &len))
		return 0;
	/* a program replaced between the two calls: its counts are the new one's */
	if (info->nr_jited_ksyms < n)
		n = info->nr_jited_ksyms;
	if (info->nr_jited_func_lens < n)
		n = info->nr_jited_func_lens;
	return n;
}

static int write_prog(struct kernel_jit *k, struct profile_writer *w, uint64_t time_ns, int fd,
		      bool *names_read)
{
	uint64_t addrs[FUNCS_MAX];
	uint32_t lens[FUNCS_MAX];
	struct bpf_prog_info info;
	uint32_t n = prog_funcs(fd, &info, addrs, lens);

	for (uint32_t i = 0; i < n; i++) {
		char fallback[256];
		const char *name;
		int err;

		/* hidden addresses (kptr_restrict) read as 0 */
		if (!addrs[i] || !lens[i] || addrs[i] + lens[i] < addrs[i] || was_written(k, addrs[i]))
			continue;
		name = find_name(k, addrs[i]);
		if (!name && n == 1 && main_name(fd, &info, fallback, sizeof(fallback))) {
			if (add_name(k, addrs[i], fallback))
				return -ENOMEM;
			name = find_name(k, addrs[i]);
		}
		if (!name && !*names_read) {
			read_names(k);
			*names_read = true;
			name = find_name(k, addrs[i]);
		}
		if (!name) {
			char tag[2 * BPF_TAG_SIZE + 1];

			for (int b = 0; b < BPF_TAG_SIZE; b++)
				snprintf(tag + 2 * b, 3, "%02x", info.tag[b]);
			snprintf(fallback, sizeof(fallback), "bpf_prog_%s%s%.16s", tag,
				 info.name[0] ? "_" : "", info.name);
			name = fallback;
		}
		err = profile_writer__jit(w, &(struct profile_jit){
			.time_ns = time_ns, .pid = 0, .start = addrs[i], .end = addrs[i] + lens[i],
			.flags = PROFILE_JIT_F_MAP, .name = name, .source = KERNEL_JIT_SOURCE });
		if (err)
			return err;
		if (note_written(k, addrs[i]))
			return -ENOMEM;
	}
	return 0;
}

int kernel_jit__write(struct kernel_jit *k, struct profile_writer *w, uint64_t time_ns)
{
	bool names_read = false;
	uint32_t id = 0;

	/* not root, or no BPF: nothing to see, and nothing is lost by it */
	while (!bpf_prog_get_next_id(id, &id)) {
		int fd = bpf_prog_get_fd_by_id(id), err;

		if (fd < 0)
			continue;
		err = write_prog(k, w, time_ns, fd, &names_read);
		close(fd);
		if (err)
			return err;
	}
	return 0;
}
