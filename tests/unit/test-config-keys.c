/* The key table and what the loader does with each class: honoured keys
 * set fio's meaning (budget keys are fitted to the schedule: test-fit.c),
 * ignored keys load with a notice, refused keys fail with FILE:LINE,
 * the key and why. The man page's table and the "valid keys" message come
 * from the same table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "fio.h"
#include "fit.h"
#include "config-helpers.h"
#include "keys.h"

#define MAN_PAGE SRCDIR "/man/iopsd.conf.5"
#define RUNBOOK	 FIXTURES_DIR "/config/runbook"

static void test_table_has_one_entry_per_name_and_scope(void **state)
{
	size_t by_class[_CONFIG_KEY_CLASS_MAX] = {0};

	for (size_t i = 0; i < config_keys_count; i++) {
		const struct config_key *k = &config_keys[i];

		assert_true(k->cls < _CONFIG_KEY_CLASS_MAX);
		assert_non_null(k->text);
		by_class[k->cls]++;
		/* a name (or alias) finds exactly this entry in its scope */
		assert_ptr_equal(config_key_find(k->name, k->scope), k);
		for (size_t a = 0; a < CONFIG_KEY_MAX_ALIASES && k->aliases[a]; a++) {
			assert_ptr_equal(config_key_find(k->aliases[a], k->scope), k);
		}
		if (k->cls == CONFIG_KEY_IGNORED || k->cls == CONFIG_KEY_REFUSED) {
			assert_int_equal(k->scope, CONFIG_SCOPE_PROBE);
		}
	}
	for (int c = 0; c < _CONFIG_KEY_CLASS_MAX; c++) {
		assert_true(by_class[c] > 0);
	}
	/* the budget keys, and the decision on stonewall */
	assert_int_equal(config_key_find("loops", CONFIG_SCOPE_PROBE)->cls, CONFIG_KEY_BUDGET);
	assert_int_equal(config_key_find("ramp_time", CONFIG_SCOPE_PROBE)->cls, CONFIG_KEY_BUDGET);
	assert_int_equal(config_key_find("startdelay", CONFIG_SCOPE_PROBE)->cls, CONFIG_KEY_BUDGET);
	assert_int_equal(config_key_find("stonewall", CONFIG_SCOPE_PROBE)->cls, CONFIG_KEY_HONOURED);
	assert_int_equal(config_key_find("gtod_reduce", CONFIG_SCOPE_PROBE)->cls, CONFIG_KEY_IGNORED);
	assert_int_equal(config_key_find("verify", CONFIG_SCOPE_PROBE)->cls, CONFIG_KEY_REFUSED);
	assert_null(config_key_find("blocksz", CONFIG_SCOPE_PROBE));
}

/* The man page's KEY TABLE rows ("name|scope|class|T{" then "(also a, b)
 * text") are the table's entries, in both directions. */
static void test_man_page_table_matches_key_table(void **state)
{
	FILE *f = fopen(MAN_PAGE, "re");
	char line[1024], prev[1024] = "";
	bool in_table = false, seen[1024] = {false};
	size_t rows = 0;

	assert_non_null(f);
	assert_true(config_keys_count < 1024);
	while (fgets(line, sizeof(line), f)) {
		char name[128], scope[32], cls[32], aliases[256] = "";
		const struct config_key *k;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "KEY|SECTION|CLASS", 17) == 0) {
			in_table = true;
		} else if (strcmp(line, ".TE") == 0) {
			in_table = false;
		} else if (in_table && strlen(prev) > 3 && strcmp(prev + strlen(prev) - 3, "|T{") == 0 &&
			   sscanf(prev, "%127[^|]|%31[^|]|%31[^|]|", name, scope, cls) == 3) {
			/* `line` is the text's first line: its "(also ...)" */
			sscanf(line, "(also %255[^)])", aliases);
			k = config_key_find(name, CONFIG_SCOPE_GLOBAL);
			k = k && strcmp(scope, "global") == 0
				? k
				: config_key_find(name, strcmp(scope, "device") == 0 ? CONFIG_SCOPE_DEVICE
							: strcmp(scope, "instance") == 0
							    ? CONFIG_SCOPE_INSTANCE
							    : CONFIG_SCOPE_PROBE);
			if (!k || strcmp(k->name, name) != 0 ||
			    strcmp(config_key_scope_to_string(k->scope), scope) != 0) {
				fail_msg("man page row '%s|%s' is not in the key table", name, scope);
			}
			if (strcmp(config_key_class_to_string(k->cls), cls) != 0) {
				fail_msg("man page says %s is %s, the table %s", name, cls,
					 config_key_class_to_string(k->cls));
			}
			for (size_t a = 0; a < CONFIG_KEY_MAX_ALIASES && k->aliases[a]; a++) {
				if (!strstr(aliases, k->aliases[a])) {
					fail_msg("man page row %s lacks the alias %s", name, k->aliases[a]);
				}
			}
			seen[config_key_index(k)] = true;
			rows++;
		}
		snprintf(prev, sizeof(prev), "%s", line);
	}
	fclose(f);
	for (size_t i = 0; i < config_keys_count; i++) {
		if (!seen[i]) {
			fail_msg("key %s (%s) is missing from the man page's KEY TABLE", config_keys[i].name,
				 config_key_scope_to_string(config_keys[i].scope));
		}
	}
	assert_int_equal(rows, config_keys_count);
}

