/* EBS NVMe log page 0xD0: the parser on constructed pages (fixtures made by
 * tests/fixtures/ebs-nvme/make-fixtures.py), volume detection from a sysfs
 * tree, and a reader that finds nothing (and says nothing) elsewhere. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ebs_nvme.h"
#include "macro.h"

#define EBS_FIXTURES FIXTURES_DIR "/ebs-nvme"

static size_t load(const char *name, uint8_t *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", EBS_FIXTURES, name);
	f = fopen(path, "rbe");
	assert_non_null(f);
	n = fread(buf, 1, len, f);
	fclose(f);
	return n;
}

static void test_volume_page_parses_every_counter_and_histogram(void **state)
{
	uint8_t page[EBS_NVME_LOG_PAGE_SIZE];
	struct ebs_nvme_stats st;
	uint64_t sum = 0;

	assert_int_equal(load("volume.bin", page, sizeof(page)), EBS_NVME_LOG_PAGE_SIZE);
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &st), 0);
	assert_int_equal(st.read_ops, 1000000);
	assert_int_equal(st.write_ops, 500000);
	assert_int_equal(st.read_bytes, 4096000000ULL);
	assert_int_equal(st.write_bytes, 8192000000ULL);
	assert_int_equal(st.read_time_usec, 612345678);
	assert_int_equal(st.write_time_usec, 987654321);
	assert_int_equal(st.volume_exceeded_iops_usec, 12345678);
	assert_int_equal(st.volume_exceeded_throughput_usec, 0);
	assert_int_equal(st.instance_exceeded_iops_usec, 1000000);
	assert_int_equal(st.instance_exceeded_throughput_usec, 250000);
	assert_int_equal(st.queue_length, 7);

	assert_int_equal(st.read_latency.n_bins, 8);
	assert_int_equal(st.read_latency.bins[0].lower_usec, 0);
	assert_int_equal(st.read_latency.bins[0].upper_usec, 128);
	assert_int_equal(st.read_latency.bins[2].count, 400000);
	assert_int_equal(st.read_latency.bins[7].lower_usec, 65536);
	assert_true(st.read_latency.bins[7].upper_usec == UINT64_MAX);
	for (unsigned i = 0; i < st.read_latency.n_bins; i++) {
		sum += st.read_latency.bins[i].count;
	}
	assert_int_equal(sum, st.read_ops);
	assert_int_equal(st.write_latency.n_bins, 4);
	assert_int_equal(st.write_latency.bins[3].upper_usec, 1000000);
	assert_int_equal(st.write_latency.bins[3].count, 1000);
}

static void test_pages_that_are_not_ebs_statistics_are_refused(void **state)
{
	uint8_t page[EBS_NVME_LOG_PAGE_SIZE];
	struct ebs_nvme_stats st = {.queue_length = 42};
	size_t n;

	load("bad-magic.bin", page, sizeof(page));
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &st), -EINVAL);
	n = load("short.bin", page, sizeof(page));
	assert_int_equal(n, 2048);
	assert_int_equal(ebs_nvme_parse_log_page(page, n, &st), -EINVAL);
	load("too-many-bins.bin", page, sizeof(page));
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &st), -EBADMSG);
	load("unordered-bins.bin", page, sizeof(page));
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &st), -EBADMSG);
	/* *ret is untouched on failure. */
	assert_int_equal(st.queue_length, 42);
	memset(page, 0, sizeof(page));
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &st), -EINVAL);
}

static void test_empty_histograms_are_valid(void **state)
{
	uint8_t page[EBS_NVME_LOG_PAGE_SIZE];
	struct ebs_nvme_stats st;

	load("empty-histograms.bin", page, sizeof(page));
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &st), 0);
	assert_int_equal(st.read_latency.n_bins, 0);
	assert_int_equal(st.write_latency.n_bins, 0);
	assert_int_equal(st.read_ops, 1000000);
}

