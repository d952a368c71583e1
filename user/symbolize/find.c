/* SPDX-License-Identifier: BSD-2-Clause */
/* Finding a module's binary and debug file: build-ID trees, the kept-files cache, debuginfod. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "common/hmap.h"
#include "symbolize_internal.h"

static bool same_build_id(const struct sfu_module *m, const uint8_t *id, size_t len)
{
	const struct sfu_build_id *b = sfu_module__build_id(m);

	return len && b->len == len && !memcmp(b->bytes, id, len);
}

/*
 * Open @path if it is the ELF file with this build ID (any build ID when
 * len is 0) and, when @size is not 0, of that size (what the recording
 * saw: a build ID is easily forged); *@other is set when it is another
 * build's.
 */
static struct sfu_module *open_sized(const char *path, const uint8_t *id, size_t len,
				     uint64_t size, bool *other)
{
	/* segments and symbols: nothing of what unwinding reads */
	struct sfu_module *m = sfu_module__open_flags(path, SFU_MODULE_OPEN_NO_UNWIND, NULL);

	if (m && ((len && !same_build_id(m, id, len)) ||
		  (size && sfu_module__file_size(m) != size))) {
		sfu_module__put(m);
		*other = true;
		return NULL;
	}
	return m;
}

static struct sfu_module *open_matching(const char *path, const uint8_t *id, size_t len,
					bool *other)
{
	return open_sized(path, id, len, 0, other);
}

/* Whether the ELF file at @path has a .symtab: a binary that was not stripped. */
static bool has_symtab(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		found = gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB;
	}
	elf_end(elf);
	close(fd);
	return found;
}

static bool debuginfod_wanted(const struct symbolizer *s)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return !s->opts.no_debuginfod && urls && *urls;
}

/*
 * Whether the cache's entry @path may be read: it, and every directory on
 * the way to it, can be changed by no one but this user and root (root
 * reporting must not read what a user put or links there). A refusal is
 * said once.
 */
static bool cache_entry_trusted(struct symbolizer *s, const char *path)
{
	char why[4600];
	int err = buildid_entry_trust(s->cache_dir, path, why, sizeof(why));

	if (err && err != -ENOENT && !s->cache_said) {
		s->cache_said = true;
		fprintf(stderr, "sfprof: build-ID cache %s: %s: not used\n", s->cache_dir, why);
	}
	return !err;
}

/*
 * The file with this build ID (@suffix NULL: the binary, else its debug
 * file) in the build-ID trees: --buildid-dir's (an archive's), then the
 * cache; of @size bytes when that is not 0. A tree's entry is a file, never
 * a link to one.
 */
static struct sfu_module *find_kept_sized(struct symbolizer *s, const uint8_t *id, size_t len,
					  const char *suffix, uint64_t size)
{
	char path[4400];
	struct sfu_module *m;
	struct stat st;
	bool other;	/* a tree's entry holds its build ID: never another's */

	for (size_t i = 0; i <= s->opts.num_buildid_dirs; i++) {
		bool cache = i == s->opts.num_buildid_dirs;
		const char *dir = cache ? s->cache_dir : s->opts.buildid_dirs[i];

		if (!dir || buildid_path(path, sizeof(path), dir, id, len, suffix) ||
		    lstat(path, &st) || (cache && !cache_entry_trusted(s, path)) ||
		    !S_ISREG(st.st_mode))
			continue;
		if ((m = open_sized(path, id, len, size, &other)))
			return m;
	}
	return NULL;
}

static struct sfu_module *find_kept(struct symbolizer *s, const uint8_t *id, size_t len,
				    const char *suffix)
{
	return find_kept_sized(s, id, len, suffix, 0);
}

/*
 * A debug file for the build ID: debug directories, then debuginfod when
 * @remote (the binary is missing or stripped: a server is not worth a round
 * trip for a binary that names its functions itself).
 */
