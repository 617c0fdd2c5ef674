/* The fixture snapshot: every kind of device and probe state the renderers
 * distinguish, with label values that need escaping. */
#include "snapshot-fixture.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "iopsd-build.h"
#include "macro.h"
#include "identity-fixture.h"

#define T0_USEC 1700000000250000ULL /* when the sample was taken */

static char *md0_members[] = {"nvme2n1", "nvme3n1", NULL};

/* The Kubernetes volumes the kubelet's paths name: nvme1n1's mounted by
 * two pods, md0's staged with no pod yet. */
static struct device_persistentvolume nvme1n1_volumes[] = {
    {"pvc-5b1f0c2e-7d3a-4e9b-8c6d-0f1e2d3c4b5a", "2c4e6a8b-0d1f-4e3a-9b7c-5d6e7f8a9b0c"},
    {"pvc-5b1f0c2e-7d3a-4e9b-8c6d-0f1e2d3c4b5a", "8d3c1f0e-6b9a-4c2d-9e7f-1a2b3c4d5e6f"},
};
static struct device_persistentvolume md0_volumes[] = {{"local-pv-md0", ""}};

/* The strings are the fixture's (string literals): a sampler snapshot
 * without a topology owns none. */
static char *mount_pool[16];
static size_t n_mount_pool;

static void topo(struct device_state *d, enum device_kind kind, char **members, char *mounts, char *model)
{
	d->topo.kind = kind;
	d->topo.members = members;
	for (d->topo.n_members = 0; members && members[d->topo.n_members];) {
		d->topo.n_members++;
	}
	d->topo.mountpoints = mounts;
	/* one mount point each, kept in a pool that lives as long as the
	 * literals do */
	if (mounts[0] && n_mount_pool < sizeof(mount_pool) / sizeof(mount_pool[0])) {
		mount_pool[n_mount_pool] = mounts;
		d->topo.mountpoint_list = &mount_pool[n_mount_pool++];
		d->topo.n_mountpoints = 1;
	}
	d->topo.model = model;
	d->topo.dm_name = "";
	d->topo.raid_level = kind == DEVICE_KIND_MD ? "raid0" : "";
	d->topo.volume_id = "";
}

static void rates(struct device_rates *r, double riops, double wiops, double util, double qd)
{
	r->valid = true;
	r->interval_sec = 1.0;
	r->read_iops = riops;
	r->write_iops = wiops;
	r->read_bytes_per_sec = riops * 4096;
	r->write_bytes_per_sec = wiops * 16384;
	r->read_merges_per_sec = 0.5;
	r->write_merges_per_sec = 12;
	r->read_await_sec = 0.00125;
	r->write_await_sec = 0.0035;
	r->discard_iops = 1;
	r->discard_bytes_per_sec = 1048576;
	r->discard_await_sec = 0.0001;
	r->flush_iops = 2;
	r->flush_await_sec = 0.0004;
	r->queue_depth = qd;
	r->utilization = util;
}

static struct sampler_snapshot *fixture_samples(void)
{
	struct sampler_snapshot *ss = calloc(1, sizeof(*ss));
	struct device_state *d;

	assert_non_null(ss);
	ss->refcount = 1;
	ss->realtime_usec = T0_USEC;
	ss->monotonic_usec = 5000000000ULL;
	ss->parse_errors_total = 2;
	ss->pressure =
	    (struct pressure_io){.available = true, .some_total_usec = 12500000, .full_total_usec = 3250000};
	snprintf(ss->dmi.vendor, sizeof(ss->dmi.vendor), "Amazon EC2");
	snprintf(ss->dmi.product, sizeof(ss->dmi.product), "m5.large");
	ss->n_devices = 3;
	ss->devices = calloc(3, sizeof(*ss->devices));
	assert_non_null(ss->devices);

