/* The exporter-toolkit web config: parsed with libyaml's document API,
 * strict about unknown keys (as the toolkit is), with the certificate and
 * key checked by GnuTLS at load time so that a bad file fails at start. */
#include "webconfig.h"

#include <crypt.h>
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "fileio.h"
#include "macro.h"
#include "refcount.h"
#include "timeutil.h"

#define WEB_CONFIG_MAX_SIZE (1u << 20)
#define PEM_MAX_SIZE	    (1u << 20)
#define AUTH_CACHE_SIZE	    16
#define SHA256_SIZE	    32
#define BCRYPT_HASH_LEN	    60
/* Each wrong password costs one bcrypt: 2^cost rounds, ~250 ms at 12. */
#define BCRYPT_MAX_COST 12
/* bcrypt checks running at once: the other server thread stays free for
 * scrapes whose login is cached. */
#define AUTH_MAX_CHECKS 1
/* Failed logins allowed per address in a window; beyond, 429 without a
 * bcrypt until the window ends. The table forgets the oldest address. */
#define AUTH_MAX_FAILURES    5
#define AUTH_FAILURE_WINDOW  (10ULL * USEC_PER_SEC)
#define AUTH_FAILURE_CLIENTS 256
#define AUTH_CLIENT_KEY_SIZE 48

struct web_config {
	char *cert_pem;
	char *key_pem;
	char *tls_priorities;
	struct web_header *users; /* name, bcrypt hash */
	size_t n_users;
	struct web_header *headers;
	size_t n_headers;

	unsigned refcount;
	pthread_mutex_t cache_lock; /* the cache, the failure table, checks_running */
	uint8_t cache[AUTH_CACHE_SIZE][SHA256_SIZE];
	size_t cache_n;
	size_t cache_next;
	unsigned checks_running;
	struct auth_client {
		char key[AUTH_CLIENT_KEY_SIZE];
		uint64_t window_start_usec; /* monotonic; 0: a free slot */
		unsigned failures;
	} clients[AUTH_FAILURE_CLIENTS];
};

struct parser {
	yaml_document_t *doc;
	const char *name;
	const char *base_dir;
	char *err;
	size_t errlen;
	struct web_config *wc;
	int min_tls, max_tls; /* 0 = default; 10..13 */
};

static int fail(struct parser *p, const yaml_node_t *n, const char *fmt, ...) _printf_(3, 4);
static int fail(struct parser *p, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	k = snprintf(p->err, p->errlen, "%s:%zu: ", p->name, n ? n->start_mark.line + 1 : 1);
	if (k < 0 || (size_t)k >= p->errlen) {
		return -EINVAL;
	}
	va_start(ap, fmt);
	vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static yaml_node_t *node(struct parser *p, int index)
{
	return yaml_document_get_node(p->doc, index);
}

/* A YAML null: absent value, "~" or "null". */
static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		return false;
	}
	v = (const char *)n->data.scalar.value;
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
	       strcmp(v, "NULL") == 0;
}

static int get_string(struct parser *p, const yaml_node_t *n, const char *key, const char **ret)
{
	if (n->type != YAML_SCALAR_NODE) {
		return fail(p, n, "%s must be a string", key);
	}
	*ret = is_null(n) ? "" : (const char *)n->data.scalar.value;
	return 0;
}

static int get_bool(struct parser *p, const yaml_node_t *n, const char *key, bool *ret)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE) {
		return fail(p, n, "%s must be true or false", key);
	}
	v = (const char *)n->data.scalar.value;
	if (strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0) {
		*ret = true;
	} else if (strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0) {
		*ret = false;
	} else {
		return fail(p, n, "%s must be true or false, not '%s'", key, v);
	}
	return 0;
}

/* Iterate a mapping's keys, rejecting non-string and duplicate keys. */
typedef int (*mapping_fn)(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v);

