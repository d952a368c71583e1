/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent's pusher: windows to payloads (pprof per service, one connect PushRequest, or one OTLP request), a bounded spool on disk, libcurl with backoff. */
#include <ctype.h>
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
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "connect.h"
#include "otlp_response.h"
#include "push.h"
#include "report/export.h"
#include "symbolize/symbolize.h"
#include "common/clock.h"
#include "common/hmap.h"
#include "common/vec.h"

/*
 * A payload's file: SPOOL_MAGIC, a line "API URL" (where it goes), a line
 * with its query string (empty for connect; for otlp the body's content
 * encoding, "gzip" or empty), then the body. Files of
 * SPOOL_MAGIC1 (before connect) have no API line: /ingest payloads, for
 * whichever server a run pushes to.
 */
#define SPOOL_MAGIC "SFPUSH2\n"
#define SPOOL_MAGIC1 "SFPUSH1\n"
#define SPOOL_SUFFIX ".push"
#define TMP_SUFFIX ".tmp"
/* the until of the last window whose payloads are all in the spool (see commit_window) */
#define MARK_NAME ".converted"
#define MARK_LEN 21
#define FIRST_BACKOFF_SECS 1.0
/* failures in a row (of different payloads) that say the server, not a payload, is failing */
#define SERVER_STREAK 5
/* after a 2xx status line, how long the rest of the answer is waited for (a keep-alive) */
#define AFTER_2XX_NS 200000000ull
/* free space left on the spool's filesystem for the windows written there, at least */
#define MIN_RESERVE (64ull << 10)

struct window {
	char *path;
	uint64_t from, until;
	bool keep;
};

/* A payload in the spool. */
struct spooled {
	char name[40];			/* UNTIL-RUN-SEQ.push: names sort oldest first */
	uint64_t disk;			/* what it holds on disk: st_blocks * 512 */
	uint64_t retry_at;		/* CLOCK_MONOTONIC ns; 0: now */
	uint32_t tries;			/* its failures in a row: its backoff's exponent */
	bool elsewhere;			/* for another API or server: never tried by this run */
};

