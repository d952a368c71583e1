/* SPDX-License-Identifier: BSD-2-Clause */
/* Where a build ID's binary and debug file are in a build-ID tree, and where the cache is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"

int buildid_cache_dir(char *out, size_t cap)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	/* the rule of procs__new_cache(): one directory for the derived tables and the binaries */
	if (xdg && xdg[0] == '/')
		n = snprintf(out, cap, "%s/sfprof", xdg);
	else if (home && home[0] == '/')
		n = snprintf(out, cap, "%s/.cache/sfprof", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int buildid_path(char *out, size_t cap, const char *dir, const uint8_t *id, size_t len,
		 const char *suffix)
{
	char hex[2 * BUILDID_MAX + 1];
	int n;

	/* one byte would leave the file no name */
	if (len < 2 || len > BUILDID_MAX)
		return -EINVAL;
	buildid_hex(hex, sizeof(hex), id, len);
	n = snprintf(out, cap, "%s/" BUILDID_TREE "/%.2s/%s%s", dir, hex, hex + 2,
		     suffix ? suffix : "");
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;	/* upper case is not what a tree holds: two names for one entry */
}

size_t buildid_parse_name(const char *xx, const char *rest, uint8_t *id, bool *debug)
{
	size_t rlen = strlen(rest), slen = strlen(BUILDID_DEBUG_SUFFIX), n = 1;

	*debug = rlen > slen && !strcmp(rest + rlen - slen, BUILDID_DEBUG_SUFFIX);
	if (*debug)
		rlen -= slen;
	if (strlen(xx) != 2 || hexval(xx[0]) < 0 || hexval(xx[1]) < 0 || !rlen || rlen % 2 ||
	    rlen / 2 + 1 > BUILDID_MAX)
		return 0;
	id[0] = hexval(xx[0]) << 4 | hexval(xx[1]);
	for (size_t i = 0; i < rlen; i += 2, n++) {
		int hi = hexval(rest[i]), lo = hexval(rest[i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		id[n] = hi << 4 | lo;
	}
	return n;
}
