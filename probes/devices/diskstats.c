/* /proc/diskstats: parsing (pure) and the iostat -x derivation of rates.
 * The formulas are sysstat's (iostat.c write_ext_stat, rd_stats.c
 * compute_ext_disk_stats), with the interval measured in microseconds. */
#include "diskstats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define SECTOR_BYTES 512.0

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Decimal digits only (no sign, no base prefix), with overflow detection. */
static const char *parse_u64(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *start = p;

	while (p < end && *p >= '0' && *p <= '9') {
		unsigned digit = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - digit) / 10) {
			return NULL;
		}
		v = v * 10 + digit;
		p++;
	}
	if (p == start || (p < end && !is_blank(*p))) {
		return NULL;
	}
	*ret = v;
	return p;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p)) {
		p++;
	}
	return p;
}

/* The n counters after the name (11, 15 or 17, by kernel version) into r. */
static void set_counters(struct diskstats_raw *r, const uint64_t *v, unsigned n)
{
	r->reads = v[0];
	r->reads_merged = v[1];
	r->read_sectors = v[2];
	r->read_ms = v[3];
	r->writes = v[4];
	r->writes_merged = v[5];
	r->write_sectors = v[6];
	r->write_ms = v[7];
	r->in_flight = v[8];
	r->io_ms = v[9];
	r->weighted_ms = v[10];
	if (n >= 15) {
		r->discards = v[11];
		r->discards_merged = v[12];
		r->discard_sectors = v[13];
		r->discard_ms = v[14];
	}
	if (n >= 17) {
		r->flushes = v[15];
		r->flush_ms = v[16];
	}
}

int diskstats_parse_line(const char *line, size_t len, struct diskstats_raw *ret)
{
	const char *p = line, *end = line + len, *name;
	struct diskstats_raw r = {0};
	uint64_t v[17], major, minor;
	unsigned n = 0;
	size_t name_len;

	p = skip_blanks(p, end);
	p = parse_u64(p, end, &major);
	if (!p || major > UINT32_MAX) {
		return -EINVAL;
	}
	p = skip_blanks(p, end);
	p = parse_u64(p, end, &minor);
	if (!p || minor > UINT32_MAX) {
		return -EINVAL;
	}
	p = skip_blanks(p, end);
	name = p;
	while (p < end && !is_blank(*p)) {
		p++;
	}
	name_len = (size_t)(p - name);
	if (name_len == 0 || name_len >= sizeof(r.name)) {
		return -EINVAL;
	}
	for (;;) {
		p = skip_blanks(p, end);
		if (p >= end) {
			break;
		}
		if (n == ELEMENTSOF(v)) {
			return -EINVAL;
		}
		p = parse_u64(p, end, &v[n]);
		if (!p) {
			return -EINVAL;
		}
		n++;
	}
	if (n != 11 && n != 15 && n != 17) {
		return -EINVAL;
	}
	r.major = (unsigned)major;
	r.minor = (unsigned)minor;
	memcpy(r.name, name, name_len);
	r.n_fields = n + 3;
	set_counters(&r, v, n);
	*ret = r;
	return 0;
}

int diskstats_parse_into(const char *buf, struct diskstats_raw **array, size_t *capacity, size_t *ret_n_bad)
{
	size_t n = 0, n_bad = 0;
	const char *p = buf;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		struct diskstats_raw r;

		if (len > 0) {
			if (diskstats_parse_line(p, len, &r) < 0) {
				n_bad++;
			} else {
				if (n == *capacity) {
					size_t cap = *capacity ? *capacity * 2 : 64;
					struct diskstats_raw *a;

					if (n >= DISKSTATS_MAX_LINES) {
						return -E2BIG;
					}
					a = reallocarray(*array, cap, sizeof(**array));
					if (!a) {
						return -ENOMEM;
					}
					*array = a;
					*capacity = cap;
				}
				(*array)[n++] = r;
			}
		}
		if (!eol) {
			break;
		}
		p = eol + 1;
	}
	if (ret_n_bad) {
		*ret_n_bad = n_bad;
	}
	return (int)n;
}