struct pusher {
	struct push_opts o;
	char *url;			/* with /ingest, or the connect procedure's path */
	const char *api;		/* "ingest", "connect" or "otlp": in each payload's file */
	char windows_dir[4096];
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct window *queue;		/* windows to make into payloads, oldest first */
	size_t nqueue, queue_cap;
	bool stopping;
	uint64_t deadline;		/* CLOCK_MONOTONIC ns the flush ends at; 0 not stopping (atomic) */
	struct push_stats st;		/* under lock */
	CURL *curl;
	CURLM *multi;			/* of the one transfer: its poll is woken at stop */
	struct curl_slist *headers;
	struct curl_slist *headers_gz;	/* otlp: the same with Content-Encoding: gzip */
	uint32_t run_id;		/* in spool names: two runs never write the same name */
	uint32_t seq;
	/* the spool, the pusher thread's alone once started */
	struct spooled *spool;		/* oldest first */
	size_t nspool, spool_cap;
	size_t nelsewhere;		/* of them, for another API or server */
	struct spooled *pending;	/* the window being converted: written aside, not yet committed */
	size_t npending, pending_cap;
	uint64_t disk;			/* spooled, pending and the mark: what --spool-size bounds */
	uint64_t blksz;			/* the filesystem's allocation unit */
	uint64_t reserve;		/* free space left to the windows beside the spool */
	int mark_fd;			/* MARK_NAME, -1 when it could not be made */
	uint64_t mark;			/* the until it holds */
	bool mark_new;			/* none was found at start: windows of the output dir are not ours */
	/* the server: failures of different payloads in a row make it back off as a whole */
	unsigned server_tries;
	unsigned streak;
	uint64_t server_retry_at;
	bool said_down;			/* the failure was said; the next success is said too */
	bool said_full;			/* the full filesystem was said; said again once it has room */
	long said_refused;		/* the last refusal's status said */
	/* the transfer under way (curl's callbacks) */
	long status;			/* the last status line's */
	char body[4096];		/* the answer's first bytes: a connect error's JSON, an OTLP answer */
	size_t body_len;
	bool said_elsewhere;		/* payloads for another API or server were said */
	bool body_cut;			/* the answer was longer than body: not read */
	struct otlp_partial said_partial;	/* the last partial success said (otlp) */
	bool said_unread;		/* an OTLP answer that does not read was said */
	uint64_t got_2xx;		/* when a 2xx status line came; 0 none */
	bool aborted;			/* at the flush's deadline */
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

int push_spool_windows_dir(const char *spool_dir, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/windows", spool_dir);

	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

static void count(struct pusher *p, uint64_t *field)
{
	pthread_mutex_lock(&p->lock);
	(*field)++;
	pthread_mutex_unlock(&p->lock);
}

/* --- the spool: one file per payload, named so that names sort oldest first --- */

static int cmp_spooled(const void *a, const void *b)
{
	return strcmp(((const struct spooled *)a)->name, ((const struct spooled *)b)->name);
}

/* Write all of @buf. @return 0 or -errno: a short write is the disk full, not a stale errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *b = buf;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		b += n;
		len -= n;
	}
	return 0;
}

/* Free bytes on the spool's filesystem for us; UINT64_MAX when it cannot be told. */
static uint64_t fs_avail(const struct pusher *p)
{
	struct statvfs vfs;

	if (statvfs(p->o.spool_dir, &vfs))
		return UINT64_MAX;
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

static uint64_t round_blocks(const struct pusher *p, uint64_t bytes)
{
	return (bytes + p->blksz - 1) / p->blksz * p->blksz;
}

static void unlink_in_spool(struct pusher *p, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", p->o.spool_dir, name);
	unlink(path);
}

/* Remove the spooled payload @i, file and entry. */
static void spool_remove(struct pusher *p, size_t i)
{
	unlink_in_spool(p, p->spool[i].name);
	p->disk -= p->spool[i].disk;
	if (p->spool[i].elsewhere)
		p->nelsewhere--;
	memmove(p->spool + i, p->spool + i + 1, (p->nspool - i - 1) * sizeof(*p->spool));
	p->nspool--;
}

/*
 * Make room for @need more bytes: the oldest payloads go, counted, until
 * the spool holds at most its bound with them and its filesystem keeps the
 * windows' reserve free. Room is made before writing, so that the bound
 * holds at every moment. @return 0, or when even an empty spool has none
 * -EFBIG (the window's own payloads fill the bound) or -ENOSPC (the disk).
 */
static int spool_make_room(struct pusher *p, uint64_t need)
{
	for (;;) {
		bool over = p->disk + need > p->o.spool_bytes;
		uint64_t avail = over ? 0 : fs_avail(p);
		bool full = !over && avail != UINT64_MAX && need + p->reserve > avail;

		if (!over && !full) {
			if (p->said_full && avail > 4 * (need + p->reserve))
				p->said_full = false;	/* room again: a new shortage is said */
			return 0;
		}
		if (!p->nspool)
			return over ? -EFBIG : -ENOSPC;
		spool_remove(p, 0);
		count(p, over ? &p->st.dropped : &p->st.dropped_full);
		if (full && !p->said_full && p->o.log) {
			fprintf(p->o.log, "sfprof agent: spool %s: the filesystem is full: the oldest "
				"payloads are dropped, and counted\n", p->o.spool_dir);
			p->said_full = true;
		}
	}
}

/*
 * Write one payload aside (a dot name ending in .tmp) as part of the window
 * being converted; commit_window() makes it spooled. @return 0, -EFBIG
 * (no room within the bound), -ENOSPC (no room on the disk) or -errno.
 */
static int spool_write(struct pusher *p, uint64_t until, const char *query, const void *data,
		       size_t len)
{
	size_t qlen = strlen(query), hlen = strlen(p->api) + 1 + strlen(p->url) + 1;
	uint64_t need = round_blocks(p, 8 + hlen + qlen + 1 + len);
	struct spooled e = { .disk = need };
	char tmp[4200];
	struct stat st;
	int fd, err;

	if (need > p->o.spool_bytes)
		return -EFBIG;
	if (VEC_RESERVE(p->pending, p->pending_cap, p->npending + 1, 8))
		return -ENOMEM;
	snprintf(e.name, sizeof(e.name), "%010" PRIu64 "-%08x-%08u" SPOOL_SUFFIX, until, p->run_id,
		 p->seq++);
	snprintf(tmp, sizeof(tmp), "%s/.%010" PRIu64 "-%08x-%08u" TMP_SUFFIX, p->o.spool_dir, until,
		 p->run_id, p->seq - 1);
	for (;;) {
		if ((err = spool_make_room(p, need)))
			return err;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			err = -errno;
		} else {
			err = write_all(fd, SPOOL_MAGIC, 8);
			if (!err)
				err = write_all(fd, p->api, strlen(p->api));
			if (!err)
				err = write_all(fd, " ", 1);
			if (!err)
				err = write_all(fd, p->url, strlen(p->url));
			if (!err)
				err = write_all(fd, "\n", 1);
			if (!err)
				err = write_all(fd, query, qlen);
			if (!err)
				err = write_all(fd, "\n", 1);
			if (!err)
				err = write_all(fd, data, len);
			if (!err && !fstat(fd, &st) && (uint64_t)st.st_blocks * 512 > e.disk)
				e.disk = st.st_blocks * 512;	/* a filesystem's own blocks (extents) */
			if (close(fd) && !err)
				err = -errno;
			if (err)
				unlink(tmp);
		}
		/* the filesystem filled under us (other files): the oldest payloads make room */
		if ((err != -ENOSPC && err != -EDQUOT) || !p->nspool)
			break;
		spool_remove(p, 0);
		count(p, &p->st.dropped_full);
	}
	if (err)
		return err;
	p->disk += e.disk;
	p->pending[p->npending++] = e;
	/* a filesystem that counts more than we thought: back within the bound at once */
	spool_make_room(p, 0);
	return 0;
}

/* The payloads written aside for a window that is not to be committed: removed. */
static void pending_discard(struct pusher *p)
{
	for (size_t i = 0; i < p->npending; i++) {
		char tmp[64];

		snprintf(tmp, sizeof(tmp), ".%.*s" TMP_SUFFIX,
			 (int)(strlen(p->pending[i].name) - strlen(SPOOL_SUFFIX)), p->pending[i].name);
		unlink_in_spool(p, tmp);
		p->disk -= p->pending[i].disk;
	}
	p->npending = 0;
}

static int mark_write(struct pusher *p, uint64_t until)
{
	char buf[MARK_LEN + 1];

	if (until < p->mark)
		until = p->mark;	/* the clock went back: what was converted stays converted */
	snprintf(buf, sizeof(buf), "%020" PRIu64 "\n", until);
	/* one write into a block the file has: no allocation (a full disk), whole or not at all */
	if (p->mark_fd >= 0 && pwrite(p->mark_fd, buf, MARK_LEN, 0) != MARK_LEN)
		return errno ? -errno : -EIO;
	p->mark = until;
	return 0;
}

/*
 * A window's payloads, all written aside, made spooled: the mark first
 * says the window is converted, then each is renamed to its name. A crash
 * before the mark leaves payloads aside that the next start removes (and
 * the window is converted again); after it, payloads aside that it renames.
 * Either way each payload of a window is spooled once. @return 0 or -errno.
 */
static int commit_window(struct pusher *p, uint64_t until)
{
	int err = mark_write(p, until);

	if (err) {
		pending_discard(p);
		return err;
	}
	if (VEC_RESERVE(p->spool, p->spool_cap, p->nspool + p->npending, 64)) {
		/* they stay aside, committed: the next start spools them */
		p->npending = 0;
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->npending; i++) {
		char tmp[4200], path[4200];
		const struct spooled *e = &p->pending[i];

		snprintf(tmp, sizeof(tmp), "%s/.%.*s" TMP_SUFFIX, p->o.spool_dir,
			 (int)(strlen(e->name) - strlen(SPOOL_SUFFIX)), e->name);
		snprintf(path, sizeof(path), "%s/%s", p->o.spool_dir, e->name);
		if (rename(tmp, path)) {
			unlink(tmp);
			p->disk -= e->disk;
			continue;
		}
		p->spool[p->nspool++] = *e;
		count(p, &p->st.payloads);
	}
	p->npending = 0;
	return 0;
}

/*
 * Read a spooled payload into *@buf (free it): its query string and body
 * point into it; *@here says whether it is for this run's API and URL.
 * @return 0, -EBADMSG (not one of ours) or -errno.
 */
static int spool_read(struct pusher *p, const char *name, char **buf, const char **query,
		      const uint8_t **body, size_t *len, bool *here)
{
	char path[4200];
	uint8_t *b = NULL, *nl;
	struct stat st;
	ssize_t got = 0;
	int fd, err = 0;

	*buf = NULL;
	snprintf(path, sizeof(path), "%s/%s", p->o.spool_dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	if (st.st_size < 10) {
		err = -EBADMSG;
		goto out;
	}
	b = malloc(st.st_size + 1);
	if (!b) {
		err = -ENOMEM;
		goto out;
	}
	while (got < st.st_size) {
		ssize_t n = read(fd, b + got, st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EBADMSG;
			goto out;
		}
		got += n;
	}
	b[st.st_size] = '\0';
	*query = (char *)b + 8;
	if (!memcmp(b, SPOOL_MAGIC1, 8)) {
		/* before connect: /ingest's, for whichever server */
		*here = !strcmp(p->api, "ingest");
	} else if (!memcmp(b, SPOOL_MAGIC, 8) &&
		   (nl = memchr(b + 8, '\n', st.st_size - 8))) {
		size_t alen = strlen(p->api);

		*nl = '\0';
		*here = !strncmp((char *)b + 8, p->api, alen) && b[8 + alen] == ' ' &&
			!strcmp((char *)b + 8 + alen + 1, p->url);
		*query = (char *)nl + 1;
	} else {
		err = -EBADMSG;
		goto out;
	}
	nl = memchr(*query, '\n', st.st_size - ((uint8_t *)*query - b));
	if (!nl) {
		err = -EBADMSG;
		goto out;
	}
	*nl = '\0';
	*body = nl + 1;
	*len = st.st_size - (nl + 1 - b);
	*buf = (char *)b;
	b = NULL;
out:
	free(b);
	close(fd);
	return err;
}

/* --- pushing --- */

/* The answer's body: its first bytes kept (a connect error says what is wrong there), the rest dropped. */
static size_t keep_body(void *data, size_t size, size_t n, void *ctx)
{
	struct pusher *p = ctx;
	size_t len = size * n, room = sizeof(p->body) - 1 - p->body_len;

	if (len < room)
		room = len;
	else if (len > room)
		p->body_cut = true;
	memcpy(p->body + p->body_len, data, room);
	p->body_len += room;
	p->body[p->body_len] = '\0';
	return len;
}

/* Each header line of the answer: the status line's 2xx is delivery, whatever happens to the rest. */
static size_t on_header(char *buf, size_t size, size_t n, void *ctx)
{
	struct pusher *p = ctx;
	size_t len = size * n;
	const char *sp = len > 5 && !memcmp(buf, "HTTP/", 5) ? memchr(buf, ' ', len) : NULL;

	if (sp && sp + 4 <= buf + len && isdigit((unsigned char)sp[1]) &&
	    isdigit((unsigned char)sp[2]) && isdigit((unsigned char)sp[3])) {
		p->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
		if (p->status >= 200 && p->status < 300 && !p->got_2xx)
			p->got_2xx = clock_mono_ns();
	}
	return len;
}

/* POST one payload. @return the HTTP status (2xx when a 2xx status line came), or 0 when no answer came (curl's error in @why). */
static long post(struct pusher *p, const char *query, const uint8_t *body, size_t len,
		 char *why, size_t whylen)
{
	size_t ulen = strlen(p->url) + strlen(query) + 2;
	char *url = malloc(ulen), errbuf[CURL_ERROR_SIZE] = "";
	CURLcode rc = CURLE_OPERATION_TIMEDOUT;
	long status = 0;
	CURLMsg *m;
	int left;

	if (!url) {
		snprintf(why, whylen, "out of memory");
		return 0;
	}
	if (p->o.api == PUSH_API_OTLP) {
		/* the query line says how the body was encoded when it was made */
		snprintf(url, ulen, "%s", p->url);
		curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER,
				 !strcmp(query, "gzip") ? p->headers_gz : p->headers);
	} else {
		snprintf(url, ulen, "%s%s%s", p->url,
			 !*query ? "" : strchr(p->url, '?') ? "&" : "?", query);
	}
	p->status = 0;
	p->body_cut = false;
	p->body_len = 0;
	p->body[0] = '\0';
	p->got_2xx = 0;
	p->aborted = false;
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, errbuf);
	/*
	 * Driven here rather than by curl_easy_perform(): the transfer ends at
	 * the flush's deadline (pusher__begin_stop wakes the poll), and soon
	 * after a 2xx status line whatever the rest of the answer does.
	 */
	if (curl_multi_add_handle(p->multi, p->curl)) {
		snprintf(why, whylen, "cannot start a transfer");
		free(url);
		return 0;
	}
	for (;;) {
		uint64_t now, deadline;
		int running = 0, ms = 1000;

		if (curl_multi_perform(p->multi, &running) || !running)
			break;
		now = clock_mono_ns();
		deadline = __atomic_load_n(&p->deadline, __ATOMIC_RELAXED);
		if (deadline && now >= deadline) {
			p->aborted = true;
			break;
		}
		if (p->got_2xx && now >= p->got_2xx + AFTER_2XX_NS)
			break;
		if (deadline && (deadline - now) / 1000000 < (uint64_t)ms)
			ms = (deadline - now) / 1000000 + 1;
		curl_multi_poll(p->multi, NULL, 0, ms, NULL);
	}
	while ((m = curl_multi_info_read(p->multi, &left)))
		if (m->msg == CURLMSG_DONE)
			rc = m->data.result;
	curl_multi_remove_handle(p->multi, p->curl);
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, NULL);
	if (p->got_2xx)
		status = 200;
	else if (rc == CURLE_OK)
		curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(why, whylen, "%s", p->aborted ? "stopped at --flush-timeout" :
			 errbuf[0] ? errbuf : curl_easy_strerror(rc));
	free(url);
	return status;
}

