/* /proc/diskstats: a pure parser for 14/18/20-field lines, and the iostat -x
 * derivation of per-interval rates from two samples. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISKSTATS_NAME_MAX 64

struct diskstats_raw {
	unsigned major, minor;
	char name[DISKSTATS_NAME_MAX];
	unsigned n_fields; /* 14, 18 or 20 (incl. major, minor, name) */
	uint64_t reads, reads_merged, read_sectors, read_ms;
	uint64_t writes, writes_merged, write_sectors, write_ms;
	uint64_t in_flight, io_ms, weighted_ms;
	uint64_t discards, discards_merged, discard_sectors, discard_ms; /* 18+ */
	uint64_t flushes, flush_ms;					 /* 20 */
};

/* iostat -x figures for one interval, in base units. */
struct device_rates {
	bool valid; /* false for the first sample or after a reset */
	double interval_sec;
	double read_iops, write_iops, discard_iops, flush_iops;			    /* r/s w/s d/s f/s */
	double read_bytes_per_sec, write_bytes_per_sec, discard_bytes_per_sec;	    /* rkB/s*1024 ... */
	double read_merges_per_sec, write_merges_per_sec;			    /* rrqm/s wrqm/s */
	double read_await_sec, write_await_sec, discard_await_sec, flush_await_sec; /* r_await ... /1000 */
	double queue_depth;							    /* aqu-sz */
	double utilization;							    /* %util / 100, 0..1 */
};

/* Parse a whole diskstats buffer into a caller-owned array that is grown
 * (realloc) when too small, so that a sampler can reuse it every tick
 * (start with NULL and 0): *array and *capacity are updated even on failure
 * and belong to the caller. Malformed lines are skipped and counted in
 * *ret_n_bad (may be NULL). Returns the number of entries or -ENOMEM
 * (-E2BIG for more than DISKSTATS_MAX_LINES lines). */
#define DISKSTATS_MAX_LINES (1U << 20)
int diskstats_parse_into(const char *buf, struct diskstats_raw **array, size_t *capacity, size_t *ret_n_bad);

/* Parse one line (without its newline; `len` bytes). Returns 0 or -EINVAL
 * for anything that is not major, minor, name and 11, 15 or 17 decimal
 * counters. */
int diskstats_parse_line(const char *line, size_t len, struct diskstats_raw *ret);

/* fio's aggregate ("aggr") of the members of an md/dm device: utilization
 * is the busiest member's, every other figure the average over the members,
 * awaits being averaged ticks / averaged ios. valid only when every member's
 * rates are. */
void diskstats_aggregate_members(const struct device_rates *const *members, size_t n,
				 struct device_rates *ret);

/* Bounds beyond which a per-interval delta is called absurd (a device that
 * was replaced between two samples rather than a counter that moved):
 * operations per second, bytes per second, and the in-flight concurrency
 * that multiplies the per-request millisecond counters. */
#define DISKSTATS_MAX_IOPS	    100000000.0
#define DISKSTATS_MAX_BYTES_PER_SEC 1e12
#define DISKSTATS_MAX_CONCURRENCY   65536.0

/* Derive rates from prev -> cur over interval_sec, as sysstat's iostat does.
 * A counter that went backwards (wrap of a 32-bit field, device re-added)
 * yields rates from the wrapped delta when plausible, otherwise valid=false;
 * never a negative or absurd figure. */
void diskstats_derive(const struct diskstats_raw *prev, const struct diskstats_raw *cur, double interval_sec,
		      struct device_rates *ret);