static void test_valid_keys_message_is_generated_from_the_table(void **state)
{
	char msg[8192];
	unsigned line = config_test_load_fails("[p]\ndirectory=/data\nblocksz=4k\n", msg, sizeof(msg));

	assert_int_equal(line, 3);
	assert_non_null(strstr(msg, "unknown key 'blocksz' in probe [p]"));
	/* every honoured and budget probe key, and no ignored one */
	for (size_t i = 0; i < config_keys_count; i++) {
		const struct config_key *k = &config_keys[i];
		char want[160];

		if (k->scope != CONFIG_SCOPE_PROBE) {
			continue;
		}
		snprintf(want, sizeof(want), ", %s", k->name);
		if (k->cls == CONFIG_KEY_HONOURED || k->cls == CONFIG_KEY_BUDGET) {
			if (!strstr(msg, k->name)) {
				fail_msg("the valid-keys message lacks %s: %s", k->name, msg);
			}
		} else if (strstr(msg, want)) {
			fail_msg("the valid-keys message lists the %s key %s",
				 config_key_class_to_string(k->cls), k->name);
		}
	}
	assert_non_null(strstr(msg, "bs (blocksize)"));
	config_test_load_fails("[device sdb]\niopz=1\n", msg, sizeof(msg));
	assert_non_null(
	    strstr(msg, "valid keys are iops_limit, throughput_limit, burst_iops, burst_credits, "
			"credit_rate, ceiling_threshold, volume_type, iops, throughput, iops_per_gb "
			"(iopsPerGB), iops_unit, read_iops_limit, write_iops_limit, read_throughput_limit, "
			"write_throughput_limit"));
}

static void test_honoured_keys_keep_fios_meaning(void **state)
{
	struct config *c = config_test_load_ok(
	    "[global]\ndirectory=/data\n"
	    "[iometer]\nrw=randrw\nrwmixread=80\nbssplit=512/10:4k/60:64k:1m\n"
	    "[range]\nrw=randwrite\nbsrange=4k-64k\nblockalign=8k\n"
	    "[dirs]\nrw=rw\nbs=4k,64k\nrate=1m\nrate_iops=300,300,300\nnrfiles=4\nsize=64m\n"
	    "[inc]\nrw=read\nnumjobs=4\noffset=1m\noffset_increment=10m\nsize=8m\n"
	    "iodepth=32\niodepth_batch=8\niodepth_batch_complete_min=4\nstonewall\n");
	const struct probe_config *p = &c->probes[0];
	struct fio_layout l;
	char err[256];

	assert_int_equal(p->bsdir[PROBE_DIR_READ].n_split, 4);
	/* the two blank percentages share the 30 left */
	assert_int_equal(p->bsdir[PROBE_DIR_READ].split[2].pct, 15);
	assert_int_equal(p->bsdir[PROBE_DIR_READ].split[3].pct, 15);
	assert_int_equal(p->bsdir[PROBE_DIR_WRITE].min, 512);
	assert_int_equal(p->bs, 1 << 20);
	p = &c->probes[1];
	assert_int_equal(p->bsdir[PROBE_DIR_WRITE].min, 4096);
	assert_int_equal(p->bsdir[PROBE_DIR_WRITE].max, 65536);
	assert_int_equal(p->blockalign, 8192);
	p = &c->probes[2];
	assert_int_equal(p->bsdir[PROBE_DIR_READ].max, 4096);
	assert_int_equal(p->bsdir[PROBE_DIR_WRITE].max, 65536);
	assert_int_equal(p->rate_bytes, 1 << 20);
	assert_int_equal(p->rate_iops, 300);
	assert_int_equal(p->nrfiles, 4);
	assert_int_equal(fio_layout(p, 0, &l, err, sizeof(err)), 0);
	assert_int_equal(l.file_size, 16 << 20);
	p = &c->probes[3];
	assert_true(p->stonewall);
	assert_int_equal(p->iodepth_batch, 8);
	assert_int_equal(p->iodepth_batch_complete_min, 4);
	assert_int_equal(fio_layout(p, 0, &l, err, sizeof(err)), 0);
	/* job 3's region ends at 1m + 3 * 10m + 8m */
	assert_int_equal(l.file_size, 39 << 20);
	assert_int_equal(l.region, 8 << 20);
	config_free(c);
}

