/* fio's renderers against fio itself: fio 3.33's json+ of a real run (a
 * loop device, O_DIRECT; tests/fixtures/fio) is turned back into the
 * figures iopsd keeps (the clat bins into its histogram, whose layout is
 * fio's), rendered as normal, terse and json+, and compared with what fio
 * printed for the same run. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "config.h"
#include "fio_json.h"
#include "fio_normal.h"
#include "fio_report.h"
#include "fio_terse.h"

struct golden {
	struct config *cfg;
	json_t *fio;
	struct probe_result res;
	struct fio_disk disk;
	struct fio_job job;
	struct fio_report rep;
};

static json_t *get(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	assert_non_null(v);
	return v;
}

static uint64_t get_u(json_t *o, const char *key)
{
	return (uint64_t)json_integer_value(get(o, key));
}

static double get_f(json_t *o, const char *key)
{
	return json_number_value(get(o, key));
}

/* fio's io_stat from what it printed: S = stddev^2 (N - 1). */
static void stat_from(struct fiostat_stat *st, uint64_t n, uint64_t min, uint64_t max, double mean,
		      double dev)
{
	st->samples = n;
	st->min = min;
	st->max = max;
	st->mean = mean;
	st->S = n > 1 ? dev * dev * (double)(n - 1) : 0;
}

static void lat_from(struct fiostat_stat *st, json_t *o)
{
	stat_from(st, get_u(o, "N"), get_u(o, "min"), get_u(o, "max"), get_f(o, "mean"), get_f(o, "stddev"));
}

static void bins_from(struct histogram *h, json_t *lat)
{
	json_t *bins = json_object_get(lat, "bins"), *v;
	const char *key;

	histogram_init(h);
	json_object_foreach(bins, key, v)
	{
		for (json_int_t i = 0; i < json_integer_value(v); i++) {
			histogram_record(h, strtoull(key, NULL, 10));
		}
	}
}

static void dir_from(struct probe_op_result *o, json_t *d)
{
	o->ops = get_u(d, "total_ios");
	o->bytes = get_u(d, "io_bytes");
	lat_from(&o->fio.slat, get(d, "slat_ns"));
	lat_from(&o->fio.clat, get(d, "clat_ns"));
	lat_from(&o->fio.lat, get(d, "lat_ns"));
	bins_from(&o->lat, get(d, "clat_ns"));
	stat_from(&o->fio.bw, get_u(d, "bw_samples"), get_u(d, "bw_min"), get_u(d, "bw_max"),
		  get_f(d, "bw_mean"), get_f(d, "bw_dev"));
	stat_from(&o->fio.iops, get_u(d, "iops_samples"), get_u(d, "iops_min"), get_u(d, "iops_max"),
		  get_f(d, "iops_mean"), get_f(d, "iops_stddev"));
}

/* Counts that give back fio's percentages of `total`. */
static void map_from(uint64_t *map, unsigned nr, json_t *pct, const char *const *keys, uint64_t total)
{
	for (unsigned i = 0; i < nr; i++) {
		map[i] = (uint64_t)llround(get_f(pct, keys[i]) * (double)total / 100.0);
	}
}

