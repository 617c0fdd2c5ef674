/* A device's limits: its volume type's preset, then its own keys. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "device_limits.h"

#define KIB ((uint64_t)1024)
#define MIB ((uint64_t)1024 * 1024)

struct notices {
	char (*lines)[DEVICE_LIMITS_NOTICE_LEN];
	size_t n;
	const char *type; /* the preset's name */
};

/* An explicit value replaces the preset's, with a notice when it differs. */
static void override(struct notices *ns, uint64_t *field, uint64_t explicit, const char *key)
{
	if (!explicit) {
		return;
	}
	if (ns->type && *field && *field != explicit && ns->n < DEVICE_LIMITS_NOTICES_MAX) {
		snprintf(ns->lines[ns->n++], DEVICE_LIMITS_NOTICE_LEN,
			 "%s=%" PRIu64 " overrides the %" PRIu64 " that volume_type=%s gives", key, explicit,
			 *field, ns->type);
	}
	*field = explicit;
}

static void from_preset(struct device_limits *l, const struct volume_limits *v)
{
	l->iops_limit = v->iops_limit;
	l->throughput_limit = v->throughput_limit;
	l->iops_unit = v->iops_unit;
	l->burst_iops = v->burst_iops;
	l->burst_credits = v->burst_credits;
	l->credit_rate = v->credit_rate;
	l->burst_throughput = v->burst_throughput;
	l->burst_throughput_credits = v->burst_throughput_credits;
	l->is_approximate = v->is_approximate;
	l->has_preset = true;
}

/* A declared bucket (burst_iops=, burst_credits=, credit_rate=, all three
 * or none) replaces the preset's whole. */
static void override_bucket(struct notices *ns, struct device_limits *l, const struct device_declared *d)
{
	if (!d->burst_iops) {
		return;
	}
	if (ns->type && l->burst_iops && ns->n < DEVICE_LIMITS_NOTICES_MAX) {
		snprintf(ns->lines[ns->n++], DEVICE_LIMITS_NOTICE_LEN,
			 "burst_iops=, burst_credits= and credit_rate= override the bucket that "
			 "volume_type=%s gives",
			 ns->type);
	}
	l->burst_iops = d->burst_iops;
	l->burst_credits = d->burst_credits;
	l->credit_rate = d->credit_rate;
}

int device_limits_resolve(const struct device_declared *d, uint64_t size_bytes, struct device_limits *ret,
			  char notices[][DEVICE_LIMITS_NOTICE_LEN], size_t *ret_n_notices,
			  const char **ret_why)
{
	const struct device_provider *p = &d->provider;
	struct notices ns = {.lines = notices};
	struct device_limits l = {0};

	if (p->volume_type >= 0) {
		struct volume_type_input in = {.size_bytes = size_bytes,
					       .iops = p->iops,
					       .throughput = p->throughput,
					       .iops_per_gb = p->iops_per_gb};
		struct volume_limits v;
		int r = volume_type_derive((enum volume_type)p->volume_type, &in, &v, ret_why);

		if (r < 0) {
			return r;
		}
		from_preset(&l, &v);
		ns.type = volume_type_to_string((enum volume_type)p->volume_type);
	}
	override(&ns, &l.iops_limit, d->iops_limit, "iops_limit");
	override(&ns, &l.throughput_limit, d->throughput_limit, "throughput_limit");
	override(&ns, &l.iops_unit, p->iops_unit, "iops_unit");
	override_bucket(&ns, &l, d);
	l.read_iops_limit = p->read_iops_limit;
	l.write_iops_limit = p->write_iops_limit;
	l.read_throughput_limit = p->read_throughput_limit;
	l.write_throughput_limit = p->write_throughput_limit;
	*ret = l;
	*ret_n_notices = ns.n;
	return 0;
}

/* "256k", "1m", "1t", "512" (fio's units, as the keys take them). */
static const char *unit_str(uint64_t b, char *buf, size_t len)
{
	if (b % (MIB * MIB) == 0) {
		snprintf(buf, len, "%" PRIu64 "t", b / (MIB * MIB));
	} else if (b % (KIB * MIB) == 0) {
		snprintf(buf, len, "%" PRIu64 "g", b / (KIB * MIB));
	} else if (b % MIB == 0) {
		snprintf(buf, len, "%" PRIu64 "m", b / MIB);
	} else if (b % KIB == 0) {
		snprintf(buf, len, "%" PRIu64 "k", b / KIB);
	} else {
		snprintf(buf, len, "%" PRIu64, b);
	}
	return buf;
}

/* Appends to buf at *at, never past len. */
static void put(char *buf, size_t len, int *at, const char *what, uint64_t v, const char *suffix)
{
	char u[32];
	int n;

	if (!v || (size_t)*at >= len) {
		return;
	}
	if (suffix) {
		n = snprintf(buf + *at, len - *at, "%s%s=%s%s", *at ? " " : "", what,
			     unit_str(v, u, sizeof(u)), suffix);
	} else {
		n = snprintf(buf + *at, len - *at, "%s%s=%" PRIu64, *at ? " " : "", what, v);
	}
	*at += n > 0 ? n : 0;
}

int device_limits_describe(const struct device_limits *l, char *buf, size_t len)
{
	int at = 0;

	buf[0] = '\0';
	put(buf, len, &at, "iops_limit", l->iops_limit, NULL);
	put(buf, len, &at, "iops_unit", l->iops_unit, "");
	put(buf, len, &at, "throughput_limit", l->throughput_limit, "");
	put(buf, len, &at, "read_iops_limit", l->read_iops_limit, NULL);
	put(buf, len, &at, "write_iops_limit", l->write_iops_limit, NULL);
	put(buf, len, &at, "read_throughput_limit", l->read_throughput_limit, "");
	put(buf, len, &at, "write_throughput_limit", l->write_throughput_limit, "");
	put(buf, len, &at, "burst_iops", l->burst_iops, NULL);
	put(buf, len, &at, "burst_credits", l->burst_credits, NULL);
	put(buf, len, &at, "credit_rate", (uint64_t)l->credit_rate, NULL);
	put(buf, len, &at, "burst_throughput", l->burst_throughput, "");
	put(buf, len, &at, "burst_throughput_credits", l->burst_throughput_credits, "");
	if ((size_t)at < len && l->is_approximate) {
		at += snprintf(buf + at, len - at, "%sno limit: the type's figures are averages",
			       at ? "; " : "");
	}
	if ((size_t)at < len && !at) {
		at += snprintf(buf + at, len - at, "no limits");
	}
	return at;
}
