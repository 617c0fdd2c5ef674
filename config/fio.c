/* fio's value syntaxes, as fio 3.33's HOWTO describes them. */
#include "fio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errstr.h"
#include "macro.h"
#include "units.h"

#define MIN_BS	  512ULL
#define MAX_BS	  (16ULL << 20)
#define MAX_PARTS 3 /* reads, writes, trims */

/* Split "a,b,c" into at most MAX_PARTS parts (copied into buf); returns the
 * number of parts or -EINVAL. */
static int split_dirs(const char *value, char *buf, size_t buflen, char *parts[MAX_PARTS])
{
	int n = 0;
	char *s;

	if (snprintf(buf, buflen, "%s", value) >= (int)buflen) {
		return -EINVAL;
	}
	s = buf;
	for (;;) {
		char *comma = strchr(s, ',');

		if (n == MAX_PARTS) {
			return -EINVAL;
		}
		parts[n++] = s;
		if (!comma) {
			break;
		}
		*comma = '\0';
		s = comma + 1;
	}
	return n;
}

/* One block size: a size, 512 bytes to 16 MiB, a multiple of 512. */
static int parse_one_bs(const char *key, const char *value, const char *s, uint64_t *ret, char *err,
			size_t len)
{
	uint64_t v;

	if (parse_size(s, &v) < 0) {
		return errstr_set(err, len, -EINVAL,
				  "invalid value '%s' for %s: expected a size such as 4k, 100m, 64MiB", value,
				  key);
	}
	if (v < MIN_BS || v > MAX_BS) {
		return errstr_set(err, len, -EINVAL,
				  "%s=%s is out of range: must be between %llu and %llu bytes (O_DIRECT "
				  "moves whole sectors; a probe's blocks are budgeted)",
				  key, value, MIN_BS, MAX_BS);
	}
	if (v % 512 != 0) {
		return errstr_set(err, len, -EINVAL, "%s=%s is not a multiple of 512 bytes", key, value);
	}
	*ret = v;
	return 0;
}

int fio_parse_bs(const char *key, const char *value, uint64_t ret[_PROBE_DIR_MAX], char *err, size_t len)
{
	char buf[256], *parts[MAX_PARTS];
	uint64_t v[_PROBE_DIR_MAX] = {ret[0], ret[1]};
	int n = split_dirs(value, buf, sizeof(buf), parts);

	if (n < 0) {
		return errstr_set(err, len, -EINVAL,
				  "invalid value '%s' for %s: expected SIZE or READ,WRITE sizes", value, key);
	}
	for (int d = 0; d < _PROBE_DIR_MAX; d++) {
		/* one size for all directions; an empty part keeps the default */
		const char *s = n == 1 ? parts[0] : d < n ? parts[d] : "";

		if (*s && parse_one_bs(key, value, s, &v[d], err, len) < 0) {
			return -EINVAL;
		}
	}
	if (n == 3 && *parts[2] && parse_one_bs(key, value, parts[2], &(uint64_t){0}, err, len) < 0) {
		return -EINVAL;
	}
	ret[0] = v[0];
	ret[1] = v[1];
	return 0;
}

int fio_parse_bsrange(const char *key, const char *value, struct probe_bs ret[_PROBE_DIR_MAX], char *err,
		      size_t len)
{
	char buf[256], *parts[MAX_PARTS];
	struct probe_bs v[_PROBE_DIR_MAX] = {ret[0], ret[1]};
	int n = split_dirs(value, buf, sizeof(buf), parts);

	if (n < 0) {
		return errstr_set(err, len, -EINVAL,
				  "invalid value '%s' for %s: expected MIN-MAX or READ,WRITE ranges", value,
				  key);
	}
	for (int d = 0; d < _PROBE_DIR_MAX && d < (n == 1 ? _PROBE_DIR_MAX : n); d++) {
		char *s = parts[n == 1 ? 0 : d], *dash;
		uint64_t lo, hi;

		if (!*s) {
			continue;
		}
		dash = strchr(s, '-');
		if (!dash) {
			return errstr_set(err, len, -EINVAL,
					  "invalid value '%s' for %s: expected MIN-MAX, such as 4k-64k",
					  value, key);
		}
		*dash = '\0';
		if (parse_one_bs(key, value, s, &lo, err, len) < 0 ||
		    parse_one_bs(key, value, dash + 1, &hi, err, len) < 0) {
			return -EINVAL;
		}
		*dash = '-';
		if (lo > hi) {
			return errstr_set(err, len, -EINVAL, "%s=%s: the smallest size comes first", key,
					  value);
		}
		/* (a bssplit= of the direction keeps precedence: fio_resolve_bs) */
		v[d].min = lo;
		v[d].max = hi;
	}
	ret[0] = v[0];
	ret[1] = v[1];
	return 0;
}

