/* The fixture-tree sampler of the unit tests (see sampler-env.h). */
#include "sampler-env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "macro.h"

static uint64_t fake_clock(clockid_t clock, void *userdata)
{
	struct sampler_env *e = userdata;

	return clock == CLOCK_MONOTONIC ? e->mono : e->real;
}

static void copy_file(const char *from, const char *to)
{
	_cleanup_free_ char *buf = NULL;
	FILE *f;
	int n;

	n = read_virtual_file(from, 1 << 20, &buf);
	assert_true(n >= 0);
	f = fopen(to, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, (size_t)n, f), (size_t)n);
	assert_int_equal(fclose(f), 0);
}

void sampler_env_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

void sampler_env_diskstats(struct sampler_env *e, const char *name)
{
	char from[1200], to[128];

	snprintf(from, sizeof(from), "%s/proc/%s", e->fixture, name);
	snprintf(to, sizeof(to), "%s/diskstats", e->dir);
	copy_file(from, to);
}

void sampler_env_setup(struct sampler_env *e, const char *tree, const char *config_text)
{
	struct config_errors errs = {0};
	char from[1200], to[128];

	*e = (struct sampler_env){.mono = 1000 * USEC_PER_SEC, .real = 1700000000 * USEC_PER_SEC};
	snprintf(e->dir, sizeof(e->dir), "/tmp/iopsd-test-sampler-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->fixture, sizeof(e->fixture), "%s/sampler/%s", FIXTURES_DIR, tree);
	snprintf(e->sys, sizeof(e->sys), "%s/sys", e->fixture);
	snprintf(to, sizeof(to), "%s/self", e->dir);
	assert_int_equal(mkdir(to, 0755), 0);
	snprintf(from, sizeof(from), "%s/proc/self/mountinfo", e->fixture);
	snprintf(to, sizeof(to), "%s/self/mountinfo", e->dir);
	copy_file(from, to);
	snprintf(from, sizeof(from), "%s/proc/pressure/io", e->fixture);
	if (access(from, F_OK) == 0) {
		snprintf(to, sizeof(to), "%s/pressure", e->dir);
		assert_int_equal(mkdir(to, 0755), 0);
		snprintf(to, sizeof(to), "%s/pressure/io", e->dir);
		copy_file(from, to);
	}
	sampler_env_diskstats(e, "diskstats");
	assert_int_equal(
	    config_load_string("test.conf", config_text ? config_text : "[global]\n", &errs, &e->cfg), 0);
	assert_int_equal(sampler_new(e->dir, e->sys, e->cfg, &e->s), 0);
	sampler_set_clock(e->s, fake_clock, e);
	assert_int_equal(detect_new(e->cfg, &e->d), 0);
}

void sampler_env_private_sysfs(struct sampler_env *e)
{
	char cmd[2400];

	snprintf(e->sys, sizeof(e->sys), "%s/sys", e->dir);
	snprintf(cmd, sizeof(cmd), "cp -a '%s/sys' '%s'", e->fixture, e->sys);
	assert_int_equal(system(cmd), 0);
	sampler_free(e->s);
	assert_int_equal(sampler_new(e->dir, e->sys, e->cfg, &e->s), 0);
	sampler_set_clock(e->s, fake_clock, e);
}

void sampler_env_teardown(struct sampler_env *e)
{
	char cmd[128];

	detect_free(e->d);
	sampler_free(e->s);
	config_free(e->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	assert_int_equal(system(cmd), 0);
}

struct sampler_snapshot *sampler_env_sample(struct sampler_env *e, uint64_t advance_sec)
{
	struct sampler_snapshot *snap = NULL;

	e->mono += advance_sec * USEC_PER_SEC;
	e->real += advance_sec * USEC_PER_SEC;
	assert_int_equal(sampler_sample(e->s, &snap), 0);
	assert_non_null(snap);
	assert_int_equal(detect_run(e->d, sampler_last_sample(e->s), snap), 0);
	return snap;
}