static int for_each_pair(struct parser *p, const yaml_node_t *map, const char *what, mapping_fn fn)
{
	if (is_null(map)) {
		return 0;
	}
	if (map->type != YAML_MAPPING_NODE) {
		return fail(p, map, "%s must be a mapping", what);
	}
	for (yaml_node_pair_t *a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
		const yaml_node_t *k = node(p, a->key), *v = node(p, a->value);
		int r;

		if (!k || !v || k->type != YAML_SCALAR_NODE) {
			return fail(p, k, "keys of %s must be strings", what);
		}
		for (yaml_node_pair_t *b = map->data.mapping.pairs.start; b < a; b++) {
			const yaml_node_t *kb = node(p, b->key);

			if (kb && kb->type == YAML_SCALAR_NODE &&
			    strcmp((const char *)kb->data.scalar.value, (const char *)k->data.scalar.value) ==
				0) {
				return fail(p, k, "duplicate key '%s' in %s",
					    (const char *)k->data.scalar.value, what);
			}
		}
		r = fn(p, (const char *)k->data.scalar.value, k, v);
		if (r < 0) {
			return r;
		}
	}
	return 0;
}

static char *resolve_path(const char *base_dir, const char *path)
{
	if (path[0] == '/' || !base_dir) {
		return strdup(path);
	}
	return path_join(base_dir, path);
}

static int read_pem(struct parser *p, const yaml_node_t *n, const char *key, const char *path, char **ret)
{
	_cleanup_free_ char *full = NULL;
	int r;

	full = resolve_path(p->base_dir, path);
	if (!full) {
		return -ENOMEM;
	}
	r = read_virtual_file(full, PEM_MAX_SIZE, ret);
	if (r < 0) {
		return fail(p, n, "%s: cannot read '%s': %s", key, full, strerror(-r));
	}
	return 0;
}

static int parse_tls_version(struct parser *p, const yaml_node_t *n, const char *key, int *ret)
{
	static const struct {
		const char *name;
		int version;
	} versions[] = {{"TLS10", 10}, {"TLS11", 11}, {"TLS12", 12}, {"TLS13", 13}};
	const char *v = NULL;
	int r;

	r = get_string(p, n, key, &v);
	if (r < 0) {
		return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(versions); i++) {
		if (strcmp(v, versions[i].name) == 0) {
			*ret = versions[i].version;
			return 0;
		}
	}
	return fail(p, n, "%s: '%s' is not one of TLS10, TLS11, TLS12, TLS13", key, v);
}

/* cert_file/key_file name PEM files; cert/key hold the PEM inline */
static int on_tls_pem_key(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
	struct web_config *wc = p->wc;
	char **dst = key[0] == 'c' ? &wc->cert_pem : &wc->key_pem;
	const char *s = NULL;
	int r;

	r = get_string(p, v, key, &s);
	if (r < 0) {
		return r;
	}
	if (*dst) {
		return fail(p, k, "%s: the %s is given twice", key, key[0] == 'c' ? "certificate" : "key");
	}
	if (!s[0]) {
		return 0;
	}
	if (strchr(key, '_')) {
		return read_pem(p, v, key, s, dst);
	}
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

/* The keys of the exporter-toolkit format that iopsd does not implement:
 * accepted only when they ask for nothing (client_auth_type NoClientCert
 * or empty, the others null). */
static int on_tls_unsupported_key(struct parser *p, const char *key, const yaml_node_t *k,
				  const yaml_node_t *v)
{
	const char *s = NULL;
	int r;

	if (strcmp(key, "client_auth_type") == 0) {
		r = get_string(p, v, key, &s);
		if (r < 0) {
			return r;
		}
		if (s[0] && strcmp(s, "NoClientCert") != 0) {
			return fail(p, v,
				    "client_auth_type '%s' is not supported: iopsd does not verify client "
				    "certificates (use basic_auth_users)",
				    s);
		}
		return 0;
	}
	if (is_null(v)) {
		return 0;
	}
	return fail(p, k, "%s is not supported by iopsd", key);
}

static int on_tls_key(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
	bool b;

	if (strcmp(key, "cert_file") == 0 || strcmp(key, "key_file") == 0 || strcmp(key, "cert") == 0 ||
	    strcmp(key, "key") == 0) {
		return on_tls_pem_key(p, key, k, v);
	}
	if (strcmp(key, "client_auth_type") == 0 || strcmp(key, "client_ca_file") == 0 ||
	    strcmp(key, "client_allowed_sans") == 0 || strcmp(key, "cipher_suites") == 0 ||
	    strcmp(key, "curve_preferences") == 0) {
		return on_tls_unsupported_key(p, key, k, v);
	}
	if (strcmp(key, "min_version") == 0) {
		return parse_tls_version(p, v, key, &p->min_tls);
	}
	if (strcmp(key, "max_version") == 0) {
		return parse_tls_version(p, v, key, &p->max_tls);
	}
	if (strcmp(key, "prefer_server_cipher_suites") == 0) {
		return get_bool(p, v, key, &b);
	}
	return fail(p, k,
		    "unknown key '%s' in tls_server_config (known: cert_file, key_file, cert, key, "
		    "client_auth_type, min_version, max_version)",
		    key);
}

static int append_pair(struct web_header **array, size_t *n, const char *name, const char *value)
{
	struct web_header *a = realloc(*array, (*n + 1) * sizeof(*a));

	if (!a) {
		return -ENOMEM;
	}
	*array = a;
	a[*n].name = strdup(name);
	a[*n].value = strdup(value);
	(*n)++;
	return a[*n - 1].name && a[*n - 1].value ? 0 : -ENOMEM;
}

static void pairs_free(struct web_header *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(a[i].name);
		free(a[i].value);
	}
	free(a);
}