static void job_from(struct fiostat_job *f, json_t *job, uint64_t total)
{
	static const char *const depth[] = {"1", "2", "4", "8", "16", "32", ">=64"};
	static const char *const calls[] = {"0", "4", "8", "16", "32", "64", ">=64"};
	static const char *const lat[] = {"2",	 "4",	"10",  "20",   "50",   "100",
					  "250", "500", "750", "1000", "2000", ">=2000"};

	f->run_msec = get_u(job, "job_runtime");
	f->usr_usec = (uint64_t)llround(get_f(job, "usr_cpu") * (double)f->run_msec * 10.0);
	f->sys_usec = (uint64_t)llround(get_f(job, "sys_cpu") * (double)f->run_msec * 10.0);
	f->ctx = get_u(job, "ctx");
	f->majf = get_u(job, "majf");
	f->minf = get_u(job, "minf");
	map_from(f->io_u_map, FIOSTAT_MAP_NR, get(job, "iodepth_level"), depth, total);
	f->total_submit = f->total_complete = 1000000;
	map_from(f->io_u_submit, FIOSTAT_MAP_NR, get(job, "iodepth_submit"), calls, f->total_submit);
	map_from(f->io_u_complete, FIOSTAT_MAP_NR, get(job, "iodepth_complete"), calls, f->total_complete);
	map_from(f->lat_n, FIOSTAT_LAT_N_NR, get(job, "latency_ns"), lat, total);
	map_from(f->lat_u, FIOSTAT_LAT_U_NR, get(job, "latency_us"), lat, total);
	map_from(f->lat_m, FIOSTAT_LAT_M_NR, get(job, "latency_ms"), lat, total);
}

static void disk_from(struct fio_disk *d, json_t *du)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", json_string_value(get(du, "name")));
	d->ios[0] = get_u(du, "read_ios");
	d->ios[1] = get_u(du, "write_ios");
	d->merges[0] = get_u(du, "read_merges");
	d->merges[1] = get_u(du, "write_merges");
	d->ticks[0] = get_u(du, "read_ticks");
	d->ticks[1] = get_u(du, "write_ticks");
	d->time_in_queue = get_u(du, "in_queue");
	/* fio prints util, not the busy ms: a window that gives it back */
	d->msec = 100000000;
	d->io_ticks = (uint64_t)llround(get_f(du, "util") * 1000000.0);
}

static void load(struct golden *g, const char *name)
{
	char path[512];
	struct config_errors errs = {0};
	json_t *job, *sync;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), FIXTURES_DIR "/fio/%s.fio", name);
	assert_int_equal(config_load_file(path, &errs, &g->cfg), 0);
	snprintf(path, sizeof(path), FIXTURES_DIR "/fio/%s.json", name);
	g->fio = json_load_file(path, 0, NULL);
	assert_non_null(g->fio);
	job = json_array_get(get(g->fio, "jobs"), 0);
	probe_result_init(&g->res);
	g->res.success = true;
	dir_from(&g->res.op[PROBE_OP_READ], get(job, "read"));
	dir_from(&g->res.op[PROBE_OP_WRITE], get(job, "write"));
	sync = get(job, "sync");
	g->res.op[PROBE_OP_FSYNC].ops = get_u(sync, "total_ios");
	lat_from(&g->res.op[PROBE_OP_FSYNC].fio.clat, get(sync, "lat_ns"));
	bins_from(&g->res.op[PROBE_OP_FSYNC].lat, get(sync, "lat_ns"));
	g->res.runtime_usec =
	    (get_u(get(job, "read"), "runtime") | get_u(get(job, "write"), "runtime")) * 1000;
	job_from(&g->res.fio, job, g->res.op[PROBE_OP_READ].ops + g->res.op[PROBE_OP_WRITE].ops);
	disk_from(&g->disk, json_array_get(get(g->fio, "disk_util"), 0));
	g->job = (struct fio_job){&g->cfg->probes[0], &g->res, "/mnt/iopsd-fixture", 0, 1};
	g->rep = (struct fio_report){"iopsd-test",
				     get_u(g->fio, "timestamp_ms") * 1000,
				     get_u(job, "elapsed"),
				     true,
				     &g->job,
				     1,
				     &g->disk,
				     1};
}

static void unload(struct golden *g)
{
	config_free(g->cfg);
	json_decref(g->fio);
}

static char *render(void (*fn)(struct golden *, FILE *), struct golden *g)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(g, f);
	fclose(f);
	return buf;
}

static char *slurp(const char *name, const char *ext)
{
	char path[512], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), FIXTURES_DIR "/fio/%s.%s", name, ext);
	f = fopen(path, "re");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