	/* a cloud volume at its declared limit */
	d = &ss->devices[0];
	d->raw = (struct diskstats_raw){
	    .major = 259,
	    .minor = 1,
	    .name = "nvme1n1",
	    .n_fields = 20,
	    .reads = 1234567,
	    .reads_merged = 89,
	    .read_sectors = 98765432,
	    .read_ms = 456789,
	    .writes = 7654321,
	    .writes_merged = 4321,
	    .write_sectors = 123456789,
	    .write_ms = 987654,
	    .in_flight = 3,
	    .io_ms = 3600123,
	    .weighted_ms = 4500321,
	    .discards = 10,
	    .discards_merged = 1,
	    .discard_sectors = 2048,
	    .discard_ms = 5,
	    .flushes = 777,
	    .flush_ms = 99,
	};
	rates(&d->rates, 2950.5, 49.5, 1.0, 31.75);
	topo(d, DEVICE_KIND_DISK, NULL, "/data", "Amazon Elastic Block Store");
	d->topo.size_bytes = 107374182400ULL;
	d->topo.logical_block_size = 512;
	d->topo.persistentvolumes = nvme1n1_volumes;
	d->topo.n_persistentvolumes = ELEMENTSOF(nvme1n1_volumes);
	d->ceiling = (struct device_ceiling){
	    .iops_limit = 3000,
	    .throughput_limit = 131072000,
	    .iops_limit_ratio = 1.0,
	    .throughput_limit_ratio = 0.0977,
	    .at_ceiling_iops_seconds = 842,
	    .at_ceiling_throughput_seconds = 0,
	    .is_at_limit = true,
	    .has_burst_model = true,
	    .burst_balance_ratio = 0.25,
	    .is_throttled = true,
	    .is_saturated = false,
	    .iops_ceiling_estimate = 3000,
	    .iops_ceiling_limit_ratio = 1.0,
	    .throughput_ceiling_estimate = 0,
	    .resource = "iops",
	    .iops_unit = 262144,
	    .provider_iops = 3000.0,
	    .average_io_bytes = 4303.2,
	    .read_iops_limit = 3000,
	    .read_iops_limit_ratio = 0.9835,
	    .at_ceiling_read_iops_seconds = 800,
	    .write_throughput_limit = 52428800,
	    .write_throughput_limit_ratio = 0.0254,
	    .at_ceiling_write_throughput_seconds = 12,
	};

	/* a partition seen for the first time, with a mount point that needs
	 * every kind of escaping (quote, backslash, newline, not UTF-8) */
	d = &ss->devices[1];
	d->raw = (struct diskstats_raw){
	    .major = 259,
	    .minor = 2,
	    .name = "nvme1n1p1",
	    .n_fields = 18,
	    .reads = 100,
	    .read_sectors = 800,
	    .writes = 5,
	    .write_sectors = 40,
	};
	topo(d, DEVICE_KIND_PARTITION, NULL, "/mnt/we\"ird\\path\nx\xff", "");
	snprintf(d->topo.parent, sizeof(d->topo.parent), "nvme1n1");
	d->ceiling.iops_limit_ratio = NAN;
	d->ceiling.throughput_limit_ratio = NAN;

	/* an md RAID0 over two volumes, saturated, no limit declared */
	d = &ss->devices[2];
	d->raw = (struct diskstats_raw){
	    .major = 9,
	    .minor = 0,
	    .name = "md0",
	    .n_fields = 14,
	    .reads = 5000,
	    .read_sectors = 40000,
	    .writes = 6000,
	    .write_sectors = 96000,
	};
	rates(&d->rates, 1500, 500, 0, 0);
	d->has_member_rates = true;
	rates(&d->member_rates, 750, 250, 0.88, 12.5);
	topo(d, DEVICE_KIND_MD, md0_members, "/srv", "");
	d->topo.size_bytes = 214748364800ULL;
	d->topo.logical_block_size = 4096;
	d->topo.persistentvolumes = md0_volumes;
	d->topo.n_persistentvolumes = ELEMENTSOF(md0_volumes);
	d->ceiling.iops_limit_ratio = NAN;
	d->ceiling.throughput_limit_ratio = NAN;
	d->ceiling.is_saturated = true;
	/* ... one of whose members md has marked faulty */
	d->md = (struct md_health){.is_known = true, .array_state = "clean", .degraded = 1, .failed_mask = 2};
	return ss;
}