static struct sfu_module *find_debug(struct symbolizer *s, const uint8_t *id, size_t len,
				     bool remote)
{
	char path[4096];
	struct sfu_module *m;
	char *found = NULL;
	bool other;	/* a debug file of another build: as none */
	int fd;

	if (!len)
		return NULL;
	/* a path cut short would name another file: a directory too deep is passed over */
	if (!buildid_path(path, sizeof(path), "/usr/lib/debug", id, len, BUILDID_DEBUG_SUFFIX) &&
	    (m = open_matching(path, id, len, &other)))
		return m;
	for (size_t i = 0; i < s->opts.num_debug_dirs; i++) {
		if (!buildid_path(path, sizeof(path), s->opts.debug_dirs[i], id, len,
				  BUILDID_DEBUG_SUFFIX) &&
		    (m = open_matching(path, id, len, &other)))
			return m;
	}
	if ((m = find_kept(s, id, len, BUILDID_DEBUG_SUFFIX)))
		return m;
	if (!remote)
		return NULL;
	if (!s->dbgd_tried) {
		s->dbgd_tried = true;
		s->dbgd = debuginfod_begin();
	}
	if (!s->dbgd)
		return NULL;
	fd = debuginfod_find_debuginfo(s->dbgd, id, len, &found);
	if (fd < 0)
		return NULL;
	close(fd);
	m = open_matching(found, id, len, &other);
	free(found);
	return m;
}

struct sym_module *symbolizer__module(struct symbolizer *s, const uint8_t *build_id,
				      size_t build_id_len, const char *path)
{
	return symbolizer__module_sized(s, build_id, build_id_len, path, 0);
}

struct sym_module *symbolizer__module_sized(struct symbolizer *s, const uint8_t *build_id,
					    size_t build_id_len, const char *path,
					    uint64_t file_size)
{
	size_t plen = strlen(path);
	struct sym_module *m;
	const char *slash;
	uint8_t *key;
	uint64_t *v;
	int err;

	if (build_id_len > SFU_BUILD_ID_MAX)
		build_id_len = 0;
	/* a profile can name many modules: found by hash, not by a walk of a list */
	key = malloc(1 + build_id_len + plen);
	if (!key)
		return NULL;
	key[0] = build_id_len;
	memcpy(key + 1, build_id, build_id_len);
	memcpy(key + 1 + build_id_len, path, plen);
	err = hmap__entry(s->module_keys, key, 1 + build_id_len + plen, &v, NULL);
	if (err) {
		free(key);
		return NULL;
	}
	if (*v) {
		free(key);
		m = (struct sym_module *)(uintptr_t)*v;
		m->used = s->round;
		return m;
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		hmap__delete(s->module_keys, key, 1 + build_id_len + plen, NULL);
		free(key);
		free(m);
		return NULL;
	}
	m->key = key;
	m->key_len = 1 + build_id_len + plen;
	m->used = s->round;
	m->dwarf_fd = -1;
	m->sym_fd[0] = m->sym_fd[1] = -1;
	memcpy(m->build_id, build_id, build_id_len);
	m->build_id_len = build_id_len;
	slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	/*
	 * The copy kept by build ID first: what the recording saw, which no one
	 * but this user and root can change since. The recorded path may hold
	 * another build now, or a forgery of this one put there by whoever can
	 * write it; it is read only when nothing was kept, and only if it still
	 * holds the same build (or none was recorded).
	 */
	if (build_id_len)
		m->bin = find_kept_sized(s, build_id, build_id_len, NULL, file_size);
	if (!m->bin && path[0] == '/')
		m->bin = open_sized(path, build_id, build_id_len, file_size, &m->replaced);
	m->dbg = find_debug(s, build_id, build_id_len, debuginfod_wanted(s) &&
			    (!m->bin || !has_symtab(sfu_module__path(m->bin))));
	if (!m->bin && m->dbg) {
		m->bin = m->dbg;	/* a debug file keeps the program headers */
		sfu_module__get(m->bin);
	}
	m->replaced &= !m->bin;
	m->next = s->modules;
	s->modules = m;
	*v = (uintptr_t)m;
	return m;
}
