/* The EBS volume types as limits: each figure below is in iopsd.conf(5),
 * VOLUME TYPES, with its source (the Amazon EBS User Guide, "Amazon EBS
 * volume types" and "I/O characteristics and monitoring", as of 2024-11). */
#include <errno.h>
#include <stddef.h>
#include <strings.h>

#include "volume_type.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024)
#define GIB (1024ULL * 1024 * 1024)

static const char *const names[_VOLUME_TYPE_MAX] = {
    [VOLUME_TYPE_GP2] = "gp2",		 [VOLUME_TYPE_GP3] = "gp3", [VOLUME_TYPE_IO1] = "io1",
    [VOLUME_TYPE_IO2] = "io2",		 [VOLUME_TYPE_ST1] = "st1", [VOLUME_TYPE_SC1] = "sc1",
    [VOLUME_TYPE_STANDARD] = "standard",
};

int volume_type_from_string(const char *s)
{
	for (int i = 0; i < _VOLUME_TYPE_MAX; i++) {
		if (s && strcasecmp(s, names[i]) == 0) {
			return i;
		}
	}
	return -EINVAL;
}

const char *volume_type_to_string(enum volume_type t)
{
	return t < _VOLUME_TYPE_MAX ? names[t] : NULL;
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* gp2: 3 IOPS per GiB, at least 100, at most 16,000 (from 5,334 GiB); below
 * 1,000 GiB a bucket of 5.4 million credits bursts to 3,000 IOPS. Up to
 * 170 GiB 128 MiB/s, above it 250 MiB/s (from 170 to 333 GiB only while
 * burst credits last). */
static int derive_gp2(const struct volume_type_input *in, uint64_t gib, struct volume_limits *l,
		      const char **ret_why)
{
	if (in->iops || in->throughput || in->iops_per_gb) {
		*ret_why = "a gp2 volume's IOPS and throughput follow from its size: iops=, throughput= and "
			   "iopsPerGB= are for gp3, io1 and io2";
		return -EINVAL;
	}
	l->iops_limit = clamp_u64(3 * gib, 100, 16000);
	l->throughput_limit = gib <= 170 ? 128 * MIB : 250 * MIB;
	if (l->iops_limit < 3000) {
		l->burst_iops = 3000;
		l->burst_credits = 5400000;
		l->credit_rate = (double)l->iops_limit;
	}
	return 0;
}

/* iops= or iopsPerGB= x size (the CSI driver's two ways); 0 when neither. */
static int provisioned_iops(const struct volume_type_input *in, uint64_t gib, uint64_t *ret,
			    const char **ret_why)
{
	if (in->iops && in->iops_per_gb) {
		*ret_why = "iops= and iopsPerGB= exclude each other";
		return -EINVAL;
	}
	if (in->iops_per_gb && !gib) {
		*ret_why = "iopsPerGB= needs the volume's size, which is unknown";
		return -EINVAL;
	}
	*ret = in->iops ? in->iops : in->iops_per_gb * gib;
	return 0;
}

/* gp3: 3,000 IOPS and 125 MiB/s included, more when provisioned. */
static int derive_gp3(const struct volume_type_input *in, uint64_t gib, struct volume_limits *l,
		      const char **ret_why)
{
	uint64_t iops;
	int r = provisioned_iops(in, gib, &iops, ret_why);

	if (r < 0) {
		return r;
	}
	if (iops && iops < 3000) {
		*ret_why = "a gp3 volume has at least 3000 IOPS (its baseline)";
		return -EINVAL;
	}
	if (in->throughput && in->throughput < 125 * MIB) {
		*ret_why = "a gp3 volume has at least 125 MiB/s (its baseline)";
		return -EINVAL;
	}
	l->iops_limit = iops ? iops : 3000;
	l->throughput_limit = in->throughput ? in->throughput : 125 * MIB;
	return 0;
}

/* io1: up to 32,000 IOPS, 256 KiB per IOPS up to 500 MiB/s; above,
 * 16 KiB per IOPS (1,000 MiB/s at 64,000). io2 Block Express: 256 KiB per
 * IOPS up to 4,000 MiB/s. */
static int derive_io(enum volume_type t, const struct volume_type_input *in, uint64_t gib,
		     struct volume_limits *l, const char **ret_why)
{
	uint64_t iops;
	int r = provisioned_iops(in, gib, &iops, ret_why);

	if (r < 0) {
		return r;
	}
	if (!iops) {
		*ret_why =
		    "io1 and io2 volumes have the IOPS they were provisioned with: iops= (or iopsPerGB=) "
		    "is required";
		return -EINVAL;
	}
	if (in->throughput) {
		*ret_why = "an io1 or io2 volume's throughput follows from its IOPS: throughput= is for gp3";
		return -EINVAL;
	}
	l->iops_limit = iops;
	if (t == VOLUME_TYPE_IO2) {
		l->throughput_limit = min_u64(iops * 256 * KIB, 4000 * MIB);
	} else if (iops <= 32000) {
		l->throughput_limit = min_u64(iops * 256 * KIB, 500 * MIB);
	} else {
		l->throughput_limit = min_u64(iops * 16 * KIB, 1000 * MIB);
	}
	return 0;
}

/* st1 and sc1 count in 1 MiB units and are throughput volumes: per TiB of
 * size a baseline and a burst rate (MiB/s), each up to a maximum, and a
 * bucket of throughput credits, 1 TiB per TiB of size, that the baseline
 * refills and every byte spends. `per_tib` and `max` are {baseline,
 * burst}, MiB/s. */
static int derive_hdd(const struct volume_type_input *in, uint64_t gib, const uint64_t per_tib[2],
		      const uint64_t max[2], uint64_t max_iops, struct volume_limits *l, const char **ret_why)
{
	if (in->iops || in->throughput || in->iops_per_gb) {
		*ret_why = "an st1 or sc1 volume's throughput follows from its size: iops=, throughput= and "
			   "iopsPerGB= are for gp3, io1 and io2";
		return -EINVAL;
	}
	/* MiB/s per TiB = bytes/s per GiB x 1024 */
	l->throughput_limit = min_u64(per_tib[0] * KIB * gib, max[0] * MIB);
	l->burst_throughput = min_u64(per_tib[1] * KIB * gib, max[1] * MIB);
	l->burst_throughput_credits = gib * GIB; /* 1 TiB per TiB */
	l->iops_limit = max_iops;
	if (l->burst_throughput < MIB) {
		*ret_why = "the volume is too small for its type";
		return -EINVAL;
	}
	return 0;
}

static int derive_type(enum volume_type t, const struct volume_type_input *in, uint64_t gib,
		       struct volume_limits *l, const char **ret_why)
{
	static const uint64_t st1_per_tib[2] = {40, 250}, st1_max[2] = {500, 500};
	static const uint64_t sc1_per_tib[2] = {12, 80}, sc1_max[2] = {192, 250};

	switch (t) {
	case VOLUME_TYPE_GP2:
		return derive_gp2(in, gib, l, ret_why);
	case VOLUME_TYPE_GP3:
		return derive_gp3(in, gib, l, ret_why);
	case VOLUME_TYPE_IO1:
	case VOLUME_TYPE_IO2:
		return derive_io(t, in, gib, l, ret_why);
	case VOLUME_TYPE_ST1:
		return derive_hdd(in, gib, st1_per_tib, st1_max, 500, l, ret_why);
	case VOLUME_TYPE_SC1:
		return derive_hdd(in, gib, sc1_per_tib, sc1_max, 250, l, ret_why);
	case VOLUME_TYPE_STANDARD:
		/* about 100 IOPS on average, bursts to hundreds: no cap to hold a
		 * volume to */
		l->is_approximate = true;
		return 0;
	default:
		*ret_why = "unknown volume type";
		return -EINVAL;
	}
}

int volume_type_derive(enum volume_type t, const struct volume_type_input *in, struct volume_limits *ret,
		       const char **ret_why)
{
	struct volume_limits l = {0};
	uint64_t gib = in->size_bytes / GIB;
	bool needs_size = t == VOLUME_TYPE_GP2 || t == VOLUME_TYPE_ST1 || t == VOLUME_TYPE_SC1;
	int r;

	if (needs_size && !gib) {
		*ret_why =
		    "the volume's size is unknown (or below 1 GiB), and this type's limits follow from it";
		return -EINVAL;
	}
	r = derive_type(t, in, gib, &l, ret_why);
	if (r < 0) {
		return r;
	}
	l.iops_unit = t == VOLUME_TYPE_ST1 || t == VOLUME_TYPE_SC1 ? MIB
		      : t == VOLUME_TYPE_STANDARD		   ? 0
								   : 256 * KIB;
	*ret = l;
	return 0;
}
