/* NVMe multipath heads and their hidden paths in /proc/diskstats. */
#include <stdio.h>
#include <string.h>

#include "multipath.h"

/* Digits at *p, at least one; advances p. */
static bool skip_digits(const char **p)
{
	const char *s = *p;

	while (**p >= '0' && **p <= '9') {
		(*p)++;
	}
	return *p > s;
}

bool multipath_head_of(const char *name, char *head, size_t head_len)
{
	const char *p = name, *subsys, *ns;
	int n;

	if (strncmp(p, "nvme", 4) != 0) {
		return false;
	}
	p += 4;
	subsys = p;
	if (!skip_digits(&p) || *p++ != 'c' || !skip_digits(&p) || *p != 'n') {
		return false;
	}
	ns = p + 1;
	p = ns;
	if (!skip_digits(&p) || *p) {
		return false;
	}
	n = snprintf(head, head_len, "nvme%.*sn%s", (int)(strchr(subsys, 'c') - subsys), subsys, ns);
	return n > 0 && (size_t)n < head_len;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The counters of `sum` where larger than the head's; busy time aside. */
static void fold_counters(struct diskstats_raw *h, const struct diskstats_raw *sum, uint64_t busiest_io_ms)
{
	h->reads = max_u64(h->reads, sum->reads);
	h->reads_merged = max_u64(h->reads_merged, sum->reads_merged);
	h->read_sectors = max_u64(h->read_sectors, sum->read_sectors);
	h->read_ms = max_u64(h->read_ms, sum->read_ms);
	h->writes = max_u64(h->writes, sum->writes);
	h->writes_merged = max_u64(h->writes_merged, sum->writes_merged);
	h->write_sectors = max_u64(h->write_sectors, sum->write_sectors);
	h->write_ms = max_u64(h->write_ms, sum->write_ms);
	h->in_flight = max_u64(h->in_flight, sum->in_flight);
	h->io_ms = max_u64(h->io_ms, busiest_io_ms);
	h->weighted_ms = max_u64(h->weighted_ms, sum->weighted_ms);
	h->discards = max_u64(h->discards, sum->discards);
	h->discards_merged = max_u64(h->discards_merged, sum->discards_merged);
	h->discard_sectors = max_u64(h->discard_sectors, sum->discard_sectors);
	h->discard_ms = max_u64(h->discard_ms, sum->discard_ms);
	h->flushes = max_u64(h->flushes, sum->flushes);
	h->flush_ms = max_u64(h->flush_ms, sum->flush_ms);
}

static void add_counters(struct diskstats_raw *sum, const struct diskstats_raw *e)
{
	sum->reads += e->reads;
	sum->reads_merged += e->reads_merged;
	sum->read_sectors += e->read_sectors;
	sum->read_ms += e->read_ms;
	sum->writes += e->writes;
	sum->writes_merged += e->writes_merged;
	sum->write_sectors += e->write_sectors;
	sum->write_ms += e->write_ms;
	sum->in_flight += e->in_flight;
	sum->weighted_ms += e->weighted_ms;
	sum->discards += e->discards;
	sum->discards_merged += e->discards_merged;
	sum->discard_sectors += e->discard_sectors;
	sum->discard_ms += e->discard_ms;
	sum->flushes += e->flushes;
	sum->flush_ms += e->flush_ms;
}

/* Fold the paths of head h into it; a folded path's name is emptied. */
static void fold_head(struct diskstats_raw *entries, size_t n, struct diskstats_raw *h)
{
	struct diskstats_raw sum = {0};
	uint64_t busiest = 0;
	bool has_paths = false;
	char head[DISKSTATS_NAME_MAX];

	for (size_t i = 0; i < n; i++) {
		if (multipath_head_of(entries[i].name, head, sizeof(head)) && strcmp(head, h->name) == 0) {
			add_counters(&sum, &entries[i]);
			busiest = max_u64(busiest, entries[i].io_ms);
			entries[i].name[0] = '\0';
			has_paths = true;
		}
	}
	if (has_paths) {
		fold_counters(h, &sum, busiest);
	}
}

size_t multipath_fold(struct diskstats_raw *entries, size_t n)
{
	char head[DISKSTATS_NAME_MAX];
	bool has_paths = false;
	size_t out = 0;

	for (size_t i = 0; i < n && !has_paths; i++) {
		has_paths = multipath_head_of(entries[i].name, head, sizeof(head));
	}
	if (!has_paths) {
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		if (strncmp(entries[i].name, "nvme", 4) == 0 &&
		    !multipath_head_of(entries[i].name, head, sizeof(head))) {
			fold_head(entries, n, &entries[i]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (entries[i].name[0]) {
			entries[out++] = entries[i];
		}
	}
	return out;
}