/* When to try again after @tries failures: doubling from 1 s up to the bound, less a random part of up to half (jitter). */
static uint64_t backoff_at(const struct pusher *p, unsigned tries)
{
	double secs = FIRST_BACKOFF_SECS;
	uint32_t r = 0;

	for (unsigned i = 0; i < tries && secs < p->o.max_backoff_secs; i++)
		secs *= 2;
	if (secs > p->o.max_backoff_secs)
		secs = p->o.max_backoff_secs;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)clock_mono_ns();
	/* many agents restarted by one outage must not come back in step */
	secs *= 0.5 + 0.5 * (r / 4294967296.0);
	return clock_mono_ns() + (uint64_t)(secs * 1e9);
}

/*
 * An OTLP 2xx answer's partial success: the profiles rejected counted, and
 * said when what is said changes (a server that rejects every request the
 * same way is said once, not every 10 s).
 */
static void otlp_answer(struct pusher *p)
{
	struct otlp_partial ps;

	if (p->body_cut || otlp_response_read(p->body, p->body_len, &ps)) {
		if (!p->said_unread && p->o.log)
			fprintf(p->o.log, "sfprof agent: %s: an answer that is not an "
				"ExportProfilesServiceResponse (%zu%s bytes): taken as delivered\n",
				p->url, p->body_len, p->body_cut ? "+" : "");
		p->said_unread = true;
		return;
	}
	if (ps.rejected > 0) {
		pthread_mutex_lock(&p->lock);
		p->st.rejected += (uint64_t)ps.rejected;
		pthread_mutex_unlock(&p->lock);
	}
	if (ps.rejected == p->said_partial.rejected && !strcmp(ps.message, p->said_partial.message))
		return;
	if ((ps.rejected > 0 || ps.message[0]) && p->o.log)
		fprintf(p->o.log, "sfprof agent: %s: %" PRId64 " profiles rejected: %s\n", p->url,
			ps.rejected, ps.message[0] ? ps.message : "(no message)");
	p->said_partial = ps;
}