static int on_header(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
	/* the headers the exporter-toolkit allows to be set */
	static const char *const allowed[] = {
	    "Strict-Transport-Security", "X-Content-Type-Options",  "X-Frame-Options",
	    "X-XSS-Protection",		 "Content-Security-Policy",
	};
	struct web_config *wc = p->wc;
	const char *value = NULL, *canonical = NULL;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
		if (strcasecmp(key, allowed[i]) == 0) {
			canonical = allowed[i];
		}
	}
	if (!canonical) {
		return fail(
		    p, k,
		    "header '%s' may not be set (allowed: Strict-Transport-Security, X-Content-Type-Options, "
		    "X-Frame-Options, X-XSS-Protection, Content-Security-Policy)",
		    key);
	}
	r = get_string(p, v, key, &value);
	if (r < 0) {
		return r;
	}
	if (strpbrk(value, "\r\n")) {
		return fail(p, v, "header '%s' has a line break in its value", key);
	}
	return append_pair(&wc->headers, &wc->n_headers, canonical, value);
}

static int on_http_key(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
	bool b;

	if (strcmp(key, "http2") == 0) {
		/* HTTP/2 is a Go server feature; iopsd speaks HTTP/1.1 either way */
		return get_bool(p, v, key, &b);
	}
	if (strcmp(key, "headers") == 0) {
		return for_each_pair(p, v, "http_server_config.headers", on_header);
	}
	return fail(p, k, "unknown key '%s' in http_server_config (known: headers, http2)", key);
}

/* A bcrypt hash that libxcrypt can check ($2a$, $2b$, $2y$). This also
 * keeps libcrypt linked in sanitizer builds, where libasan's crypt_r
 * interceptor would otherwise satisfy the linker on its own. */
static bool is_bcrypt_hash(const char *h)
{
	return strlen(h) == BCRYPT_HASH_LEN && h[0] == '$' && h[1] == '2' &&
	       (h[2] == 'a' || h[2] == 'b' || h[2] == 'y') && h[3] == '$' &&
	       crypt_checksalt(h) == CRYPT_SALT_OK;
}

/* The cost of a hash is_bcrypt_hash() accepted: "$2y$NN$". */
static int bcrypt_cost(const char *h)
{
	return (h[4] - '0') * 10 + (h[5] - '0');
}

static int on_user(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
	struct web_config *wc = p->wc;
	const char *hash = NULL;
	int r;

	if (key[0] == '\0') {
		return fail(p, k, "basic_auth_users: empty user name");
	}
	if (strchr(key, ':')) {
		return fail(p, k, "basic_auth_users: user name '%s' contains ':'", key);
	}
	r = get_string(p, v, key, &hash);
	if (r < 0) {
		return r;
	}
	if (!is_bcrypt_hash(hash)) {
		return fail(p, v,
			    "basic_auth_users: the password of '%s' is not a bcrypt hash ($2y$..., as "
			    "htpasswd -nbB makes)",
			    key);
	}
	if (bcrypt_cost(hash) > BCRYPT_MAX_COST) {
		return fail(p, v,
			    "basic_auth_users: the bcrypt cost of '%s' is %d, above %d (every wrong "
			    "password would cost that much; htpasswd -nbB -C %d makes one)",
			    key, bcrypt_cost(hash), BCRYPT_MAX_COST, BCRYPT_MAX_COST);
	}
	return append_pair(&wc->users, &wc->n_users, key, hash);
}

