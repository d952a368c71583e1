/* SPDX-License-Identifier: BSD-2-Clause */
/* Read a whole file, /proc files included (they have no size), for test programs and tools. */
#ifndef SFU_READ_WHOLE_H
#define SFU_READ_WHOLE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* @return 0 with a malloc()ed *data of *len bytes (plus a NUL after them), or -errno. */
static inline int read_whole(const char *path, void **data, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1), *bigger;
	FILE *f;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	f = fopen(path, "rbe");
	if (!f) {
		err = -errno;
		free(buf);
		return err;
	}
	for (;;) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap) {
			if (ferror(f))
				err = -EIO;
			break;
		}
		bigger = realloc(buf, cap * 2 + 1);
		if (!bigger) {
			err = -ENOMEM;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

#endif
