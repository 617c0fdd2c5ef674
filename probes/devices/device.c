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

size_t device_names_join(const char *const *names, size_t n, char *buf, size_t len)
{
	size_t total = 0;

	if (len > 0) {
		buf[0] = '\0';
	}
	for (size_t k = 0; k < n; k++) {
		size_t at = total < len ? total : len;

		total += (size_t)snprintf(len ? buf + at : NULL, len - at, "%s%s", k ? "," : "", names[k]);
	}
	return total;
}

char *device_names_join_new(const char *const *names, size_t n)
{
	size_t len = device_names_join(names, n, NULL, 0) + 1;
	char *s = malloc(len);

	if (s) {
		device_names_join(names, n, s, len);
	}
	return s;
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
