/* libFuzzer harness: the /proc/diskstats parser and the iostat derivation.
 * Any input parses or is skipped line by line without crashing; rates
 * derived from any two parsed lines are never negative, NaN or infinite. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"

#include "diskstats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rates(const struct device_rates *r)
{
	const double v[] = {
	    r->read_iops,
	    r->write_iops,
	    r->discard_iops,
	    r->flush_iops,
	    r->read_bytes_per_sec,
	    r->write_bytes_per_sec,
	    r->discard_bytes_per_sec,
	    r->read_merges_per_sec,
	    r->write_merges_per_sec,
	    r->read_await_sec,
	    r->write_await_sec,
	    r->discard_await_sec,
	    r->flush_await_sec,
	    r->queue_depth,
	    r->utilization,
	};

	if (!r->valid) {
		return;
	}
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (!isfinite(v[i]) || v[i] < 0) {
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diskstats_raw *devs = NULL, one;
	struct device_rates *rates;
	const struct device_rates **members;
	size_t n_bad = 0, n, cap = 0;
	char *text;
	int r;

	text = fuzz_text(data, size, 1 << 20);
	if (!text) {
		return 0;
	}
	/* the line parser takes a length: give it the first line, unterminated */
	(void)diskstats_parse_line((const char *)data, strcspn(text, "\n"), &one);

	r = diskstats_parse_into(text, &devs, &cap, &n_bad);
	free(text);
	if (r <= 0) {
		free(devs);
		return 0;
	}
	n = (size_t)r;
	rates = calloc(n, sizeof(*rates));
	members = calloc(n, sizeof(*members));
	if (rates && members) {
		/* every line as the next sample of the one before it, over an
		 * interval taken from the data so that odd ones come up too */
		for (size_t i = 1; i < n; i++) {
			double interval = (double)(devs[i].minor % 2000) / 1000.0;

			diskstats_derive(&devs[i - 1], &devs[i], interval, &rates[i]);
			check_rates(&rates[i]);
			members[i - 1] = &rates[i];
		}
		if (n > 1) {
			struct device_rates agg;

			diskstats_aggregate_members(members, n - 1, &agg);
			check_rates(&agg);
		}
	}
	free(rates);
	free(members);
	free(devs);
	return 0;
}