/* Digits replaced by '#', for the lines whose figures the fixture can only
 * give back rounded (fio prints the depth maps and buckets as percents). */
static void mask_digits(char *s)
{
	for (; *s; s++) {
		if ((*s >= '0' && *s <= '9') || *s == '.') {
			*s = '#';
		}
	}
}

static bool is_rounded_line(const char *l)
{
	return strncmp(l, "  lat (", 7) == 0 || strncmp(l, "  IO depths", 11) == 0 ||
	       strncmp(l, "     submit", 11) == 0 || strncmp(l, "     complete", 13) == 0;
}

/* fio's line as iopsd prints it: its version, threads not processes, no
 * pid or date, and no layout lines (iopsd lays out before it starts). */
static bool normalize_fio_line(char *l, char *ret, size_t len)
{
	char *p;

	snprintf(ret, len, "%s", l);
	l = ret;
	if (strstr(l, ": Laying out IO file")) {
		return false;
	}
	if (strcmp(l, "fio-3.33") == 0) {
		strcpy(l, "iopsd-test");
	}
	if ((p = strstr(l, " process"))) {
		strcpy(p, strcmp(p, " processes") == 0 ? " threads" : " thread");
	}
	if ((p = strstr(l, ": pid="))) {
		*p = '\0';
	}
	if (is_rounded_line(l)) {
		mask_digits(l);
	}
	return true;
}

static void normalize_iopsd_line(char *l)
{
	char *p = strstr(l, ": pid=");

	if (p) {
		*p = '\0';
	}
	if (is_rounded_line(l)) {
		mask_digits(l);
	}
}

static void write_normal(struct golden *g, FILE *f)
{
	fio_normal_header(g->cfg, "iopsd-test", f);
	fio_normal_write(&g->rep, f);
}

static void check_normal(const char *name)
{
	struct golden g;
	char *want = slurp(name, "normal"), *got, *ws, *gs, *wl, *gl, fio_line[1024];
	unsigned line = 0;

	load(&g, name);
	got = render(write_normal, &g);
	wl = strtok_r(want, "\n", &ws);
	gl = strtok_r(got, "\n", &gs);
	while (wl || gl) {
		if (wl && !normalize_fio_line(wl, fio_line, sizeof(fio_line))) {
			wl = strtok_r(NULL, "\n", &ws);
			continue;
		}
		line++;
		assert_non_null(wl);
		assert_non_null(gl);
		normalize_iopsd_line(gl);
		if (strcmp(fio_line, gl) != 0) {
			fail_msg("%s.normal line %u:\n fio:   %s\n iopsd: %s", name, line, fio_line, gl);
		}
		wl = strtok_r(NULL, "\n", &ws);
		gl = strtok_r(NULL, "\n", &gs);
	}
	free(want);
	free(got);
	unload(&g);
}

static void test_normal_randread_is_fios_layout(void **state)
{
	check_normal("randread");
}

static void test_normal_randrw_fsync_is_fios_layout(void **state)
{
	check_normal("randrw");
}

static void test_normal_group_of_four_jobs_is_fios_layout(void **state)
{
	check_normal("group");
}

static void write_terse(struct golden *g, FILE *f)
{
	fio_terse_write(&g->rep, f);
}

/* Field by field: the same text, or (percents rebuilt from rounded ones)
 * the same figure within the last digit fio printed. */
