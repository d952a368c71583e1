// SPDX-License-Identifier: BSD-2-Clause
/* Run a fuzz target over corpus files and directories without libFuzzer, for non-clang builds. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;
	int err;

	if (!f) {
		err = -errno;
		goto out;
	}
	err = -EIO;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	err = -ENOMEM;
	/* One spare byte so that an empty file still gets a valid pointer. */
	buf = malloc((size_t)len + 1);
	if (!buf)
		goto out;
	err = -EIO;
	if (fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	err = 0;
out:
	if (err)
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-err));
	free(buf);
	if (f)
		fclose(f);
	return err;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order, so that runs are repeatable. */
static int replay_dir(const char *dir, size_t *count)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int err = 0;

	if (!d) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(-err));
		return err;
	}
	while ((de = readdir(d))) {
		char **grown;

		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			names = grown;
		}
		if (asprintf(&names[n], "%s/%s", dir, de->d_name) < 0) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (!err)
			err = replay_file(names[i]);
		free(names[i]);
	}
	free(names);
	*count += n;
	return err;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	int err = 0;

	for (int i = 1; i < argc && !err; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			/* A seed directory that was not generated is not an error. */
			fprintf(stderr, "replay: %s: %s, skipped\n", argv[i], strerror(errno));
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			err = replay_dir(argv[i], &count);
		} else {
			err = replay_file(argv[i]);
			count++;
		}
	}
	if (err)
		return 1;
	if (!count) {
		fprintf(stderr, "replay: no inputs\n");
		return 1;
	}
	printf("replay: %zu inputs ran\n", count);
	return 0;
}
