/* Device snapshots: reference counting and lookup. */
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refcount.h"
#include "topology.h"

static const char *const kind_names[_DEVICE_KIND_MAX] = {
    [DEVICE_KIND_DISK] = "disk", [DEVICE_KIND_PARTITION] = "partition", [DEVICE_KIND_MD] = "md",
    [DEVICE_KIND_DM] = "dm",	 [DEVICE_KIND_LOOP] = "loop",
};

const char *device_kind_to_string(enum device_kind k)
{
	return k < _DEVICE_KIND_MAX ? kind_names[k] : "unknown";
}

const char *device_members_join(const struct device_topology *t, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned k = 0; k < t->n_members && n < len; k++) {
		n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? "," : "", t->members[k]);
	}
	return buf;
}

static void sampler_snapshot_destroy(struct sampler_snapshot *s)
{
	/* the topology owns every string of devices[].topo */
	topology_unref(s->topology);
	free(s->devices);
	free(s->ebs);
	free(s->shared);
	free(s->instance.devices);
	free(s);
}

DEFINE_REFCOUNT(struct sampler_snapshot, sampler_snapshot, sampler_snapshot_destroy);

const struct device_state *sampler_snapshot_find(const struct sampler_snapshot *s, const char *name)
{
	for (size_t i = 0; s && i < s->n_devices; i++) {
		if (strcmp(s->devices[i].raw.name, name) == 0) {
			return &s->devices[i];
		}
	}
	return NULL;
}
