/* history: per-device rings of derived rates and probe latency points. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "sampler.h"
#include "history.h"
#include "macro.h"

#define EPS 1e-6
#define T0  (1700000000ULL * USEC_PER_SEC)

static struct config *make_config(const char *text)
{
	struct config_errors errs = {0};
	struct config *cfg = NULL;

	assert_int_equal(config_load_string("test.conf", text, &errs, &cfg), 0);
	return cfg;
}

/* A hand-built snapshot: device i has read_iops = base + i. */
static struct sampler_snapshot *snapshot(uint64_t realtime_usec, const char *const *names, size_t n,
					 double base, bool valid)
{
	struct sampler_snapshot *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->refcount = 1;
	s->realtime_usec = realtime_usec;
	s->devices = calloc(n ? n : 1, sizeof(*s->devices));
	assert_non_null(s->devices);
	s->n_devices = n;
	for (size_t i = 0; i < n; i++) {
		struct device_state *d = &s->devices[i];

		snprintf(d->raw.name, sizeof(d->raw.name), "%s", names[i]);
		d->rates.valid = valid;
		d->rates.read_iops = base + (double)i;
		d->rates.utilization = 0.5;
		d->rates.read_await_sec = 0.001;
		if (strncmp(names[i], "md", 2) == 0) {
			d->has_member_rates = true;
			d->member_rates.valid = valid;
			d->member_rates.utilization = 0.8791;
		}
	}
	return s;
}

static void append(struct history *h, uint64_t t, const char *const *names, size_t n, double base, bool valid)
{
	struct sampler_snapshot *s = snapshot(t, names, n, base, valid);

	assert_int_equal(history_append(h, s), 0);
	sampler_snapshot_unref(s);
}

static void test_query_returns_the_window_oldest_first(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=1m\n");
	static const char *const names[] = {"sda", "md0"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(cfg, &h), 0);
	assert_int_equal(history_slots(h), 60);
	for (unsigned i = 0; i < 10; i++) {
		append(h, T0 + i * USEC_PER_SEC, names, 2, 100 * i, true);
	}
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), 0);
	assert_int_equal(n, 10);
	assert_int_equal(p[0].realtime_usec, T0);
	assert_float_equal(p[9].rates.read_iops, 900, EPS);
	assert_true(isnan(p[0].rates.member_utilization));
	free(p);

	/* the last 3 seconds */
	assert_int_equal(history_query(h, "md0", T0 + 7 * USEC_PER_SEC, 0, &p, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(p[0].realtime_usec, T0 + 7 * USEC_PER_SEC);
	assert_float_equal(p[0].rates.read_iops, 701, EPS);
	assert_float_equal(p[2].rates.member_utilization, 0.8791, EPS);
	assert_float_equal(p[2].rates.utilization, 0.5, EPS);
	free(p);

	assert_int_equal(history_query(h, "nope", 0, 0, &p, &n), -ENOENT);
	assert_int_equal(history_query(h, "sda", T0 + 100 * USEC_PER_SEC, 0, &p, &n), 0);
	assert_int_equal(n, 0);
	assert_null(p);
	history_free(h);
}

static void test_ring_keeps_only_the_configured_length(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=10s\n");
	static const char *const names[] = {"sda"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n, bytes;

	assert_int_equal(history_new(cfg, &h), 0);
	assert_int_equal(history_slots(h), 10);
	for (unsigned i = 0; i < 25; i++) {
		append(h, T0 + i * USEC_PER_SEC, names, 1, i, true);
	}
	bytes = history_memory_bytes(h);
	for (unsigned i = 25; i < 1000; i++) {
		append(h, T0 + i * USEC_PER_SEC, names, 1, i, true);
	}
	/* memory does not grow with time */
	assert_int_equal(history_memory_bytes(h), bytes);
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), 0);
	assert_int_equal(n, 10);
	assert_float_equal(p[0].rates.read_iops, 990, EPS);
	assert_float_equal(p[9].rates.read_iops, 999, EPS);
	free(p);
	history_free(h);
}

