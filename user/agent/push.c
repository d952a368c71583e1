/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent's pusher: windows to pprof payloads per service, a bounded spool on disk, libcurl with backoff. */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "push.h"
#include "report/export.h"
#include "report/symbolize.h"
#include "util/hmap.h"
#include "util/vec.h"

#define SPOOL_MAGIC "SFPUSH1\n"
#define SPOOL_SUFFIX ".push"
#define FIRST_BACKOFF_SECS 1.0

struct window {
	char *path;
	uint64_t from, until;
	bool keep;
};

struct pusher {
	struct push_opts o;
	char *url;			/* with /ingest */
	char windows_dir[4096];
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct window *queue;		/* windows to make into payloads, oldest first */
	size_t nqueue, queue_cap;
	bool stopping;
	struct push_stats st;		/* under lock */
	CURL *curl;
	struct curl_slist *headers;
	uint32_t run_id;		/* in spool names: two runs never write the same name */
	uint32_t seq;
	unsigned tries;			/* failures in a row: the backoff's exponent */
	uint64_t retry_at;		/* CLOCK_MONOTONIC ns; 0 now */
	bool said_down;			/* the failure was said; the next success is said too */
	bool spool_empty;		/* nothing spooled waits: a new payload may go straight */
	/*
	 * The pusher thread's, kept from one window to the next: the kernel's
	 * symbols and the libraries every window names are read once, not
	 * every 10 s; what the last window did not ask for is let go (a
	 * short-lived program's binary is named in one window: holding them
	 * for 6 windows cost about 6 MiB more RSS in bench-agent's churn).
	 */
	struct symbolizer *sym;
};