static void test_model_and_volume_id(void **state)
{
	char id[EBS_NVME_VOLUME_ID_MAX];

	assert_true(ebs_nvme_is_ebs_model("Amazon Elastic Block Store"));
	assert_true(ebs_nvme_is_ebs_model("Amazon Elastic Block Store              "));
	assert_true(ebs_nvme_is_ebs_model("Amazon Elastic Block Store\n"));
	assert_false(ebs_nvme_is_ebs_model("Amazon EC2 NVMe Instance Storage"));
	assert_false(ebs_nvme_is_ebs_model("Amazon Elastic Block Store 2"));
	assert_false(ebs_nvme_is_ebs_model("Amazon Elastic Block"));
	assert_false(ebs_nvme_is_ebs_model(""));

	assert_true(ebs_nvme_is_volume_serial("vol0123456789abcdef0"));
	assert_true(ebs_nvme_is_volume_serial("vol0123456789abcdef0        "));
	assert_true(ebs_nvme_is_volume_serial("vol-0123456789abcdef0"));
	assert_true(ebs_nvme_is_volume_serial("vol1a2b3c4d"));
	assert_false(ebs_nvme_is_volume_serial("vol0123456789ABCDEF0"));
	assert_false(ebs_nvme_is_volume_serial("vol0123"));
	assert_false(ebs_nvme_is_volume_serial("vol0bbbb"));
	assert_false(ebs_nvme_is_volume_serial("S3EVNX0K123456"));
	assert_false(ebs_nvme_is_volume_serial("volume0123456789abcd"));
	assert_false(ebs_nvme_is_volume_serial(""));

	ebs_nvme_volume_id_from_serial("vol0123456789abcdef0", id);
	assert_string_equal(id, "vol-0123456789abcdef0");
	ebs_nvme_volume_id_from_serial("vol0123456789abcdef0      ", id);
	assert_string_equal(id, "vol-0123456789abcdef0");
	ebs_nvme_volume_id_from_serial("vol-0abc", id);
	assert_string_equal(id, "vol-0abc");
	ebs_nvme_volume_id_from_serial("S3EVNX0K123456", id);
	assert_string_equal(id, "S3EVNX0K123456");
	ebs_nvme_volume_id_from_serial("", id);
	assert_string_equal(id, "");
	ebs_nvme_volume_id_from_serial("x1234567890123456789012345678901234567890", id);
	assert_int_equal(strlen(id), EBS_NVME_VOLUME_ID_MAX - 1);
}

/* A sysfs tree with two EBS namespaces, an instance-store NVMe and a
 * virtio disk. */
struct tree {
	char root[64];
};

/* mkdir -p of the directory holding `path`. */
static void make_parents(const char *path)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
}