void fixture_learned_burst(struct device_ceiling *c)
{
	c->has_learned_burst = true;
	c->burst_iops_estimate = 3000;
	c->burst_base_iops_estimate = 1000;
	c->burst_credits_estimate = 60000;
	c->burst_duration_seconds = 30;
	c->burst_exhausted_realtime_usec = 1699999970500000ULL;
}

static void latency(struct histogram *h, unsigned n, uint64_t base_ns)
{
	histogram_init(h);
	for (unsigned i = 0; i < n; i++) {
		/* a spread from base to ~3x base, plus a slow tail */
		histogram_record(h, base_ns + (uint64_t)i * base_ns * 2 / n);
	}
	histogram_record(h, 25 * NSEC_PER_MSEC);
}

/* Two probes, as a configuration gives them to the registry. */
static const char probes_conf[] =
    "[global]\n"
    "[randread4k]\nrw=randread\ndirectory=/data\ninterval=10s\nruntime=1s\n"
    "[mixed]\nrw=randrw\ndirectory=/srv/db\nfsync=1\ninterval=60s\nruntime=5s\n";

/* What the registry publishes for probes_conf (and `samples`, taken over). */
static struct snapshot *published(struct sampler_snapshot *samples)
{
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	struct registry *r = NULL;
	struct probe_identity **ids;
	struct snapshot *s;

	if (config_load_string("fixture.conf", probes_conf, &errs, &cfg) < 0) {
		fail_msg("fixture.conf: %s", errs.n ? errs.items[0].message : "?");
	}
	assert_int_equal(registry_new(&r), 0);
	ids = fixture_identities(cfg);
	assert_int_equal(registry_set_probes(r, cfg, ids), 0);
	registry_set_samples(r, samples);
	sampler_snapshot_unref(samples);
	assert_int_equal(registry_publish(r), 0);
	s = registry_acquire(r);
	assert_non_null(s);
	registry_free(r);
	fixture_identities_free(ids, cfg->n_probes);
	config_free(cfg);
	assert_int_equal(s->n_probes, 2);
	return s;
}

/* The probes' state: the first on a device with six runs behind it (the
 * last one a success), the second not run yet. The fixture owns the only
 * reference to the snapshot, so it may still fill it in. */
static void probes(struct snapshot *s, bool with_last)
{
	struct probe_state *p = &s->probes[0];

	assert_string_equal(p->name, "randread4k");
	assert_string_equal(p->target, "/data");
	for (size_t i = 0; i < 2; i++) {
		for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
			histogram_init(&s->probes[i].total[op].lat);
			histogram_init(&s->probes[i].last.op[op].lat);
		}
	}
	snprintf(p->device, sizeof(p->device), "nvme1n1");
	if (with_last) {
		p->runs_total = 6;
		p->failures_total = 1;
		p->total[PROBE_OP_READ].ops = 300;
		p->total[PROBE_OP_READ].bytes = 300 * 4096;
		p->total[PROBE_OP_READ].errors[PROBE_ERR_EIO] = 2;
		latency(&p->total[PROBE_OP_READ].lat, 299, 180 * NSEC_PER_USEC);
		p->has_last = true;
		p->last.success = true;
		p->last.start_realtime_usec = 1699999990000000ULL;
		p->last.runtime_usec = 1000250;
		p->last.op[PROBE_OP_READ].ops = 50;
		p->last.op[PROBE_OP_READ].bytes = 50 * 4096;
		p->last.op[PROBE_OP_READ].iops = 49.99;
		p->last.op[PROBE_OP_READ].bw_bytes = 204758;
		latency(&p->last.op[PROBE_OP_READ].lat, 49, 200 * NSEC_PER_USEC);
		p->last_run_realtime_usec = p->last.start_realtime_usec;
		p->last_done_monotonic_usec = 4999000000ULL;
	}
	p = &s->probes[1];
	assert_string_equal(p->name, "mixed");
	assert_string_equal(p->target, "/srv/db");
	assert_int_equal(p->rw, PROBE_RW_RANDRW);
	assert_true(p->has_fsync);
	assert_int_equal(p->interval_usec, 60 * USEC_PER_SEC);
	assert_int_equal(p->runtime_usec, 5 * USEC_PER_SEC);
}