static void test_invalid_samples_and_absent_devices_are_gaps(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=1m\n");
	static const char *const both[] = {"sda", "sdb"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(cfg, &h), 0);
	append(h, T0, both, 2, 1, false); /* first sample: no rates */
	append(h, T0 + 1 * USEC_PER_SEC, both, 2, 2, true);
	append(h, T0 + 2 * USEC_PER_SEC, both, 1, 3, true);  /* sdb vanished */
	append(h, T0 + 3 * USEC_PER_SEC, both, 2, 4, false); /* sdb returned */
	append(h, T0 + 4 * USEC_PER_SEC, both, 2, 5, true);

	assert_int_equal(history_query(h, "sdb", 0, 0, &p, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].realtime_usec, T0 + 1 * USEC_PER_SEC);
	assert_int_equal(p[1].realtime_usec, T0 + 4 * USEC_PER_SEC);
	free(p);
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), 0);
	assert_int_equal(n, 3);
	free(p);
	history_free(h);
}

static void test_devices_beyond_max_devices_get_no_ring(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=10s\nmax_devices=2\n");
	static const char *const names[] = {"a", "b", "c"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	char **list = NULL;
	size_t n;

	assert_int_equal(history_new(cfg, &h), 0);
	append(h, T0, names, 3, 1, true);
	assert_int_equal(history_query(h, "c", 0, 0, &p, &n), -ENOENT);
	assert_int_equal(history_devices(h, &list, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0], "a");
	assert_string_equal(list[1], "b");
	history_names_free(list, n);

	/* once a and b have aged out, their rings go to newcomers */
	for (unsigned i = 1; i <= 10; i++) {
		append(h, T0 + i * USEC_PER_SEC, names + 2, 1, 1, true);
	}
	assert_int_equal(history_query(h, "c", 0, 0, &p, &n), 0);
	assert_true(n > 0);
	free(p);
	assert_int_equal(history_query(h, "a", 0, 0, &p, &n), -ENOENT);
	history_free(h);
}

static void test_history_memory_caps_the_number_of_rings(void **state)
{
	/* an hour at 1 s is 3600 records of at most 64 bytes a device: 1 MiB
	 * holds four such rings, however many devices max_devices allows */
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=1h\nmax_history_memory=1m\n");
	static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
	struct history *h = NULL;
	char **list = NULL;
	size_t n;

	assert_int_equal(cfg->max_devices, 4096);
	assert_int_equal(history_new(cfg, &h), 0);
	append(h, T0, names, 6, 1, true);
	assert_int_equal(history_devices(h, &list, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(list[3], "d");
	history_names_free(list, n);
	/* a reload with the same limits keeps what is there */
	assert_int_equal(history_set_config(h, cfg), 0);
	assert_int_equal(history_devices(h, &list, &n), 0);
	assert_int_equal(n, 4);
	history_names_free(list, n);
	history_free(h);
}

static void test_step_averages_points_into_buckets(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=1m\n");
	static const char *const names[] = {"md0"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(cfg, &h), 0);
	for (unsigned i = 0; i < 20; i++) {
		append(h, T0 + i * USEC_PER_SEC, names, 1, i, true);
	}
	assert_int_equal(history_query(h, "md0", 0, 10 * USEC_PER_SEC, &p, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].realtime_usec, T0);
	assert_float_equal(p[0].rates.read_iops, 4.5, EPS);
	assert_float_equal(p[1].rates.read_iops, 14.5, EPS);
	assert_float_equal(p[1].rates.member_utilization, 0.8791, EPS);
	free(p);
	history_free(h);
}

static void test_ceiling_states_are_kept_as_shares_of_each_step(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=1m\n");
	static const char *const names[] = {"sda"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(cfg, &h), 0);
	for (unsigned i = 0; i < 10; i++) {
		struct sampler_snapshot *s = snapshot(T0 + i * USEC_PER_SEC, names, 1, 100, true);

		/* at the limit for 3 s of 10, throttled for 6, saturated in the last */
		s->devices[0].ceiling.is_at_limit = i >= 2 && i < 5;
		s->devices[0].ceiling.is_throttled = i >= 4;
		s->devices[0].ceiling.is_saturated = i == 9;
		assert_int_equal(history_append(h, s), 0);
		sampler_snapshot_unref(s);
	}
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), 0);
	assert_int_equal(n, 10);
	assert_float_equal(p[1].rates.at_limit, 0, EPS);
	assert_float_equal(p[2].rates.at_limit, 1, EPS);
	assert_float_equal(p[4].rates.throttled, 1, EPS);
	assert_float_equal(p[8].rates.saturated, 0, EPS);
	assert_float_equal(p[9].rates.saturated, 1, EPS);
	free(p);
	assert_int_equal(history_query(h, "sda", 0, 10 * USEC_PER_SEC, &p, &n), 0);
	assert_int_equal(n, 1);
	assert_float_equal(p[0].rates.at_limit, 0.3, EPS);
	assert_float_equal(p[0].rates.throttled, 0.6, EPS);
	assert_float_equal(p[0].rates.saturated, 0.1, EPS);
	/* member_utilization is still averaged on its own (no member here) */
	assert_true(isnan(p[0].rates.member_utilization));
	free(p);
	history_free(h);
}

static void test_probe_points_are_kept_per_probe(void **state)
{
	_cleanup_config_ struct config *cfg =
	    make_config("[global]\nhistory=10s\n[randread4k]\nrw=randread\ndirectory=/srv\ninterval=1s\n"
			"[seqwrite]\nrw=write\ndirectory=/srv\n");
	struct history *h = NULL;
	struct history_probe_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(cfg, &h), 0);
	for (unsigned i = 0; i < 15; i++) {
		assert_int_equal(
		    history_probe_append(h, "randread4k", T0 + i * USEC_PER_SEC, 0.0002, 0.001 * i, 50), 0);
	}
	assert_int_equal(history_probe_append(h, "seqwrite", T0, 0.01, 0.02, 10), 0);
	assert_int_equal(history_probe_query(h, "randread4k", 0, &p, &n), 0);
	assert_int_equal(n, 11); /* a run a second over 10 s */
	assert_int_equal(p[0].realtime_usec, T0 + 4 * USEC_PER_SEC);
	assert_float_equal(p[10].p99_sec, 0.014, EPS);
	assert_float_equal(p[10].p50_sec, 0.0002, EPS);
	assert_float_equal(p[10].iops, 50, EPS);
	free(p);
	assert_int_equal(history_probe_query(h, "randread4k", T0 + 13 * USEC_PER_SEC, &p, &n), 0);
	assert_int_equal(n, 2);
	free(p);
	assert_int_equal(history_probe_query(h, "nope", 0, &p, &n), -ENOENT);
	history_free(h);
}

