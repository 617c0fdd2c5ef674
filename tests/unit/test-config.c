/* Config loader: every valid form, and every invalid fixture reports the
 * exact FILE:LINE of its first error. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

#define CONFIG_FIXTURES FIXTURES_DIR "/config"

static void test_fio_job_file_loads_unchanged(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	const struct probe_config *p;

	assert_int_equal(config_load_file(CONFIG_FIXTURES "/valid/fio-seed.conf", &errs, &c), 0);
	assert_int_equal(errs.n, 0);
	assert_int_equal(c->n_probes, 1);
	p = &c->probes[0];
	assert_string_equal(p->name, "randread4k");
	assert_int_equal(p->rw, PROBE_RW_RANDREAD);
	assert_int_equal(p->bs, 4096);
	assert_int_equal(p->size, 100ULL << 20);
	assert_string_equal(p->directory, "/data");
	assert_null(p->filename);
	assert_int_equal(p->numjobs, 16);
	assert_int_equal(p->iodepth, 1);
	assert_int_equal(p->runtime_usec, 1000000);
	assert_int_equal(p->interval_usec, 10000000);
	assert_string_equal(c->listen_address, CONFIG_DEFAULT_LISTEN);
	config_free(c);
}

static void test_every_key_in_every_form(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	const struct device_config *d;
	int r;

	r = config_load_file(CONFIG_FIXTURES "/valid/everything.conf", &errs, &c);
	for (size_t i = 0; i < errs.n; i++) {
		fprintf(stderr, "%s:%u: %s\n", errs.items[i].file, errs.items[i].line, errs.items[i].message);
	}
	assert_int_equal(r, 0);
	assert_string_equal(c->listen_address, "[::1]:9999");
	assert_string_equal(c->web_config_file, "/etc/iopsd/web.yml");
	assert_int_equal(c->log_level, LOG_DEBUG);
	assert_int_equal(c->probe_interval_usec, 30000000);
	assert_int_equal(c->sample_interval_usec, 500000);
	assert_int_equal(c->history_usec, 900000000);
	assert_string_equal(c->device_include, "^(sd|nvme|xvd|md)");
	assert_string_equal(c->device_exclude, "^loop");
	assert_true(c->ceiling_threshold > 0.899 && c->ceiling_threshold < 0.901);
	assert_int_equal(c->max_connections, 32);
	assert_int_equal(c->max_connections_per_ip, 4);
	assert_int_equal(c->connection_timeout_usec, 5000000);
	assert_int_equal(c->max_devices, 128);
	assert_int_equal(c->n_probes, 5);

	/* [global] defaults reach every probe */
	assert_int_equal(c->probes[0].bs, 16384);
	assert_int_equal(c->probes[0].iodepth, 32);
	assert_int_equal(c->probes[0].numjobs, 8);
	assert_int_equal(c->probes[0].runtime_usec, 2000000);
	assert_int_equal(c->probes[0].rate_iops, 1000);
	assert_int_equal(c->probes[0].interval_usec, 30000000);
	assert_string_equal(c->probes[0].directory, "/data");

	assert_int_equal(c->probes[1].rw, PROBE_RW_WRITE);
	assert_int_equal(c->probes[1].fsync, 1);
	assert_true(c->probes[1].end_fsync);
	assert_int_equal(c->probes[1].number_ios, 1000);
	assert_int_equal(c->probes[1].runtime_usec, 0);
	assert_int_equal(c->probes[1].interval_usec, 60000000);

	assert_int_equal(c->probes[2].rw, PROBE_RW_RANDRW);
	assert_int_equal(c->probes[2].rwmixread, 70);
	assert_int_equal(c->probes[2].size, 1ULL << 30);

	assert_int_equal(c->probes[3].rw, PROBE_RW_REWRITE);
	assert_int_equal(c->probes[3].ioengine, PROBE_ENGINE_PSYNC);

	/* a filename replaces the directory inherited from [global] */
	assert_null(c->probes[4].directory);
	assert_string_equal(c->probes[4].filename, "/dev/nvme0n1");
	assert_true(c->probes[4].ceiling);
	assert_true(c->probes[4].allow_overlap);
	assert_int_equal(c->probes[4].size, 10ULL << 30);
	assert_int_equal(c->probes[4].runtime_usec, 5000000);

	assert_int_equal(c->n_devices, 2);
	d = config_find_device(c, "nvme1n1");
	assert_non_null(d);
	assert_int_equal(d->iops_limit, 3000);
	assert_int_equal(d->throughput_limit, 125ULL << 20);
	assert_true(d->ceiling_threshold > 0.899 && d->ceiling_threshold < 0.901);
	d = config_find_device(c, "/data");
	assert_non_null(d);
	assert_int_equal(d->burst_iops, 3000);
	assert_int_equal(d->burst_credits, 5400000);
	assert_true(d->credit_rate > 99.9 && d->credit_rate < 100.1);
	assert_true(d->ceiling_threshold > 0.979 && d->ceiling_threshold < 0.981);
	assert_null(config_find_device(c, "sda"));
	assert_true(c->instance.is_declared);
	assert_int_equal(c->instance.iops_limit, 18750);
	assert_int_equal(c->instance.throughput_limit, 593750000);
	assert_string_equal(c->instance.devices, "^nvme");
	config_free(c);
}

