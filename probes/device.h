/* Devices as the daemon sees them: topology (from sysfs and mountinfo), the
 * latest raw counters and derived rates, and the ceiling state; and the
 * sampler that produces an immutable snapshot of all of them every second. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "diskstats.h"

enum device_kind {
	DEVICE_KIND_DISK,
	DEVICE_KIND_PARTITION,
	DEVICE_KIND_MD,
	DEVICE_KIND_DM,
	DEVICE_KIND_LOOP,
	_DEVICE_KIND_MAX,
};
const char *device_kind_to_string(enum device_kind k);

#define DEVICE_MAX_MEMBERS 64

struct device_topology {
	enum device_kind kind;
	char parent[DISKSTATS_NAME_MAX];   /* whole disk of a partition, "" otherwise */
	char *members;                     /* "xvdf,xvdg" for md/dm, "" otherwise */
	char *mountpoints;                 /* "/data,/srv", "" when unmounted */
	char *model;                       /* "" when sysfs has none */
	unsigned logical_block_size;
	bool is_rotational;
	uint64_t size_bytes;
};

/* Ceiling and limit state of a device (filled by the ceiling module). */
struct device_ceiling {
	uint64_t iops_limit;            /* declared, 0 = none */
	uint64_t throughput_limit;      /* declared bytes/s, 0 = none */
	double iops_limit_ratio;        /* observed / limit over the last interval, NAN when no limit */
	double throughput_limit_ratio;
	double at_ceiling_iops_seconds; /* counter */
	double at_ceiling_throughput_seconds;
	bool has_burst_model;
	double burst_balance_ratio;     /* 0..1 */
	bool is_throttled;
	bool is_saturated;
	double iops_ceiling_estimate;   /* 0 = none detected yet */
	double throughput_ceiling_estimate;
};

struct device_state {
	struct diskstats_raw raw;
	struct device_rates rates;      /* the device's own figures */
	bool has_member_rates;          /* md/dm: member-derived figures below */
	struct device_rates member_rates; /* fio's aggr: busiest member util, member-average ios/ticks */
	struct device_topology topo;
	struct device_ceiling ceiling;
};

struct pressure_io {
	bool available;
	uint64_t some_total_usec;
	uint64_t full_total_usec;
};

/* One immutable sample of every (filtered) device. Refcounted: the HTTP
 * thread may keep one while the sampler builds the next. */
struct sampler_snapshot {
	unsigned refcount;              /* atomic */
	uint64_t realtime_usec;         /* when it was taken */
	uint64_t monotonic_usec;
	uint64_t parse_errors_total;    /* malformed diskstats lines seen since start */
	struct device_state *devices;
	size_t n_devices;
	struct pressure_io pressure;
};

struct sampler_snapshot *sampler_snapshot_ref(struct sampler_snapshot *s);
struct sampler_snapshot *sampler_snapshot_unref(struct sampler_snapshot *s);
const struct device_state *sampler_snapshot_find(const struct sampler_snapshot *s, const char *name);

struct sampler;

/* Create a sampler reading PROCFS/diskstats, PROCFS/self/mountinfo,
 * PROCFS/pressure/io and SYSFS/block, with the config's filters and limits.
 * Takes no ownership of cfg, which must outlive the sampler (replace it with
 * sampler_set_config on reload). */
int sampler_new(const char *procfs, const char *sysfs, const struct config *cfg, struct sampler **ret);
struct sampler *sampler_free(struct sampler *s);
int sampler_set_config(struct sampler *s, const struct config *cfg);

/* Take one sample now. On success returns 0 and a new snapshot (refcount 1)
 * owned by the caller. */
int sampler_sample(struct sampler *s, struct sampler_snapshot **ret);
