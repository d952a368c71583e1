/* SPDX-License-Identifier: BSD-2-Clause */
/* Address spaces: a sorted array of executable mappings, filled from /proc/PID/maps. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diag_internal.h"
#include "module_internal.h"
#include "sfunwind/addrspace.h"

#define DELETED_SUFFIX " (deleted)"

struct sfu_addrspace {
	struct sfu_cache *cache;
	bool own_cache;
	char *root;			/* NULL: paths are opened as they are */
	struct sfu_mapping *maps;	/* sorted by start, never overlapping */
	size_t count, cap;
};

/* One parsed line of /proc/PID/maps. */
struct maps_line {
	uint64_t start, end, offset;
	uint32_t prot;
	const char *path;	/* not NUL-terminated; NULL when the line has none */
	size_t path_len;
};

struct sfu_addrspace *sfu_addrspace__new(struct sfu_cache *cache, const char *root)
{
	struct sfu_addrspace *as = calloc(1, sizeof(*as));

	if (!as)
		goto err_nomem;
	if (root) {
		as->root = strdup(root);
		if (!as->root)
			goto err_nomem;
	}
	as->cache = cache;
	if (!cache) {
		as->cache = sfu_cache__new();
		if (!as->cache)
			goto err_nomem;
		as->own_cache = true;
	}
	return as;

err_nomem:
	sfu_addrspace__free(as);
	errno = ENOMEM;
	return NULL;
}

static void mapping_release(struct sfu_mapping *m)
{
	sfu_module__put(m->module);
	free((char *)m->path);
}

void sfu_addrspace__free(struct sfu_addrspace *as)
{
	if (!as)
		return;
	for (size_t i = 0; i < as->count; i++)
		mapping_release(&as->maps[i]);
	free(as->maps);
	if (as->own_cache)
		sfu_cache__free(as->cache);
	free(as->root);
	free(as);
}