/*
 * POST the spooled payload @i; what became of it counted and said. A 2xx
 * removes it, a refusal for what it is (a 4xx but 408 and 429) too, counted;
 * any other failure gives it a backoff of its own, so that a payload the
 * server cannot take never holds back the others, and failures of several
 * payloads in a row (or no answer at all) make the server back off as a whole.
 */
static void push_one(struct pusher *p, size_t i)
{
	struct spooled *e = &p->spool[i];
	char why[CURL_ERROR_SIZE + 64] = "", *buf;
	const char *query;
	const uint8_t *body;
	char said[600] = "";
	size_t len;
	long status;
	bool here = false;
	int err = spool_read(p, e->name, &buf, &query, &body, &len, &here);

	if (err) {
		/* not a payload of ours, or gone: it would never go */
		spool_remove(p, i);
		return;
	}
	if (!here) {
		/* a run that pushes there takes it; until then the spool's bound drops it, oldest first */
		free(buf);
		e->elsewhere = true;
		e->retry_at = UINT64_MAX;
		p->nelsewhere++;
		if (!p->said_elsewhere && p->o.log)
			fprintf(p->o.log, "sfprof agent: spool %s: payloads made for another API or "
				"server (not %s %s) stay spooled for a run that pushes there\n",
				p->o.spool_dir, p->api, p->url);
		p->said_elsewhere = true;
		return;
	}
	status = post(p, query, body, len, why, sizeof(why));
	free(buf);
	/* a connect error says what is wrong in its JSON body */
	if (!strcmp(p->api, "connect") && status && (status < 200 || status >= 300)) {
		char msg[sizeof(said) - 4];

		if (!connect_error_message(p->body, p->body_len, msg, sizeof(msg)))
			snprintf(said, sizeof(said), " (%s)", msg);
	}
	/* an OTLP error's body is a google.rpc.Status */
	if (p->o.api == PUSH_API_OTLP && status && (status < 200 || status >= 300) &&
	    !p->body_cut) {
		char msg[sizeof(said) - 4];

		if (!otlp_status_message(p->body, p->body_len, msg, sizeof(msg)))
			snprintf(said, sizeof(said), " (%s)", msg);
	}
	if (p->aborted && !status)
		return;		/* stopping: it stays spooled, not a failure */
	if (status >= 200 && status < 300) {
		spool_remove(p, i);
		count(p, &p->st.pushed);
		if (p->o.api == PUSH_API_OTLP)
			otlp_answer(p);
		if (p->said_down && p->o.log)
			fprintf(p->o.log, "sfprof agent: %s takes pushes again\n", p->url);
		p->said_down = false;
		p->server_tries = 0;
		p->streak = 0;
		p->server_retry_at = 0;
		return;
	}
	if (status >= 400 && status < 500 && status != 408 && status != 429) {
		/* refused for what it is: trying again cannot help */
		if (p->said_refused != status && p->o.log)
			fprintf(p->o.log, "sfprof agent: %s refused a payload (HTTP %ld%s): dropped, and "
				"counted (said once)\n", p->url, status, said);
		p->said_refused = status;
		spool_remove(p, i);
		count(p, &p->st.refused);
		p->streak = 0;
		return;
	}
	if (!p->said_down && p->o.log) {
		if (status)
			fprintf(p->o.log, "sfprof agent: %s: HTTP %ld%s: payloads stay spooled and are "
				"tried again\n", p->url, status, said);
		else
			fprintf(p->o.log, "sfprof agent: %s: %s: payloads stay spooled and are tried "
				"again\n", p->url, why);
	}
	p->said_down = true;
	count(p, &p->st.failures);
	e->retry_at = backoff_at(p, e->tries++);
	if (!status || ++p->streak >= SERVER_STREAK) {
		p->server_retry_at = backoff_at(p, p->server_tries++);
		p->streak = 0;
	}
}

