/* Limits from a cloud volume's type: the EBS preset table (gp2, gp3, io1,
 * io2, st1, sc1, standard) turned into a device's limits, its I/O unit and
 * its burst model from the type, the volume's size and what was
 * provisioned (iops=, throughput=). Pure: no I/O; iopsd.conf(5), VOLUME
 * TYPES, gives every figure with its source. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum volume_type {
	VOLUME_TYPE_GP2,
	VOLUME_TYPE_GP3,
	VOLUME_TYPE_IO1,
	VOLUME_TYPE_IO2,
	VOLUME_TYPE_ST1,
	VOLUME_TYPE_SC1,
	VOLUME_TYPE_STANDARD,
	_VOLUME_TYPE_MAX,
};

/* "gp3" -> VOLUME_TYPE_GP3 (case-insensitive, as the EBS CSI driver's
 * StorageClass parameter "type"); -EINVAL when unknown. */
int volume_type_from_string(const char *s);
const char *volume_type_to_string(enum volume_type t);

/* What the preset is derived from. */
struct volume_type_input {
	uint64_t size_bytes;  /* the volume's size (sysfs); 0: unknown */
	uint64_t iops;	      /* iops= as provisioned; 0: not given */
	uint64_t throughput;  /* throughput= in bytes/s; 0: not given */
	uint64_t iops_per_gb; /* iopsPerGB= (io1, io2, gp3); 0: not given */
};

/* What a type and size give. IOPS are counted in units of iops_unit bytes
 * (an I/O larger than the unit counts as size / unit). A burst model, when
 * the type has one, is a token bucket: on the SSD type gp2 one of I/O
 * credits in the same units (burst_iops while credits last, credit_rate,
 * the baseline, refilling it); on the HDD types st1 and sc1 one of
 * throughput credits in bytes (burst_throughput while credits last,
 * throughput_limit, the baseline, refilling it, burst_throughput_credits
 * in all). */
struct volume_limits {
	uint64_t iops_limit;		   /* the baseline, units per second */
	uint64_t throughput_limit;	   /* bytes per second, the baseline */
	uint64_t iops_unit;		   /* bytes */
	uint64_t burst_iops;		   /* 0: no bucket */
	uint64_t burst_credits;		   /* units */
	double credit_rate;		   /* units per second */
	uint64_t burst_throughput;	   /* bytes/s while credits last (st1, sc1); 0: none */
	uint64_t burst_throughput_credits; /* bytes (st1, sc1) */
	bool is_approximate;		   /* the provider publishes averages, not caps (standard) */
};

/* Derive the limits of type `t` for `in`. Returns 0 and fills *ret, or
 * -EINVAL (*ret untouched) with *ret_why set to a static sentence saying
 * why: a size the type does not come in, io1/io2 without iops=, a gp3
 * below its baseline, a key the type does not take. */
int volume_type_derive(enum volume_type t, const struct volume_type_input *in, struct volume_limits *ret,
		       const char **ret_why);
