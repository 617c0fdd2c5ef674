/* md array health from sysfs (md_health.h). */
#include "md_health.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fileio.h"
#include "sysfs.h"
#include "units.h"

/* failed_mask has a bit per member. */
_Static_assert(DEVICE_MAX_MEMBERS <= 64, "a member's bit must fit failed_mask (uint64_t)");

bool md_member_state_is_faulty(const char *state)
{
	const char *p = state;

	while (p && *p) {
		size_t n = strcspn(p, ", \n");

		if (n == strlen("faulty") && strncmp(p, "faulty", n) == 0) {
			return true;
		}
		p += n;
		p += strspn(p, ", \n");
	}
	return false;
}

unsigned md_health_degraded(const char *array_state, const char *degraded, unsigned n_faulty)
{
	uint64_t v;

	if (degraded && parse_uint64(degraded, &v) >= 0 && v <= UINT_MAX) {
		return (unsigned)v > n_faulty ? (unsigned)v : n_faulty;
	}
	if (array_state && strcmp(array_state, "broken") == 0 && n_faulty == 0) {
		return 1;
	}
	return n_faulty;
}

static int md_attr(const char *dir, const char *attr, char *buf, size_t len)
{
	char md[DISKSTATS_NAME_MAX + 32];

	if ((size_t)snprintf(md, sizeof(md), "md/%s", attr) >= sizeof(md)) {
		return -ENAMETOOLONG;
	}
	return sysfs_attr_read(dir, md, buf, len);
}

int md_health_read(const char *sysfs, const char *name, char *const *members, unsigned n_members,
		   struct md_health *ret)
{
	char dir[PATH_MAX], member[DISKSTATS_NAME_MAX], attr[DISKSTATS_NAME_MAX + 16], buf[64];
	char degraded[32];
	struct md_health h = {0};
	unsigned n_faulty = 0;
	bool has_degraded;
	int r;

	r = sysfs_block_dir(sysfs, name, dir, sizeof(dir));
	if (r == -ENAMETOOLONG) {
		return r;
	}
	if (md_attr(dir, "array_state", h.array_state, sizeof(h.array_state)) < 0) {
		*ret = h;
		return 0;
	}
	h.is_known = true;
	for (unsigned k = 0; k < n_members && k < DEVICE_MAX_MEMBERS; k++) {
		snprintf(member, sizeof(member), "%s", members[k]);
		/* md names the member directory after the kernel's name (dev-sdb) */
		for (char *c = member; *c; c++) {
			if (*c == '/') {
				*c = '!';
			}
		}
		snprintf(attr, sizeof(attr), "dev-%s/state", member);
		if (md_attr(dir, attr, buf, sizeof(buf)) >= 0 && md_member_state_is_faulty(buf)) {
			h.failed_mask |= UINT64_C(1) << k;
			n_faulty++;
		}
	}
	has_degraded = md_attr(dir, "degraded", degraded, sizeof(degraded)) >= 0;
	h.degraded = md_health_degraded(h.array_state, has_degraded ? degraded : NULL, n_faulty);
	*ret = h;
	return 0;
}
