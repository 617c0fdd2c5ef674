/* The health of an md array, read from sysfs every sample (a member's
 * failure changes no device's diskstats line, so the topology, refreshed
 * once a minute, would tell it late): which members md marked faulty and
 * how many members the array runs without. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define MD_ARRAY_STATE_MAX 24

struct md_health {
	bool is_known;			      /* an md device whose md/ attributes were read */
	char array_state[MD_ARRAY_STATE_MAX]; /* md/array_state: "clean", "active", "broken", ... */
	unsigned degraded;		      /* members missing or failed: md/degraded on a
					       * redundant level; on RAID0/linear, which have
					       * none, the faulty members, at least 1 once the
					       * kernel calls the array "broken" */
	uint64_t failed_mask;		      /* bit k: the k-th name of the device's members
					       * (sysfs slaves/) is faulty (md/dev-NAME/state) */
};

/* Whether md/dev-NAME/state ("in_sync", "faulty", "faulty,write_mostly")
 * says the member failed. Pure. */
bool md_member_state_is_faulty(const char *state);

/* The array's degraded count from what sysfs said: `degraded` is the text
 * of md/degraded (NULL when absent, as on RAID0), `n_faulty` the members
 * found faulty. Pure. */
unsigned md_health_degraded(const char *array_state, const char *degraded, unsigned n_faulty);

/* Read the md/ directory of the array `name` (its sysfs directory, as
 * sysfs.h finds it) whose members are the n_members names of `members`
 * (bit k of failed_mask is members[k]). Returns 0 (ret->is_known false when
 * the md/ directory is not there), or -errno on a path too long. */
int md_health_read(const char *sysfs, const char *name, char *const *members, unsigned n_members,
		   struct md_health *ret);
