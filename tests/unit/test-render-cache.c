/* The /metrics render cache: a publish pre-renders what was scraped lately,
 * a scrape renders the rest once into the snapshot's entry. The module's
 * source is included so that the test can see which bodies exist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "../../http/render_cache.c"

#include "config.h"
#include "identity-fixture.h"

static char *gunzip(const char *gz, size_t len, size_t max)
{
	z_stream zs = {0};
	char *out = malloc(max + 1);

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)gz;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out;
	zs.avail_out = (uInt)max;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	out[zs.total_out] = '\0';
	inflateEnd(&zs);
	return out;
}

static void test_publish_prerenders_what_was_scraped_and_a_scrape_renders_the_rest(void **state)
{
	static const char conf[] =
	    "[global]\n"
	    "[seq]\nrw=read\nbs=1m\nsize=64m\ndirectory=/srv\nruntime=1s\ninterval=10s\n";
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	struct registry *r = NULL;
	struct probe_identity **ids;
	struct render_cache *c = NULL;
	struct render_cache_entry *e = NULL;
	const char *data;
	size_t len;
	bool gz;

	assert_int_equal(config_load_string("r.conf", conf, &errs, &cfg), 0);
	assert_int_equal(registry_new(&r), 0);
	ids = fixture_identities(cfg);
	assert_int_equal(registry_set_probes(r, cfg, ids), 0);
	/* what the daemon reads from /proc/self before each publish */
	registry_set_process(
	    r, &(struct process_stats){.available = true, .resident_memory_bytes = 1 << 20, .open_fds = 5},
	    "host");
	assert_int_equal(render_cache_new(r, &c), 0);
	assert_int_equal(render_cache_acquire(c, &e), -ENODATA);

	/* nobody scraped yet: nothing is rendered at publish */
	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(render_cache_acquire(c, &e), 0);
	assert_int_equal(e->snap->generation, 1);
	for (int f = 0; f < _METRICS_FORMAT_MAX; f++) {
		assert_null(e->bodies[f].text);
		assert_null(e->bodies[f].gz);
	}
	/* a scrape renders what it needs, once, into the entry */
	assert_int_equal(render_cache_entry_body(e, METRICS_FORMAT_PROMETHEUS, false, &data, &len, &gz), 0);
	assert_false(gz);
	assert_ptr_equal(data, e->bodies[METRICS_FORMAT_PROMETHEUS].text);
	assert_non_null(strstr(data, "iopsd_probe_runs_total{probe=\"seq\",target=\"/srv\"} 0\n"));
	assert_non_null(strstr(data, "process_resident_memory_bytes "));
	assert_int_equal(render_cache_entry_body(e, METRICS_FORMAT_PROMETHEUS, false, &data, &len, &gz), 0);
	assert_ptr_equal(data, e->bodies[METRICS_FORMAT_PROMETHEUS].text);
	assert_null(e->bodies[METRICS_FORMAT_OPENMETRICS].text);
	e = render_cache_entry_unref(e);

	/* after a gzip'd OpenMetrics scrape, publishes pre-render exactly that */
	render_cache_note_scrape(c, METRICS_FORMAT_OPENMETRICS, true);
	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(render_cache_acquire(c, &e), 0);
	assert_int_equal(e->snap->generation, 2);
	assert_null(e->bodies[METRICS_FORMAT_PROMETHEUS].text);
	assert_non_null(e->bodies[METRICS_FORMAT_OPENMETRICS].text);
	assert_non_null(e->bodies[METRICS_FORMAT_OPENMETRICS].gz);
	assert_int_equal(render_cache_entry_body(e, METRICS_FORMAT_OPENMETRICS, true, &data, &len, &gz), 0);
	assert_true(gz);
	assert_ptr_equal(data, e->bodies[METRICS_FORMAT_OPENMETRICS].gz);
	{
		const struct rendered_body *b = &e->bodies[METRICS_FORMAT_OPENMETRICS];
		char *plain = gunzip(b->gz, b->gz_len, b->len);

		assert_true(b->gz_len < b->len);
		assert_string_equal(plain, b->text);
		assert_non_null(strstr(plain, "# EOF\n"));
		free(plain);
	}
	assert_true(e->snap->process.available);
	assert_true(e->snap->process.open_fds > 0);
	/* an entry outlives the cache and the registry */
	render_cache_free(c);
	registry_free(r);
	assert_int_equal(e->snap->generation, 2);
	assert_non_null(strstr(e->bodies[METRICS_FORMAT_OPENMETRICS].text, "# EOF\n"));
	e = render_cache_entry_unref(e);
	fixture_identities_free(ids, cfg->n_probes);
	config_free(cfg);
}

static void test_a_cache_created_after_a_publish_keeps_the_first_scrapes_entry(void **state)
{
	struct registry *r = NULL;
	struct render_cache *c = NULL;
	struct render_cache_entry *a = NULL, *b = NULL;

	assert_int_equal(registry_new(&r), 0);
	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(render_cache_new(r, &c), 0);
	assert_int_equal(render_cache_acquire(c, &a), 0);
	assert_int_equal(render_cache_acquire(c, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(a->snap->generation, 1);
	render_cache_entry_unref(b);
	/* the next publish replaces it */
	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(render_cache_acquire(c, &b), 0);
	assert_ptr_not_equal(a, b);
	assert_int_equal(b->snap->generation, 2);
	render_cache_entry_unref(a);
	render_cache_entry_unref(b);
	/* freed, the cache is no longer the registry's hook */
	render_cache_free(c);
	assert_int_equal(registry_publish(r), 0);
	registry_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_publish_prerenders_what_was_scraped_and_a_scrape_renders_the_rest),
	    cmocka_unit_test(test_a_cache_created_after_a_publish_keeps_the_first_scrapes_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
