/* The embedded live page: every asset the page references is in the binary
 * with a type, cache policy and validator, nothing comes from another
 * origin, gzip'd copies inflate to the original, If-None-Match matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "webpage.h"

static void test_page_is_html_at_the_root_and_revalidated(void **state)
{
	const struct web_asset *a = webpage_find("/");

	assert_non_null(a);
	assert_string_equal(a->content_type, "text/html; charset=utf-8");
	assert_string_equal(a->cache_control, "no-cache");
	assert_non_null(strstr((const char *)a->data, "<!DOCTYPE html>"));
	assert_int_equal(strlen((const char *)a->data), a->size);
}

/* Each src= or href= of the page: an embedded asset (its ?v= stripped), an
 * API path of this origin, or nothing else. */
static void test_page_loads_only_embedded_assets_from_its_own_origin(void **state)
{
	const char *page = (const char *)webpage_find("/")->data;
	static const char *const attrs[] = {" src=\"", " href=\""};
	unsigned n_assets = 0;

	for (size_t k = 0; k < 2; k++) {
		for (const char *p = strstr(page, attrs[k]); p; p = strstr(p + 1, attrs[k])) {
			const char *v = p + strlen(attrs[k]);
			size_t n = strcspn(v, "\"");
			char url[256];

			assert_true(n < sizeof(url));
			memcpy(url, v, n);
			url[n] = '\0';
			if (url[0] == '#') {
				continue; /* a link within the page */
			}
			assert_true(url[0] == '/' && url[1] != '/'); /* no scheme, no other host */
			if (strncmp(url, "/assets/", 8) == 0) {
				char *q = strchr(url, '?');

				/* versioned, so that it may be cached for a year */
				assert_non_null(q);
				assert_int_equal(strncmp(q, "?v=", 3), 0);
				*q = '\0';
				assert_non_null(webpage_find(url));
				assert_string_equal(webpage_find(url)->cache_control,
						    "public, max-age=31536000, immutable");
				n_assets++;
			}
		}
	}
	/* chart.js, app.js, style.css, the icon (twice) */
	assert_true(n_assets >= 4);
}

static void test_chart_library_is_embedded(void **state)
{
	const struct web_asset *a = webpage_find("/assets/chart.js");

	assert_non_null(a);
	assert_string_equal(a->content_type, "text/javascript; charset=utf-8");
	assert_non_null(strstr((const char *)a->data, "Chart.js"));
	assert_true(a->size > 50000);
}

static void test_every_asset_has_type_validator_and_inflating_gzip_copy(void **state)
{
	assert_true(webpage_n_assets >= 5);
	for (size_t i = 0; i < webpage_n_assets; i++) {
		const struct web_asset *a = &webpage_assets[i];
		unsigned char *out;
		uLongf out_len;
		z_stream z = {0};

		assert_non_null(a->content_type);
		assert_non_null(a->cache_control);
		assert_int_equal(strncmp(a->etag, "W/\"", 3), 0);
		assert_true(a->size > 0);
		assert_ptr_equal(webpage_find(a->path), a);
		if (!a->gz) {
			continue;
		}
		assert_true(a->gz_size < a->size);
		out_len = a->size + 1;
		out = malloc(out_len);
		assert_non_null(out);
		assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
		z.next_in = (unsigned char *)a->gz;
		z.avail_in = (uInt)a->gz_size;
		z.next_out = out;
		z.avail_out = (uInt)out_len;
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		assert_int_equal(z.total_out, a->size);
		assert_memory_equal(out, a->data, a->size);
		inflateEnd(&z);
		free(out);
	}
}

static void test_unknown_paths_are_not_found(void **state)
{
	assert_null(webpage_find("/index.html"));
	assert_null(webpage_find("/assets/"));
	assert_null(webpage_find("/assets/app.js?v=1"));
	assert_null(webpage_find(""));
	assert_null(webpage_find(NULL));
}

static void test_if_none_match_uses_weak_comparison(void **state)
{
	const char *etag = "W/\"0123abcd\"";

	assert_true(webpage_etag_matches("W/\"0123abcd\"", etag));
	assert_true(webpage_etag_matches("\"0123abcd\"", etag));
	assert_true(webpage_etag_matches("\"x\", W/\"0123abcd\"", etag));
	assert_true(webpage_etag_matches(" \"x\" ,\t\"0123abcd\" ", etag));
	assert_true(webpage_etag_matches("*", etag));
	assert_false(webpage_etag_matches("\"0123abc\"", etag));
	assert_false(webpage_etag_matches("\"0123abcde\"", etag));
	assert_false(webpage_etag_matches("0123abcd", etag));
	assert_false(webpage_etag_matches("", etag));
	assert_false(webpage_etag_matches(",,", etag));
	assert_false(webpage_etag_matches(NULL, etag));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page_is_html_at_the_root_and_revalidated),
	    cmocka_unit_test(test_page_loads_only_embedded_assets_from_its_own_origin),
	    cmocka_unit_test(test_chart_library_is_embedded),
	    cmocka_unit_test(test_every_asset_has_type_validator_and_inflating_gzip_copy),
	    cmocka_unit_test(test_unknown_paths_are_not_found),
	    cmocka_unit_test(test_if_none_match_uses_weak_comparison),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