static void test_probe_rings_are_sized_by_interval_within_the_memory_limit(void **state)
{
	/* a week at 1 s was 604,800 points (14.5 MB) per probe, outside the
	 * limit: five probes took 72.6 MB beside max_history_memory=64m */
	_cleanup_config_ struct config *week = make_config(
	    "[global]\nhistory=7d\nprobe_interval=1s\nmax_history_memory=64m\ndirectory=/srv\nrw=randread\n"
	    "[p0]\n[p1]\n[p2]\n[p3]\n[p4]\n");
	_cleanup_config_ struct config *slow = make_config("[global]\nhistory=1h\nprobe_interval=1m\n");
	static const char *const names[] = {"p0", "p1", "p2", "p3", "p4"};
	struct history *h = NULL;
	struct history_probe_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(week, &h), 0);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(history_probe_append(h, names[i], T0, 0.001, 0.002, 10), 0);
	}
	assert_true(history_memory_bytes(h) <= week->max_history_memory);
	history_free(h);

	/* a probe every minute keeps 61 points of an hour, not 3,600 */
	assert_int_equal(history_new(slow, &h), 0);
	for (unsigned i = 0; i < 100; i++) {
		assert_int_equal(history_probe_append(h, "a", T0 + i * 60 * USEC_PER_SEC, 0.001, 0.002, 10),
				 0);
	}
	assert_int_equal(history_probe_query(h, "a", 0, &p, &n), 0);
	assert_int_equal(n, 61);
	free(p);
	history_free(h);
}

