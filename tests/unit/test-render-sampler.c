/* The device metrics a real sample renders: the sampler on the
 * ec2-md-raid0 fixture tree (before and after its 60 s fio run), through
 * the registry, rendered as /metrics, against golden files. Only the
 * families the sampler feeds are compared (iopsd_device_*,
 * iopsd_pressure_*, iopsd_diskstats_*, iopsd_sample_*); the rest depend on
 * the process and the build. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/sysmacros.h>

#include "fileio.h"
#include "macro.h"
#include "registry.h"
#include "render_prom.h"
#include "sampler-env.h"
#include "snapshot-fixture.h"
#include "identity-fixture.h"

static bool is_sampler_family(const char *name)
{
	static const char *const prefixes[] = {"iopsd_device_", "iopsd_pressure_", "iopsd_diskstats_",
					       "iopsd_sample_"};

	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
			return true;
		}
	}
	return false;
}

/* The lines of `text` (samples and their # HELP/# TYPE/# UNIT) that belong
 * to the sampler's families. */
static char *sampler_lines(const char *text)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		const char *name = line;
		size_t n = eol ? (size_t)(eol - line + 1) : strlen(line);

		if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0 ||
		    strncmp(line, "# UNIT ", 7) == 0) {
			name = line + 7;
		}
		if (is_sampler_family(name)) {
			fwrite(line, 1, n, f);
		}
		line += n;
	}
	fclose(f);
	return out;
}

static void render_and_compare(const char *config_text, const char *golden_prom, const char *golden_om)
{
	struct sampler_env e;
	struct sampler_snapshot *s0, *s1;
	struct registry *r = NULL;
	struct probe_identity **ids;
	struct snapshot *snap;

	sampler_env_setup(&e, "ec2-md-raid0", config_text);
	s0 = sampler_env_sample(&e, 0);
	sampler_env_diskstats(&e, "diskstats.t60");
	s1 = sampler_env_sample(&e, 60);

	assert_int_equal(registry_new(&r), 0);
	ids = fixture_identities(e.cfg);
	assert_int_equal(registry_set_probes(r, e.cfg, ids), 0);
	registry_set_samples(r, s1);
	assert_int_equal(registry_publish(r), 0);
	snap = registry_acquire(r);
	assert_non_null(snap);
	for (int fmt = 0; fmt < _METRICS_FORMAT_MAX; fmt++) {
		_cleanup_free_ char *text = NULL, *lines = NULL;
		size_t len;

		assert_int_equal(render_prom(snap, (enum metrics_format)fmt, &text, &len), 0);
		lines = sampler_lines(text);
		/* the md aggregate is the point of the fixture: never lose it */
		assert_non_null(
		    strstr(lines, "iopsd_device_member_utilization_ratio{device=\"md0\"} 0.8791"));
		assert_golden(fmt == METRICS_FORMAT_PROMETHEUS ? golden_prom : golden_om, lines);
	}
	snapshot_unref(snap);
	registry_free(r);
	fixture_identities_free(ids, e.cfg->n_probes);
	sampler_snapshot_unref(s0);
	sampler_snapshot_unref(s1);
	sampler_env_teardown(&e);
}

static void test_fixture_tree_device_metrics_match_golden(void **state)
{
	render_and_compare(
	    "[global]\n"
	    "[device /data]\niops_limit=6000\nthroughput_limit=250m\nread_throughput_limit=100m\n",
	    "sampler-ec2-md-raid0.prom", "sampler-ec2-md-raid0.openmetrics");
}

/* NVMe native multipath: the head's hidden paths are its members in
 * iopsd_device_info, as an md array's are, and have no series of their own. */
static void test_multipath_paths_are_members_in_device_info(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *ss;
	struct registry *r = NULL;
	struct snapshot *snap;
	_cleanup_free_ char *text = NULL;
	size_t len;

	sampler_env_setup(&e, "nvme-multipath", NULL);
	assert_int_equal(registry_new(&r), 0);
	ss = sampler_env_sample(&e, 0);
	registry_set_samples(r, ss);
	sampler_snapshot_unref(ss);
	assert_int_equal(registry_publish(r), 0);
	snap = registry_acquire(r);
	assert_int_equal(render_prom(snap, METRICS_FORMAT_PROMETHEUS, &text, &len), 0);
	assert_non_null(strstr(text, "iopsd_device_info{device=\"nvme1n1\",kind=\"disk\","
				     "members=\"nvme1c1n1,nvme1c2n1\",mountpoint=\"/data\"} 1"));
	assert_non_null(strstr(text, "iopsd_device_info{device=\"nvme0n1\",kind=\"disk\",members=\"\","));
	assert_null(strstr(text, "device=\"nvme1c1n1\""));
	snapshot_unref(snap);
	registry_free(r);
	sampler_env_teardown(&e);
}

/* A probe on a directory of the root filesystem that an md array is then
 * mounted on: iopsd_probe_info says the array from the next topology
 * refresh on (in the lab, /data made after iopsd started). */
static void test_probe_device_follows_a_mount_on_its_target(void **state)
{
	struct sampler_env e;
	struct registry *r = NULL;
	struct probe_identity **ids;
	struct sampler_snapshot *ss;
	struct snapshot *snap;
	char path[128];
	_cleanup_free_ char *buf = NULL, *more = NULL;

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\n[later]\nrw=randread\ndirectory=/srv/later\n");
	assert_int_equal(registry_new(&r), 0);
	ids = fixture_identities(e.cfg);
	assert_int_equal(registry_set_probes(r, e.cfg, ids), 0);
	ss = sampler_env_sample(&e, 0);
	registry_set_samples(r, ss);
	sampler_snapshot_unref(ss);
	/* as the daemon places them after each sample */
	targets_place_identity(sampler_last_sample(e.s)->topology, ids[0]);
	registry_update_devices(r);
	assert_int_equal(registry_publish(r), 0);
	snap = registry_acquire(r);
	assert_string_equal(snap->probes[0].device, "xvda1");
	snapshot_unref(snap);

	snprintf(path, sizeof(path), "%s/self/mountinfo", e.dir);
	assert_true(read_virtual_file(path, 1 << 20, &buf) > 0);
	assert_true(asprintf(&more, "%s60 22 9:0 / /srv/later rw - ext4 /dev/md0 rw\n", buf) > 0);
	sampler_env_write_file(path, more);
	ss = sampler_env_sample(&e, 61);
	registry_set_samples(r, ss);
	sampler_snapshot_unref(ss);
	/* as the daemon places them after each sample */
	targets_place_identity(sampler_last_sample(e.s)->topology, ids[0]);
	registry_update_devices(r);
	assert_int_equal(registry_publish(r), 0);
	snap = registry_acquire(r);
	assert_string_equal(snap->probes[0].device, "md0");
	/* one answer: the identity the scheduler and the ceiling gate read
	 * says md0 too, and runs are serialised on md0 */
	{
		char device[DISKSTATS_NAME_MAX];
		dev_t disk = 0;

		assert_true(probe_identity_device(snap->probes[0].id, device, &disk));
		assert_string_equal(device, "md0");
		assert_true(disk == makedev(9, 0));
	}
	snapshot_unref(snap);
	registry_free(r);
	fixture_identities_free(ids, e.cfg->n_probes);
	sampler_env_teardown(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_tree_device_metrics_match_golden),
	    cmocka_unit_test(test_multipath_paths_are_members_in_device_info),
	    cmocka_unit_test(test_probe_device_follows_a_mount_on_its_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