#define SYM_IDLE_WINDOWS 1

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int push_spool_windows_dir(const char *spool_dir, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/windows", spool_dir);

	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

/* --- the spool: one file per payload, named so that names sort oldest first --- */

struct entry {
	char name[64];
	uint64_t bytes;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* The payloads spooled, oldest first, in *@out (free it). @return their number, or -errno. */
static ssize_t spool_list(struct pusher *p, struct entry **out, uint64_t *total)
{
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir(p->o.spool_dir);
	struct dirent *de;

	*out = NULL;
	*total = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name), sl = strlen(SPOOL_SUFFIX);
		struct stat st;

		if (de->d_name[0] == '.' || len <= sl || len >= sizeof(v->name) ||
		    strcmp(de->d_name + len - sl, SPOOL_SUFFIX) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (VEC_RESERVE(v, cap, n + 1, 64)) {
			closedir(d);
			free(v);
			return -ENOMEM;
		}
		memcpy(v[n].name, de->d_name, len + 1);
		v[n].bytes = st.st_size;
		*total += st.st_size;
		n++;
	}
	closedir(d);
	if (n)	/* none: no array (UBSan: qsort of NULL) */
		qsort(v, n, sizeof(*v), cmp_entry);
	*out = v;
	return n;
}

static void spool_remove(struct pusher *p, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", p->o.spool_dir, name);
	unlink(path);
}

/* Drop the oldest payloads until the spool is within its bound; counted. */
static void spool_bound(struct pusher *p)
{
	struct entry *v;
	uint64_t total;
	ssize_t n = spool_list(p, &v, &total);

	for (ssize_t i = 0; i < n && total > p->o.spool_bytes; i++) {
		spool_remove(p, v[i].name);
		total -= v[i].bytes;
		pthread_mutex_lock(&p->lock);
		p->st.dropped++;
		pthread_mutex_unlock(&p->lock);
	}
	free(v);
}

/* Spool one payload: written aside, then renamed, so that a spooled file is always whole. @return 0 or -errno. */
static int spool_add(struct pusher *p, uint64_t until, const char *query, const void *data,
		     size_t len)
{
	char tmp[4200], path[4200];
	size_t qlen = strlen(query);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%010" PRIu64 "-%08x-%08u" SPOOL_SUFFIX, p->o.spool_dir,
		 until, p->run_id, p->seq);
	snprintf(tmp, sizeof(tmp), "%s/.%010" PRIu64 "-%08x-%08u.tmp", p->o.spool_dir, until,
		 p->run_id, p->seq++);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, SPOOL_MAGIC, 8) != 8 || write(fd, query, qlen) != (ssize_t)qlen ||
	    write(fd, "\n", 1) != 1 || write(fd, data, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Read a spooled payload: its query string and body. @return 0, -EBADMSG (not one of ours) or -errno. */
static int spool_read(struct pusher *p, const char *name, char **query, uint8_t **body,
		      size_t *len)
{
	char path[4200];
	uint8_t *buf = NULL, *nl;
	struct stat st;
	int fd, err = 0;

	*query = NULL;
	*body = NULL;
	snprintf(path, sizeof(path), "%s/%s", p->o.spool_dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size < 10 || !(buf = malloc(st.st_size + 1))) {
		err = errno ? -errno : -EBADMSG;
		goto out;
	}
	if (read(fd, buf, st.st_size) != st.st_size) {
		err = -EIO;
		goto out;
	}
	buf[st.st_size] = '\0';
	nl = memchr(buf + 8, '\n', st.st_size - 8);
	if (memcmp(buf, SPOOL_MAGIC, 8) || !nl) {
		err = -EBADMSG;
		goto out;
	}
	*nl = '\0';
	*query = strdup((char *)buf + 8);
	*len = st.st_size - (nl + 1 - buf);
	*body = malloc(*len ? *len : 1);
	if (!*query || !*body) {
		free(*query);
		free(*body);
		*query = NULL;
		*body = NULL;
		err = -ENOMEM;
		goto out;
	}
	memcpy(*body, nl + 1, *len);
out:
	free(buf);
	close(fd);
	return err;
}

/* --- pushing --- */

static size_t discard_body(void *data, size_t size, size_t n, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * n;
}

/* POST one payload. @return the HTTP status, or 0 when no answer came (curl's error in @why). */
static long post(struct pusher *p, const char *query, const uint8_t *body, size_t len,
		 char *why, size_t whylen)
{
	size_t ulen = strlen(p->url) + strlen(query) + 2;
	char *url = malloc(ulen), errbuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode rc;

	if (!url) {
		snprintf(why, whylen, "out of memory");
		return 0;
	}
	snprintf(url, ulen, "%s%s%s", p->url, strchr(p->url, '?') ? "&" : "?", query);
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(p->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
	free(url);
	return status;
}

/* Wait before the next try: doubling from 1 s up to the bound, less a random part of up to half (jitter). */
static void backoff(struct pusher *p)
{
	double secs = FIRST_BACKOFF_SECS;
	uint32_t r = 0;

	for (unsigned i = 0; i < p->tries && secs < p->o.max_backoff_secs; i++)
		secs *= 2;
	if (secs > p->o.max_backoff_secs)
		secs = p->o.max_backoff_secs;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)mono_ns();
	/* many agents restarted by one outage must not come back in step */
	secs *= 0.5 + 0.5 * (r / 4294967296.0);
	p->tries++;
	p->retry_at = mono_ns() + (uint64_t)(secs * 1e9);
}

enum pushed { PUSHED, REFUSED, FAILED };

/* POST one payload; the answer counted and said. @return what became of it. */
static enum pushed push_one(struct pusher *p, const char *query, const uint8_t *body, size_t len)
{
	char why[CURL_ERROR_SIZE + 64] = "";
	long status = post(p, query, body, len, why, sizeof(why));

	if (status >= 200 && status < 300) {
		pthread_mutex_lock(&p->lock);
		p->st.pushed++;
		pthread_mutex_unlock(&p->lock);
		if (p->said_down && p->o.log)
			fprintf(p->o.log, "sfprof agent: %s takes pushes again\n", p->url);
		p->said_down = false;
		p->tries = 0;
		return PUSHED;
	}
	if (status >= 400 && status < 500 && status != 408 && status != 429) {
		/* refused for what it is: trying again cannot help */
		if (p->o.log)
			fprintf(p->o.log, "sfprof agent: %s refused a payload (HTTP %ld): dropped\n",
				p->url, status);
		pthread_mutex_lock(&p->lock);
		p->st.refused++;
		pthread_mutex_unlock(&p->lock);
		return REFUSED;
	}
	if (!p->said_down && p->o.log) {
		if (status)
			fprintf(p->o.log, "sfprof agent: %s: HTTP %ld: payloads stay spooled and are "
				"tried again\n", p->url, status);
		else
			fprintf(p->o.log, "sfprof agent: %s: %s: payloads stay spooled and are tried "
				"again\n", p->url, why);
	}
	p->said_down = true;
	pthread_mutex_lock(&p->lock);
	p->st.failures++;
	pthread_mutex_unlock(&p->lock);
	backoff(p);
	return FAILED;
}

/* Push spooled payloads, oldest first, until one fails or none is left. @return whether all went. */
static bool push_spooled(struct pusher *p)
{
	struct entry *v;
	uint64_t total;
	ssize_t n = spool_list(p, &v, &total);
	bool all = true;

	for (ssize_t i = 0; i < n; i++) {
		uint8_t *body;
		char *query;
		size_t len;
		enum pushed r;
		int err = spool_read(p, v[i].name, &query, &body, &len);

		if (err == -EBADMSG) {
			spool_remove(p, v[i].name);	/* not a payload of ours: it would never go */
			continue;
		}
		if (err)
			continue;	/* gone meanwhile (the bound) */
		r = push_one(p, query, body, len);
		free(query);
		free(body);
		if (r == FAILED) {
			all = false;
			break;
		}
		spool_remove(p, v[i].name);
	}
	free(v);
	p->spool_empty = all && n >= 0;
	return all;
}

/*
 * A new payload: straight to the server when nothing spooled waits and it
 * is not failing (the files of a spool cost more than the push under
 * churn), spooled otherwise and when it fails now. A crash while a window
 * is made into payloads makes it again at the next start: those already
 * pushed go twice (at least once, never lost). @return 0 or -errno.
 */
static int deliver(struct pusher *p, uint64_t until, const char *query, const void *data,
		   size_t len)
{
	if (p->spool_empty && !p->tries && push_one(p, query, data, len) != FAILED)
		return 0;
	p->spool_empty = false;
	return spool_add(p, until, query, data, len);
}

/* --- windows into payloads --- */

struct services {
	struct service *sv;		/* distinct */
	size_t n, cap;
	uint32_t *of_image;		/* image -> index in sv */
	uint32_t current;		/* the one being exported */
};

static bool keep_sample(void *ctx, const struct session *s, size_t i)
{
	const struct services *ss = ctx;

	return ss->of_image[session__sample(s, i)->image] == ss->current;
}

/* The service of every image of @s, distinct ones found through a map. @return 0 or -ENOMEM. */
static int group(struct pusher *p, const struct session *s, struct services *ss)
{
	size_t nimages = session__nimages(s);
	struct hmap *seen = hmap__new(HMAP_BYTES);
	int err = -ENOMEM;

	ss->of_image = calloc(nimages + 1, sizeof(*ss->of_image));
	if (!seen || !ss->of_image)
		goto out;
	for (size_t i = 0; i < nimages; i++) {
		const struct session_image *im = session__image(s, i);
		struct service sv;
		char key[sizeof(sv)];
		uint64_t *v;

		service_of(p->o.group_by, im->cgroup, im->exe, im->comm, &sv);
		memset(key, 0, sizeof(key));
		snprintf(key, sizeof(key), "%s|%s|%s|%s", sv.name, sv.container_id, sv.pod_uid,
			 sv.exe);
		if (hmap__entry(seen, key, strlen(key), &v, NULL))
			goto out;
		if (!*v) {
			if (VEC_RESERVE(ss->sv, ss->cap, ss->n + 1, 16))
				goto out;
			ss->sv[ss->n++] = sv;
			*v = ss->n;
		}
		ss->of_image[i] = *v - 1;
	}
	err = 0;
out:
	hmap__free(seen);
	return err;
}

/* Make a window into one payload per service with samples, spooled. @return 0 or -errno. */
static int convert(struct pusher *p, const struct window *w)
{
	struct session_opts sopts = { .sym = { .no_debuginfod = true, .no_lines = true } };
	struct services ss = { 0 };
	struct profile_diag diag = { "" };
	struct session *s;
	bool *has;
	int err = 0;

	if (!p->sym && !(p->sym = symbolizer__new(&sopts.sym)))
		return -ENOMEM;
	sopts.symbolizer = p->sym;
	s = session__open(w->path, &sopts, &diag);

	if (!s) {
		if (p->o.log)
			fprintf(p->o.log, "sfprof agent: %s\n", diag.reason);
		return -EBADMSG;
	}
	if ((err = group(p, s, &ss)))
		goto out;
	has = calloc(ss.n + 1, sizeof(*has));
	if (!has) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < session__nsamples(s); i++)
		has[ss.of_image[session__sample(s, i)->image]] = true;
	for (size_t i = 0; i < ss.n && !err; i++) {
		struct pprof_opts po = {
			.no_symbolize = p->o.no_symbolize, .no_thread_label = true,
			.keep = keep_sample, .keep_ctx = &ss,
			.time_ns = w->from * 1000000000ull,
			.duration_ns = (w->until - w->from) * 1000000000ull,
		};
		char query[2048], *data = NULL;
		size_t len = 0;
		FILE *mem;

		if (!has[i])
			continue;
		ss.current = i;
		if (service_query(&ss.sv[i], p->o.host, w->from, w->until, p->o.sample_rate, query,
				  sizeof(query)) < 0)
			continue;	/* cannot be: names are bounded */
		mem = open_memstream(&data, &len);
		if (!mem) {
			err = -ENOMEM;
			break;
		}
		err = export_pprof_opts(s, mem, &po);
		if (fclose(mem) && !err)
			err = -ENOMEM;
		if (!err)
			err = deliver(p, w->until, query, data, len);
		free(data);
		if (!err) {
			pthread_mutex_lock(&p->lock);
			p->st.payloads++;
			pthread_mutex_unlock(&p->lock);
		}
	}
	free(has);
out:
	free(ss.sv);
	free(ss.of_image);
	session__free(s);
	symbolizer__trim(p->sym, SYM_IDLE_WINDOWS);
	/* what a window's session and the modules let go held, given back to the system */
	malloc_trim(0);
	return err;
}