/* "4k/60:64k:1m/10" of one direction into ret->split (its bsrange= min and
 * max stay: bssplit wins in fio_resolve_bs). */
static int parse_split_list(const char *key, const char *value, char *list, struct probe_bs *ret, char *err,
			    size_t len)
{
	struct probe_bs b = *ret;
	unsigned sum = 0, n_blank = 0;
	char *save = NULL;

	b.n_split = 0;
	for (char *e = strtok_r(list, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		char *slash = strchr(e, '/');
		uint64_t pct = 0;

		if (b.n_split == PROBE_BSSPLIT_MAX) {
			return errstr_set(err, len, -EINVAL, "%s=%s has more than %d sizes", key, value,
					  PROBE_BSSPLIT_MAX);
		}
		if (slash) {
			*slash = '\0';
			if (parse_uint64(slash + 1, &pct) < 0 || pct > 100) {
				return errstr_set(
				    err, len, -EINVAL,
				    "invalid value '%s' for %s: expected SIZE/PERCENT:..., such as "
				    "4k/60:64k/40",
				    value, key);
			}
		}
		if (parse_one_bs(key, value, e, &b.split[b.n_split].bs, err, len) < 0) {
			return -EINVAL;
		}
		/* a blank percentage (no "/N") is filled in below */
		b.split[b.n_split].pct = slash ? (unsigned)pct : UINT32_MAX;
		n_blank += !slash;
		sum += slash ? (unsigned)pct : 0;
		b.n_split++;
	}
	if (b.n_split == 0) {
		return errstr_set(err, len, -EINVAL, "invalid value '%s' for %s: no sizes", value, key);
	}
	if (sum > 100 || (n_blank == 0 && sum != 100)) {
		return errstr_set(err, len, -EINVAL, "%s=%s: the percentages add up to %u, not 100", key,
				  value, sum);
	}
	for (unsigned i = 0, left = 100 - sum, k = 0; i < b.n_split; i++) {
		if (b.split[i].pct == UINT32_MAX) {
			/* even shares; the last blank takes the rounding remainder */
			k++;
			b.split[i].pct =
			    k < n_blank ? left / n_blank : left - (n_blank - 1) * (left / n_blank);
		}
	}
	*ret = b;
	return 0;
}

int fio_parse_bssplit(const char *key, const char *value, struct probe_bs ret[_PROBE_DIR_MAX], char *err,
		      size_t len)
{
	char buf[512], *parts[MAX_PARTS];
	struct probe_bs v[_PROBE_DIR_MAX] = {ret[0], ret[1]};
	int n = split_dirs(value, buf, sizeof(buf), parts);

	if (n < 0) {
		return errstr_set(err, len, -EINVAL,
				  "invalid value '%s' for %s: expected SIZE/PERCENT:... or READ,WRITE lists",
				  value, key);
	}
	for (int d = 0; d < _PROBE_DIR_MAX && d < (n == 1 ? _PROBE_DIR_MAX : n); d++) {
		char copy[512];

		if (!*parts[n == 1 ? 0 : d]) {
			continue;
		}
		snprintf(copy, sizeof(copy), "%s", parts[n == 1 ? 0 : d]);
		if (parse_split_list(key, value, copy, &v[d], err, len) < 0) {
			return -EINVAL;
		}
	}
	ret[0] = v[0];
	ret[1] = v[1];
	return 0;
}

int fio_parse_rate(const char *key, const char *value, bool is_iops, uint64_t *ret, char *err, size_t len)
{
	char buf[256], *parts[MAX_PARTS];
	uint64_t v[MAX_PARTS] = {0};
	int n = split_dirs(value, buf, sizeof(buf), parts);

	if (n < 0) {
		return errstr_set(err, len, -EINVAL, "invalid value '%s' for %s", value, key);
	}
	for (int i = 0; i < n; i++) {
		int r = is_iops ? parse_uint64(parts[i], &v[i]) : parse_size(parts[i], &v[i]);

		if (!*parts[i] && n > 1) {
			continue;
		}
		if (r < 0 || v[i] == 0) {
			return errstr_set(err, len, -EINVAL, "invalid value '%s' for %s: expected %s", value,
					  key,
					  is_iops ? "a number of I/Os per second"
						  : "bytes per second, such as 500k or 10m");
		}
		if (is_iops && v[i] > 10000000) {
			return errstr_set(err, len, -EINVAL,
					  "%s=%s is out of range: must be from 1 to 10000000", key, value);
		}
	}
	/* the trim part (third) is unused: iopsd never trims */
	if (n > 1 && v[0] != v[1]) {
		return errstr_set(
		    err, len, -EINVAL,
		    "%s=%s: separate read and write rates are not supported; give one rate for both", key,
		    value);
	}
	*ret = v[0];
	return 0;
}

/* The ":N" of rw=MODE:N: a count of I/Os for a random mode, a size (may be
 * negative: backwards) to skip after each I/O for a sequential one. */
static int parse_rw_modifier(const char *key, const char *value, const char *mod, struct probe_config *pc,
			     char *err, size_t len)
{
	uint64_t v;

	if (probe_rw_is_random(pc->rw)) {
		if (parse_uint64(mod, &v) < 0 || v == 0 || v > UINT32_MAX) {
			return errstr_set(err, len, -EINVAL,
					  "%s=%s: the I/Os before a new random offset must be a count from 1",
					  key, value);
		}
		pc->rw_seq_nr = (unsigned)v;
		return 0;
	}
	if (pc->rw == PROBE_RW_REWRITE || parse_size(mod + (*mod == '-'), &v) < 0 || v > INT64_MAX / 2) {
		return errstr_set(err, len, -EINVAL,
				  "%s=%s: expected MODE:SIZE (a hole after each I/O, -SIZE going backwards)",
				  key, value);
	}
	pc->rw_seq_add = *mod == '-' ? -(int64_t)v : (int64_t)v;
	return 0;
}

int fio_parse_rw(const char *key, const char *value, struct probe_config *pc, char *err, size_t len)
{
	static const char *const trims[] = {"trim", "randtrim", "trimwrite", "randtrimwrite"};
	char mode[64];
	const char *colon = strchr(value, ':');
	int r;

	snprintf(mode, sizeof(mode), "%.*s", colon ? (int)(colon - value) : (int)strlen(value), value);
	for (size_t i = 0; i < ELEMENTSOF(trims); i++) {
		if (strcmp(mode, trims[i]) == 0) {
			return errstr_set(err, len, -EINVAL,
					  "%s=%s is refused: iopsd never trims (discards) blocks", key,
					  value);
		}
	}
	r = probe_rw_from_string(mode);
	if (r < 0) {
		return errstr_set(err, len, -EINVAL,
				  "invalid value '%s' for %s: expected read, write, randread, randwrite, rw, "
				  "randrw or rewrite, with fio's optional :N offset modifier",
				  value, key);
	}
	pc->rw = (enum probe_rw)r;
	pc->rw_seq_add = 0;
	pc->rw_seq_nr = 0;
	return colon ? parse_rw_modifier(key, value, colon + 1, pc, err, len) : 0;
}

/* Engines that are not a disk, by what they do instead. */
static const struct {
	const char *why;
	const char *names[24];
} other_engines[] = {
    {"does no disk I/O", {"null", "cpp_null", "cpuio", "exec", NULL}},
    {"measures a network or remote storage, not a local disk",
     {"net",
      "netsplice",
      "http",
      "rdma",
      "librpma_apm_client",
      "librpma_apm_server",
      "librpma_gpspm_client",
      "librpma_gpspm_server",
      "nbd",
      "nfs",
      "rados",
      "rbd",
      "gfapi",
      "gfapi_async",
      "libhdfs",
      "dfs",
      "libiscsi",
      "ime_psync",
      "ime_psyncv",
      "ime_aio",
      "guasi",
      NULL}},
    {"measures filesystem operations, not disk I/O",
     {"falloc", "ftruncate", "e4defrag", "filecreate", "filestat", "filedelete", "dircreate", "dirstat",
      "dirdelete", "splice", "mmap", NULL}},
    {"measures persistent memory or a GPU, not a block device",
     {"dev-dax", "libpmem", "pmemblk", "libcufile", NULL}},
    {"passes commands to the device past the block layer, or drives zoned or flash devices",
     {"sg", "io_uring_cmd", "xnvme", "libzbc", "mtd", "binject", NULL}},
};

int fio_parse_ioengine(const char *value, enum probe_engine *ret, char *err, size_t len)
{
	static const struct {
		const char *name;
		enum probe_engine engine;
	} disk[] = {
	    {"libaio", PROBE_ENGINE_LIBAIO}, {"io_uring", PROBE_ENGINE_IO_URING},
	    {"sync", PROBE_ENGINE_SYNC},     {"psync", PROBE_ENGINE_PSYNC},
	    {"vsync", PROBE_ENGINE_SYNC},    {"pvsync", PROBE_ENGINE_PSYNC},
	    {"pvsync2", PROBE_ENGINE_PSYNC},
	};

	for (size_t i = 0; i < ELEMENTSOF(disk); i++) {
		if (strcmp(value, disk[i].name) == 0) {
			*ret = disk[i].engine;
			return 0;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(other_engines); i++) {
		for (size_t j = 0; other_engines[i].names[j]; j++) {
			if (strcmp(value, other_engines[i].names[j]) == 0) {
				return errstr_set(err, len, -EINVAL,
						  "ioengine=%s is refused: it %s; iopsd measures disks with "
						  "libaio, io_uring, sync or psync",
						  value, other_engines[i].why);
			}
		}
	}
	if (strncmp(value, "external", 8) == 0) {
		return errstr_set(
		    err, len, -EINVAL,
		    "ioengine=%s is refused: iopsd loads no external engines; use libaio, io_uring, "
		    "sync or psync",
		    value);
	}
	return errstr_set(
	    err, len, -EINVAL,
	    "invalid value '%s' for ioengine: expected libaio, io_uring, sync or psync (vsync, pvsync and "
	    "pvsync2 run as psync)",
	    value);
}

static void resolve_dir(struct probe_bs *b, uint64_t bs)
{
	if (b->n_split > 0) {
		b->min = UINT64_MAX;
		b->max = 0;
		for (unsigned i = 0; i < b->n_split; i++) {
			if (b->split[i].pct == 0) {
				continue;
			}
			b->min = b->split[i].bs < b->min ? b->split[i].bs : b->min;
			b->max = b->split[i].bs > b->max ? b->split[i].bs : b->max;
		}
	} else if (b->max == 0) {
		b->min = b->max = bs;
	}
}

void fio_resolve_bs(struct probe_config *pc)
{
	uint64_t largest = 0;

	for (int d = 0; d < _PROBE_DIR_MAX; d++) {
		resolve_dir(&pc->bsdir[d], pc->bs_rw[d] ? pc->bs_rw[d] : pc->bs);
	}
	if (probe_rw_reads(pc->rw)) {
		largest = pc->bsdir[PROBE_DIR_READ].max;
	}
	if (probe_rw_writes(pc->rw) && pc->bsdir[PROBE_DIR_WRITE].max > largest) {
		largest = pc->bsdir[PROBE_DIR_WRITE].max;
	}
	pc->bs = largest;
}

uint64_t fio_min_bs(const struct probe_config *pc)
{
	uint64_t m = UINT64_MAX;

	if (probe_rw_reads(pc->rw) && pc->bsdir[PROBE_DIR_READ].min) {
		m = pc->bsdir[PROBE_DIR_READ].min;
	}
	if (probe_rw_writes(pc->rw) && pc->bsdir[PROBE_DIR_WRITE].min && pc->bsdir[PROBE_DIR_WRITE].min < m) {
		m = pc->bsdir[PROBE_DIR_WRITE].min;
	}
	return m == UINT64_MAX ? pc->bs : m;
}

/* fio's filename= separates files with ':' and reads "\:" as a ':' of the
 * name (libiscsi's URLs). -EINVAL for a separator: iopsd takes one file. */
static int unescape_filename(const char *filename, char **ret)
{
	char *out = malloc(strlen(filename) + 1), *o = out;

	if (!out) {
		return -ENOMEM;
	}
	for (const char *s = filename; *s; s++) {
		if (*s == ':') {
			free(out);
			return -EINVAL;
		}
		if (s[0] == '\\' && s[1] == ':') {
			s++;
		}
		*o++ = *s;
	}
	*o = '\0';
	*ret = out;
	return 0;
}

int fio_resolve_filename(const char *directory, const char *filename, char **ret_path,
			 enum fio_target *ret_kind, char *err, size_t len)
{
	_cleanup_free_ char *path = NULL, *name = NULL;
	struct stat st;
	int r;

	r = unescape_filename(filename, &name);
	if (r == -EINVAL) {
		return errstr_set(err, len, -EINVAL,
				  "filename=%s names several files (':'): use one file and nrfiles= for more",
				  filename);
	}
	if (r < 0) {
		return r;
	}
	if (filename[0] != '/' && !directory) {
		return errstr_set(
		    err, len, -EINVAL,
		    "filename=%s is a relative path and no directory= is set: give directory= or an "
		    "absolute path",
		    filename);
	}
	if (name[0] == '/' ? asprintf(&path, "%s", name) < 0
			   : asprintf(&path, "%s/%s", directory, name) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	if (stat(path, &st) < 0) {
		/* not there (yet): a device node appears with its disk */
		*ret_kind = strncmp(path, "/dev/", 5) == 0 ? FIO_TARGET_DEVICE : FIO_TARGET_FILE;
	} else if (S_ISBLK(st.st_mode)) {
		*ret_kind = FIO_TARGET_DEVICE;
	} else if (S_ISREG(st.st_mode)) {
		*ret_kind = FIO_TARGET_FILE;
	} else if (S_ISDIR(st.st_mode)) {
		return errstr_set(err, len, -EINVAL, "filename=%s is a directory: use directory=%s", filename,
				  path);
	} else {
		return errstr_set(
		    err, len, -EINVAL,
		    "filename=%s is %s, not a disk: give a block device or a file on the filesystem to probe",
		    filename,
		    S_ISCHR(st.st_mode) ? "a character device" : "neither a file nor a block device");
	}
	*ret_path = TAKE_PTR(path);
	return 0;
}

int fio_layout(const struct probe_config *pc, uint64_t device_size, struct fio_layout *ret, char *err,
	       size_t len)
{
	unsigned nrfiles = pc->nrfiles ? pc->nrfiles : 1, numjobs = pc->numjobs ? pc->numjobs : 1;
	uint64_t spread = pc->offset_increment * (numjobs - 1), need, region;
	struct fio_layout l = {.offset = pc->offset, .increment = pc->offset_increment};

	if (device_size > 0) {
		region = pc->size
			     ? pc->size
			     : (device_size > pc->offset + spread ? device_size - pc->offset - spread : 0);
	} else if (pc->filesize > 0) {
		/* fio: filesize is the file; the jobs' regions fill it from offset */
		region = pc->filesize > pc->offset + spread ? pc->filesize - pc->offset - spread : 0;
	} else {
		region = pc->size / nrfiles;
	}
	if (pc->offset_increment == 0) {
		/* the jobs share (or split) one region */
		region -= region % 512;
	}
	need = pc->offset + spread + region;
	if (region < pc->bs) {
		return errstr_set(err, len, -EINVAL,
				  "the region each job uses (%" PRIu64 " bytes from offset %" PRIu64
				  ") is smaller than its largest I/O (%" PRIu64 " bytes)",
				  region, pc->offset + spread, pc->bs);
	}
	if (device_size > 0 && need > device_size) {
		return errstr_set(err, len, -EINVAL,
				  "offset=%" PRIu64 " plus the jobs' regions (%" PRIu64
				  " bytes) run past the end of the device (%" PRIu64 " bytes)",
				  pc->offset, need - pc->offset, device_size);
	}
	l.region = region;
	if (device_size == 0) {
		l.file_size = pc->filesize > need ? pc->filesize : need;
		l.file_size = (l.file_size + 4095) / 4096 * 4096;
	}
	*ret = l;
	return 0;
}

/* "0.5" or "" into a double in [lo, hi]. */
static int parse_real(const char *s, double lo, double hi, double *ret)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* zoned:60/10:30/20:10/70 (percent of I/Os / percent of the region) or
 * zoned_abs:60/20m:40/1g (sizes). */
static int parse_zones(char *list, bool is_abs, struct probe_dist *ret)
{
	unsigned access = 0;
	uint64_t size = 0;
	char *save = NULL;

	for (char *z = strtok_r(list, ":", &save); z; z = strtok_r(NULL, ":", &save)) {
		char *slash = strchr(z, '/');
		uint64_t a, sz;

		if (!slash || ret->n_zones == PROBE_DIST_ZONES_MAX) {
			return -EINVAL;
		}
		*slash = '\0';
		if (!is_abs && slash[1] == '\0' && size < 100) {
			sz = 100 - size; /* "20/": the rest of the region, as fio */
		} else if (parse_uint64(z, &a) < 0 ||
			   (is_abs ? parse_size(slash + 1, &sz) : parse_uint64(slash + 1, &sz)) < 0 ||
			   sz == 0 || (!is_abs && sz > 100)) {
			return -EINVAL;
		}
		if (parse_uint64(z, &a) < 0 || a > 100) {
			return -EINVAL;
		}
		ret->zones[ret->n_zones].access_pct = (unsigned)a;
		ret->zones[ret->n_zones].size = sz;
		ret->n_zones++;
		access += (unsigned)a;
		size += sz;
	}
	/* as fio: the I/Os add up to 100%, the zones to at most the region */
	return ret->n_zones > 0 && access == 100 && (is_abs || size <= 100) ? 0 : -EINVAL;
}

/* One direction's spec: random, zipf:THETA[:CENTER], pareto:H[:CENTER],
 * normal:DEV[:CENTER], zoned:..., zoned_abs:... */
static int parse_dist(char *s, struct probe_dist *ret)
{
	static const struct {
		const char *name;
		enum probe_dist_type type;
		double lo, hi;
	} kinds[] = {
	    {"zipf", PROBE_DIST_ZIPF, 0.0, 1e3},
	    {"pareto", PROBE_DIST_PARETO, 0.0, 1.0},
	    {"normal", PROBE_DIST_NORMAL, 0.0, 100.0},
	    {"gauss", PROBE_DIST_NORMAL, 0.0, 100.0},
	};
	struct probe_dist d = {.type = PROBE_DIST_RANDOM, .center = -1};
	char *colon = strchr(s, ':'), *center;

	if (strcmp(s, "random") == 0) {
		*ret = d;
		return 0;
	}
	if (!colon) {
		return -EINVAL;
	}
	*colon++ = '\0';
	if (strcmp(s, "zoned") == 0 || strcmp(s, "zoned_abs") == 0) {
		d.type = strcmp(s, "zoned") == 0 ? PROBE_DIST_ZONED : PROBE_DIST_ZONED_ABS;
		if (parse_zones(colon, d.type == PROBE_DIST_ZONED_ABS, &d) < 0) {
			return -EINVAL;
		}
		*ret = d;
		return 0;
	}
	center = strchr(colon, ':');
	if (center) {
		*center++ = '\0';
	}
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
		if (strcmp(s, kinds[i].name) != 0) {
			continue;
		}
		d.type = kinds[i].type;
		/* zipf's theta 1 divides by zero in the generator; pareto's h is in (0, 1) */
		if (parse_real(colon, kinds[i].lo, kinds[i].hi, &d.param) < 0 ||
		    (d.type != PROBE_DIST_NORMAL && d.param <= 0) ||
		    (d.type == PROBE_DIST_ZIPF && d.param == 1.0) ||
		    (d.type == PROBE_DIST_PARETO && d.param >= 1.0) ||
		    (center && parse_real(center, 0.0, 1.0, &d.center) < 0)) {
			return -EINVAL;
		}
		*ret = d;
		return 0;
	}
	return -EINVAL;
}

int fio_parse_random_distribution(const char *key, const char *value, struct probe_dist ret[_PROBE_DIR_MAX],
				  char *err, size_t len)
{
	char buf[1024], *parts[MAX_PARTS];
	struct probe_dist v[_PROBE_DIR_MAX];
	int n = split_dirs(value, buf, sizeof(buf), parts);

	for (int d = 0; n > 0 && d < _PROBE_DIR_MAX; d++) {
		char part[1024];

		/* parse_dist() cuts its string up: each direction its own copy */
		snprintf(part, sizeof(part), "%s", parts[n == 1 || d >= n ? 0 : d]);
		if (parse_dist(part, &v[d]) < 0) {
			n = -1;
		}
	}
	if (n < 0) {
		return errstr_set(
		    err, len, -EINVAL,
		    "invalid value '%s' for %s: expected random, zipf:THETA, pareto:H, normal:DEV (each "
		    "with an optional :CENTER), zoned:IO%%/SIZE%%:... (the I/O shares add up to 100) or "
		    "zoned_abs:IO%%/SIZE:..., or READ,WRITE of them",
		    value, key);
	}
	ret[0] = v[0];
	ret[1] = v[1];
	return 0;
}
