/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent: which service a process's samples go to (its container, executable or name), and its labels. */
#ifndef SFPROF_AGENT_SERVICE_H
#define SFPROF_AGENT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum group_by { GROUP_CONTAINER, GROUP_EXE, GROUP_COMM };

/* A container as its cgroup path names it. */
struct container {
	char id[65];		/* 64 hex digits; "" when the path names none */
	char pod_uid[37];	/* a Kubernetes pod's UID (8-4-4-4-12), "" when none */
	const char *runtime;	/* "docker", "containerd", "cri-o", "podman", "kubernetes" or NULL */
};

/**
 * container_from_cgroup() - the container a cgroup path names: a component
 * that is 64 hex digits, alone (cgroupfs drivers: /docker/ID,
 * /kubepods/burstable/podUID/ID) or in a systemd scope (docker-ID.scope,
 * cri-containerd-ID.scope, crio-ID.scope, libpod-ID.scope), the innermost
 * one; and a pod's UID from its slice (kubepods-burstable-podUID.slice, with
 * '_' for '-') or directory (podUID). @return true when either was found.
 */
bool container_from_cgroup(const char *cgroup, struct container *c);

/* One series: a service name and the labels that go with it. */
struct service {
	char name[128];		/* a container's short ID, or an executable's or command's name */
	char container_id[65];	/* "" when not in a container */
	char pod_uid[37];
	char exe[256];		/* the executable, when it is what the service is named after */
	char script[256];	/* a Python service's script, as its command line gives it, or "" */
	char module[256];	/* a Python service's module (python -m NAME), or "" */
};

/**
 * service_of() - the service of a process image: by container (@g
 * GROUP_CONTAINER; a process in none is named by its executable), by
 * executable or by command name. By executable, a CPython interpreter that
 * runs a script (@script, as the profile records it: its path, or
 * "-m NAME"; NULL or "" for none) is named by the script's basename or the
 * module, with the script's path or the module as a label: two Python
 * programs on a host are two services, not one "python3.11". Names and
 * label values keep letters, digits and "._-/:" and have any other byte as
 * '_' (a server's name syntax reserves "{},=").
 */
void service_of(enum group_by g, const char *cgroup, const char *exe, const char *script,
		const char *comm, struct service *sv);

/** @return whether two services are one series. */
bool service_equal(const struct service *a, const struct service *b);

/**
 * service_query() - the query string of a push of @sv's samples from @from
 * to @until (Unix seconds) to Pyroscope's /ingest: name=NAME{labels} (URL
 * encoded; labels host, container_id, pod_uid, exe, script, module: those
 * set), from, until, format=pprof, sampleRate, spyName.
 * @return its length, or -ENOSPC when @cap is too small.
 */
int service_query(const struct service *sv, const char *host, uint64_t from, uint64_t until,
		  uint32_t sample_rate, char *buf, size_t cap);

#endif
