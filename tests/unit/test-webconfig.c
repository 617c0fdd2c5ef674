/* --web.config.file: the exporter-toolkit format, every rejected form with
 * its FILE:LINE, and bcrypt checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "webconfig.h"

#define WEB_FIXTURES FIXTURES_DIR "/webconfig"

static struct web_config *load(const char *name)
{
	struct web_config *wc = NULL;
	char path[4096], err[512];
	int r;

	snprintf(path, sizeof(path), "%s/%s", WEB_FIXTURES, name);
	r = web_config_load(path, &wc, err, sizeof(err));
	if (r < 0) {
		fail_msg("%s: %s", name, err);
	}
	return wc;
}

static void test_tls_users_and_headers_load(void **state)
{
	struct web_config *wc = load("good.yml");
	const struct web_header *h;
	size_t n;

	assert_true(web_config_has_tls(wc));
	assert_non_null(strstr(web_config_cert_pem(wc), "BEGIN CERTIFICATE"));
	assert_non_null(strstr(web_config_key_pem(wc), "PRIVATE KEY"));
	assert_string_equal(web_config_tls_priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	assert_true(web_config_requires_auth(wc));
	h = web_config_headers(wc, &n);
	assert_int_equal(n, 2);
	assert_string_equal(h[0].name, "X-Frame-Options");
	assert_string_equal(h[0].value, "deny");
	assert_string_equal(h[1].name, "Strict-Transport-Security");
	web_config_free(wc);
}

static void test_empty_file_means_no_tls_and_no_auth(void **state)
{
	struct web_config *wc = load("empty.yml");

	assert_false(web_config_has_tls(wc));
	assert_false(web_config_requires_auth(wc));
	assert_null(web_config_tls_priorities(wc));
	/* without users, everyone is let in */
	assert_int_equal(web_config_check_basic_auth(wc, NULL, "anyone", "anything"), WEB_AUTH_OK);
	web_config_free(wc);
}

static void test_right_password_passes_and_is_remembered(void **state)
{
	struct web_config *wc = load("good.yml");

	assert_int_equal(web_config_check_basic_auth(wc, NULL, "alice", "correct horse"), WEB_AUTH_OK);
	/* the second time comes from the cache: still only the right one */
	assert_int_equal(web_config_check_basic_auth(wc, NULL, "alice", "correct horse"), WEB_AUTH_OK);
	assert_int_equal(web_config_check_basic_auth(wc, NULL, "bob", "s3cr3t:with:colons"), WEB_AUTH_OK);
	web_config_free(wc);
}

static void test_wrong_password_unknown_user_and_swapped_users_fail(void **state)
{
	struct web_config *wc = load("good.yml");

	assert_int_equal(web_config_check_basic_auth(wc, NULL, "alice", "correct horse"), WEB_AUTH_OK);
	assert_int_equal(web_config_check_basic_auth(wc, "198.51.100.1", "alice", "correct horsE"),
			 WEB_AUTH_DENIED);
	assert_int_equal(web_config_check_basic_auth(wc, "198.51.100.2", "alice", ""), WEB_AUTH_DENIED);
	assert_int_equal(web_config_check_basic_auth(wc, "198.51.100.3", "alice", "correct horse "),
			 WEB_AUTH_DENIED);
	assert_int_equal(web_config_check_basic_auth(wc, "198.51.100.4", "bob", "correct horse"),
			 WEB_AUTH_DENIED);
	assert_int_equal(web_config_check_basic_auth(wc, "198.51.100.5", "mallory", "correct horse"),
			 WEB_AUTH_DENIED);
	assert_int_equal(web_config_check_basic_auth(wc, "198.51.100.6", "", ""), WEB_AUTH_DENIED);
	web_config_free(wc);
}