static void put(const char *root, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	make_parents(path);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void link_to(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	make_parents(path);
	assert_int_equal(symlink(target, path), 0);
}

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	strcpy(t->root, "/tmp/test-ebs-nvme.XXXXXX");
	assert_non_null(mkdtemp(t->root));
	put(t->root, "devices/nvme1/model", "Amazon Elastic Block Store              \n");
	put(t->root, "devices/nvme1/serial", "vol0123456789abcdef0\n");
	link_to(t->root, "class/block/nvme1n1/device", "../../../devices/nvme1");
	put(t->root, "class/block/nvme1n1/nsid", "1\n");
	put(t->root, "devices/nvme2/model", "Amazon Elastic Block Store\n");
	put(t->root, "devices/nvme2/serial", "vol0fedcba9876543210\n");
	link_to(t->root, "class/block/nvme2n1/device", "../../../devices/nvme2");
	/* a partition of an EBS volume is not reported on its own */
	link_to(t->root, "class/block/nvme2n1p1/device", "../../../devices/nvme2");
	put(t->root, "devices/nvme0/model", "Amazon EC2 NVMe Instance Storage\n");
	link_to(t->root, "class/block/nvme0n1/device", "../../../devices/nvme0");
	put(t->root, "devices/virtio0/model", "Amazon Elastic Block Store\n");
	/* QEMU's NVMe with an EBS-style serial: a volume id, but no page */
	put(t->root, "devices/nvme3/model", "QEMU NVMe Ctrl                          \n");
	put(t->root, "devices/nvme3/serial", "vol0123456789abcdef0\n");
	link_to(t->root, "class/block/nvme3n1/device", "../../../devices/nvme3");
	link_to(t->root, "class/block/vda/device", "../../../devices/virtio0");
	*state = t;
	return 0;
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

struct fake_device {
	unsigned calls;
	char last_path[PATH_MAX];
	uint32_t last_nsid;
};

/* nvme1 answers with the fixture page, nvme2 refuses (no CAP_SYS_ADMIN). */
static int fake_read_page(const char *controller_path, uint32_t nsid, void *buf, size_t len, void *userdata)
{
	struct fake_device *f = userdata;

	f->calls++;
	snprintf(f->last_path, sizeof(f->last_path), "%s", controller_path);
	f->last_nsid = nsid;
	if (strcmp(controller_path, "/dev/nvme1") == 0) {
		assert_int_equal(load("volume.bin", buf, len), EBS_NVME_LOG_PAGE_SIZE);
		return 0;
	}
	return -EPERM;
}

static void test_reader_finds_ebs_volumes_and_says_which_it_cannot_read(void **state)
{
	struct tree *t = *state;
	const char *names[] = {"vda", "nvme0n1", "nvme1n1", "nvme2n1", "nvme2n1p1", "nvme3n1", "loop0"};
	struct fake_device fake = {0};
	struct ebs_nvme_reader *r = NULL;
	struct ebs_nvme_volume *vols = NULL;

	assert_int_equal(ebs_nvme_reader_new(t->root, "/dev", fake_read_page, &fake, &r), 0);
	assert_int_equal(ebs_nvme_reader_refresh(r, names, ELEMENTSOF(names)), 2);
	assert_int_equal(ebs_nvme_reader_sample(r, &vols), 2);
	assert_int_equal(fake.calls, 2);
	assert_string_equal(vols[0].device, "nvme1n1");
	assert_string_equal(vols[0].volume_id, "vol-0123456789abcdef0");
	assert_int_equal(vols[0].error, 0);
	assert_int_equal(vols[0].stats.volume_exceeded_iops_usec, 12345678);
	/* nvme2 refused: reported with the reason, no statistics */
	assert_string_equal(vols[1].device, "nvme2n1");
	assert_int_equal(vols[1].error, -EPERM);
	assert_int_equal(vols[1].stats.read_ops, 0);
	assert_int_equal(ebs_nvme_reader_last_error(r), -EPERM);
	free(vols);
	/* ... and not asked again every second, nor at a refresh of the device
	 * list while it is the same volume; still reported. */
	assert_int_equal(ebs_nvme_reader_sample(r, &vols), 2);
	assert_int_equal(fake.calls, 3);
	assert_int_equal(vols[1].error, -EPERM);
	free(vols);
	assert_int_equal(ebs_nvme_reader_refresh(r, names, ELEMENTSOF(names)), 2);
	assert_int_equal(ebs_nvme_reader_sample(r, &vols), 2);
	assert_int_equal(fake.calls, 4);
	assert_int_equal(vols[1].error, -EPERM);
	free(vols);
	/* another volume attached under its name is asked */
	put(t->root, "devices/nvme2/serial", "vol0aaaaaaaaaaaaaaaa\n");
	assert_int_equal(ebs_nvme_reader_refresh(r, names, ELEMENTSOF(names)), 2);
	assert_int_equal(ebs_nvme_reader_sample(r, &vols), 2);
	assert_int_equal(fake.calls, 6);
	free(vols);

	/* The volumes went away. */
	assert_int_equal(ebs_nvme_reader_refresh(r, names, 2), 0);
	fake.calls = 0;
	assert_int_equal(ebs_nvme_reader_sample(r, &vols), 0);
	assert_null(vols);
	assert_int_equal(fake.calls, 0);
	ebs_nvme_reader_free(r);
}

static void test_reader_on_a_machine_without_ebs_finds_nothing(void **state)
{
	const char *names[] = {"vda", "loop0", "nvme0n1"};
	struct ebs_nvme_reader *r = NULL;
	struct ebs_nvme_volume *vols = NULL;

	/* The real ioctl path, against a sysfs without any such device. */
	assert_int_equal(ebs_nvme_reader_new("/nonexistent-sysfs", "/dev", NULL, NULL, &r), 0);
	assert_int_equal(ebs_nvme_reader_refresh(r, names, ELEMENTSOF(names)), 0);
	assert_int_equal(ebs_nvme_reader_sample(r, &vols), 0);
	assert_null(vols);
	assert_int_equal(ebs_nvme_reader_last_error(r), 0);
	ebs_nvme_reader_free(r);
}

static void test_ioctl_on_something_that_is_not_nvme_fails_cleanly(void **state)
{
	uint8_t page[EBS_NVME_LOG_PAGE_SIZE];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int r;

	assert_true(fd >= 0);
	r = ebs_nvme_read_log_page(fd, 1, page, sizeof(page));
	assert_true(r == -ENOTTY || r == -EINVAL || r == -EPERM);
	assert_int_equal(ebs_nvme_read_log_page(fd, 1, page, 3), -EINVAL);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_volume_page_parses_every_counter_and_histogram),
	    cmocka_unit_test(test_pages_that_are_not_ebs_statistics_are_refused),
	    cmocka_unit_test(test_empty_histograms_are_valid),
	    cmocka_unit_test(test_model_and_volume_id),
	    cmocka_unit_test_setup_teardown(test_reader_finds_ebs_volumes_and_says_which_it_cannot_read,
					    tree_setup, tree_teardown),
	    cmocka_unit_test(test_reader_on_a_machine_without_ebs_finds_nothing),
	    cmocka_unit_test(test_ioctl_on_something_that_is_not_nvme_fails_cleanly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
