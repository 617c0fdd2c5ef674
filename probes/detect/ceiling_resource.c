/* The binding limit among a device's plateaus (ceiling_resource.h). */
#include <stddef.h>

#include "ceiling_resource.h"

static const char *const names[_CEILING_RESOURCE_MAX] = {
    [CEILING_RESOURCE_IOPS] = "iops",
    [CEILING_RESOURCE_READ_IOPS] = "read_iops",
    [CEILING_RESOURCE_WRITE_IOPS] = "write_iops",
    [CEILING_RESOURCE_THROUGHPUT] = "throughput",
};

const char *ceiling_resource_to_string(enum ceiling_resource r)
{
	return r < _CEILING_RESOURCE_MAX ? names[r] : NULL;
}

static double ratio(double rate, uint64_t limit)
{
	return limit ? rate / (double)limit : 0;
}

/* Both directions on plateaus of their own, their waits apart. */
static bool directions_apart(const struct ceiling_plateaus *p)
{
	double lo, hi;

	if (!p->has_read_iops || !p->has_write_iops || p->read_iops <= 0 || p->write_iops <= 0) {
		return false;
	}
	lo = p->read_await_sec < p->write_await_sec ? p->read_await_sec : p->write_await_sec;
	hi = p->read_await_sec < p->write_await_sec ? p->write_await_sec : p->read_await_sec;
	return lo > 0 && hi >= CEILING_RESOURCE_AWAIT_FACTOR * lo;
}

/* Separate read and write caps, found or declared and reached; false when
 * the directions are held together. */
static bool decide_directions(const struct ceiling_plateaus *p, const struct ceiling_declared *d,
			      struct ceiling_verdict *v)
{
	double rr = d ? ratio(d->read_iops, d->read_iops_limit) : 0;
	double rw = d ? ratio(d->write_iops, d->write_iops_limit) : 0;

	if (directions_apart(p)) {
		v->is_read_flagged = v->is_write_flagged = true;
	}
	v->is_read_flagged |= rr >= CEILING_RESOURCE_DECLARED_RATIO;
	v->is_write_flagged |= rw >= CEILING_RESOURCE_DECLARED_RATIO;
	if (!v->is_read_flagged && !v->is_write_flagged) {
		return false;
	}
	if (v->is_read_flagged && v->is_write_flagged) {
		/* the direction waiting longer is the one held harder */
		bool write_first = rr || rw ? rw > rr : p->write_await_sec > p->read_await_sec;

		v->resource = write_first ? CEILING_RESOURCE_WRITE_IOPS : CEILING_RESOURCE_READ_IOPS;
	} else {
		v->resource = v->is_read_flagged ? CEILING_RESOURCE_READ_IOPS : CEILING_RESOURCE_WRITE_IOPS;
	}
	return true;
}

/* IOPS and throughput both flat: the declared limit the rates are nearer,
 * else the I/O size. */
static enum ceiling_resource iops_or_throughput(const struct ceiling_plateaus *p,
						const struct ceiling_declared *d)
{
	double ri = d ? ratio(d->iops, d->iops_limit) : 0;
	double rt = d ? ratio(d->bytes_per_sec, d->throughput_limit) : 0;

	if (ri >= CEILING_RESOURCE_DECLARED_RATIO || rt >= CEILING_RESOURCE_DECLARED_RATIO) {
		return rt > ri ? CEILING_RESOURCE_THROUGHPUT : CEILING_RESOURCE_IOPS;
	}
	return p->avg_io_bytes >= CEILING_RESOURCE_THROUGHPUT_IO_BYTES &&
		       p->avg_io_bytes < CEILING_RESOURCE_UNIT_IO_BYTES
		   ? CEILING_RESOURCE_THROUGHPUT
		   : CEILING_RESOURCE_IOPS;
}

void ceiling_resource_decide(const struct ceiling_plateaus *p, const struct ceiling_declared *d,
			     struct ceiling_verdict *ret)
{
	struct ceiling_verdict v = {0};

	if (decide_directions(p, d, &v)) {
		/* the flat sum and the flat bytes are the directions' shadows */
		*ret = v;
		return;
	}
	if (p->has_iops && p->has_throughput) {
		v.resource = iops_or_throughput(p, d);
	} else if (p->has_iops) {
		v.resource = CEILING_RESOURCE_IOPS;
	} else if (p->has_throughput) {
		v.resource = CEILING_RESOURCE_THROUGHPUT;
	}
	/* the IOPS are a throughput cap's shadow only while flat with it: a
	 * throughput plateau alone leaves an IOPS estimate found before */
	v.has_iops_ceiling = v.resource == CEILING_RESOURCE_IOPS ||
			     (v.resource == CEILING_RESOURCE_THROUGHPUT && !p->has_iops);
	v.has_throughput_ceiling = v.resource == CEILING_RESOURCE_THROUGHPUT;
	*ret = v;
}