static void check_terse(const char *name)
{
	struct golden g;
	char *want = slurp(name, "terse"), *got, *ws, *gs, *wf, *gf;
	unsigned field = 0;

	load(&g, name);
	got = render(write_terse, &g);
	want[strcspn(want, "\n")] = '\0';
	got[strcspn(got, "\n")] = '\0';
	wf = strtok_r(want, ";", &ws);
	gf = strtok_r(got, ";", &gs);
	for (; wf || gf; field++, wf = strtok_r(NULL, ";", &ws), gf = strtok_r(NULL, ";", &gs)) {
		bool is_pct;

		if (!wf || !gf) {
			fail_msg("%s.terse: %s fields at %u", name, wf ? "fewer" : "more", field);
		}
		if (field == 1 || strcmp(wf, gf) == 0) {
			continue; /* the version */
		}
		is_pct = wf[strlen(wf) - 1] == '%' && !strchr(wf, '=');
		if (!is_pct || fabs(strtod(wf, NULL) - strtod(gf, NULL)) > 0.051) {
			fail_msg("%s.terse field %u: fio %s, iopsd %s", name, field, wf, gf);
		}
	}
	free(want);
	free(got);
	unload(&g);
}

static void test_terse_randread_is_fios_v3(void **state)
{
	check_terse("randread");
}

static void test_terse_randrw_fsync_is_fios_v3(void **state)
{
	check_terse("randrw");
}

/* group_reporting: one line for the four jobs, as fio summed them */
static void test_terse_group_of_four_jobs_is_fios_v3(void **state)
{
	check_terse("group");
}

/* The depth maps and latency buckets are rebuilt from fio's rounded
 * percentages: those compare within 0.02 points. */
static bool is_percent_map(const char *path)
{
	return strstr(path, "/iodepth_") || strstr(path, "/latency_ns") || strstr(path, "/latency_us") ||
	       strstr(path, "/latency_ms");
}

static void check_value(const char *path, json_t *want, json_t *got)
{
	double w = json_number_value(want), g = json_number_value(got);

	if (json_is_integer(want) && json_is_integer(got) && !strstr(path, "_cpu")) {
		if (json_integer_value(want) != json_integer_value(got)) {
			fail_msg("%s: fio %lld, iopsd %lld", path, (long long)json_integer_value(want),
				 (long long)json_integer_value(got));
		}
	} else if (json_is_number(want) && json_is_number(got)) {
		double tol = is_percent_map(path) ? 0.02 : fabs(w) * 1e-6 + 1e-6;

		if (fabs(w - g) > tol) {
			fail_msg("%s: fio %f, iopsd %f", path, w, g);
		}
	} else if (json_is_string(want) && !json_equal(want, got)) {
		fail_msg("%s: fio '%s', iopsd '%s'", path, json_string_value(want), json_string_value(got));
	}
}

/* Every key fio wrote, with its value, except the job's own strings:
 * fio's "job options" are the file's text, "eta"/"elapsed" its clock. */
static void check_object(const char *path, json_t *want, json_t *got)
{
	static const char *const skipped[] = {"job options", "eta", "elapsed"};
	const char *key;
	json_t *w;

	json_object_foreach(want, key, w)
	{
		char sub[256];
		json_t *g = json_object_get(got, key);
		bool is_skipped = false;

		for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++) {
			is_skipped |= strcmp(key, skipped[i]) == 0;
		}
		if (is_skipped) {
			continue;
		}
		snprintf(sub, sizeof(sub), "%s/%s", path, key);
		if (!g) {
			fail_msg("%s: fio has it, iopsd not", sub);
		}
		if (json_is_object(w)) {
			check_object(sub, w, g);
		} else if (json_is_array(w)) {
			for (size_t i = 0; i < json_array_size(w); i++) {
				check_object(sub, json_array_get(w, i), json_array_get(g, i));
			}
		} else {
			check_value(sub, w, g);
		}
	}
}

static void check_json(const char *name)
{
	struct golden g;
	json_t *got;

	load(&g, name);
	got = fio_json_report(&g.rep);
	assert_non_null(got);
	check_object("", json_array_get(get(g.fio, "jobs"), 0), json_array_get(get(got, "jobs"), 0));
	check_object("/disk_util", json_array_get(get(g.fio, "disk_util"), 0),
		     json_array_get(get(got, "disk_util"), 0));
	json_decref(got);
	unload(&g);
}