static void test_ignored_keys_load_with_one_notice_per_section(void **state)
{
	struct config *c =
	    config_test_load_ok("[global]\ndescription=Emulation of a file server\n"
				"[j]\ndirectory=/data\ngtod_reduce=1\ngroup_reporting\nlat_percentiles=1\n"
				"write_bw_log=x\nkb_base=1000\nio_submit_mode=offload\nverify=0\n");
	const struct config_error *n = config_test_find_notice(c, "[j]: fio keys accepted and ignored");

	assert_non_null(n);
	assert_int_equal(n->line, 3);
	assert_non_null(
	    strstr(n->message,
		   "gtod_reduce, group_reporting, lat_percentiles, write_bw_log, kb_base, io_submit_mode"));
	/* verify=0 is a refused key's "off": accepted, not even ignored */
	assert_null(strstr(n->message, "verify"));
	assert_non_null(config_test_find_notice(
	    c, "[global]: fio keys accepted and ignored (they do not change what is measured): description"));
	config_free(c);
}

static void test_refused_keys_name_file_line_key_and_reason(void **state)
{
	static const struct {
		const char *text;
		unsigned line;
		const char *want;
	} cases[] = {
	    {"[j]\ndirectory=/d\nverify=crc32c\n", 3, "verify=crc32c is refused: iopsd never verifies data"},
	    {"[j]\ndirectory=/d\ndirect=0\n", 3, "direct=0 is not supported"},
	    {"[j]\nfilename=/dev/sdz\nioengine=net\n", 3, "ioengine=net is refused: it measures a network"},
	    {"[j]\nfilename=/dev/sdz\nioengine=null\n", 3, "ioengine=null is refused: it does no disk I/O"},
	    {"[j]\ndirectory=/d\nrw=trim\n", 3, "rw=trim is refused: iopsd never trims"},
	    {"[j]\ndirectory=/d\nzonemode=zbd\n", 3, "zonemode=zbd is refused: zoned"},
	    {"[j]\ndirectory=/d\nreplay_redirect=/dev/sda\n", 3, "replay_redirect=/dev/sda is refused"},
	    {"[j]\ndirectory=/d\nrw=read:8x\n", 3, "rw=read:8x: expected MODE:SIZE"},
	    {"[j]\ndirectory=/d\nrate=1m,500k\n", 3, "separate read and write rates are not supported"},
	    {"[j]\ndirectory=/d\nbssplit=4k/50:8k/40\n", 3, "the percentages add up to 90, not 100"},
	    {"[j]\nfilename=/dev/null\n", 2, "is a character device"},
	    {"[j]\nfilename=rel.dat\n", 2, "relative path and no directory="},
	};
	char msg[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned line = config_test_load_fails(cases[i].text, msg, sizeof(msg));

		if (line != cases[i].line || !strstr(msg, cases[i].want)) {
			fail_msg("case %zu: got %u: %s, want %u: %s", i, line, msg, cases[i].line,
				 cases[i].want);
		}
	}
}

static void test_duplicate_keys_are_found_in_a_section_of_any_length(void **state)
{
	char *text = malloc(65536), msg[512];
	size_t n = 0, keys = 0, lines = 2;
	const char *last = NULL;

	assert_non_null(text);
	n += (size_t)snprintf(text + n, 65536 - n, "[long]\ndirectory=/data\n");
	/* every ignored key once: far more than the 48 the old parser remembered */
	for (size_t i = 0; i < config_keys_count; i++) {
		if (config_keys[i].cls == CONFIG_KEY_IGNORED) {
			n += (size_t)snprintf(text + n, 65536 - n, "%s=1\n", config_keys[i].name);
			last = config_keys[i].name;
			keys++;
			lines++;
		}
	}
	assert_true(keys > 100);
	snprintf(text + n, 65536 - n, "%s=2\n", last);
	assert_int_equal(config_test_load_fails(text, msg, sizeof(msg)), lines + 1);
	assert_non_null(strstr(msg, "duplicate key"));
	assert_non_null(strstr(msg, last));
	free(text);
	/* one key under two of its names */
	assert_int_equal(config_test_load_fails("[p]\ndirectory=/d\nbs=4k\nblocksize=8k\n", msg, sizeof(msg)),
			 4);
	assert_non_null(strstr(msg, "duplicate key 'blocksize' in [p]: first set on line 3"));
}

static void test_an_explicit_interval_is_not_fitted(void **state)
{
	char msg[512];

	assert_int_equal(config_test_load_fails("[p]\ndirectory=/d\nruntime=8s\nramp_time=5s\ninterval=10s\n",
						msg, sizeof(msg)),
			 1);
	assert_non_null(strstr(msg, "ramp_time=5s plus runtime=8s is longer than interval=10s"));
}

