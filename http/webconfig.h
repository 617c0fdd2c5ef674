/* --web.config.file: TLS and basic auth in the Prometheus exporter-toolkit
 * format (tls_server_config, basic_auth_users, http_server_config.headers),
 * loaded at start and again at each reload (the server swaps the new one
 * in; requests in flight keep a reference to theirs). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct web_config;

struct web_header {
	char *name;
	char *value;
};

/* Parse `text` (YAML; `name` is used in messages, relative cert_file and
 * key_file are resolved against `base_dir`). Reads and checks the
 * certificate and key. On failure returns -EINVAL (or -ENOMEM) with a
 * "NAME:LINE: message" in `err`. */
int web_config_parse(const char *text, size_t len, const char *name, const char *base_dir,
		     struct web_config **ret, char *err, size_t errlen);

/* Read `path` and parse it, relative paths against its directory. */
int web_config_load(const char *path, struct web_config **ret, char *err, size_t errlen);

/* References: a parsed config starts with one; the last unref frees it
 * (with its login cache). web_config_free() is web_config_unref(). */
struct web_config *web_config_ref(struct web_config *wc);
struct web_config *web_config_unref(struct web_config *wc);
struct web_config *web_config_free(struct web_config *wc);

/* TLS: the PEM certificate chain and key (NULL without TLS), and the GnuTLS
 * priority string of min_version/max_version (TLS 1.2 and 1.3 when they
 * are not given; NULL without TLS). */
bool web_config_has_tls(const struct web_config *wc);
const char *web_config_cert_pem(const struct web_config *wc);
const char *web_config_key_pem(const struct web_config *wc);
const char *web_config_tls_priorities(const struct web_config *wc);

/* Response headers from http_server_config.headers. */
const struct web_header *web_config_headers(const struct web_config *wc, size_t *ret_n);

/* True when basic_auth_users is not empty. */
bool web_config_requires_auth(const struct web_config *wc);

enum web_auth {
	WEB_AUTH_OK,
	WEB_AUTH_DENIED,  /* 401 */
	WEB_AUTH_LIMITED, /* 429: a check would start while another runs, or
			   * the address failed too often lately */
};

/* Check a user and password against the bcrypt hashes: the comparison is
 * constant-time, an unknown user costs a bcrypt like a known one, and a
 * successful check is remembered (by a SHA-256 of user, password and hash)
 * so that a scraper does not pay bcrypt on every request. bcrypt checks
 * are bounded: one at a time, and at most 5 failures per `client` (its
 * address; NULL: one shared record) in 10 s; beyond, WEB_AUTH_LIMITED
 * without a check. Thread-safe. */
enum web_auth web_config_check_basic_auth(struct web_config *wc, const char *client, const char *user,
					  const char *password);