/*
 * Push the payload due first (the oldest of those due at once), if the
 * server is: a payload that keeps failing is due later and later, and new
 * ones go before it. @return 0 when one was tried, else when the next is
 * due (UINT64_MAX: none spooled).
 */
static uint64_t push_due(struct pusher *p)
{
	uint64_t now = clock_mono_ns(), next = UINT64_MAX;
	size_t first = SIZE_MAX;

	for (size_t i = 0; i < p->nspool; i++) {
		if (p->spool[i].retry_at < next) {
			next = p->spool[i].retry_at;
			first = i;
		}
	}
	if (first == SIZE_MAX)
		return UINT64_MAX;
	if (next < p->server_retry_at)
		next = p->server_retry_at;
	if (next > now)
		return next;
	push_one(p, first);
	return 0;
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

/* OTLP: the resource of sample @i, by its image's service (res_of: service -> resource, or -1). */
struct otlp_grouping {
	const struct services *ss;
	const int *res_of;
};

static bool same_attrs(const struct otlp_resource *a, const struct otlp_resource *b)
{
	if (a->nattrs != b->nattrs)
		return false;
	for (size_t i = 0; i < a->nattrs; i++) {
		const struct otlp_attr *x = &a->attrs[i], *y = &b->attrs[i];

		if (strcmp(x->key, y->key) || x->num != y->num || !x->str != !y->str ||
		    (x->str && strcmp(x->str, y->str)))
			return false;
	}
	return true;
}

static int otlp_resource_of(void *ctx, const struct session *s, size_t i)
{
	const struct otlp_grouping *g = ctx;

	return g->res_of[g->ss->of_image[session__sample(s, i)->image]];
}

/* @len bytes gzipped into a malloc'ed *@out. @return 0 or -ENOMEM. */
static int gzip_buf(const void *data, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	uLong cap;
	uint8_t *buf;
	int ret;

	/* 16 + window bits: a gzip header and trailer */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	cap = deflateBound(&z, len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = len;
	z.next_out = buf;
	z.avail_out = cap;
	ret = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*outlen = cap - z.avail_out;
	return 0;
}

/*
 * A window's one ExportProfilesServiceRequest: a resource per service with
 * samples, in the order they were found, gzipped when the settings say so,
 * written aside. @return 0 or -errno.
 */
static int convert_otlp(struct pusher *p, const struct window *w, const struct session *s,
			const struct services *ss, const bool *has)
{
	const struct otel_list *extra = p->o.otel ? &p->o.otel->resource : NULL;
	size_t per = OTEL_SERVICE_ATTRS + (extra ? extra->n : 0), nres = 0, len = 0, gzlen = 0;
	struct otlp_resource *res = calloc(ss->n + 1, sizeof(*res));
	struct otlp_attr *attrs = calloc((ss->n + 1) * per, sizeof(*attrs));
	int *res_of = calloc(ss->n + 1, sizeof(*res_of));
	struct otlp_grouping g = { ss, res_of };
	bool gz = p->o.otel && p->o.otel->gzip;
	char *data = NULL;
	uint8_t *gzdata = NULL;
	FILE *mem = NULL;
	int err = -ENOMEM;

	if (!res || !attrs || !res_of)
		goto out;
	for (size_t i = 0; i < ss->n; i++) {
		size_t same = 0;

		res_of[i] = -1;
		if (!has[i])
			continue;
		res[nres].attrs = attrs + nres * per;
		res[nres].nattrs = otel_resource_attrs(&ss->sv[i], p->o.host, extra,
						       attrs + nres * per);
		/*
		 * A resource is its attributes: services they do not tell apart
		 * (one script's name in two folders) are one, not one twice
		 */
		while (same < nres && !same_attrs(&res[same], &res[nres]))
			same++;
		res_of[i] = (int)same;
		nres += same == nres;
	}
	if (!nres) {
		err = 0;
		goto out;
	}
	{
		struct otlp_opts oo = {
			.no_symbolize = p->o.no_symbolize, .no_thread_label = true,
			.resources = res, .nresources = nres,
			.resource_of = otlp_resource_of, .ctx = &g,
			.time_ns = w->from * 1000000000ull,
			.duration_ns = (w->until - w->from) * 1000000000ull,
		};

		mem = open_memstream(&data, &len);
		if (!mem)
			goto out;
		err = export_otlp_opts(s, mem, &oo);
		if (fclose(mem) && !err)
			err = -ENOMEM;
	}
	if (!err && gz)
		err = gzip_buf(data, len, &gzdata, &gzlen);
	if (!err)
		err = spool_write(p, w->until, gz ? "gzip" : "", gz ? (void *)gzdata : data,
				  gz ? gzlen : len);
	/* past the bound, or no room on a full disk: dropped, counted */
	if (err == -EFBIG || err == -ENOSPC) {
		count(p, err == -EFBIG ? &p->st.dropped : &p->st.dropped_full);
		count(p, &p->st.payloads);
		err = 0;
	}
out:
	free(data);
	free(gzdata);
	free(res);
	free(attrs);
	free(res_of);
	return err;
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

		service_of(p->o.group_by, im->cgroup, im->exe, im->script, im->comm, &sv);
		memset(key, 0, sizeof(key));
		snprintf(key, sizeof(key), "%s|%s|%s|%s|%s|%s", sv.name, sv.container_id,
			 sv.pod_uid, sv.exe, sv.script, sv.module);
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

/*
 * Make a window into payloads written aside (commit_window spools them):
 * for /ingest one per service with samples, for connect one PushRequest
 * with a series per service. @return 0 or -errno.
 */
static int convert(struct pusher *p, const struct window *w)
{
	struct session_opts sopts = { .sym = { .no_debuginfod = true, .no_lines = true } };
	struct services ss = { 0 };
	struct profile_diag diag = { "" };
	struct connect_request req = { 0 };
	bool connect = p->o.api == PUSH_API_CONNECT;
	struct session *s;
	bool *has;
	int err = 0;

	/* a server that symbolizes gets no names from here: no inlined ones either */
	sopts.sym.no_inline = p->o.no_inline || p->o.no_symbolize;
	sopts.sym.python_only = p->o.python_only;
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
	if (p->o.api == PUSH_API_OTLP) {
		err = convert_otlp(p, w, s, &ss, has);
		free(has);
		goto out;
	}
	for (size_t i = 0; i < ss.n && !err; i++) {
		struct pprof_opts po = {
			.no_symbolize = p->o.no_symbolize, .no_thread_label = true,
			.keep = keep_sample, .keep_ctx = &ss,
			.time_ns = w->from * 1000000000ull,
			.duration_ns = (w->until - w->from) * 1000000000ull,
		};
		/* names and labels bounded (service.h): at most 1300 bytes, each 3 URL-encoded */
		char query[4096], *data = NULL;
		size_t len = 0;
		FILE *mem;

		if (!has[i])
			continue;
		if (__atomic_load_n(&p->deadline, __ATOMIC_RELAXED) &&
		    clock_mono_ns() >= __atomic_load_n(&p->deadline, __ATOMIC_RELAXED)) {
			err = -ECANCELED;	/* stopping: the window is converted at the next start */
			break;
		}
		ss.current = i;
		if (connect)
			query[0] = '\0';
		else if (service_query(&ss.sv[i], p->o.host, w->from, w->until, p->o.sample_rate,
				       query, sizeof(query)) < 0)
			continue;	/* cannot be: names are bounded */
		mem = open_memstream(&data, &len);
		if (!mem) {
			err = -ENOMEM;
			break;
		}
		err = export_pprof_opts(s, mem, &po);
		if (fclose(mem) && !err)
			err = -ENOMEM;
		if (!err && connect) {
			struct connect_label labels[CONNECT_MAX_LABELS];
			char host[128];
			size_t nl = connect_labels(&ss.sv[i], p->o.host, host, labels);

			err = connect_request__add(&req, labels, nl, data, len);
			free(data);
			continue;
		}
		if (!err)
			err = spool_write(p, w->until, query, data, len);
		free(data);
		/* a payload past the bound, or with no room on a full disk: dropped, counted */
		if (err == -EFBIG || err == -ENOSPC) {
			count(p, err == -EFBIG ? &p->st.dropped : &p->st.dropped_full);
			count(p, &p->st.payloads);
			err = 0;
			continue;
		}
	}
	/* the window's one request: from, until and the rate are in its profiles */
	if (!err && req.nseries) {
		err = spool_write(p, w->until, "", req.buf, req.len);
		if (err == -EFBIG || err == -ENOSPC) {
			count(p, err == -EFBIG ? &p->st.dropped : &p->st.dropped_full);
			count(p, &p->st.payloads);
			err = 0;
		}
	}
	connect_request__release(&req);
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

/* Make the window first queued into spooled payloads; called and returns with the lock held. */
static void take_window(struct pusher *p)
{
	struct window w = p->queue[0];
	struct stat st;
	int err;

	memmove(p->queue, p->queue + 1, (p->nqueue - 1) * sizeof(*p->queue));
	p->nqueue--;
	pthread_mutex_unlock(&p->lock);
	/* the windows written beside the spool need room too: twice the largest is left free */
	if (!stat(w.path, &st) && 2 * (uint64_t)st.st_blocks * 512 > p->reserve)
		p->reserve = 2 * (uint64_t)st.st_blocks * 512;
	err = convert(p, &w);
	/* a window that cannot be read is dropped, counted: converted, with no payload */
	if (!err || err == -EBADMSG) {
		int cerr = commit_window(p, w.until);

		if (cerr && cerr != -ENOMEM)
			err = cerr;
	} else {
		pending_discard(p);
	}
	if (err && err != -EBADMSG && err != -ECANCELED && p->o.log)
		fprintf(p->o.log, "sfprof agent: %s: %s: kept for the next run\n", w.path,
			strerror(-err));
	if ((!err || err == -EBADMSG) && !w.keep)
		unlink(w.path);
	pthread_mutex_lock(&p->lock);
	if (err == -EBADMSG)
		p->st.bad_windows++;
	else if (!err)
		p->st.windows++;
	free(w.path);
}

static void *run(void *arg)
{
	struct pusher *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		uint64_t next, until;
		struct timespec ts;

		p->st.spooled = p->nspool;
		p->st.spooled_bytes = p->disk;
		p->st.elsewhere = p->nelsewhere;
		if (p->deadline && clock_mono_ns() >= p->deadline)
			break;	/* what is left stays, for the next start */
		/*
		 * One window converted, then whatever is due pushed: when converting
		 * takes longer than a window lasts, the queue never empties, and
		 * converting it all first would never push.
		 */
		if (p->nqueue)
			take_window(p);
		else if (p->stopping && !p->nspool)
			break;
		pthread_mutex_unlock(&p->lock);
		next = push_due(p);
		pthread_mutex_lock(&p->lock);
		if (!next || p->nqueue || (p->deadline && clock_mono_ns() >= p->deadline))
			continue;
		if (p->stopping && next >= p->deadline)
			break;
		until = p->deadline && p->deadline < next ? p->deadline : next;
		if (until == UINT64_MAX) {
			pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		/* the condition variable waits on CLOCK_MONOTONIC (pusher__new) */
		ts.tv_sec = until / 1000000000ull;
		ts.tv_nsec = until % 1000000000ull;
		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
	p->st.spooled = p->nspool;
	p->st.spooled_bytes = p->disk;
	p->st.elsewhere = p->nelsewhere;
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The name of a window file: its from and until; false when it is not one. */
static bool window_of(const char *name, uint64_t *from, uint64_t *until)
{
	unsigned long long f, u;
	char end;

	if (sscanf(name, "window-%llu-%llu.sfprof%c", &f, &u, &end) != 2)
		return false;
	*from = f;
	*until = u;
	return true;
}

/*
 * Windows a run before us left unconverted, given again oldest first (their
 * names sort so): those of the spool's windows directory (deleted once
 * converted), and with @keep those of the output directory that ended after
 * the mark, which were written but never made into payloads (a crash).
 */
static void resume_windows(struct pusher *p, const char *dir, bool keep)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		uint64_t from, until;
		char path[4400];

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (window_of(name, &from, &until)) {
			if (!p->mark_new && until <= p->mark) {
				if (!keep)
					unlink(path);	/* converted, then a crash before it went */
			} else if (!keep || !p->mark_new) {
				pusher__window(p, path, from, until, keep);
			}
		} else if (!keep && name[0] == '.' && strstr(name, ".tmp")) {
			unlink(path);	/* a window a crash left unfinished: never whole */
		}
		free(names[i]);
	}
	free(names);
}

/* The oldest window waiting in the spool's windows directory: its until, or UINT64_MAX. */
static uint64_t oldest_waiting(const struct pusher *p)
{
	DIR *d = opendir(p->windows_dir);
	uint64_t oldest = UINT64_MAX, from, until;
	struct dirent *de;

	if (!d)
		return oldest;
	while ((de = readdir(d)))
		if (window_of(de->d_name, &from, &until) && until < oldest)
			oldest = until;
	closedir(d);
	return oldest;
}

/* The mark a run before us left, or one made now (before any window of ours, after any waiting). */
static void mark_open(struct pusher *p)
{
	char path[4200], buf[MARK_LEN + 1] = "";
	uint64_t now = (uint64_t)time(NULL), oldest;

	snprintf(path, sizeof(path), "%s/" MARK_NAME, p->o.spool_dir);
	p->mark_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (p->mark_fd >= 0 && pread(p->mark_fd, buf, MARK_LEN, 0) == MARK_LEN &&
	    buf[MARK_LEN - 1] == '\n' && isdigit((unsigned char)buf[0])) {
		p->mark = strtoull(buf, NULL, 10);
		p->disk += p->blksz;
		return;
	}
	p->mark_new = true;
	oldest = oldest_waiting(p);
	if (p->mark_fd >= 0 && mark_write(p, oldest <= now ? oldest - 1 : now)) {
		/* a full disk at the first start: delivery is then at least once */
		close(p->mark_fd);
		p->mark_fd = -1;
	}
	if (p->mark_fd >= 0)
		p->disk += p->blksz;
}

/*
 * The spool a run before us left: payloads a crash left aside spooled when
 * their window was committed (at or before the mark), removed otherwise;
 * the rest indexed, oldest first. @return 0 or -errno.
 */
static int spool_load(struct pusher *p)
{
	DIR *d = opendir(p->o.spool_dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		size_t len = strlen(name);
		unsigned long long until;
		char final[sizeof(p->spool->name)];

		if (name[0] != '.' || len <= 1 + strlen(TMP_SUFFIX) || len >= sizeof(final) ||
		    strcmp(name + len - strlen(TMP_SUFFIX), TMP_SUFFIX) ||
		    sscanf(name, ".%llu-", &until) != 1)
			continue;
		snprintf(final, sizeof(final), "%.*s" SPOOL_SUFFIX, (int)(len - 1 - strlen(TMP_SUFFIX)),
			 name + 1);
		if (p->mark_new || until > p->mark || renameat(dirfd(d), name, dirfd(d), final))
			unlinkat(dirfd(d), name, 0);
	}
	/* again, from the start: the payloads renamed above are seen as the others */
	rewinddir(d);
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		size_t len = strlen(name);
		struct spooled e = { .disk = 0 };
		struct stat st;

		if (name[0] == '.' || len <= strlen(SPOOL_SUFFIX) || len >= sizeof(e.name) ||
		    strcmp(name + len - strlen(SPOOL_SUFFIX), SPOOL_SUFFIX) ||
		    fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (VEC_RESERVE(p->spool, p->spool_cap, p->nspool + 1, 64)) {
			closedir(d);
			return -ENOMEM;
		}
		memcpy(e.name, name, len + 1);
		e.disk = round_blocks(p, st.st_size);
		if ((uint64_t)st.st_blocks * 512 > e.disk)
			e.disk = st.st_blocks * 512;
		p->spool[p->nspool++] = e;
		p->disk += e.disk;
	}
	closedir(d);
	if (p->nspool)	/* none: no array (UBSan: qsort of NULL) */
		qsort(p->spool, p->nspool, sizeof(*p->spool), cmp_spooled);
	/* a bound lowered since: the oldest go now */
	spool_make_room(p, 0);
	return 0;
}

/*
 * OTLP: the OTEL_EXPORTER_OTLP_*HEADERS appended to the headers, then the
 * same list again with Content-Encoding: gzip, for the payloads made
 * gzipped (a spool may hold both kinds). @return 0, -EINVAL or -ENOMEM.
 */
static int otlp_headers(struct pusher *p)
{
	const struct otel_list *h = p->o.otel ? &p->o.otel->headers : NULL;
	struct curl_slist *gz = NULL, *l;

	for (const struct curl_slist *c = p->headers; c; c = c->next) {
		if (!(l = curl_slist_append(gz, c->data)))
			goto oom;
		gz = l;
	}
	if (!(l = curl_slist_append(gz, "Content-Encoding: gzip")))
		goto oom;
	gz = l;
	for (size_t i = 0; h && i < h->n; i++) {
		char *line;
		int n;

		/* "Name;" is curl's way to send a header with an empty value */
		n = h->kv[i].value[0] ? asprintf(&line, "%s: %s", h->kv[i].key, h->kv[i].value) :
					asprintf(&line, "%s;", h->kv[i].key);
		if (n < 0)
			goto oom;
		l = curl_slist_append(p->headers, line);
		if (l) {
			p->headers = l;
			l = curl_slist_append(gz, line);
			if (l)
				gz = l;
		}
		/* header values may be secrets (an API key) */
		explicit_bzero(line, strlen(line));
		free(line);
		if (!l)
			goto oom;
	}
	p->headers_gz = gz;
	return 0;
oom:
	curl_slist_free_all(gz);
	return -ENOMEM;
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
	struct statvfs vfs;
	const char *path;
	pthread_condattr_t ca;
	size_t ulen;
	int e;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->o = *opts;
	p->mark_fd = -1;
	p->reserve = MIN_RESERVE;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (getrandom(&p->run_id, sizeof(p->run_id), GRND_NONBLOCK) != sizeof(p->run_id))
		p->run_id = (uint32_t)clock_mono_ns() ^ (uint32_t)getpid();
	p->api = opts->api == PUSH_API_CONNECT ? "connect" : opts->api == PUSH_API_OTLP ? "otlp" :
		 "ingest";
	/* the ingest endpoint: a URL naming only the server gets Pyroscope's path */
	path = strstr(opts->url, "://");
	path = path ? strchr(path + 3, '/') : NULL;
	ulen = strlen(opts->url) + sizeof("/ingest");
	p->url = malloc(ulen);
	if (!p->url) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (opts->api == PUSH_API_OTLP) {
		/* otel_export_read() made the endpoint: used as it is */
		snprintf(p->url, ulen, "%s", opts->url);
	} else if (opts->api == PUSH_API_CONNECT) {
		free(p->url);
		if (!(p->url = connect_url(opts->url))) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	} else if (!path || !strcmp(path, "/")) {
		snprintf(p->url, ulen, "%.*s/ingest", (int)(path ? path - opts->url : (ptrdiff_t)strlen(opts->url)),
			 opts->url);
	} else {
		snprintf(p->url, ulen, "%s", opts->url);
	}
	if ((e = make_dir(opts->spool_dir)) ||
	    (e = push_spool_windows_dir(opts->spool_dir, p->windows_dir, sizeof(p->windows_dir))) ||
	    (e = make_dir(p->windows_dir))) {
		snprintf(err, errlen, "spool directory %s: %s", opts->spool_dir, strerror(-e));
		goto fail;
	}
	p->blksz = !statvfs(opts->spool_dir, &vfs) && vfs.f_frsize >= 512 ? vfs.f_frsize : 4096;
	mark_open(p);
	if ((e = spool_load(p))) {
		snprintf(err, errlen, "spool directory %s: %s", opts->spool_dir, strerror(-e));
		goto fail;
	}
	p->curl = curl_easy_init();
	p->multi = curl_multi_init();
	/* connect's unary protocol: the codec in the content type, the version in a header */
	p->headers = curl_slist_append(NULL, opts->api == PUSH_API_CONNECT ?
				       "Content-Type: application/proto" :
				       opts->api == PUSH_API_OTLP ? "Content-Type: application/x-protobuf" :
				       "Content-Type: binary/octet-stream");
	if (p->headers && opts->api == PUSH_API_CONNECT) {
		struct curl_slist *l = curl_slist_append(p->headers, "Connect-Protocol-Version: 1");

		if (!l)
			goto fail;
		p->headers = l;
	}
	if (p->headers) {
		/* no 100-continue round trip (a server that ignores it costs a second a push) */
		struct curl_slist *l = curl_slist_append(p->headers, "Expect:");

		if (!l)
			goto fail;
		p->headers = l;
	}
	if (!p->curl || !p->multi || !p->headers) {
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
	if (opts->api == PUSH_API_OTLP && (e = otlp_headers(p))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->headers);
	if (opts->basic_auth) {
		curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(p->curl, CURLOPT_USERPWD, opts->basic_auth);
	}
	/* a thread of its own: no signals for timeouts */
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(opts->push_timeout_secs < 5 ? opts->push_timeout_secs * 1000 : 5000));
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, (long)(opts->push_timeout_secs * 1000));
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, keep_body);
	curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(p->curl, CURLOPT_HEADERDATA, p);
	curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "sfprof-agent");
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	resume_windows(p, p->windows_dir, false);
	if (opts->output_dir)
		resume_windows(p, opts->output_dir, true);
	p->st.spooled = p->nspool;
	p->st.spooled_bytes = p->disk;
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
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void pusher__stats(struct pusher *p, struct push_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}

/* From now on, at most opts.flush_secs more: a transfer under way is cut then. */
void pusher__begin_stop(struct pusher *p)
{
	uint64_t deadline;

	if (!p)
		return;
	deadline = clock_mono_ns() + (uint64_t)(p->o.flush_secs * 1e9);
	pthread_mutex_lock(&p->lock);
	if (!p->deadline)
		__atomic_store_n(&p->deadline, deadline ? deadline : 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (p->multi)
		curl_multi_wakeup(p->multi);
}

void pusher__stop(struct pusher *p, struct push_stats *st)
{
	if (!p)
		return;
	if (p->started) {
		pusher__begin_stop(p);
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	pending_discard(p);
	if (st)
		pusher__stats(p, st);
	for (size_t i = 0; i < p->nqueue; i++)
		free(p->queue[i].path);
	free(p->queue);
	free(p->spool);
	free(p->pending);
	if (p->mark_fd >= 0)
		close(p->mark_fd);
	if (p->multi)
		curl_multi_cleanup(p->multi);
	if (p->curl)
		curl_easy_cleanup(p->curl);
	curl_slist_free_all(p->headers);
	curl_slist_free_all(p->headers_gz);
	symbolizer__free(p->sym);
	free(p->url);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