static int on_top_key(struct parser *p, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
	if (strcmp(key, "tls_server_config") == 0) {
		return for_each_pair(p, v, "tls_server_config", on_tls_key);
	}
	if (strcmp(key, "http_server_config") == 0) {
		return for_each_pair(p, v, "http_server_config", on_http_key);
	}
	if (strcmp(key, "basic_auth_users") == 0) {
		return for_each_pair(p, v, "basic_auth_users", on_user);
	}
	return fail(p, k, "unknown key '%s' (known: tls_server_config, http_server_config, basic_auth_users)",
		    key);
}

/* The GnuTLS priority string of min_version..max_version: TLS 1.2 and 1.3
 * unless they say otherwise, always explicit (GnuTLS's own default would
 * follow the system's policy, which may allow 1.0 and 1.1). */
static int set_tls_priorities(struct parser *p, const yaml_node_t *root)
{
	int lo = p->min_tls ? p->min_tls : 12, hi = p->max_tls ? p->max_tls : 13;
	char prio[128];
	size_t n;

	if (lo > hi) {
		return fail(p, root, "tls_server_config: min_version is above max_version");
	}
	n = (size_t)snprintf(prio, sizeof(prio), "NORMAL:-VERS-ALL");
	for (int v = hi; v >= lo; v--) {
		n += (size_t)snprintf(prio + n, sizeof(prio) - n, ":+VERS-TLS1.%d", v - 10);
	}
	p->wc->tls_priorities = strdup(prio);
	return p->wc->tls_priorities ? 0 : -ENOMEM;
}

static int check_tls(struct parser *p, const yaml_node_t *root)
{
	struct web_config *wc = p->wc;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert, key;
	int r;

	if (!wc->cert_pem && !wc->key_pem) {
		if (p->min_tls || p->max_tls) {
			return fail(
			    p, root,
			    "tls_server_config: min_version/max_version without cert_file and key_file");
		}
		return 0;
	}
	if (!wc->cert_pem || !wc->key_pem) {
		return fail(p, root, "tls_server_config: cert_file and key_file must both be set");
	}
	if (gnutls_certificate_allocate_credentials(&cred) < 0) {
		return -ENOMEM;
	}
	cert = (gnutls_datum_t){(unsigned char *)wc->cert_pem, (unsigned)strlen(wc->cert_pem)};
	key = (gnutls_datum_t){(unsigned char *)wc->key_pem, (unsigned)strlen(wc->key_pem)};
	r = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_certificate_free_credentials(cred);
	if (r < 0) {
		return fail(p, root, "tls_server_config: the certificate and key cannot be used: %s",
			    gnutls_strerror(r));
	}

	return set_tls_priorities(p, root);
}

static int parse_document(struct parser *p)
{
	yaml_node_t *root = yaml_document_get_root_node(p->doc);
	int r;

	if (!root) {
		return 0; /* an empty file: no TLS, no auth */
	}
	r = for_each_pair(p, root, "the web config", on_top_key);
	if (r < 0) {
		return r;
	}
	return check_tls(p, root);
}

int web_config_parse(const char *text, size_t len, const char *name, const char *base_dir,
		     struct web_config **ret, char *err, size_t errlen)
{
	struct parser p = {.name = name, .base_dir = base_dir, .err = err, .errlen = errlen};
	yaml_parser_t yp;
	yaml_document_t doc;
	int r;