static void test_failed_logins_are_limited_per_address(void **state)
{
	struct web_config *wc = load("good.yml");

	for (int i = 0; i < 5; i++) {
		assert_int_equal(web_config_check_basic_auth(wc, "192.0.2.1", "alice", "guess"),
				 WEB_AUTH_DENIED);
	}
	/* the sixth in the window is refused without a check, even the right one */
	assert_int_equal(web_config_check_basic_auth(wc, "192.0.2.1", "alice", "guess"), WEB_AUTH_LIMITED);
	assert_int_equal(web_config_check_basic_auth(wc, "192.0.2.1", "alice", "correct horse"),
			 WEB_AUTH_LIMITED);
	/* another address is not held up */
	assert_int_equal(web_config_check_basic_auth(wc, "192.0.2.2", "alice", "correct horse"), WEB_AUTH_OK);
	/* a login already verified comes from the cache, whoever failed */
	assert_int_equal(web_config_check_basic_auth(wc, "192.0.2.1", "alice", "correct horse"), WEB_AUTH_OK);
	web_config_free(wc);
}

static void test_tls_defaults_to_1_2_and_1_3(void **state)
{
	static const char text[] = "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n";
	struct web_config *wc = NULL;
	char err[512];

	assert_int_equal(web_config_parse(text, strlen(text), "inline", WEB_FIXTURES, &wc, err, sizeof(err)),
			 0);
	assert_string_equal(web_config_tls_priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	web_config_free(wc);
}

static void test_bad_files_fail_with_file_and_line(void **state)
{
	static const struct {
		const char *file;
		const char *message; /* after "PATH:" */
	} cases[] = {
	    {"bad-unknown-key.yml", "4: unknown key 'basic_auth_user'"},
	    {"bad-hash.yml", "2: basic_auth_users: the password of 'alice' is not a bcrypt hash"},
	    {"bad-cert-without-key.yml", "1: tls_server_config: cert_file and key_file must both be set"},
	    {"bad-missing-file.yml", "3: key_file: cannot read '"},
	    {"bad-key-mismatch.yml", "1: tls_server_config: the certificate and key cannot be used"},
	    {"bad-syntax.yml", "3: mapping values are not allowed in this context"},
	    {"bad-client-auth.yml", "4: client_auth_type 'RequireAndVerifyClientCert' is not supported"},
	    {"bad-header.yml", "3: header 'Content-Type' may not be set"},
	    {"bad-duplicate-user.yml", "3: duplicate key 'alice' in basic_auth_users"},
	    {"bad-tls-version.yml", "1: tls_server_config: min_version is above max_version"},
	    {"bad-not-a-map.yml", "1: the web config must be a mapping"},
	    {"bad-cost.yml", "2: basic_auth_users: the bcrypt cost of 'alice' is 13, above 12"},
	    {"does-not-exist.yml", " cannot read the web config: No such file or directory"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct web_config *wc = NULL;
		char path[2048], err[512], want[4096];

		snprintf(path, sizeof(path), "%s/%s", WEB_FIXTURES, cases[i].file);
		assert_true(web_config_load(path, &wc, err, sizeof(err)) < 0);
		assert_null(wc);
		snprintf(want, sizeof(want), "%s:%s", path, cases[i].message);
		if (strncmp(err, want, strlen(want)) != 0) {
			fail_msg("%s:\n  want: %s...\n  got:  %s", cases[i].file, want, err);
		}
	}
}

static void test_inline_cert_and_key_and_relative_paths(void **state)
{
	struct web_config *wc = NULL;
	char err[512];
	static const char text[] = "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n";

	/* relative paths are resolved against the config file's directory */
	assert_int_equal(web_config_parse(text, strlen(text), "inline", WEB_FIXTURES, &wc, err, sizeof(err)),
			 0);
	assert_true(web_config_has_tls(wc));
	assert_false(web_config_requires_auth(wc));
	web_config_free(wc);
	wc = NULL;
	assert_true(web_config_parse(text, strlen(text), "inline", "/nonexistent", &wc, err, sizeof(err)) <
		    0);
	assert_non_null(strstr(err, "inline:2: cert_file: cannot read '/nonexistent/tls.crt'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tls_users_and_headers_load),
	    cmocka_unit_test(test_empty_file_means_no_tls_and_no_auth),
	    cmocka_unit_test(test_right_password_passes_and_is_remembered),
	    cmocka_unit_test(test_wrong_password_unknown_user_and_swapped_users_fail),
	    cmocka_unit_test(test_failed_logins_are_limited_per_address),
	    cmocka_unit_test(test_tls_defaults_to_1_2_and_1_3),
	    cmocka_unit_test(test_bad_files_fail_with_file_and_line),
	    cmocka_unit_test(test_inline_cert_and_key_and_relative_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