static void test_builtin_default_is_a_gentle_probe(void **state)
{
	struct config *c = NULL;

	assert_int_equal(config_load_builtin(&c), 0);
	assert_true(c->is_builtin);
	assert_string_equal(c->listen_address, "127.0.0.1:9477");
	assert_int_equal(c->n_probes, 1);
	assert_int_equal(c->probes[0].rw, PROBE_RW_RANDREAD);
	assert_int_equal(c->probes[0].bs, 4096);
	assert_int_equal(c->probes[0].iodepth, 1);
	assert_int_equal(c->probes[0].rate_iops, 50);
	assert_int_equal(c->probes[0].runtime_usec, 1000000);
	assert_int_equal(c->probes[0].interval_usec, 10000000);
	assert_string_equal(c->probes[0].directory, c->state_directory);
	assert_null(c->device_include);
	config_free(c);
}

static void test_bare_fio_flags_and_comments(void **state)
{
	struct config *c = NULL;
	static const char text[] = "# comment\n; another\n[j] # the job\ntime_based # flag\n"
				   "group_reporting\ndirectory=/x ; inline\nrw=read#no space\n"
				   "numjobs=4 # per volume\nbs=8k;x\n";

	/* fio cuts a line at its first ';' or '#', in a value too */
	assert_int_equal(config_load_string("t.conf", text, NULL, &c), 0);
	assert_string_equal(c->probes[0].name, "j");
	assert_true(c->probes[0].time_based);
	assert_int_equal(c->probes[0].rw, PROBE_RW_READ);
	assert_string_equal(c->probes[0].directory, "/x");
	assert_int_equal(c->probes[0].numjobs, 4);
	assert_int_equal(c->probes[0].bs, 8192);
	config_free(c);
}