/* Index of the first mapping that ends after @addr. */
static size_t first_ending_after(const struct sfu_addrspace *as, uint64_t addr)
{
	size_t lo = 0, hi = as->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first mapping that starts at or after @addr. */
static size_t first_starting_at(const struct sfu_addrspace *as, uint64_t addr)
{
	size_t lo = 0, hi = as->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->maps[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Puts @new (whose references it takes over) in its place, trimming or
 * splitting the mappings it overlaps as mmap() would. On failure nothing
 * changes and @new still belongs to the caller.
 */
static int insert(struct sfu_addrspace *as, const struct sfu_mapping *new)
{
	/* [lo, hi) overlap @new; hi >= lo as every mapping before lo ends before @new starts */
	size_t lo = first_ending_after(as, new->start);
	size_t hi = first_starting_at(as, new->end);
	struct sfu_mapping repl[3];
	bool left, right;
	size_t nrepl = 0, count;

	left = lo < hi && as->maps[lo].start < new->start;
	right = lo < hi && as->maps[hi - 1].end > new->end;
	count = as->count - (hi - lo) + 1 + left + right;

	if (count > as->cap) {
		size_t cap = as->cap ? as->cap * 2 : 64;
		struct sfu_mapping *maps;

		while (cap < count)
			cap *= 2;
		maps = reallocarray(as->maps, cap, sizeof(*maps));
		if (!maps)
			return -ENOMEM;
		as->maps = maps;
		as->cap = cap;
	}

	if (left) {
		repl[nrepl] = as->maps[lo];
		repl[nrepl++].end = new->start;
	}
	repl[nrepl++] = *new;
	if (right) {
		struct sfu_mapping *r = &repl[nrepl++];

		*r = as->maps[hi - 1];
		r->file_offset += new->end - r->start;
		r->start = new->end;
		if (left && lo == hi - 1) {
			/* one mapping split in two: the right half needs its own references */
			if (r->path) {
				r->path = strdup(r->path);
				if (!r->path)
					return -ENOMEM;
			}
			sfu_module__get(r->module);
		}
	}

	for (size_t i = lo; i < hi; i++)
		if (!(i == lo && left) && !(i == hi - 1 && right))
			mapping_release(&as->maps[i]);
	memmove(&as->maps[lo + nrepl], &as->maps[hi], (as->count - hi) * sizeof(*as->maps));
	memcpy(&as->maps[lo], repl, nrepl * sizeof(*repl));
	as->count = count;
	return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t len = strlen(s), n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

/*
 * The module of a file mapping, or NULL when the file cannot be used.
 * @return 0, or -ENOMEM.
 */
static int open_module(struct sfu_addrspace *as, const char *root, const char *path,
		       struct sfu_module **module)
{
	char *full = NULL;
	int err = 0;

	*module = NULL;
	/*
	 * A deleted file's name may now be another file, whose segments and
	 * tables would be wrong for this mapping. Reading it through
	 * /proc/PID/map_files needs CAP_SYS_ADMIN; future work.
	 */
	if (path[0] == '[' || has_suffix(path, DELETED_SUFFIX))
		return 0;
	if (root && asprintf(&full, "%s%s%s", root, path[0] == '/' ? "" : "/", path) < 0)
		return -ENOMEM;
	*module = sfu_cache__open(as->cache, full ? full : path, NULL, NULL);
	if (!*module && errno == ENOMEM)
		err = -ENOMEM;
	free(full);
	return err;
}

static int add_mapping(struct sfu_addrspace *as, const struct maps_line *line, bool try_open,
		       const char *root, struct sfu_module *module)
{
	struct sfu_mapping new = {
		.start = line->start,
		.end = line->end,
		.file_offset = line->offset,
		.prot = line->prot,
	};
	int err;

	if (line->end <= line->start)
		return -EINVAL;
	if (line->path) {
		new.path = strndup(line->path, line->path_len);
		if (!new.path) {
			err = -ENOMEM;
			goto out;
		}
	}
	if (module)
		new.module = sfu_module__get(module);
	else if (new.path && try_open && (err = open_module(as, root, new.path, &new.module)))
		goto out;
	if (new.module) {
		uint64_t vaddr;

		if (sfu_module__map_vaddr(new.module, new.file_offset, new.prot, &vaddr)) {
			/* no segment maps this offset: it is not the file that was mapped */
			sfu_module__put(new.module);
			new.module = NULL;
		} else {
			new.bias = new.start - vaddr;
		}
	}
	err = insert(as, &new);
out:
	if (err)
		mapping_release(&new);
	return err;
}

int sfu_addrspace__add(struct sfu_addrspace *as, uint64_t start, uint64_t end,
		       uint64_t file_offset, uint32_t prot, const char *path,
		       struct sfu_module *module)
{
	struct maps_line line = {
		.start = start,
		.end = end,
		.offset = file_offset,
		.prot = prot,
		.path = path,
		.path_len = path ? strlen(path) : 0,
	};

	return add_mapping(as, &line, true, as->root, module);
}

static int digit_value(char c, unsigned base)
{
	int d = c >= '0' && c <= '9' ? c - '0' :
		c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

	return d >= 0 && (unsigned)d < base ? d : -1;
}

static bool take_number(const char **p, const char *end, unsigned base, uint64_t *val)
{
	const char *s = *p;
	uint64_t v = 0;
	int d;

	for (; s < end && (d = digit_value(*s, base)) >= 0; s++) {
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	if (s == *p)
		return false;
	*p = s;
	*val = v;
	return true;
}

static bool take_char(const char **p, const char *end, char c)
{
	if (*p == end || **p != c)
		return false;
	(*p)++;
	return true;
}

/* "start-end perms offset major:minor inode [path]" */
static bool parse_line(const char *p, const char *end, struct maps_line *line)
{
	uint64_t dev, inode;
	const char *perms;

	if (!take_number(&p, end, 16, &line->start) || !take_char(&p, end, '-') ||
	    !take_number(&p, end, 16, &line->end) || !take_char(&p, end, ' '))
		return false;
	if (end - p < 5 || (p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's') || p[4] != ' ')
		return false;
	perms = p;
	p += 5;
	if (!take_number(&p, end, 16, &line->offset) || !take_char(&p, end, ' ') ||
	    !take_number(&p, end, 16, &dev) || !take_char(&p, end, ':') ||
	    !take_number(&p, end, 16, &dev) || !take_char(&p, end, ' ') ||
	    !take_number(&p, end, 10, &inode))
		return false;
	if (p != end && *p != ' ')
		return false;
	/* the kernel pads to a column before the path; the path keeps its own spaces */
	while (p != end && *p == ' ')
		p++;
	line->path = p != end ? p : NULL;
	line->path_len = end - p;
	line->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		     (perms[2] == 'x' ? PROT_EXEC : 0);
	return line->start < line->end;
}

static int load_maps(struct sfu_addrspace *as, const char *text, size_t len, const char *root,
		     struct sfu_diag *diag)
{
	const char *p = text, *end = text + len;

	for (size_t lineno = 1; p < end; lineno++) {
		const char *eol = memchr(p, '\n', end - p);
		struct maps_line line;
		int err;

		if (!eol)
			eol = end;
		if (eol == p) {
			p = eol + 1;
			continue;
		}
		if (!parse_line(p, eol, &line))
			return diag_set(diag, -EBADMSG, "line %zu: cannot parse \"%.*s\"", lineno,
					(int)(eol - p > 100 ? 100 : eol - p), p);
		p = eol + 1;
		if (!(line.prot & PROT_EXEC))
			continue;
		/*
		 * Only absolute paths are files. [vdso] is an ELF image too, but
		 * only in the process's memory: it stays without a module here,
		 * like [vsyscall] and [uprobes], for the caller to give it one
		 * (sfprof record reads it from the process: user/record/vdso.c).
		 */
		err = add_mapping(as, &line, line.path && line.path[0] == '/', root, NULL);
		if (err)
			return diag_set(diag, err, "line %zu: %s", lineno, strerror(-err));
	}
	return 0;
}

int sfu_addrspace__load_maps(struct sfu_addrspace *as, const char *text, size_t len,
			     struct sfu_diag *diag)
{
	return load_maps(as, text, len, as->root, diag);
}

int sfu_addrspace__load_pid(struct sfu_addrspace *as, pid_t pid, struct sfu_diag *diag)
{
	char maps_path[64], root[64], *text = NULL;
	size_t len = 0, cap = 0;
	int fd = -1, err;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	fd = open(maps_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		diag_set(diag, err, "%s: %s", maps_path, strerror(-err));
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *bigger = realloc(text, cap ? cap * 2 : 16384);

			if (!bigger) {
				err = diag_set(diag, -ENOMEM, "out of memory");
				goto out;
			}
			text = bigger;
			cap = cap ? cap * 2 : 16384;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* a process exiting while its maps are read */
			err = errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
			diag_set(diag, err, "%s: %s", maps_path, strerror(-err));
			goto out;
		}
		if (!n)
			break;
		len += n;
	}
	err = load_maps(as, text, len, as->root ? as->root : root, diag);
out:
	if (fd >= 0)
		close(fd);
	free(text);
	return err;
}

const struct sfu_mapping *sfu_addrspace__find(const struct sfu_addrspace *as, uint64_t addr)
{
	size_t i = first_ending_after(as, addr);

	if (i < as->count && as->maps[i].start <= addr)
		return &as->maps[i];
	return NULL;
}

const struct sfu_mapping *sfu_addrspace__mappings(const struct sfu_addrspace *as, size_t *count)
{
	*count = as->count;
	return as->maps;
}