static void take_window(struct pusher *p)
{
	struct window w = p->queue[0];
	int err;

	memmove(p->queue, p->queue + 1, (p->nqueue - 1) * sizeof(*p->queue));
	p->nqueue--;
	pthread_mutex_unlock(&p->lock);
	err = convert(p, &w);
	if (err != -EBADMSG && err && p->o.log)
		fprintf(p->o.log, "sfprof agent: %s: %s: kept for the next run\n", w.path,
			strerror(-err));
	/* a window that cannot be read is dropped, counted; one not spooled (no room) is kept */
	if ((!err || err == -EBADMSG) && !w.keep)
		unlink(w.path);
	spool_bound(p);
	pthread_mutex_lock(&p->lock);
	if (err == -EBADMSG)
		p->st.bad_windows++;
	else if (!err)
		p->st.windows++;
	pthread_mutex_unlock(&p->lock);
	free(w.path);
	pthread_mutex_lock(&p->lock);
}

static void *run(void *arg)
{
	struct pusher *p = arg;
	uint64_t flush_until = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		uint64_t now = mono_ns();

		if (p->nqueue) {
			take_window(p);
			continue;
		}
		if (p->stopping && !flush_until)
			flush_until = now + (uint64_t)(p->o.flush_secs * 1e9);
		if (now >= p->retry_at) {
			bool all;

			pthread_mutex_unlock(&p->lock);
			all = push_spooled(p);
			pthread_mutex_lock(&p->lock);
			if (p->stopping && all)
				break;
			if (all)
				p->retry_at = UINT64_MAX;	/* until the next window */
			continue;
		}
		if (p->stopping && (now >= flush_until || p->retry_at >= flush_until))
			break;
		{
			uint64_t until = p->retry_at < flush_until || !flush_until ? p->retry_at :
										 flush_until;
			struct timespec ts;

			if (until == UINT64_MAX) {
				pthread_cond_wait(&p->wake, &p->lock);
			} else {
				/* the condition variable waits on CLOCK_MONOTONIC (pusher__new) */
				ts.tv_sec = until / 1000000000ull;
				ts.tv_nsec = until % 1000000000ull;
				pthread_cond_timedwait(&p->wake, &p->lock, &ts);
			}
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Windows a run before us left unconverted: given again, oldest first (their names sort so). */
static void resume_windows(struct pusher *p)
{
	struct dirent **names = NULL;
	int n = scandir(p->windows_dir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		unsigned long long from, until;
		char path[4400];

		if (sscanf(names[i]->d_name, "window-%llu-%llu.sfprof", &from, &until) == 2) {
			snprintf(path, sizeof(path), "%s/%s", p->windows_dir, names[i]->d_name);
			pusher__window(p, path, from, until, false);
		} else if (names[i]->d_name[0] == '.' && strstr(names[i]->d_name, ".tmp")) {
			/* a window a crash left unfinished: never whole */
			snprintf(path, sizeof(path), "%s/%s", p->windows_dir, names[i]->d_name);
			unlink(path);
		}
		free(names[i]);
	}
	free(names);
}

static int make_dir(const char *path)
{
	struct stat st;

	if (!mkdir(path, 0700))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (lstat(path, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

struct pusher *pusher__new(const struct push_opts *opts, char *err, size_t errlen)
{
	struct pusher *p = calloc(1, sizeof(*p));
	const char *path;
	pthread_condattr_t ca;
	size_t ulen;
	int e;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->o = *opts;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (getrandom(&p->run_id, sizeof(p->run_id), GRND_NONBLOCK) != sizeof(p->run_id))
		p->run_id = (uint32_t)mono_ns() ^ (uint32_t)getpid();
	/* the ingest endpoint: a URL naming only the server gets Pyroscope's path */
	path = strstr(opts->url, "://");
	path = path ? strchr(path + 3, '/') : NULL;
	ulen = strlen(opts->url) + sizeof("/ingest");
	p->url = malloc(ulen);
	if (!p->url) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!path || !strcmp(path, "/"))
		snprintf(p->url, ulen, "%.*s/ingest", (int)(path ? path - opts->url : (ptrdiff_t)strlen(opts->url)),
			 opts->url);
	else
		snprintf(p->url, ulen, "%s", opts->url);
	if ((e = make_dir(opts->spool_dir)) ||
	    push_spool_windows_dir(opts->spool_dir, p->windows_dir, sizeof(p->windows_dir)) ||
	    (e = make_dir(p->windows_dir))) {
		snprintf(err, errlen, "spool directory %s: %s", opts->spool_dir, strerror(-e));
		goto fail;
	}
	p->curl = curl_easy_init();
	p->headers = curl_slist_append(NULL, "Content-Type: binary/octet-stream");
	if (!p->curl || !p->headers) {
		snprintf(err, errlen, "cannot start libcurl");
		goto fail;
	}
	if (opts->tenant) {
		char h[512];
		struct curl_slist *l;

		snprintf(h, sizeof(h), "X-Scope-OrgID: %s", opts->tenant);
		l = curl_slist_append(p->headers, h);
		if (!l)
			goto fail;
		p->headers = l;
	}
	if (opts->bearer_token) {
		char *h;
		struct curl_slist *l;

		if (asprintf(&h, "Authorization: Bearer %s", opts->bearer_token) < 0)
			goto fail;
		l = curl_slist_append(p->headers, h);
		explicit_bzero(h, strlen(h));
		free(h);
		if (!l)
			goto fail;
		p->headers = l;
	}
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->headers);
	if (opts->basic_auth) {
		curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(p->curl, CURLOPT_USERPWD, opts->basic_auth);
	}
	/* a thread of its own: no signals for timeouts */
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "sfprof-agent");
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	resume_windows(p);
	e = pthread_create(&p->thread, NULL, run, p);
	if (e) {
		snprintf(err, errlen, "cannot start the pushing thread: %s", strerror(e));
		goto fail;
	}
	p->started = true;
	pthread_setname_np(p->thread, "sfprof-push");	/* as top -H and /proc show it */
	return p;
fail:
	if (!err[0])
		snprintf(err, errlen, "out of memory");
	pusher__stop(p, NULL);
	errno = ENOMEM;
	return NULL;
}

int pusher__window(struct pusher *p, const char *path, uint64_t from, uint64_t until, bool keep)
{
	char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	if (VEC_RESERVE(p->queue, p->queue_cap, p->nqueue + 1, 16)) {
		pthread_mutex_unlock(&p->lock);
		free(copy);
		return -ENOMEM;
	}
	p->queue[p->nqueue++] = (struct window){ copy, from, until, keep };
	/* a new payload is worth a try at once unless the server is known down */
	if (p->retry_at == UINT64_MAX)
		p->retry_at = 0;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void pusher__stats(struct pusher *p, struct push_stats *st)
{
	struct entry *v;
	uint64_t total;
	ssize_t n = spool_list(p, &v, &total);

	free(v);
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
	st->spooled = n > 0 ? n : 0;
	st->spooled_bytes = n > 0 ? total : 0;
}

void pusher__stop(struct pusher *p, struct push_stats *st)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	if (st)
		pusher__stats(p, st);
	for (size_t i = 0; i < p->nqueue; i++)
		free(p->queue[i].path);
	free(p->queue);
	if (p->curl)
		curl_easy_cleanup(p->curl);
	curl_slist_free_all(p->headers);
	symbolizer__free(p->sym);
	free(p->url);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
