/* Which limit holds a device: its total IOPS, its reads' or its writes' own
 * IOPS, or its throughput. Fed what the plateau detectors found (total IOPS,
 * each direction's IOPS, throughput) and what is declared; decides which of
 * them is the volume's ceiling and which are only its shadow (at a
 * throughput cap the IOPS are flat too, at separate read and write caps so
 * is their sum). Pure; iopsd(8), CEILING DETECTION, gives the rules. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum ceiling_resource {
	CEILING_RESOURCE_NONE,
	CEILING_RESOURCE_IOPS,
	CEILING_RESOURCE_READ_IOPS,
	CEILING_RESOURCE_WRITE_IOPS,
	CEILING_RESOURCE_THROUGHPUT,
	_CEILING_RESOURCE_MAX,
};

/* "iops", "read_iops", "write_iops", "throughput"; NULL for NONE. */
const char *ceiling_resource_to_string(enum ceiling_resource r);

/* Separate read and write caps: both directions on a plateau of their own
 * while their awaits differ by this factor (one queue in front of one total
 * cap gives every I/O the same wait, whatever its direction). */
#define CEILING_RESOURCE_AWAIT_FACTOR 1.25
/* With IOPS and throughput both flat and neither declared, an average I/O
 * of this size or more is taken as throughput-bound ... */
#define CEILING_RESOURCE_THROUGHPUT_IO_BYTES (32 * 1024)
/* ... and below this one: from the providers' I/O unit up, an IOPS cap
 * counted in units and a throughput cap look the same (250 I/O/s of 1 MiB
 * are 1000 units of 256 KiB), and the IOPS plateau stays the estimate. */
#define CEILING_RESOURCE_UNIT_IO_BYTES (256 * 1024)
/* A declared limit binds when the rate is at least this share of it. */
#define CEILING_RESOURCE_DECLARED_RATIO 0.9

/* One interval's plateaus (has_*: the detector holds one; the levels are
 * theirs) and the latest sample's per-direction awaits and I/O size. */
struct ceiling_plateaus {
	bool has_iops, has_read_iops, has_write_iops, has_throughput;
	double iops, read_iops, write_iops; /* plateau levels, I/Os per second */
	double bytes_per_sec;		    /* the throughput plateau's level */
	double read_await_sec, write_await_sec;
	double avg_io_bytes; /* bytes per I/O, both directions */
};

/* Declared limits (0: none) and the rates to hold them to: IOPS in the
 * provider's units where one is known. */
struct ceiling_declared {
	uint64_t iops_limit, read_iops_limit, write_iops_limit, throughput_limit;
	double iops, read_iops, write_iops, bytes_per_sec;
};

struct ceiling_verdict {
	enum ceiling_resource resource;		/* the binding limit; NONE: no ceiling */
	bool is_read_flagged, is_write_flagged; /* separate caps: each direction on its own */
	bool has_iops_ceiling;			/* an IOPS estimate is the volume's (not the shadow of a
						 * throughput cap flat with it, or of the directions' caps) */
	bool has_throughput_ceiling;		/* a throughput estimate is the volume's */
};

/* Decide from `p` and `d` (NULL: nothing declared) and fill *ret. */
void ceiling_resource_decide(const struct ceiling_plateaus *p, const struct ceiling_declared *d,
			     struct ceiling_verdict *ret);