/* The delta of a counter between two samples. The kernel prints the
 * operation and sector counters as unsigned long (32 bits on 32-bit kernels)
 * and the millisecond counters as unsigned int, so a decrease from a value
 * that fits in 32 bits is a wrap; any other decrease is a reset. A delta
 * beyond `max` is refused too: it means the device was replaced between the
 * samples, and a rate computed from it would be absurd. */
static bool counter_delta(uint64_t prev, uint64_t cur, double max, uint64_t *ret)
{
	uint64_t d;

	if (cur >= prev) {
		d = cur - prev;
	} else if (prev <= UINT32_MAX) {
		d = (uint32_t)((uint32_t)cur - (uint32_t)prev);
	} else {
		return false;
	}
	if ((double)d > max) {
		return false;
	}
	*ret = d;
	return true;
}

struct deltas {
	uint64_t reads, reads_merged, read_sectors, read_ms;
	uint64_t writes, writes_merged, write_sectors, write_ms;
	uint64_t io_ms, weighted_ms;
	uint64_t discards, discards_merged, discard_sectors, discard_ms;
	uint64_t flushes, flush_ms;
};

static bool compute_deltas(const struct diskstats_raw *p, const struct diskstats_raw *c, double interval_sec,
			   struct deltas *d)
{
	double max_ops = DISKSTATS_MAX_IOPS * interval_sec + 1.0;
	double max_sectors = DISKSTATS_MAX_BYTES_PER_SEC / SECTOR_BYTES * interval_sec + 1.0;
	/* busy time cannot exceed the wall time (with slack for jiffy rounding) */
	double max_busy_ms = interval_sec * 2000.0 + 1000.0;
	/* per-request times add up over every request in flight */
	double max_req_ms = (interval_sec * 1000.0 + 1000.0) * DISKSTATS_MAX_CONCURRENCY;
	bool ok;

	ok = counter_delta(p->reads, c->reads, max_ops, &d->reads) &&
	     counter_delta(p->reads_merged, c->reads_merged, max_ops, &d->reads_merged) &&
	     counter_delta(p->read_sectors, c->read_sectors, max_sectors, &d->read_sectors) &&
	     counter_delta(p->read_ms, c->read_ms, max_req_ms, &d->read_ms) &&
	     counter_delta(p->writes, c->writes, max_ops, &d->writes) &&
	     counter_delta(p->writes_merged, c->writes_merged, max_ops, &d->writes_merged) &&
	     counter_delta(p->write_sectors, c->write_sectors, max_sectors, &d->write_sectors) &&
	     counter_delta(p->write_ms, c->write_ms, max_req_ms, &d->write_ms) &&
	     counter_delta(p->io_ms, c->io_ms, max_busy_ms, &d->io_ms) &&
	     counter_delta(p->weighted_ms, c->weighted_ms, max_req_ms, &d->weighted_ms);
	if (!ok) {
		return false;
	}
	if (p->n_fields >= 18 && c->n_fields >= 18) {
		ok =
		    counter_delta(p->discards, c->discards, max_ops, &d->discards) &&
		    counter_delta(p->discards_merged, c->discards_merged, max_ops, &d->discards_merged) &&
		    counter_delta(p->discard_sectors, c->discard_sectors, max_sectors, &d->discard_sectors) &&
		    counter_delta(p->discard_ms, c->discard_ms, max_req_ms, &d->discard_ms);
		if (!ok) {
			return false;
		}
	}
	if (p->n_fields >= 20 && c->n_fields >= 20) {
		ok = counter_delta(p->flushes, c->flushes, max_ops, &d->flushes) &&
		     counter_delta(p->flush_ms, c->flush_ms, max_req_ms, &d->flush_ms);
		if (!ok) {
			return false;
		}
	}
	return true;
}

/* iostat's r_await: milliseconds per completed request, here in seconds. */
static double await_sec(uint64_t ms, uint64_t ios)
{
	return ios > 0 ? (double)ms / (double)ios / 1000.0 : 0.0;
}

void diskstats_derive(const struct diskstats_raw *prev, const struct diskstats_raw *cur, double interval_sec,
		      struct device_rates *ret)
{
	struct deltas d = {0};
	double ms;