	if (errlen > 0) {
		err[0] = '\0';
	}
	p.wc = calloc(1, sizeof(*p.wc));
	if (!p.wc) {
		return -ENOMEM;
	}
	p.wc->refcount = 1;
	pthread_mutex_init(&p.wc->cache_lock, NULL);
	if (!yaml_parser_initialize(&yp)) {
		web_config_free(p.wc);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	if (!yaml_parser_load(&yp, &doc)) {
		snprintf(err, errlen, "%s:%zu: %s%s%s", name, yp.problem_mark.line + 1,
			 yp.problem ? yp.problem : "invalid YAML", yp.context ? " " : "",
			 yp.context ? yp.context : "");
		yaml_parser_delete(&yp);
		web_config_free(p.wc);
		return -EINVAL;
	}
	p.doc = &doc;
	r = parse_document(&p);
	yaml_document_delete(&doc);
	yaml_parser_delete(&yp);
	if (r < 0) {
		if (r == -ENOMEM && errlen > 0 && !err[0]) {
			snprintf(err, errlen, "%s: out of memory", name);
		}
		web_config_free(p.wc);
		return r;
	}
	*ret = p.wc;
	return 0;
}

int web_config_load(const char *path, struct web_config **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *text = NULL, *copy = NULL;
	int r;

	r = read_virtual_file(path, WEB_CONFIG_MAX_SIZE, &text);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot read the web config: %s", path, strerror(-r));
		return r;
	}
	copy = strdup(path);
	if (!copy) {
		return -ENOMEM;
	}
	return web_config_parse(text, (size_t)r, path, dirname(copy), ret, err, errlen);
}

static void erase_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void web_config_destroy(struct web_config *wc)
{
	free(wc->cert_pem);
	erase_free(wc->key_pem);
	free(wc->tls_priorities);
	pairs_free(wc->users, wc->n_users);
	pairs_free(wc->headers, wc->n_headers);
	explicit_bzero(wc->cache, sizeof(wc->cache));
	explicit_bzero(wc->clients, sizeof(wc->clients));
	pthread_mutex_destroy(&wc->cache_lock);
	free(wc);
}

DEFINE_REFCOUNT(struct web_config, web_config, web_config_destroy);

struct web_config *web_config_free(struct web_config *wc)
{
	return web_config_unref(wc);
}

bool web_config_has_tls(const struct web_config *wc)
{
	return wc && wc->cert_pem && wc->key_pem;
}

const char *web_config_cert_pem(const struct web_config *wc)
{
	return wc ? wc->cert_pem : NULL;
}

const char *web_config_key_pem(const struct web_config *wc)
{
	return wc ? wc->key_pem : NULL;
}

const char *web_config_tls_priorities(const struct web_config *wc)
{
	return wc ? wc->tls_priorities : NULL;
}

const struct web_header *web_config_headers(const struct web_config *wc, size_t *ret_n)
{
	*ret_n = wc ? wc->n_headers : 0;
	return wc ? wc->headers : NULL;
}

bool web_config_requires_auth(const struct web_config *wc)
{
	return wc && wc->n_users > 0;
}

/* SHA-256 of user NUL password NUL hash: the cache key of a verified login. */
static int credentials_digest(const char *user, const char *password, const char *hash,
			      uint8_t ret[SHA256_SIZE])
{
	size_t lu = strlen(user), lp = strlen(password), lh = strlen(hash);
	_cleanup_free_ char *buf = NULL;
	int r;

	buf = malloc(lu + lp + lh + 2);
	if (!buf) {
		return -ENOMEM;
	}
	memcpy(buf, user, lu + 1);
	memcpy(buf + lu + 1, password, lp + 1);
	memcpy(buf + lu + lp + 2, hash, lh);
	r = gnutls_hash_fast(GNUTLS_DIG_SHA256, buf, lu + lp + lh + 2, ret);
	explicit_bzero(buf, lu + lp + lh + 2);
	return r < 0 ? -EIO : 0;
}

static const struct web_header *find_user(const struct web_config *wc, const char *user)
{
	const struct web_header *u = NULL;

	/* every entry compared, so that the time does not tell which one */
	for (size_t i = 0; i < wc->n_users; i++) {
		if (strcmp(wc->users[i].name, user) == 0) {
			u = &wc->users[i];
		}
	}
	return u;
}

static bool cache_has(struct web_config *wc, const uint8_t digest[SHA256_SIZE])
{
	bool hit = false;

	pthread_mutex_lock(&wc->cache_lock);
	for (size_t i = 0; i < wc->cache_n; i++) {
		hit |= gnutls_memcmp(wc->cache[i], digest, SHA256_SIZE) == 0;
	}
	pthread_mutex_unlock(&wc->cache_lock);
	return hit;
}

