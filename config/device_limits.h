/* A [device] section's limits as the volume works to them: the preset of
 * its volume_type= for its size (volume_type.h), overridden key by key by
 * what the section states itself (iops_limit=, throughput_limit=, the
 * bucket, iops_unit=). Pure; the caller gives the size (sysfs). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "volume_type.h"

/* The cloud keys of a [device] section (0 / -1: not given). */
struct device_provider {
	int volume_type;      /* enum volume_type, -1: none */
	uint64_t iops;	      /* iops=: the preset's input (EBS CSI "iops") */
	uint64_t throughput;  /* throughput=: bytes/s (EBS CSI "throughput", MiB/s when bare) */
	uint64_t iops_per_gb; /* iopsPerGB= (EBS CSI) */
	uint64_t iops_unit;   /* iops_unit=: bytes */
	uint64_t read_iops_limit, write_iops_limit;
	uint64_t read_throughput_limit, write_throughput_limit; /* bytes/s */
};

/* Effective limits (0: none). IOPS are in units of iops_unit where one is
 * known (0: every I/O counts one). */
struct device_limits {
	uint64_t iops_limit, throughput_limit, iops_unit;
	uint64_t read_iops_limit, write_iops_limit, read_throughput_limit, write_throughput_limit;
	uint64_t burst_iops, burst_credits;
	double credit_rate;
	uint64_t burst_throughput, burst_throughput_credits; /* st1, sc1: bytes/s, bytes */
	bool has_preset;				     /* derived from volume_type= */
	bool is_approximate;				     /* the type's figures are averages (standard) */
};

/* The section's own keys, as parsed. */
struct device_declared {
	uint64_t iops_limit, throughput_limit, burst_iops, burst_credits;
	double credit_rate;
	struct device_provider provider;
};

#define DEVICE_LIMITS_NOTICES_MAX 4
#define DEVICE_LIMITS_NOTICE_LEN  160

/* Resolve `d` for a volume of `size_bytes` into *ret. Explicit keys win
 * over the preset; each one that replaced a figure of the preset adds a
 * sentence to notices[] (DEVICE_LIMITS_NOTICES_MAX of them at most;
 * *ret_n_notices says how many). Returns 0, or -EINVAL with *ret_why a
 * static sentence (the preset cannot be derived: volume_type.h); *ret is
 * written only on success. */
int device_limits_resolve(const struct device_declared *d, uint64_t size_bytes, struct device_limits *ret,
			  char notices[][DEVICE_LIMITS_NOTICE_LEN], size_t *ret_n_notices,
			  const char **ret_why);

/* One line for --check-config, in the keys' own form so that it can be
 * pasted into a [device] section: "iops_limit=3000 iops_unit=256k
 * throughput_limit=125m". Returns the length written. */
int device_limits_describe(const struct device_limits *l, char *buf, size_t len);
