/* A sampler over a fixture tree for the unit tests: a writable procfs
 * (diskstats, self/mountinfo, pressure/io copied from
 * FIXTURES_DIR/sampler/TREE/proc) next to the fixture's read-only sysfs, and
 * a fake clock the tests advance. */
#pragma once

#include <stdint.h>

#include "config.h"
#include "detect.h"
#include "sampler.h"

struct sampler_env {
	char dir[64];	    /* the writable procfs */
	char fixture[1024]; /* FIXTURES_DIR/sampler/TREE */
	char sys[1100];
	uint64_t mono, real; /* the fake clock, microseconds */
	struct config *cfg;
	struct sampler *s;
	struct detect *d; /* the detection stage, run after each sample */
};

/* config_text NULL: "[global]" (defaults, no probes). */
void sampler_env_setup(struct sampler_env *e, const char *tree, const char *config_text);
/* Switch to a private copy of the fixture's sysfs, to change under the sampler. */
void sampler_env_private_sysfs(struct sampler_env *e);
/* Put the fixture's proc/NAME in place as the procfs's diskstats. */
void sampler_env_diskstats(struct sampler_env *e, const char *name);
/* Advance the clock and take a sample (asserts success). */
struct sampler_snapshot *sampler_env_sample(struct sampler_env *e, uint64_t advance_sec);
void sampler_env_teardown(struct sampler_env *e);

void sampler_env_write_file(const char *path, const char *text);