/* Under cache_lock: the failure record of `key`, or NULL; with `create`, a
 * new one in a free slot or in place of the oldest. */
static struct auth_client *find_client(struct web_config *wc, const char *key, bool create)
{
	struct auth_client *oldest = &wc->clients[0];

	for (size_t i = 0; i < AUTH_FAILURE_CLIENTS; i++) {
		struct auth_client *c = &wc->clients[i];

		if (c->window_start_usec && strcmp(c->key, key) == 0) {
			return c;
		}
		if (c->window_start_usec < oldest->window_start_usec) {
			oldest = c;
		}
	}
	if (!create) {
		return NULL;
	}
	snprintf(oldest->key, sizeof(oldest->key), "%s", key);
	oldest->window_start_usec = 0;
	oldest->failures = 0;
	return oldest;
}

/* May a bcrypt check start for `key`? Not while AUTH_MAX_CHECKS run, nor
 * for an address with AUTH_MAX_FAILURES in its current window. */
static bool begin_check(struct web_config *wc, const char *key, uint64_t now)
{
	const struct auth_client *c;
	bool may;

	pthread_mutex_lock(&wc->cache_lock);
	c = find_client(wc, key, false);
	may = wc->checks_running < AUTH_MAX_CHECKS &&
	      !(c && now - c->window_start_usec < AUTH_FAILURE_WINDOW && c->failures >= AUTH_MAX_FAILURES);
	if (may) {
		wc->checks_running++;
	}
	pthread_mutex_unlock(&wc->cache_lock);
	return may;
}

/* A check is done: remember a verified login (digest) or count a failure. */
static void end_check(struct web_config *wc, const char *key, uint64_t now, const uint8_t *digest, bool ok)
{
	struct auth_client *c;

	pthread_mutex_lock(&wc->cache_lock);
	wc->checks_running--;
	if (ok && digest) {
		memcpy(wc->cache[wc->cache_next], digest, SHA256_SIZE);
		wc->cache_next = (wc->cache_next + 1) % AUTH_CACHE_SIZE;
		if (wc->cache_n < AUTH_CACHE_SIZE) {
			wc->cache_n++;
		}
	} else if (!ok) {
		c = find_client(wc, key, true);
		if (!c->window_start_usec || now - c->window_start_usec >= AUTH_FAILURE_WINDOW) {
			c->window_start_usec = now ? now : 1;
			c->failures = 0;
		}
		c->failures++;
	}
	pthread_mutex_unlock(&wc->cache_lock);
}

static bool bcrypt_matches(const char *password, const char *hash)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *out;
	bool ok = false;

	if (!cd) {
		return false;
	}
	out = crypt_r(password, hash, cd);
	if (out && out[0] != '*' && strlen(out) == strlen(hash)) {
		ok = gnutls_memcmp(out, hash, strlen(hash)) == 0;
	}
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return ok;
}

enum web_auth web_config_check_basic_auth(struct web_config *wc, const char *client, const char *user,
					  const char *password)
{
	const char *key = client ? client : "";
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	const struct web_header *u;
	uint8_t digest[SHA256_SIZE];
	bool ok, have_digest;

	if (!web_config_requires_auth(wc)) {
		return WEB_AUTH_OK;
	}
	u = find_user(wc, user);
	/* an unknown user pays a bcrypt of the same cost as a known one */
	have_digest = credentials_digest(user, password, u ? u->value : wc->users[0].value, digest) >= 0;
	if (u && have_digest && cache_has(wc, digest)) {
		explicit_bzero(digest, sizeof(digest));
		return WEB_AUTH_OK;
	}
	if (!begin_check(wc, key, now)) {
		explicit_bzero(digest, sizeof(digest));
		return WEB_AUTH_LIMITED;
	}
	ok = bcrypt_matches(password, u ? u->value : wc->users[0].value) && u;
	end_check(wc, key, now, have_digest ? digest : NULL, ok);
	explicit_bzero(digest, sizeof(digest));
	return ok ? WEB_AUTH_OK : WEB_AUTH_DENIED;
}