static void test_json_plus_randread_has_fios_keys_and_values(void **state)
{
	check_json("randread");
}

static void test_json_plus_randrw_fsync_has_fios_keys_and_values(void **state)
{
	check_json("randrw");
}

static void test_json_plus_group_has_fios_keys_and_values(void **state)
{
	check_json("group");
}

/* An md array: fio's aggr figures are the members' averages, and its
 * aggrutil the busiest member's util. */
static void test_md_disk_aggregates_its_members_as_fio(void **state)
{
	struct fio_disk md = {.name = "md0", .msec = 1000, .ios = {0, 300}};
	struct fio_disk a = {
	    .name = "xvdf", .msec = 1000, .ios = {0, 100}, .ticks = {0, 50}, .io_ticks = 972};
	struct fio_disk b = {
	    .name = "xvdg", .msec = 1000, .ios = {0, 201}, .ticks = {0, 71}, .io_ticks = 996};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct fio_disk disks[3];
	struct fio_report rep = {.version = "iopsd-test", .disks = disks, .n_disks = 3};

	fio_disk_add_member(&md, &a);
	fio_disk_add_member(&md, &b);
	disks[0] = md, disks[1] = a, disks[2] = b;
	assert_int_equal(md.slavecount, 2);
	assert_true(fabs(md.agg_max_util - 99.6) < 1e-9);
	fio_normal_write(&rep, f);
	fclose(f);
	assert_string_equal(
	    buf, "\nDisk stats (read/write):\n"
		 "    md0: ios=0/300, merge=0/0, ticks=0/0, in_queue=0, util=0.00%, aggrios=0/150, "
		 "aggrmerge=0/0, aggrticks=0/60, aggrin_queue=0, aggrutil=99.60%\n"
		 "  xvdf: ios=0/100, merge=0/0, ticks=0/50, in_queue=0, util=97.20%\n"
		 "  xvdg: ios=0/201, merge=0/0, ticks=0/71, in_queue=0, util=99.60%\n");
	free(buf);
}

static void test_num2str_rounds_as_fio(void **state)
{
	char b[40];

	assert_string_equal(fio_num2str(185818386, 4, 1, true, FIO_N2S_BYTEPERSEC, b, sizeof(b)), "177MiB/s");
	assert_string_equal(fio_num2str(185818386, 4, 1, false, FIO_N2S_BYTEPERSEC, b, sizeof(b)), "186MB/s");
	assert_string_equal(fio_num2str(45365, 4, 1, false, FIO_N2S_NONE, b, sizeof(b)), "45.4k");
	assert_string_equal(fio_num2str(5325300, 6, 1, false, FIO_N2S_NONE, b, sizeof(b)), "5325.3k");
	assert_string_equal(fio_num2str(4096, 4, 1, true, FIO_N2S_BYTE, b, sizeof(b)), "4096B");
	assert_string_equal(fio_num2str(999, 4, 1, false, FIO_N2S_NONE, b, sizeof(b)), "999");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normal_randread_is_fios_layout),
	    cmocka_unit_test(test_normal_randrw_fsync_is_fios_layout),
	    cmocka_unit_test(test_normal_group_of_four_jobs_is_fios_layout),
	    cmocka_unit_test(test_terse_randread_is_fios_v3),
	    cmocka_unit_test(test_terse_randrw_fsync_is_fios_v3),
	    cmocka_unit_test(test_terse_group_of_four_jobs_is_fios_v3),
	    cmocka_unit_test(test_json_plus_randread_has_fios_keys_and_values),
	    cmocka_unit_test(test_json_plus_randrw_fsync_has_fios_keys_and_values),
	    cmocka_unit_test(test_json_plus_group_has_fios_keys_and_values),
	    cmocka_unit_test(test_md_disk_aggregates_its_members_as_fio),
	    cmocka_unit_test(test_num2str_rounds_as_fio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