static void test_reload_keeps_history_unless_its_size_changes(void **state)
{
	_cleanup_config_ struct config *a = make_config("[global]\nhistory=1m\n");
	_cleanup_config_ struct config *b = make_config("[global]\nhistory=1m\nlog_level=debug\n");
	_cleanup_config_ struct config *c = make_config("[global]\nhistory=2m\n");
	static const char *const names[] = {"sda"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n;

	assert_int_equal(history_new(a, &h), 0);
	append(h, T0, names, 1, 1, true);
	assert_int_equal(history_set_config(h, b), 0);
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), 0);
	assert_int_equal(n, 1);
	free(p);
	assert_int_equal(history_set_config(h, c), 0);
	assert_int_equal(history_slots(h), 120);
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), -ENOENT);
	history_free(h);
}

static void test_failed_resize_keeps_the_old_history(void **state)
{
	_cleanup_config_ struct config *a = make_config("[global]\nhistory=1m\n");
	_cleanup_config_ struct config *huge = make_config("[global]\nhistory=1m\n");
	static const char *const names[] = {"sda"};
	struct history *h = NULL;
	struct history_point *p = NULL;
	size_t n;

	/* more slots than can be allocated: the new store cannot be had */
	huge->history_usec = UINT64_MAX / 2;
	huge->sample_interval_usec = 1;
	assert_int_equal(history_new(a, &h), 0);
	append(h, T0, names, 1, 1, true);
	assert_int_equal(history_set_config(h, huge), -ENOMEM);
	/* the old history is whole and still takes samples */
	assert_int_equal(history_slots(h), 60);
	append(h, T0 + USEC_PER_SEC, names, 1, 2, true);
	assert_int_equal(history_query(h, "sda", 0, 0, &p, &n), 0);
	assert_int_equal(n, 2);
	free(p);
	history_free(h);
}

struct reader {
	struct history *h;
	bool stop;
	size_t queries;
	size_t out_of_order; /* checked on the main thread: cmocka asserts are not thread-safe */
};

static void *reader_thread(void *arg)
{
	struct reader *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct history_point *p = NULL;
		size_t n = 0;

		if (history_query(r->h, "sda", 0, 0, &p, &n) == 0) {
			/* oldest first, always */
			for (size_t i = 1; i < n; i++) {
				if (p[i].realtime_usec <= p[i - 1].realtime_usec) {
					__atomic_add_fetch(&r->out_of_order, 1, __ATOMIC_RELAXED);
				}
			}
			free(p);
		}
		__atomic_add_fetch(&r->queries, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_queries_run_concurrently_with_appends(void **state)
{
	_cleanup_config_ struct config *cfg = make_config("[global]\nhistory=30s\n");
	static const char *const names[] = {"sda", "sdb"};
	struct reader r = {0};
	pthread_t t;

	assert_int_equal(history_new(cfg, &r.h), 0);
	assert_int_equal(pthread_create(&t, NULL, reader_thread, &r), 0);
	/* append until the reader has overlapped with a good number of appends */
	for (unsigned i = 0;
	     i < 2000 || (__atomic_load_n(&r.queries, __ATOMIC_ACQUIRE) < 100 && i < 10000000); i++) {
		append(r.h, T0 + i * USEC_PER_SEC, names, 2, i, true);
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(r.queries > 0);
	assert_int_equal(r.out_of_order, 0);
	history_free(r.h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_query_returns_the_window_oldest_first),
	    cmocka_unit_test(test_ring_keeps_only_the_configured_length),
	    cmocka_unit_test(test_invalid_samples_and_absent_devices_are_gaps),
	    cmocka_unit_test(test_devices_beyond_max_devices_get_no_ring),
	    cmocka_unit_test(test_history_memory_caps_the_number_of_rings),
	    cmocka_unit_test(test_step_averages_points_into_buckets),
	    cmocka_unit_test(test_ceiling_states_are_kept_as_shares_of_each_step),
	    cmocka_unit_test(test_probe_points_are_kept_per_probe),
	    cmocka_unit_test(test_probe_rings_are_sized_by_interval_within_the_memory_limit),
	    cmocka_unit_test(test_reload_keeps_history_unless_its_size_changes),
	    cmocka_unit_test(test_failed_resize_keeps_the_old_history),
	    cmocka_unit_test(test_queries_run_concurrently_with_appends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
