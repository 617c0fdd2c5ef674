/* The probes' file descriptors and threads against RLIMIT_NOFILE and the
 * cgroup's pids.max. See proclimits.h. */
#include "proclimits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"

/* Whether the comma-separated controller list `list` (len bytes) names
 * the pids controller. */
static bool lists_pids(const char *list, size_t len)
{
	for (const char *c = list; c < list + len;) {
		const char *comma = memchr(c, ',', (size_t)(list + len - c));
		size_t n = comma ? (size_t)(comma - c) : (size_t)(list + len - c);

		if (n == 4 && strncmp(c, "pids", 4) == 0) {
			return true;
		}
		c += n + 1;
	}
	return false;
}

char *limits_pids_max_path(const char *proc_cgroup, const char *root)
{
	const char *v2 = NULL, *v2_end = NULL;
	char *path = NULL;

	/* each line: ID:CONTROLLERS:PATH; v1's pids hierarchy wins over v2's */
	for (const char *p = proc_cgroup; p && *p;) {
		const char *nl = strchrnul(p, '\n');
		const char *c1 = memchr(p, ':', (size_t)(nl - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nl - c1 - 1)) : NULL;

		if (c2 && c2 == c1 + 1 && strncmp(p, "0:", 2) == 0) {
			v2 = c2 + 1;
			v2_end = nl;
		} else if (c2 && lists_pids(c1 + 1, (size_t)(c2 - c1 - 1))) {
			if (asprintf(&path, "%s/%.*s%.*s/pids.max", root, (int)(c2 - c1 - 1), c1 + 1,
				     (int)(nl - c2 - 1), c2 + 1) < 0) {
				return NULL;
			}
			return path;
		}
		p = *nl ? nl + 1 : NULL;
	}
	if (v2 && asprintf(&path, "%s%.*s/pids.max", root, (int)(v2_end - v2), v2) < 0) {
		return NULL;
	}
	return path;
}

uint64_t limits_parse_pids_max(const char *text)
{
	unsigned long long v;
	char *end;

	/* "max" (no limit) and anything that is not a number: none */
	if (!text || text[0] < '0' || text[0] > '9') {
		return 0;
	}
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno != 0 || (*end != '\0' && strcmp(end, "\n") != 0)) {
		return 0;
	}
	return v;
}

uint64_t limits_read_pids_max(const char *proc_cgroup_path, const char *root)
{
	_cleanup_free_ char *cg = NULL, *max = NULL, *path = NULL;

	if (read_virtual_file(proc_cgroup_path, 1 << 16, &cg) < 0) {
		return 0;
	}
	path = limits_pids_max_path(cg, root);
	if (!path || read_virtual_file(path, 64, &max) < 0) {
		return 0;
	}
	return limits_parse_pids_max(max);
}

int limits_check(const struct config *cfg)
{
	struct rlimit rl;
	uint64_t nofile = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		nofile = rl.rlim_cur;
	}
	return limits_check_against(cfg, nofile, limits_read_pids_max("/proc/self/cgroup", "/sys/fs/cgroup"));
}

int limits_check_against(const struct config *cfg, uint64_t nofile, uint64_t pids)
{
	uint64_t fds = LIMITS_BASE_FDS + cfg->max_connections, tasks = LIMITS_BASE_TASKS;
	int r = 0;

	for (size_t i = 0; i < cfg->n_probes && r == 0; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		unsigned jobs = pc->numjobs ? pc->numjobs : 1;

		/* a run and a stuck one: their files, directory and engine;
		 * the probe's thread, their run threads and jobs */
		fds += 2 * ((pc->nrfiles ? pc->nrfiles : 1) + 2 + jobs);
		tasks += 1 + 2 * (1 + jobs);
		if (nofile && fds > nofile) {
			r = log_error_errno(-EINVAL,
					    "%s:%u: [%s]: the probes up to here (nrfiles, numjobs) and "
					    "max_connections need up to %" PRIu64
					    " file descriptors, more than LimitNOFILE=%" PRIu64,
					    cfg->path, pc->line, pc->name, fds, nofile);
		} else if (pids && tasks > pids) {
			r = log_error_errno(-EINVAL,
					    "%s:%u: [%s]: the probes up to here (numjobs) need up to %" PRIu64
					    " threads, more than TasksMax=%" PRIu64,
					    cfg->path, pc->line, pc->name, tasks, pids);
		}
	}
	return r;
}
