/* SPDX-License-Identifier: BSD-2-Clause */
/* Which samples report shows: perf report's --comm, --pid, --tid, --dso, --symbols and --time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_filter.h"

int report_filter__names(char ***list, size_t *n, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char **grown = realloc(*list, (*n + 1) * sizeof(**list));

		if (!grown) {
			err = -ENOMEM;
			break;
		}
		*list = grown;
		if (!(grown[*n] = strdup(tok)))
			err = -ENOMEM;
		else
			(*n)++;
	}
	free(copy);
	return err;
}

int report_filter__ids(uint32_t **list, size_t *n, const char *arg)
{
	const char *p = arg;

	if (!*p)
		return -EINVAL;
	while (*p) {
		unsigned long long v;
		uint32_t *grown;
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || v > UINT32_MAX || (*end && *end != ','))
			return -EINVAL;
		if (!(grown = realloc(*list, (*n + 1) * sizeof(**list))))
			return -ENOMEM;
		*list = grown;
		grown[(*n)++] = (uint32_t)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return -EINVAL;
	}
	return 0;
}

static int add_range(struct report_filter *f, const struct time_range *r)
{
	struct time_range *grown = realloc(f->times, (f->ntimes + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	f->times = grown;
	grown[f->ntimes++] = *r;
	return 0;
}

/* Seconds with up to 9 decimals, as perf's parse_nsec_time(); "" is 0 (open). */
static int parse_secs(const char *s, size_t len, uint64_t *ns)
{
	uint64_t secs = 0, frac = 0;
	size_t i = 0, digits = 0;

	*ns = 0;
	if (!len)
		return 0;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (secs > (UINT64_MAX / 1000000000u - 9) / 10)
			return -EINVAL;
		secs = secs * 10 + (s[i] - '0');
	}
	if (i < len && s[i] == '.') {
		size_t k = 0;

		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, k++, digits++)
			if (k < 9)
				frac = frac * 10 + (s[i] - '0');
			else if (k >= 18)
				return -EINVAL;
		for (; k < 9; k++)
			frac *= 10;
	}
	if (i != len || !digits)
		return -EINVAL;
	*ns = secs * 1000000000u + frac;
	return 0;
}

/* "P" of "P%", 0 to 100. */
static int parse_pct(const char *s, size_t len, double *frac)
{
	char buf[32], *end;
	double v;

	if (!len || len >= sizeof(buf) || !strchr("0123456789.", s[0]))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	v = strtod(buf, &end);
	if (*end || !(v >= 0 && v <= 100))
		return -EINVAL;
	*frac = v / 100.0;
	return 0;
}

/* One percentage window: "P%/N" or "A%-B%", as perf's percent_slash_split() and percent_dash_split(). */
static int parse_pct_range(const char *s, size_t len, struct time_range *r)
{
	const char *slash = memchr(s, '/', len), *dash = memchr(s, '-', len);
	double a, b;

	*r = (struct time_range){ .frac = true };
	if (slash && !dash) {
		char nbuf[16], *end;
		unsigned long n;
		size_t nlen = len - (slash + 1 - s);

		if (slash == s || slash[-1] != '%' || parse_pct(s, slash - 1 - s, &a) || !nlen ||
		    nlen >= sizeof(nbuf))
			return -EINVAL;
		memcpy(nbuf, slash + 1, nlen);
		nbuf[nlen] = 0;
		if (nbuf[0] < '0' || nbuf[0] > '9')
			return -EINVAL;
		n = strtoul(nbuf, &end, 10);
		if (*end || !n || !(a > 0) || a * n > 1.0 + 1e-9)
			return -EINVAL;
		r->start_frac = a * (n - 1);
		r->end_frac = a * n;
		return 0;
	}
	if (dash && !slash) {
		size_t alen = dash - s, blen = len - alen - 1;

		if (alen < 2 || s[alen - 1] != '%' || blen < 2 || dash[blen] != '%' ||
		    parse_pct(s, alen - 1, &a) || parse_pct(dash + 1, blen - 1, &b) || a > b)
			return -EINVAL;
		r->start_frac = a;
		r->end_frac = b;
		return 0;
	}
	return -EINVAL;
}

int report_filter__time(struct report_filter *f, const char *arg)
{
	const char *p = arg;
	int err;

	if (!*arg)
		return -EINVAL;
	if (strchr(arg, '%')) {
		/* percentages: windows joined by ',' */
		while (*p) {
			size_t len = strcspn(p, ",");
			struct time_range r;

			if ((err = parse_pct_range(p, len, &r)) || (err = add_range(f, &r)))
				return err;
			p += len;
			if (*p == ',' && !*++p)
				return -EINVAL;
		}
		return 0;
	}
	/* seconds: START,STOP windows separated by spaces */
	while (*p) {
		size_t len = strcspn(p, " ");
		const char *comma = memchr(p, ',', len);
		struct time_range r = { 0 };

		if (!comma || memchr(comma + 1, ',', len - (comma + 1 - p)) ||
		    parse_secs(p, comma - p, &r.start) ||
		    parse_secs(comma + 1, len - (comma + 1 - p), &r.end) ||
		    (r.end && r.start > r.end))
			return -EINVAL;
		if ((err = add_range(f, &r)))
			return err;
		p += len;
		while (*p == ' ')
			p++;
	}
	return f->ntimes ? 0 : -EINVAL;
}

void report_filter__resolve(struct report_filter *f, uint64_t first, uint64_t last)
{
	uint64_t span = last > first ? last - first : 0;

	for (size_t i = 0; i < f->ntimes; i++) {
		struct time_range *r = &f->times[i];

		if (!r->frac)
			continue;
		/* perf's set_percent_time(): a window ends a nanosecond before the next begins */
		r->start = first + (uint64_t)(r->start_frac * span + 0.5);
		r->end = first + (uint64_t)(r->end_frac * span + 0.5);
		if (r->end > r->start && r->end != last)
			r->end--;
		r->frac = false;
		/* 0 means open: a window from the first sample at time 0 is open anyway */
	}
}

bool report_filter__in_time(const struct report_filter *f, uint64_t ns)
{
	if (!f->ntimes)
		return true;
	for (size_t i = 0; i < f->ntimes; i++) {
		const struct time_range *r = &f->times[i];

		if ((!r->start || ns >= r->start) && (!r->end || ns <= r->end))
			return true;
	}
	return false;
}

static bool has_id(const uint32_t *list, size_t n, uint32_t id)
{
	if (!n)
		return true;
	for (size_t i = 0; i < n; i++)
		if (list[i] == id)
			return true;
	return false;
}

bool report_filter__has(char *const *list, size_t n, const char *name)
{
	if (!n)
		return true;
	for (size_t i = 0; i < n; i++)
		if (name && !strcmp(list[i], name))
			return true;
	return false;
}

bool report_filter__thread(const struct report_filter *f, uint32_t pid, uint32_t tid,
			   const char *comm)
{
	return has_id(f->pids, f->npids, pid) && has_id(f->tids, f->ntids, tid) &&
	       report_filter__has(f->comms, f->ncomms, comm);
}

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

void report_filter__release(struct report_filter *f)
{
	free_list(f->comms, f->ncomms);
	free_list(f->dsos, f->ndsos);
	free_list(f->syms, f->nsyms);
	free(f->pids);
	free(f->tids);
	free(f->times);
	memset(f, 0, sizeof(*f));
}