static void test_fio_environment_variables_and_keywords_expand(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	static const char text[] = "[j]\nfilename=${IOPSD_TEST_DEV}\nrw=randread\niodepth=$ncpus\n"
				   "bs=${IOPSD_TEST_BS}k\n";
	static const char unset[] = "[j]\nfilename=/dev/x\nrw=read\ndirectory=${IOPSD_TEST_UNSET}\n";
	static const char literal[] = "[j]\nfilename=/dev/a$b\nrw=read\n";
	char want[32];

	setenv("IOPSD_TEST_DEV", "/dev/nvme1n1", 1);
	setenv("IOPSD_TEST_BS", "16", 1);
	unsetenv("IOPSD_TEST_UNSET");
	assert_int_equal(config_load_string("e.conf", text, &errs, &c), 0);
	assert_string_equal(c->probes[0].filename, "/dev/nvme1n1");
	assert_int_equal(c->probes[0].bs, 16384);
	snprintf(want, sizeof(want), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	assert_int_equal(c->probes[0].iodepth, strtoul(want, NULL, 10));
	config_free(c);
	c = NULL;

	/* an unset variable is named, at its line */
	assert_int_equal(config_load_string("e.conf", unset, &errs, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(errs.items[0].line, 4);
	assert_non_null(strstr(errs.items[0].message, "${IOPSD_TEST_UNSET} is not set"));
	config_errors_clear(&errs);

	/* a $ that starts neither is kept */
	assert_int_equal(config_load_string("e.conf", literal, &errs, &c), 0);
	assert_string_equal(c->probes[0].filename, "/dev/a$b");
	config_free(c);
}

static void test_missing_file_is_enoent(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;

	assert_int_equal(config_load_file(CONFIG_FIXTURES "/does-not-exist.conf", &errs, &c), -ENOENT);
	assert_null(c);
}

static void test_all_errors_are_collected(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	static const char text[] = "[a]\nbs=1\niodepth=0\n[b]\nrw=nope\n";

	assert_int_equal(config_load_string("m.conf", text, &errs, &c), -EINVAL);
	assert_null(c);
	/* bs, iodepth, rw, and [a]'s and [b]'s missing target */
	assert_int_equal(errs.n, 5);
	assert_int_equal(errs.items[0].line, 2);
	assert_int_equal(errs.items[1].line, 3);
	config_errors_clear(&errs);
}

static void test_probes_never_share_a_file(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	/* [x] with nrfiles=2 writes x.0.dat and x.1.dat: [x.1]'s */
	static const char clash[] = "[global]\ndirectory=/srv\nrw=randread\n[x]\nnrfiles=2\n[x.1]\n";
	/* elsewhere, beyond nrfiles, or another number's spelling: no clash */
	static const char fine[] = "[global]\nrw=randread\n[x]\ndirectory=/srv\nnrfiles=2\n"
				   "[x.0]\ndirectory=/data\n[x.2]\ndirectory=/srv\n[x.01]\ndirectory=/srv\n";

	assert_int_equal(config_load_string("n.conf", clash, &errs, &c), -EINVAL);
	assert_int_equal(errs.n, 1);
	assert_int_equal(errs.items[0].line, 6);
	assert_non_null(strstr(errs.items[0].message, "[x.1]: its probe files in /srv would be [x]'s too"));
	config_errors_clear(&errs);
	assert_int_equal(config_load_string("n.conf", fine, &errs, &c), 0);
	config_free(c);
}

/* --once reads a job file in the working directory, as fio does: a job
 * with no target runs there (a scratch probe, with a notice), relative
 * paths are taken from there; the daemon's load refuses all three. */
static void test_once_job_runs_in_the_working_directory(void **state)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	static const char text[] = "[global]\nrw=randread\n[a]\n[b]\ndirectory=./sub\n[c]\nfilename=f.dat\n"
				   "[d]\ndirectory=/srv\n";

	assert_int_equal(config_load_job_string("j.fio", text, "/home/u/w", &errs, &c), 0);
	assert_int_equal(c->n_probes, 4);
	assert_string_equal(c->probes[0].directory, "/home/u/w");
	assert_true(c->probes[0].is_scratch);
	assert_string_equal(c->probes[1].directory, "/home/u/w/sub");
	assert_false(c->probes[1].is_scratch);
	assert_string_equal(c->probes[2].directory, "/home/u/w");
	assert_null(c->probes[2].filename);
	assert_true(c->probes[2].is_scratch);
	assert_string_equal(c->probes[3].directory, "/srv");
	assert_false(c->probes[3].is_scratch);
	assert_true(c->n_notices >= 2);
	assert_non_null(
	    strstr(c->notices[0].message,
		   "[a]: no directory= or filename=: --once runs the job in the working directory, as "
		   "fio does; iopsd writes only /home/u/w/.iopsd/a.dat there and removes it at the end"));
	c = config_free(c);

	assert_int_equal(config_load_string("j.fio", text, &errs, &c), -EINVAL);
	assert_null(c);
	/* [a]'s target, [b]'s directory (and so its target), [c]'s filename */
	assert_int_equal(errs.n, 4);
	assert_non_null(strstr(errs.items[0].message, "[a]: missing target"));
	assert_non_null(strstr(errs.items[1].message, "'./sub' for directory: expected an absolute path"));
	assert_non_null(strstr(errs.items[2].message, "[b]: missing target"));
	assert_non_null(strstr(errs.items[3].message, "filename=f.dat is a relative path"));
	config_errors_clear(&errs);
}

/* Section names as fio reads them: any name starting with "global" is
 * [global], every other one a job. iopsd's [device NAME] always has a name,
 * so a bare [device] is fio's job of that name (fio-examples'
 * latency-profile); [instance] is iopsd's until its first key is a job's. */
static void test_section_names_are_fios(void **state)
{
	static const char text[] = "[global]\ndirectory=/data\n[global-opts]\nbs=8k\n[device]\nrw=randread\n"
				   "[instance]\nrw=read\n[device nvme1n1]\niops_limit=3000\n";
	struct config_errors errs = {0};
	struct config *c = NULL;

	assert_int_equal(config_load_string("fio.conf", text, &errs, &c), 0);
	assert_int_equal(c->n_probes, 2);
	assert_string_equal(c->probes[0].name, "device");
	assert_int_equal(c->probes[0].rw, PROBE_RW_RANDREAD);
	assert_int_equal(c->probes[0].bs, 8192);
	assert_string_equal(c->probes[1].name, "instance");
	assert_int_equal(c->probes[1].rw, PROBE_RW_READ);
	assert_int_equal(c->probes[1].line, 7);
	assert_false(c->instance.is_declared);
	assert_int_equal(c->n_devices, 1);
	assert_string_equal(c->devices[0].name, "nvme1n1");
	config_free(c);
	c = NULL;

	assert_int_equal(
	    config_load_string("iopsd.conf", "[global]\n[instance]\niops_limit=100\n", &errs, &c), 0);
	assert_true(c->instance.is_declared);
	assert_int_equal(c->instance.iops_limit, 100);
	assert_int_equal(c->n_probes, 0);
	config_free(c);
	c = NULL;

	/* a job's key after [instance]'s keys is not [instance]'s */
	assert_int_equal(
	    config_load_string("mixed.conf", "[global]\n[instance]\niops_limit=100\nrw=read\n", &errs, &c),
	    -EINVAL);
	assert_int_equal(errs.items[0].line, 4);
	assert_non_null(strstr(errs.items[0].message, "unknown key 'rw' in [instance]"));
	config_errors_clear(&errs);
}

/* Each fixture starts with "# expect LINE: text". */
static void test_memory_limits_have_safe_defaults_and_can_be_raised(void **state)
{
	static const char heavy[] = "[global]\nsample_interval=100ms\nhistory=7d\n"
				    "[seq]\nrw=read\nbs=1m\niodepth=64\nnumjobs=4\ndirectory=/data\n";
	static const char raised[] = "[global]\nsample_interval=100ms\nhistory=7d\n"
				     "max_history_memory=512m\nmax_probe_memory=1g\n"
				     "[seq]\nrw=read\nbs=1m\niodepth=64\nnumjobs=4\ndirectory=/data\n";
	struct config_errors errs = {0};
	struct config *c = NULL;

	assert_int_equal(config_load_builtin(&c), 0);
	assert_int_equal(c->max_history_memory, 64ULL << 20);
	assert_int_equal(c->max_probe_memory, 128ULL << 20);
	assert_int_equal(c->max_history_points, 12000);
	config_free(c);
	c = NULL;

	/* 369 MiB of history per device and 256 MiB of buffers: both refused */
	assert_int_equal(config_load_string("heavy.conf", heavy, &errs, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(errs.n, 2);
	assert_non_null(strstr(errs.items[0].message, "max_history_memory"));
	assert_int_equal(errs.items[0].line, 3);
	assert_non_null(strstr(errs.items[1].message, "max_probe_memory"));
	assert_int_equal(errs.items[1].line, 4);
	config_errors_clear(&errs);

	assert_int_equal(config_load_string("raised.conf", raised, &errs, &c), 0);
	assert_int_equal(c->max_history_memory, 512ULL << 20);
	assert_int_equal(c->max_probe_memory, 1ULL << 30);
	config_free(c);
}

/* What fio accepts and runs loads: a size= under a block per job is
 * fitted (fio lays out size= per job), a mix on a job that does not mix is
 * ignored, "\\:" is a ':' of the name, a runtime of a year is a runtime. */
static void test_what_fio_accepts_loads_with_a_notice(void **state)
{
	static const char text[] =
	    "[global]\ndirectory=/data\n[seq]\nrw=read\nbs=1m\nsize=1m\nnumjobs=4\n"
	    "[w]\nrw=write\nrwmixread=70\nruntime=365d\n"
	    "[by-path]\nrw=randread\nfilename=/dev/disk/by-path/pci-0000\\:00\\:1f.2-ata-1\n";
	struct config_errors errs = {0};
	struct config *c = NULL;

	assert_int_equal(config_load_string("fio.conf", text, &errs, &c), 0);
	assert_int_equal(c->probes[0].size, 4 << 20);
	assert_int_equal(c->n_notices, 2);
	assert_int_equal(c->notices[0].line, 6);
	assert_non_null(strstr(c->notices[0].message, "size=1m fitted to 4m: each of the 4 jobs needs a "
						      "block of its own (fio lays out 4m in all)"));
	assert_int_equal(c->notices[1].line, 10);
	assert_non_null(strstr(c->notices[1].message, "rwmixread/rwmixwrite ignored"));
	assert_int_equal(c->probes[1].runtime_usec, 365ULL * 24 * 3600 * 1000000);
	assert_string_equal(c->probes[2].filename, "/dev/disk/by-path/pci-0000:00:1f.2-ata-1");
	config_free(c);
	c = NULL;

	/* an unescaped ':' separates files, which iopsd does not take */
	assert_int_equal(config_load_string("two.conf", "[j]\nfilename=/dev/sda:/dev/sdb\n", &errs, &c),
			 -EINVAL);
	assert_non_null(strstr(errs.items[0].message, "names several files"));
	config_errors_clear(&errs);
}

static void test_each_invalid_fixture_reports_file_and_line(void **state)
{
	DIR *dir = opendir(CONFIG_FIXTURES "/invalid");
	struct dirent *de;
	unsigned checked = 0;

	assert_non_null(dir);
	while ((de = readdir(dir))) {
		char path[512], first[512], want[512];
		struct config_errors errs = {0};
		struct config *c = NULL;
		unsigned line;
		FILE *f;
		int r;

		if (!strstr(de->d_name, ".conf")) {
			continue;
		}
		snprintf(path, sizeof(path), "%s/invalid/%s", CONFIG_FIXTURES, de->d_name);
		f = fopen(path, "re");
		assert_non_null(f);
		assert_non_null(fgets(first, sizeof(first), f));
		fclose(f);
		first[strcspn(first, "\n")] = '\0';
		assert_int_equal(sscanf(first, "# expect %u: %511[^\n]", &line, want), 2);

		r = config_load_file(path, &errs, &c);
		if (r != -EINVAL || errs.n == 0) {
			fail_msg("%s: expected an error, got %d", de->d_name, r);
		}
		assert_null(c);
		assert_string_equal(errs.items[0].file, path);
		if (errs.items[0].line != line || !strstr(errs.items[0].message, want)) {
			fail_msg("%s: expected '%u: %s', got '%u: %s'", de->d_name, line, want,
				 errs.items[0].line, errs.items[0].message);
		}
		config_errors_clear(&errs);
		checked++;
	}
	closedir(dir);
	assert_true(checked >= 25);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fio_job_file_loads_unchanged),
	    cmocka_unit_test(test_every_key_in_every_form),
	    cmocka_unit_test(test_builtin_default_is_a_gentle_probe),
	    cmocka_unit_test(test_bare_fio_flags_and_comments),
	    cmocka_unit_test(test_fio_environment_variables_and_keywords_expand),
	    cmocka_unit_test(test_missing_file_is_enoent),
	    cmocka_unit_test(test_all_errors_are_collected),
	    cmocka_unit_test(test_probes_never_share_a_file),
	    cmocka_unit_test(test_memory_limits_have_safe_defaults_and_can_be_raised),
	    cmocka_unit_test(test_section_names_are_fios),
	    cmocka_unit_test(test_once_job_runs_in_the_working_directory),
	    cmocka_unit_test(test_what_fio_accepts_loads_with_a_notice),
	    cmocka_unit_test(test_each_invalid_fixture_reports_file_and_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
