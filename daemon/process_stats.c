/* process_* metrics from /proc/self: one read() of stat, a count of fd/. */
#include "process_stats.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/resource.h>

#include "fileio.h"
#include "macro.h"
#include "units.h"

#define STAT_MAX_SIZE	   4096
#define PROC_STAT_MAX_SIZE (4u << 20)

/* Field numbers of proc_pid_stat(5), counted from 1. */
enum {
	STAT_FIELD_STATE = 3,
	STAT_FIELD_UTIME = 14,
	STAT_FIELD_STIME = 15,
	STAT_FIELD_STARTTIME = 22,
	STAT_FIELD_VSIZE = 23,
	STAT_FIELD_RSS = 24,
};

int process_stats_parse_stat(const char *text, long ticks_per_sec, uint64_t page_size,
			     struct process_stats *ret, uint64_t *ret_start_ticks)
{
	uint64_t v[STAT_FIELD_RSS + 1] = {0};
	const char *p;
	unsigned field = STAT_FIELD_STATE;

	if (ticks_per_sec <= 0) {
		return -EINVAL;
	}
	/* comm may contain spaces and parentheses: fields start after the last ')' */
	p = strrchr(text, ')');
	if (!p || p[1] != ' ') {
		return -EINVAL;
	}
	p += 2;
	while (field <= STAT_FIELD_RSS) {
		size_t n = strcspn(p, " \n");
		char tok[32];

		if (n == 0 || n >= sizeof(tok)) {
			return -EINVAL;
		}
		if (field != STAT_FIELD_STATE) {
			uint64_t x;

			memcpy(tok, p, n);
			tok[n] = '\0';
			/* fields before utime may be negative (tty, pgrp): only ours must parse */
			if (tok[0] == '-') {
				x = 0;
			} else if (parse_uint64(tok, &x) < 0) {
				return -EINVAL;
			}
			v[field] = x;
		}
		p += n;
		if (*p != ' ' && field < STAT_FIELD_RSS) {
			return -EINVAL;
		}
		if (*p == ' ') {
			p++;
		}
		field++;
	}
	ret->cpu_seconds = (double)(v[STAT_FIELD_UTIME] + v[STAT_FIELD_STIME]) / (double)ticks_per_sec;
	ret->virtual_memory_bytes = v[STAT_FIELD_VSIZE];
	ret->resident_memory_bytes = v[STAT_FIELD_RSS] * page_size;
	if (ret_start_ticks) {
		*ret_start_ticks = v[STAT_FIELD_STARTTIME];
	}
	return 0;
}

int process_stats_parse_btime(const char *text, uint64_t *ret_btime)
{
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, "btime ", 6) == 0) {
			char tok[32];
			size_t n = strcspn(p + 6, "\n");

			if (n == 0 || n >= sizeof(tok)) {
				return -EINVAL;
			}
			memcpy(tok, p + 6, n);
			tok[n] = '\0';
			return parse_uint64(tok, ret_btime);
		}
		p = strchr(p, '\n');
		if (p) {
			p++;
		}
	}
	return -ENOENT;
}

static int read_self_stat(struct process_stats *ret, uint64_t *ret_start_ticks)
{
	_cleanup_free_ char *buf = NULL;
	long page = sysconf(_SC_PAGESIZE);
	int r;

	r = read_virtual_file("/proc/self/stat", STAT_MAX_SIZE, &buf);
	if (r < 0) {
		return r;
	}
	return process_stats_parse_stat(buf, sysconf(_SC_CLK_TCK), page > 0 ? (uint64_t)page : 4096, ret,
					ret_start_ticks);
}

int process_stats_start_time(double *ret_seconds)
{
	_cleanup_free_ char *buf = NULL;
	struct process_stats tmp;
	uint64_t ticks, btime;
	int r;

	r = read_self_stat(&tmp, &ticks);
	if (r < 0) {
		return r;
	}
	r = read_virtual_file("/proc/stat", PROC_STAT_MAX_SIZE, &buf);
	if (r < 0) {
		return r;
	}
	r = process_stats_parse_btime(buf, &btime);
	if (r < 0) {
		return r;
	}
	*ret_seconds = (double)btime + (double)ticks / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

static int count_open_fds(uint64_t *ret)
{
	DIR *d;
	struct dirent *de;
	uint64_t n = 0;

	d = opendir("/proc/self/fd");
	if (!d) {
		return -errno;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] != '.') {
			n++;
		}
	}
	closedir(d);
	/* the directory stream's own fd was counted */
	*ret = n > 0 ? n - 1 : 0;
	return 0;
}

int process_stats_read(struct process_stats *ret)
{
	struct rlimit rl;
	int r;

	ret->available = false;
	r = read_self_stat(ret, NULL);
	if (r < 0) {
		return r;
	}
	r = count_open_fds(&ret->open_fds);
	if (r < 0) {
		return r;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		return -errno;
	}
	ret->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	ret->available = true;
	return 0;
}
