/* The probes' file descriptors and threads against RLIMIT_NOFILE and the
 * cgroup's pids.max. See proclimits.h. */
#include "proclimits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"

/* pids.max of the cgroup this process is in (v2, or v1's pids controller);
 * 0 when there is none or it cannot be read. */
static uint64_t own_pids_max(void)
{
	_cleanup_free_ char *cg = NULL, *max = NULL, *path = NULL;
	const char *line = NULL;
	char *nl;
	uint64_t v;

	if (read_virtual_file("/proc/self/cgroup", 1 << 16, &cg) < 0) {
		return 0;
	}
	for (char *p = cg; p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl) {
			*nl = '\0';
		}
		if (strncmp(p, "0::", 3) == 0 && !line) {
			line = p + 3;
		} else if (strstr(p, ":pids:")) {
			line = strstr(p, ":pids:") + 5;
			if (asprintf(&path, "/sys/fs/cgroup/pids%s/pids.max", line) < 0) {
				return 0;
			}
			break;
		}
	}
	if (!path && (!line || asprintf(&path, "/sys/fs/cgroup%s/pids.max", line) < 0)) {
		return 0;
	}
	if (read_virtual_file(path, 64, &max) < 0 || sscanf(max, "%" SCNu64, &v) != 1) {
		return 0; /* absent, or "max" */
	}
	return v;
}

int limits_check(const struct config *cfg)
{
	uint64_t fds = LIMITS_BASE_FDS + cfg->max_connections, tasks = LIMITS_BASE_TASKS;
	uint64_t nofile = 0, pids = own_pids_max();
	struct rlimit rl;
	int r = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		nofile = rl.rlim_cur;
	}
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
