/* In-memory history of the derived per-second device figures (a ring per
 * device, one slot per sample) and of probe latency points, for
 * /api/v1/history. Memory is bounded: at most max_devices device rings of
 * history/sample_interval slots (HISTORY_DEVICE_SLOT_BYTES each), allocated
 * when a device is first seen and freed once its data has aged out, plus a
 * probe ring per configured probe (HISTORY_MAX_PROBES at most) of a point
 * per run of the most frequent probe, together within a quarter of
 * max_history_memory, the device rings within the rest. Every
 * function is thread-safe (the sampler appends on the main thread, probe
 * threads append probe points, the HTTP thread queries). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sampler.h"

/* The figures kept per device and sample (floats: the history stores many). */
struct history_rates {
	float read_iops, write_iops, discard_iops, flush_iops; /* r/s w/s d/s f/s */
	float read_bytes_per_sec, write_bytes_per_sec;	       /* rkB/s*1024 wkB/s*1024 */
	float read_await_sec, write_await_sec;		       /* r_await w_await /1000 */
	float queue_depth;				       /* aqu-sz */
	float utilization;				       /* %util/100, 0..1 */
	/* ceiling states of the sample, 1 or 0 (an averaged point: the share of
	 * its samples), for the live page's shading */
	float at_limit;		  /* device_ceiling.is_at_limit */
	float throttled;	  /* .is_throttled */
	float saturated;	  /* .is_saturated */
	float member_utilization; /* md/dm: busiest member's (fio aggrutil); NAN otherwise */
};

struct history_point {
	uint64_t realtime_usec;
	struct history_rates rates;
};

struct history_probe_point {
	uint64_t realtime_usec;
	float p50_sec, p99_sec, iops;
};

#define HISTORY_MAX_PROBES 256
/* Bytes one sample of one device costs in a ring. */
#define HISTORY_DEVICE_SLOT_BYTES (sizeof(uint32_t) + sizeof(struct history_rates))

struct history;

/* Size the history from cfg->history_usec / cfg->sample_interval_usec slots
 * and cfg->max_devices rings, or as many rings as cfg->max_history_memory
 * holds when that is fewer. */
int history_new(const struct config *cfg, struct history **ret);
struct history *history_free(struct history *h);

/* Apply a reloaded config. When the number of slots or max_devices changes
 * the history restarts empty; otherwise it is kept. When the new store
 * cannot be allocated, returns -ENOMEM and the old one is kept, whole. */
int history_set_config(struct history *h, const struct config *cfg);

/* Append one sample: a slot stamped s->realtime_usec holding the rates of
 * every device in s (devices whose rates are not valid get a gap). Devices
 * beyond max_devices rings are not recorded. */
int history_append(struct history *h, const struct sampler_snapshot *s);

/* The points of `device` stamped >= since_realtime_usec, oldest first, gaps
 * left out. With step_usec > 0, points are averaged into buckets of that
 * length (aligned on multiples of step_usec, stamped with the bucket start;
 * member_utilization is the mean of its non-NAN values). Returns 0 and a
 * newly allocated array (NULL when *ret_n is 0), -ENOENT for a device with no
 * history, -ENOMEM. */
int history_query(struct history *h, const char *device, uint64_t since_realtime_usec, uint64_t step_usec,
		  struct history_point **ret, size_t *ret_n);

/* Names of the devices that have history, sorted; free with
 * history_names_free(). */
int history_devices(struct history *h, char ***ret, size_t *ret_n);
void history_names_free(char **names, size_t n);

/* Probe latency points, appended by the probe scheduler after each run. */
int history_probe_append(struct history *h, const char *probe, uint64_t realtime_usec, double p50_sec,
			 double p99_sec, double iops);
int history_probe_query(struct history *h, const char *probe, uint64_t since_realtime_usec,
			struct history_probe_point **ret, size_t *ret_n);

/* The slots per ring, and the bytes allocated now (for self-monitoring and
 * tests of the bound). */
size_t history_slots(struct history *h);
size_t history_memory_bytes(struct history *h);
