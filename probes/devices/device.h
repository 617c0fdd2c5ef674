/* Devices as the daemon sees them: kinds, topology (from sysfs and
 * mountinfo), the ceiling state the detection stage fills in, and the
 * [instance] sum. Plain types, shared by the sampler, the detectors and the
 * renderers. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

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
/* Mount points kept per device: bind mounts and containers can mount one
 * filesystem hundreds of times. */
#define DEVICE_MAX_MOUNTPOINTS 16
/* PersistentVolume and pod pairs kept per device (a volume mounted by
 * several pods on the node, a filesystem that holds several volumes). */
#define DEVICE_MAX_PERSISTENTVOLUMES 16

/* A Kubernetes PersistentVolume on a device and a pod that mounts it, as
 * the kubelet's mount paths name them (kubelet.h). */
struct device_persistentvolume {
	char *persistentvolume;
	char *pod_uid; /* "" while no path names a pod of the volume */
};

/* A list of device names (md/dm members, mount points, a shared ceiling's
 * devices, the volumes [instance] counts) is an array and a count; this is
 * the one place they become a comma-separated label ("xvdf,xvdg", "" when
 * n is 0). Writes into buf of len bytes (truncated, terminated when len > 0)
 * and returns the length of the whole join, as snprintf does. */
size_t device_names_join(const char *const *names, size_t n, char *buf, size_t len);
/* The same as a new string; NULL on ENOMEM. */
char *device_names_join_new(const char *const *names, size_t n);

/* Strings are never NULL in a sampler snapshot ("" when unknown): they
 * point into the snapshot's shared topology (sampler_snapshot.topology),
 * which owns them. */
struct device_topology {
	enum device_kind kind;
	char parent[DISKSTATS_NAME_MAX]; /* whole disk of a partition, "" otherwise */
	char **members;			 /* md/dm: the names in sysfs slaves/, sorted, n_members of
					  * them (NULL when none); bit k of a mask is members[k] */
	char *mountpoints;		 /* "/data,/srv" for the mountpoint label, "" when
					  * unmounted (a "," inside a mount point is ambiguous
					  * there: mountpoint_list has each whole) */
	char **mountpoint_list;		 /* n_mountpoints, at most DEVICE_MAX_MOUNTPOINTS */
	size_t n_mountpoints;
	char *model;		     /* "" when sysfs has none */
	unsigned logical_block_size; /* bytes; 0 when unknown. Sectors in diskstats are
				      * always 512 bytes regardless. */
	bool is_rotational;
	uint64_t size_bytes;
	/* extensions (sampler) */
	char *dm_name;	    /* device-mapper name ("vg0-data") for dm, "" otherwise */
	char *raid_level;   /* md level ("raid0"), "" otherwise */
	unsigned n_members; /* names in members */
	char *volume_id;    /* the volume id an EBS-style serial spells
			     * ("vol0123..." -> "vol-0123..."; a partition has
			     * its disk's), "" otherwise */
	struct device_persistentvolume *persistentvolumes; /* n_persistentvolumes, sorted by volume then
							    * pod; NULL when none */
	size_t n_persistentvolumes;
};

/* Ceiling and limit state of a device (filled by the detection stage, probes/detect/). */
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
	bool has_learned_burst;			/* a burst was seen to run out (probes/detect/burst.h) */
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
	const char *found_by;	      /* the test that found the estimate (ceiling.h): "onset",
				       * "window", "burst"; NULL without one */
	double iops_ceiling_estimate; /* 0 = none detected yet */
	double throughput_ceiling_estimate;
	double iops_ceiling_limit_ratio; /* the estimate over the declared iops_limit (not a burst
					  * model's), in the provider's units: 0 without both */
	double throughput_ceiling_limit_ratio;
	/* Cloud volumes as providers count them (probes/detect/ceiling_dir.h):
	 * the limit that binds ("iops", "read_iops", "write_iops",
	 * "throughput"; NULL: none), each direction's own estimate where the
	 * directions have caps of their own (0: none), I/Os weighted by size in
	 * units of iops_unit (NAN without a unit), the interval's average I/O
	 * size, and the declared read/write IOPS limits' ratios (NAN without
	 * one) and seconds at them; the same for the declared read/write
	 * throughput limits (bytes/s). */
	const char *resource;
	double read_iops_estimate, write_iops_estimate;
	uint64_t iops_unit;
	double provider_iops;
	double average_io_bytes;
	uint64_t read_iops_limit, write_iops_limit;
	double read_iops_limit_ratio, write_iops_limit_ratio;
	double at_ceiling_read_iops_seconds, at_ceiling_write_iops_seconds;
	uint64_t read_throughput_limit, write_throughput_limit;
	double read_throughput_limit_ratio, write_throughput_limit_ratio;
	double at_ceiling_read_throughput_seconds, at_ceiling_write_throughput_seconds;
};

/* The machine's volumes together against the [instance] limits. */
struct instance_state {
	bool is_declared;
	uint64_t iops_limit, throughput_limit; /* 0 = not declared */
	const char **devices; /* the volumes counted, n_devices of them in the sample's order: the
			       * array is owned by the snapshot, the names by its topology */
	size_t n_devices;
	double iops, bytes_per_sec; /* their sum over the last interval */
	double iops_limit_ratio;    /* NAN without a limit or a valid interval */
	double throughput_limit_ratio;
	double at_ceiling_iops_seconds; /* counters, as a device's */
	double at_ceiling_throughput_seconds;
	bool is_at_limit;
};
