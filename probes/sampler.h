/* Devices as the daemon sees them: topology (from sysfs and mountinfo), the
 * latest raw counters and derived rates, and the ceiling state; and the
 * sampler that produces an immutable snapshot of all of them every second. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <sys/types.h>

#include "config.h"
#include "diskstats.h"
#include "md_health.h"

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

/* Walk a comma-separated list of device names ("xvdf,xvdg"): copy the first
 * name of `list` into ret (DISKSTATS_NAME_MAX bytes, truncated) and return
 * the rest of the list, or NULL when `list` is NULL or empty. */
const char *device_list_next(const char *list, char *ret);

/* Strings are never NULL in a sampler snapshot ("" when unknown): they
 * point into the snapshot's shared topology (sampler_snapshot.topology),
 * which owns them. */
struct device_topology {
	enum device_kind kind;
	char parent[DISKSTATS_NAME_MAX]; /* whole disk of a partition, "" otherwise */
	char *members;			 /* "xvdf,xvdg" for md/dm (sysfs slaves/), "" otherwise */
	char *mountpoints;		 /* "/data,/srv", "" when unmounted */
	char *model;			 /* "" when sysfs has none */
	unsigned logical_block_size;	 /* bytes; 0 when unknown. Sectors in diskstats are
					  * always 512 bytes regardless. */
	bool is_rotational;
	uint64_t size_bytes;
	/* extensions (sampler) */
	char *physical_members; /* members resolved through partitions and nested
				 * md/dm down to whole disks: "xvdf,xvdg"; for a
				 * partition its disk; "" for a plain disk */
	char *dm_name;		/* device-mapper name ("vg0-data") for dm, "" otherwise */
	char *raid_level;	/* md level ("raid0"), "" otherwise */
	unsigned n_members;	/* entries in members */
	char *volume_id;	/* the volume id an EBS-style serial spells
				 * ("vol0123..." -> "vol-0123..."; a partition has
				 * its disk's), "" otherwise */
};

/* Ceiling and limit state of a device (filled by the ceiling module). */
struct device_ceiling {
	uint64_t iops_limit;	   /* declared, 0 = none */
	uint64_t throughput_limit; /* declared bytes/s, 0 = none */
	double iops_limit_ratio;   /* observed / limit over the last interval, NAN when no limit */
	double throughput_limit_ratio;
	double at_ceiling_iops_seconds; /* counter */
	double at_ceiling_throughput_seconds;
	bool is_at_limit;			/* this interval: IOPS or throughput at ceiling_threshold
						 * of its declared limit or above */
	bool has_burst_model;			/* declared, or learned (below) */
	double burst_balance_ratio;		/* 0..1 */
	bool has_learned_burst;			/* a burst was seen to run out (probes/burst.h) */
	double burst_iops_estimate;		/* its rate */
	double burst_base_iops_estimate;	/* the level it settled to */
	double burst_credits_estimate;		/* bucket size: (rate - base) x length */
	double burst_duration_seconds;		/* length of the last burst */
	uint64_t burst_exhausted_realtime_usec; /* when it ran out, 0 when unknown */
	bool is_throttled;			/* its own plateau, or held by a member (below) */
	uint64_t held_by_mask;			/* md/dm: bit k set while the k-th name of topo.members
						 * is throttled (or itself held), which holds the array:
						 * a stripe runs at the pace of its slowest member */
	bool is_saturated;
	double iops_ceiling_estimate; /* 0 = none detected yet */
	double throughput_ceiling_estimate;
	double iops_ceiling_limit_ratio; /* the estimate over the declared iops_limit (not a burst
					  * model's): 0 without both */
	double throughput_ceiling_limit_ratio;
};

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

/* The machine's volumes together against the [instance] limits. */
struct instance_state {
	bool is_declared;
	uint64_t iops_limit, throughput_limit; /* 0 = not declared */
	char *devices;			       /* the volumes counted, "vda,vdb"; owned by the snapshot */
	double iops, bytes_per_sec;	       /* their sum over the last interval */
	double iops_limit_ratio;	       /* NAN without a limit or a valid interval */
	double throughput_limit_ratio;
	double at_ceiling_iops_seconds; /* counters, as a device's */
	double at_ceiling_throughput_seconds;
	bool is_at_limit;
};

struct pressure_io {
	bool available;
	uint64_t some_total_usec;
	uint64_t full_total_usec;
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
	struct ebs_nvme_volume *ebs; /* EBS NVMe volumes' log page 0xD0 (probes/ebs_nvme.h), owned */
	size_t n_ebs;
	struct shared_ceiling_group *shared; /* ceilings shared by several devices
					      * (probes/shared_ceiling.h), owned */
	size_t n_shared;
	struct instance_state instance;
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

/* Take one sample now. On success returns 0 and a new snapshot (refcount 1)
 * owned by the caller. Errors (-errno): PROCFS/diskstats unreadable, or
 * -ENOMEM; the previous state is kept so the next sample still derives. */
int sampler_sample(struct sampler *s, struct sampler_snapshot **ret);

/* The device that holds a probe target (a directory: its mount's device; a
 * raw device path: that device), from the current topology alone: its name
 * into ret_name (DISKSTATS_NAME_MAX bytes) and, in *ret_disk, the device
 * number of its whole disk (the disk of a partition, the device itself
 * otherwise), which the scheduler serialises runs on. A target on a
 * filesystem without a block device (tmpfs, overlayfs) gets "" and the
 * filesystem's number. -ENODEV when the topology does not know it (yet). */
int sampler_target_device(struct sampler *s, const char *target, char *ret_name, dev_t *ret_disk);

/* The ceiling detector state of every kept device (probes/ceiling.h), for
 * the ceiling probe: is a device quiet, and its measured ceiling. Owned by
 * the sampler; use it on the sampler's thread only. */
struct ceiling_set;
struct ceiling_set *sampler_ceilings(struct sampler *s);

/* Knobs for tests and benchmarks; the daemon uses the defaults. */
#define SAMPLER_TOPOLOGY_REFRESH_USEC (60ULL * 1000000ULL)
/* Replace the clock: fn returns microseconds of CLOCK_MONOTONIC or
 * CLOCK_REALTIME. NULL restores clock_gettime(). */
typedef uint64_t (*sampler_clock_fn)(clockid_t clock, void *userdata);
void sampler_set_clock(struct sampler *s, sampler_clock_fn fn, void *userdata);