static void test_filename_of_a_file_becomes_a_probe_file_with_a_notice(void **state)
{
	struct config *c =
	    config_test_load_ok("[abs]\nfilename=/data/testfile\n"
				"[rel]\ndirectory=/srv\nfilename=sub/ssd.test.file\nnrfiles=2\n"
				"[dev]\nfilename=/dev/iopsd-test-missing-disk\n");
	const struct config_error *n;

	assert_string_equal(c->probes[0].directory, "/data");
	assert_null(c->probes[0].filename);
	n = config_test_find_notice(
	    c, "[abs]: filename=/data/testfile is not a block device; iopsd writes only files of "
	       "its own, so the probe uses /data/.iopsd/abs.dat");
	assert_non_null(n);
	assert_int_equal(n->line, 2);
	assert_string_equal(c->probes[1].directory, "/srv/sub");
	assert_non_null(config_test_find_notice(c, "/srv/sub/.iopsd/rel.0.dat to rel.1.dat"));
	/* a /dev path that is not there yet is a disk still to appear */
	assert_null(c->probes[2].directory);
	assert_string_equal(c->probes[2].filename, "/dev/iopsd-test-missing-disk");
	config_free(c);
}

/* The field notes' four runbook jobs load unchanged; fio's per-job size is
 * said in a notice, and loops=5 fitted. */
static void test_runbook_jobs_load_unchanged(void **state)
{
	static const struct {
		const char *file;
		enum probe_rw rw;
	} jobs[] = {
	    {"randread4k.fio", PROBE_RW_RANDREAD},
	    {"randwrite4k.fio", PROBE_RW_RANDWRITE},
	    {"seqread4k.fio", PROBE_RW_READ},
	    {"seqwrite4k.fio", PROBE_RW_WRITE},
	};

	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		struct config_errors errs = {0};
		struct config *c = NULL;
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", RUNBOOK, jobs[i].file);
		assert_int_equal(config_load_file(path, &errs, &c), 0);
		assert_int_equal(c->n_probes, 1);
		assert_int_equal(c->probes[0].rw, jobs[i].rw);
		assert_int_equal(c->probes[0].bs, 4096);
		assert_int_equal(c->probes[0].numjobs, 16);
		assert_int_equal(c->probes[0].loops, 5);
		assert_int_equal(c->probes[0].size, 100 << 20);
		assert_non_null(
		    config_test_find_notice(c, "size=100m is per job in fio (16 jobs lay out 1600m in all); "
					       "iopsd's 16 jobs share the probe's 100m"));
		assert_int_equal(config_fit_schedule(c), 0);
		assert_non_null(config_test_find_notice(c, "loops=5 fitted to 1s per run every 10s"));
		config_free(c);
	}
}

/* fio-examples' filecreate-ioengine asks nrfiles=31250: as many files as
 * max_probe_memory holds load, more are refused by it, not by a constant. */
static void test_nrfiles_is_bounded_by_max_probe_memory(void **state)
{
	struct config *cfg =
	    config_test_load_ok("[many]\ndirectory=/d\nnrfiles=31250\nfilesize=4k\nnumjobs=4\n");
	char msg[1024];

	assert_int_equal(cfg->probes[0].nrfiles, 31250);
	assert_int_equal(config_probe_file_bytes(&cfg->probes[0]), 31250 * (4 + 16 * 4));
	config_free(cfg);
	assert_int_equal(
	    config_test_load_fails("[global]\nmax_probe_memory=16m\n[many]\ndirectory=/d\nnrfiles=1000000\n"
				   "filesize=4k\nnumjobs=2\n",
				   msg, sizeof(msg)),
	    3);
	assert_non_null(strstr(msg, "more than max_probe_memory=16.0 MiB"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_has_one_entry_per_name_and_scope),
	    cmocka_unit_test(test_man_page_table_matches_key_table),
	    cmocka_unit_test(test_valid_keys_message_is_generated_from_the_table),
	    cmocka_unit_test(test_honoured_keys_keep_fios_meaning),
	    cmocka_unit_test(test_ignored_keys_load_with_one_notice_per_section),
	    cmocka_unit_test(test_refused_keys_name_file_line_key_and_reason),
	    cmocka_unit_test(test_duplicate_keys_are_found_in_a_section_of_any_length),
	    cmocka_unit_test(test_an_explicit_interval_is_not_fitted),
	    cmocka_unit_test(test_filename_of_a_file_becomes_a_probe_file_with_a_notice),
	    cmocka_unit_test(test_runbook_jobs_load_unchanged),
	    cmocka_unit_test(test_nrfiles_is_bounded_by_max_probe_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
