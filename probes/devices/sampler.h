/* The sampler: every second an immutable snapshot of the devices (their
 * topology, raw counters and derived rates; the detection stage,
 * probes/detect/, fills in their ceilings before it is published). The
 * device types are in device.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <sys/types.h>

#include "dmi.h"
#include "config.h"
#include "diskstats.h"
#include "device.h"
#include "md_health.h"
#include "pressure.h"

struct device_state {
	struct diskstats_raw raw;  /* counters as the kernel printed them (sectors of
				    * 512 bytes, times in ms, 32-bit time fields wrap) */
	struct device_rates rates; /* the device's own figures; valid=false on the first
				    * sample of a device, after it vanished and came
				    * back, and when its counters were reset */
	bool has_member_rates;	   /* md/dm: member-derived figures below */
	/* fio's "aggr" figures for an md/dm device, which accounts no busy time
	 * of its own (md0 util=0% while its members run at 88%):
	 *   utilization = the busiest member's (fio aggrutil);
	 *   every other field = the average over the members (fio aggrios,
	 *   aggrmerge, aggrticks, aggrin_queue are member sums / member count):
	 *   read_iops, *_bytes_per_sec, *_merges_per_sec and queue_depth are
	 *   per-member averages, and *_await_sec = averaged ticks / averaged ios.
	 * valid=false when any member's own rates are invalid. */
	struct device_rates member_rates;
	struct device_topology topo;
	struct device_ceiling ceiling;
	struct md_health md; /* md arrays: failed members, degraded (is_known
			      * false for other devices) */
};

/* One immutable sample of every (filtered) device. Refcounted: the HTTP
 * thread may keep one while the sampler builds the next. */
struct topology;

struct ebs_nvme_volume;
struct shared_ceiling_group;

struct sampler_snapshot {
	unsigned refcount;	/* atomic */
	uint64_t realtime_usec; /* when it was taken */
	uint64_t monotonic_usec;
	uint64_t parse_errors_total;  /* malformed diskstats lines seen since start */
	struct device_state *devices; /* the filtered devices, in /proc/diskstats order */
	size_t n_devices;
	struct pressure_io pressure;
	/* extensions (sampler) */
	struct topology *topology;   /* owned reference; holds the topo strings (may be NULL) */
	uint64_t samples_total;	     /* sampler_sample() calls that succeeded, this one included */
	size_t n_devices_seen;	     /* lines in /proc/diskstats, before filtering */
	size_t n_devices_dropped;    /* kept by the filter but over max_devices */
	struct ebs_nvme_volume *ebs; /* EBS NVMe volumes' log page 0xD0 (probes/devices/ebs_nvme.h), owned */
	size_t n_ebs;
	struct shared_ceiling_group *shared; /* ceilings shared by several devices
					      * (probes/detect/shared_ceiling.h), owned */
	size_t n_shared;
	struct instance_state instance;
	struct dmi_info dmi; /* the machine's vendor and product (EC2: the instance type) */
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
/* Switch to cfg (always: the old one may be freed right after) and re-apply
 * the filter and [device] sections. -EINVAL when a device regex does not
 * compile; the previous regexes then stay in force. */
int sampler_set_config(struct sampler *s, const struct config *cfg);

/* The probes (daemon/identities.h): the devices that hold their targets
 * are sampled whatever the filter says. Borrowed: valid until the next call
 * (set it again whenever they change). */
struct probe_identity;
void sampler_set_identities(struct sampler *s, struct probe_identity *const *ids, size_t n);

/* Take one sample now. On success returns 0 and a new snapshot (refcount 1)
 * owned by the caller. Errors (-errno): PROCFS/diskstats unreadable, or
 * -ENOMEM; the previous state is kept so the next sample still derives. */
int sampler_sample(struct sampler *s, struct sampler_snapshot **ret);

/* Read PROCFS/diskstats now, between samples, for the reads and writes
 * completed so far by each of names[0..n-1] (UINT64_MAX: not there), and
 * when (CLOCK_MONOTONIC, read right after): the pulse test's reads
 * (pulse.h), every 50 ms for a device in the first seconds of a demand.
 * Leaves the samples alone. Returns the devices found, or -errno. */
int sampler_read_ios(struct sampler *s, const char *const *names, size_t n, uint64_t *ret_ios,
		     uint64_t *ret_monotonic_usec);

/* A device of the last sample as the detection stage (probes/detect/) reads
 * it: every line of /proc/diskstats, kept by the filter or not, since an
 * array's members are followed even when the filter drops them. */
struct topology_device;
struct sample_device {
	const char *name;
	const struct device_rates *rates;
	const struct device_rates *member_rates; /* md/dm with members, NULL otherwise */
	const struct device_config *dc;		 /* its [device] section, NULL when none */
	const struct topology_device *td;	 /* its entry in the topology below */
	bool is_kept;				 /* passes the filter */
	bool is_tracked;			 /* kept, or a member (at any depth) of a kept md/dm */
	bool is_array_member;			 /* a member of a tracked md/dm device */
	size_t snapshot_index;			 /* in the snapshot's devices[], SIZE_MAX when not there */
};

struct sample {
	const struct sample_device *devices; /* aligned with topology->devices */
	size_t n_devices;
	const struct topology *topology;
	uint64_t realtime_usec; /* when it was taken */
};

/* The sample sampler_sample() took last (n_devices 0 before the first).
 * Owned by the sampler; valid until its next sampler_sample() or
 * sampler_set_config(). */
const struct sample *sampler_last_sample(const struct sampler *s);

/* Knobs for tests and benchmarks; the daemon uses the defaults. */
#define SAMPLER_TOPOLOGY_REFRESH_USEC (60ULL * 1000000ULL)
/* Replace the clock: fn returns microseconds of CLOCK_MONOTONIC or
 * CLOCK_REALTIME. NULL restores clock_gettime(). */
typedef uint64_t (*sampler_clock_fn)(clockid_t clock, void *userdata);
void sampler_set_clock(struct sampler *s, sampler_clock_fn fn, void *userdata);