	*ret = (struct device_rates){.interval_sec = interval_sec};
	if (!prev || !cur || !isfinite(interval_sec) || interval_sec <= 0.0) {
		return;
	}
	if (!compute_deltas(prev, cur, interval_sec, &d)) {
		return;
	}
	ms = interval_sec * 1000.0;

	ret->valid = true;
	ret->read_iops = (double)d.reads / interval_sec;
	ret->write_iops = (double)d.writes / interval_sec;
	ret->discard_iops = (double)d.discards / interval_sec;
	ret->flush_iops = (double)d.flushes / interval_sec;
	ret->read_bytes_per_sec = (double)d.read_sectors * SECTOR_BYTES / interval_sec;
	ret->write_bytes_per_sec = (double)d.write_sectors * SECTOR_BYTES / interval_sec;
	ret->discard_bytes_per_sec = (double)d.discard_sectors * SECTOR_BYTES / interval_sec;
	ret->read_merges_per_sec = (double)d.reads_merged / interval_sec;
	ret->write_merges_per_sec = (double)d.writes_merged / interval_sec;
	ret->read_await_sec = await_sec(d.read_ms, d.reads);
	ret->write_await_sec = await_sec(d.write_ms, d.writes);
	ret->discard_await_sec = await_sec(d.discard_ms, d.discards);
	ret->flush_await_sec = await_sec(d.flush_ms, d.flushes);
	ret->queue_depth = (double)d.weighted_ms / ms;
	/* %util can read a little above 100 when io_ticks and our clock are
	 * sampled a jiffy apart; the ratio is documented as 0..1. */
	ret->utilization = fmin((double)d.io_ms / ms, 1.0);
}

void diskstats_aggregate_members(const struct device_rates *const *members, size_t n,
				 struct device_rates *ret)
{
	double read_ticks = 0, write_ticks = 0, discard_ticks = 0, flush_ticks = 0;
	struct device_rates m = {0};
	bool valid = n > 0;

	for (size_t k = 0; k < n; k++) {
		const struct device_rates *r = members[k];

		valid = valid && r->valid;
		m.interval_sec = fmax(m.interval_sec, r->interval_sec);
		m.read_iops += r->read_iops;
		m.write_iops += r->write_iops;
		m.discard_iops += r->discard_iops;
		m.flush_iops += r->flush_iops;
		m.read_bytes_per_sec += r->read_bytes_per_sec;
		m.write_bytes_per_sec += r->write_bytes_per_sec;
		m.discard_bytes_per_sec += r->discard_bytes_per_sec;
		m.read_merges_per_sec += r->read_merges_per_sec;
		m.write_merges_per_sec += r->write_merges_per_sec;
		m.queue_depth += r->queue_depth;
		read_ticks += r->read_await_sec * r->read_iops;
		write_ticks += r->write_await_sec * r->write_iops;
		discard_ticks += r->discard_await_sec * r->discard_iops;
		flush_ticks += r->flush_await_sec * r->flush_iops;
		m.utilization = fmax(m.utilization, r->utilization);
	}
	if (!valid) {
		*ret = (struct device_rates){.interval_sec = m.interval_sec};
		return;
	}
	m.valid = true;
	/* averaged ticks / averaged ios = summed ticks / summed ios */
	m.read_await_sec = m.read_iops > 0 ? read_ticks / m.read_iops : 0;
	m.write_await_sec = m.write_iops > 0 ? write_ticks / m.write_iops : 0;
	m.discard_await_sec = m.discard_iops > 0 ? discard_ticks / m.discard_iops : 0;
	m.flush_await_sec = m.flush_iops > 0 ? flush_ticks / m.flush_iops : 0;
	m.read_iops /= (double)n;
	m.write_iops /= (double)n;
	m.discard_iops /= (double)n;
	m.flush_iops /= (double)n;
	m.read_bytes_per_sec /= (double)n;
	m.write_bytes_per_sec /= (double)n;
	m.discard_bytes_per_sec /= (double)n;
	m.read_merges_per_sec /= (double)n;
	m.write_merges_per_sec /= (double)n;
	m.queue_depth /= (double)n;
	*ret = m;
}