struct snapshot *fixture_snapshot_new(bool with_devices)
{
	struct snapshot *s = published(with_devices ? fixture_samples() : NULL);

	/* fixed where the registry put the clocks, the host and /proc/self */
	s->generation = 42;
	s->realtime_usec = T0_USEC + 250000;
	s->monotonic_usec = 5000250000ULL;
	s->start_realtime_usec = 1699990000000000ULL;
	s->start_monotonic_usec = 4990000000ULL;
	s->sample_interval_usec = USEC_PER_SEC;
	s->history_usec = 3600 * USEC_PER_SEC;
	s->stale_after_usec = 5 * USEC_PER_SEC;
	snprintf(s->hostname, sizeof(s->hostname), "db-7");
	probes(s, with_devices);
	s->process = (struct process_stats){
	    .available = true,
	    .cpu_seconds = 1.25,
	    .resident_memory_bytes = 12582912,
	    .virtual_memory_bytes = 314572800,
	    .open_fds = 9,
	    .max_fds = 1024,
	    .start_time_seconds = 1699990000.5,
	};
	s->last_render_seconds = 0.00125;
	s->is_healthy = true;
	s->health_reason[0] = '\0';
	return s;
}

/* Replace every occurrence of `from` in `text` with `to` (new string). */
static char *replace_all(const char *text, const char *from, const char *to)
{
	size_t nf = strlen(from), nt = strlen(to), n = 0;
	char *out, *o;

	for (const char *p = strstr(text, from); p; p = strstr(p + nf, from)) {
		n++;
	}
	out = malloc(strlen(text) + n * (nt + 1) + 1);
	assert_non_null(out);
	o = out;
	while (*text) {
		if (strncmp(text, from, nf) == 0) {
			memcpy(o, to, nt);
			o += nt;
			text += nf;
		} else {
			*o++ = *text++;
		}
	}
	*o = '\0';
	return out;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	if (!f) {
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

const char **fixture_names(const char *const *names, size_t n)
{
	const char **v = calloc(n, sizeof(*v));

	assert_non_null(v);
	memcpy(v, names, n * sizeof(*v));
	return v;
}

void assert_golden(const char *name, const char *text)
{
	char path[4096];
	char *actual, *golden;
	const char *update = getenv("IOPSD_UPDATE_GOLDEN");
	size_t line = 1;

	snprintf(path, sizeof(path), "%s/golden/%s", FIXTURES_DIR, name);
	actual = replace_all(text, "\"" IOPSD_VERSION "\"", "\"@VERSION@\"");
	if (update && strcmp(update, "1") == 0) {
		FILE *f = fopen(path, "we");

		assert_non_null(f);
		fputs(actual, f);
		fclose(f);
		free(actual);
		return;
	}
	golden = read_file(path);
	if (!golden) {
		fail_msg("%s: missing; run with IOPSD_UPDATE_GOLDEN=1 to create it", path);
	}
	for (size_t i = 0;; i++) {
		if (actual[i] != golden[i]) {
			const char *a = actual + i, *g = golden + i;

			while (a > actual && a[-1] != '\n') {
				a--;
			}
			while (g > golden && g[-1] != '\n') {
				g--;
			}
			fail_msg("%s differs at line %zu:\n  golden: %.*s\n  actual: %.*s\n"
				 "(IOPSD_UPDATE_GOLDEN=1 rewrites it after a deliberate change)",
				 path, line, (int)strcspn(g, "\n"), g, (int)strcspn(a, "\n"), a);
		}
		if (actual[i] == '\0') {
			break;
		}
		if (actual[i] == '\n') {
			line++;
		}
	}
	free(actual);
	free(golden);
}
