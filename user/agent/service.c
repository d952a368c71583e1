/* SPDX-License-Identifier: BSD-2-Clause */
/* Services of sfprof agent: container IDs from cgroup paths, names and labels, Pyroscope's query string. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "service.h"

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* A pod UID, 8-4-4-4-12 hex digits with '-' or (in a systemd slice) '_'; copied with '-'. */
static bool pod_uid(const char *s, size_t n, char out[37])
{
	static const size_t dash[] = { 8, 13, 18, 23 };

	if (n != 36)
		return false;
	for (size_t i = 0, d = 0; i < n; i++) {
		if (d < 4 && i == dash[d]) {
			if (s[i] != '-' && s[i] != '_')
				return false;
			out[i] = '-';
			d++;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		} else {
			out[i] = (char)tolower((unsigned char)s[i]);
		}
	}
	out[36] = '\0';
	return true;
}

static const struct {
	const char *prefix;
	const char *runtime;
} scopes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "containerd-", "containerd" },
	{ "crio-", "cri-o" },
	{ "libpod-", "podman" },
	{ "", NULL },	/* cgroupfs: the ID alone */
};

/* A container ID in one path component of @n bytes. */
static bool component_id(const char *s, size_t n, struct container *c, const char *parent)
{
	const char *end = s + n;

	if (n > 6 && !memcmp(end - 6, ".scope", 6))
		end -= 6;
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t pl = strlen(scopes[i].prefix);

		if ((size_t)(end - s) != pl + 64 || memcmp(s, scopes[i].prefix, pl) ||
		    !all_hex(s + pl, 64))
			continue;
		memcpy(c->id, s + pl, 64);
		c->id[64] = '\0';
		c->runtime = scopes[i].runtime;
		/* cgroupfs names no runtime: the directory above may (/docker/ID) */
		if (!c->runtime && parent && !strncmp(parent, "docker/", 7))
			c->runtime = "docker";
		return true;
	}
	return false;
}

bool container_from_cgroup(const char *cgroup, struct container *c)
{
	const char *p = cgroup, *prev = NULL;

	memset(c, 0, sizeof(*c));
	if (!cgroup)
		return false;
	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		/* the innermost container wins: a pod's sandbox is above its containers */
		component_id(p, n, c, prev);
		if (n > 3 && !memcmp(p, "pod", 3))
			pod_uid(p + 3, n - 3, c->pod_uid);
		else if (n > 3 + 6 && !memcmp(p + n - 6, ".slice", 6)) {
			const char *pod = memmem(p, n, "-pod", 4);

			if (pod)
				pod_uid(pod + 4, p + n - 6 - (pod + 4), c->pod_uid);
		}
		prev = p;
		p += n;
	}
	if (c->pod_uid[0] && (!c->runtime || !c->id[0]))
		c->runtime = c->runtime ? c->runtime : "kubernetes";
	return c->id[0] || c->pod_uid[0];
}

/* Copy @s into @out (@cap bytes) keeping a server's name syntax out: other bytes become '_'. */
static void clean(char *out, size_t cap, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < cap; s++)
		out[i++] = isalnum((unsigned char)*s) || strchr("._-/:", *s) ? *s : '_';
	out[i] = '\0';
}

/* Name @sv after the script @script (its path, or "-m NAME") of a Python process. */
static void python_service(const char *script, struct service *sv)
{
	const char *base;

	if (!strncmp(script, "-m ", 3)) {
		clean(sv->name, sizeof(sv->name), script + 3);
		clean(sv->module, sizeof(sv->module), script + 3);
		return;
	}
	base = strrchr(script, '/');
	clean(sv->name, sizeof(sv->name), base && base[1] ? base + 1 : script);
	clean(sv->script, sizeof(sv->script), script);
}

void service_of(enum group_by g, const char *cgroup, const char *exe, const char *script,
		const char *comm, struct service *sv)
{
	const char *base = exe && *exe ? strrchr(exe, '/') : NULL;
	struct container c;

	memset(sv, 0, sizeof(*sv));
	if (g == GROUP_CONTAINER && container_from_cgroup(cgroup, &c)) {
		char name[80];

		/* docker ps shows 12 digits; a pod without a container ID its UID */
		if (c.id[0])
			snprintf(name, sizeof(name), "%s-%.12s", c.runtime ? c.runtime : "container",
				 c.id);
		else
			snprintf(name, sizeof(name), "pod-%s", c.pod_uid);
		clean(sv->name, sizeof(sv->name), name);
		memcpy(sv->container_id, c.id, sizeof(sv->container_id));
		memcpy(sv->pod_uid, c.pod_uid, sizeof(sv->pod_uid));
		return;
	}
	if (g != GROUP_COMM && exe && *exe) {
		clean(sv->name, sizeof(sv->name), base ? base + 1 : exe);
		clean(sv->exe, sizeof(sv->exe), exe);
		if (script && *script)
			python_service(script, sv);
		if (sv->name[0])
			return;
	}
	clean(sv->name, sizeof(sv->name), comm && *comm ? comm : "unknown");
}

bool service_equal(const struct service *a, const struct service *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->container_id, b->container_id) &&
	       !strcmp(a->pod_uid, b->pod_uid) && !strcmp(a->exe, b->exe) &&
	       !strcmp(a->script, b->script) && !strcmp(a->module, b->module);
}

/* Append @s URL-encoded (RFC 3986 unreserved bytes as they are). */
static void put_enc(char *buf, size_t cap, size_t *len, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || strchr("-._~", ch)) {
			if (*len + 1 < cap)
				buf[*len] = ch;
			(*len)++;
		} else {
			if (*len + 3 < cap)
				snprintf(buf + *len, 4, "%%%02X", ch);
			*len += 3;
		}
	}
}

int service_query(const struct service *sv, const char *host, uint64_t from, uint64_t until,
		  uint32_t sample_rate, char *buf, size_t cap)
{
	char name[1300], hostc[128];
	size_t len = 0;
	int n;

	clean(hostc, sizeof(hostc), host);
	n = snprintf(name, sizeof(name), "%s{host=%s%s%s%s%s%s%s%s%s%s%s}", sv->name, hostc,
		     sv->container_id[0] ? ",container_id=" : "", sv->container_id,
		     sv->pod_uid[0] ? ",pod_uid=" : "", sv->pod_uid,
		     sv->exe[0] ? ",exe=" : "", sv->exe,
		     sv->script[0] ? ",script=" : "", sv->script,
		     sv->module[0] ? ",module=" : "", sv->module);
	if (n < 0 || (size_t)n >= sizeof(name))
		return -ENOSPC;
	if (cap > 5)
		memcpy(buf, "name=", 5);
	len = 5;
	put_enc(buf, cap, &len, name);
	if (len < cap)
		buf[len] = '\0';
	n = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0,
		     "&from=%llu&until=%llu&format=pprof&sampleRate=%u&spyName=sfprof",
		     (unsigned long long)from, (unsigned long long)until, sample_rate);
	if (n < 0 || len + n >= cap)
		return -ENOSPC;
	return (int)(len + n);
}
