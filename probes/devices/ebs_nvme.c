/* Amazon EBS NVMe detailed performance statistics (log page 0xD0). Layout
 * (little-endian, 4096 bytes), as published with amazon-ec2-utils and the
 * nvme-cli "amzn" plugin:
 *
 *   0     u32 magic 0x3C23B510, u32 reserved
 *   8     u64 total read ops, write ops, read bytes, write bytes
 *   40    u64 total read time, write time (microseconds)
 *   56    u64 EBS volume performance exceeded: IOPS, throughput (microseconds)
 *   72    u64 EC2 instance EBS performance exceeded: IOPS, throughput (us)
 *   88    u64 volume queue length (point in time)
 *   96    reserved (416 bytes)
 *   512   read latency histogram:  u64 bin count, 64 x {u64 lower, u64 upper,
 *                                  u32 count, u32 reserved} (microseconds)
 *   2056  write latency histogram, same layout
 *   3600  reserved (496 bytes)
 */
#include "ebs_nvme.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>

#include "fileio.h"
#include "macro.h"
#include "sysfs.h"

#define OFF_MAGIC		0
#define OFF_COUNTERS		8
#define OFF_READ_HISTOGRAM	512
#define OFF_WRITE_HISTOGRAM	2056
#define HISTOGRAM_BIN_SIZE	24
#define NVME_ADMIN_GET_LOG_PAGE 0x02

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--) {
		v = (v << 8) | p[i];
	}
	return v;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int parse_histogram(const uint8_t *p, struct ebs_nvme_histogram *ret)
{
	uint64_t n = get_le64(p);

	if (n > EBS_NVME_HISTOGRAM_BINS) {
		return -EBADMSG;
	}
	ret->n_bins = (unsigned)n;
	for (unsigned i = 0; i < ret->n_bins; i++) {
		const uint8_t *b = p + 8 + (size_t)i * HISTOGRAM_BIN_SIZE;
		struct ebs_nvme_bin *bin = &ret->bins[i];

		bin->lower_usec = get_le64(b);
		bin->upper_usec = get_le64(b + 8);
		bin->count = get_le32(b + 16);
		if (bin->upper_usec < bin->lower_usec ||
		    (i > 0 && bin->upper_usec <= ret->bins[i - 1].upper_usec)) {
			return -EBADMSG;
		}
	}
	return 0;
}

int ebs_nvme_parse_log_page(const void *buf, size_t len, struct ebs_nvme_stats *ret)
{
	const uint8_t *p = buf;
	struct ebs_nvme_stats st = {0};
	uint64_t *counters[] = {
	    &st.read_ops,
	    &st.write_ops,
	    &st.read_bytes,
	    &st.write_bytes,
	    &st.read_time_usec,
	    &st.write_time_usec,
	    &st.volume_exceeded_iops_usec,
	    &st.volume_exceeded_throughput_usec,
	    &st.instance_exceeded_iops_usec,
	    &st.instance_exceeded_throughput_usec,
	    &st.queue_length,
	};
	int r;

	if (len < EBS_NVME_LOG_PAGE_SIZE || get_le32(p + OFF_MAGIC) != EBS_NVME_STATS_MAGIC) {
		return -EINVAL;
	}
	for (size_t i = 0; i < ELEMENTSOF(counters); i++) {
		*counters[i] = get_le64(p + OFF_COUNTERS + 8 * i);
	}
	r = parse_histogram(p + OFF_READ_HISTOGRAM, &st.read_latency);
	if (r < 0) {
		return r;
	}
	r = parse_histogram(p + OFF_WRITE_HISTOGRAM, &st.write_latency);
	if (r < 0) {
		return r;
	}
	*ret = st;
	return 0;
}

/* Length of s without trailing blanks (sysfs pads NVMe strings). */
static size_t trimmed_len(const char *s)
{
	size_t n = strlen(s);

	while (n > 0 && isspace((unsigned char)s[n - 1])) {
		n--;
	}
	return n;
}

bool ebs_nvme_is_ebs_model(const char *model)
{
	size_t n = trimmed_len(model);

	return n == strlen(EBS_NVME_MODEL) && strncmp(model, EBS_NVME_MODEL, n) == 0;
}

bool ebs_nvme_is_volume_serial(const char *serial)
{
	size_t n = trimmed_len(serial), digits;
	const char *p = serial + 3;

	if (n < 3 || strncmp(serial, "vol", 3) != 0) {
		return false;
	}
	if (*p == '-') {
		p++;
	}
	digits = n - (size_t)(p - serial);
	if (digits != 8 && digits != 17) {
		return false;
	}
	for (size_t i = 0; i < digits; i++) {
		if (!isxdigit((unsigned char)p[i]) || isupper((unsigned char)p[i])) {
			return false;
		}
	}
	return true;
}

void ebs_nvme_volume_id_from_serial(const char *serial, char *ret)
{
	size_t n = trimmed_len(serial);

	if (n >= 4 && strncmp(serial, "vol", 3) == 0 && serial[3] != '-' && n + 1 < EBS_NVME_VOLUME_ID_MAX) {
		snprintf(ret, EBS_NVME_VOLUME_ID_MAX, "vol-%.*s", (int)(n - 3), serial + 3);
		return;
	}
	if (n >= EBS_NVME_VOLUME_ID_MAX) {
		n = EBS_NVME_VOLUME_ID_MAX - 1;
	}
	memcpy(ret, serial, n);
	ret[n] = '\0';
}

int ebs_nvme_read_log_page(int fd, uint32_t nsid, void *buf, size_t len)
{
	struct nvme_admin_cmd cmd = {
	    .opcode = NVME_ADMIN_GET_LOG_PAGE,
	    .nsid = nsid,
	    .addr = (uint64_t)(uintptr_t)buf,
	    .data_len = (uint32_t)len,
	    /* NUMDL is a 0's based count of dwords (as nvme-cli sends it) */
	    .cdw10 = EBS_NVME_LOG_PAGE_ID | (uint32_t)((len / 4 - 1) << 16),
	};
	int r;

	if (len < 4 || len > 4096 * 16 || len % 4 != 0) {
		return -EINVAL;
	}
	r = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
	if (r < 0) {
		return -errno;
	}
	/* a positive NVMe status: the controller has no such page (QEMU's
	 * answers Invalid Log Page) */
	return r > 0 ? -ENOMSG : 0;
}

/* The reader ---------------------------------------------------------------- */

struct ebs_entry {
	char device[DISKSTATS_NAME_MAX];
	char volume_id[EBS_NVME_VOLUME_ID_MAX];
	char *controller_path; /* DEVDIR/nvme1 */
	uint32_t nsid;
	bool is_disabled; /* refused us: not asked again while it is the same volume */
	int error;	  /* why it refused */
};

struct ebs_nvme_reader {
	char *sysfs, *devdir;
	ebs_nvme_read_page_fn read_page;
	void *userdata;
	struct ebs_entry *entries;
	size_t n_entries;
	int last_error;
};

static int read_page_ioctl(const char *controller_path, uint32_t nsid, void *buf, size_t len, void *userdata)
{
	_cleanup_close_ int fd = open(controller_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		return -errno;
	}
	return ebs_nvme_read_log_page(fd, nsid, buf, len);
}

int ebs_nvme_reader_new(const char *sysfs, const char *devdir, ebs_nvme_read_page_fn read_page,
			void *userdata, struct ebs_nvme_reader **ret)
{
	struct ebs_nvme_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		return -ENOMEM;
	}
	r->sysfs = strdup(sysfs);
	r->devdir = strdup(devdir);
	if (!r->sysfs || !r->devdir) {
		ebs_nvme_reader_free(r);
		return -ENOMEM;
	}
	r->read_page = read_page ? read_page : read_page_ioctl;
	r->userdata = userdata;
	*ret = r;
	return 0;
}

static void clear_entries(struct ebs_nvme_reader *r)
{
	for (size_t i = 0; i < r->n_entries; i++) {
		free(r->entries[i].controller_path);
	}
	free(r->entries);
	r->entries = NULL;
	r->n_entries = 0;
}

struct ebs_nvme_reader *ebs_nvme_reader_free(struct ebs_nvme_reader *r)
{
	if (!r) {
		return NULL;
	}
	clear_entries(r);
	free(r->sysfs);
	free(r->devdir);
	free(r);
	return NULL;
}

/* Read NAME's sysfs ATTR into buf; -errno when absent. */
static int read_attr(const struct ebs_nvme_reader *r, const char *name, const char *attr, char *buf,
		     size_t len)
{
	char dir[PATH_MAX];
	int k = sysfs_block_dir(r->sysfs, name, dir, sizeof(dir));

	return k < 0 ? k : sysfs_attr_read(dir, attr, buf, len);
}

/* Where admin commands for namespace NAME go: its controller's character
 * device, the last component of the SYSFS/class/block/NAME/device link
 * ("../../nvme1" -> DEVDIR/nvme1); failing that (a multipath head), the
 * namespace's block device, which takes admin commands too. */
static int controller_of(const struct ebs_nvme_reader *r, const char *name, char **ret)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	unsigned x;
	int end = 0;
	ssize_t n;

	/* a namespace sysfs does not show reads no link below: its block device */
	if (sysfs_block_dir(r->sysfs, name, path, sizeof(path)) == -ENAMETOOLONG ||
	    strlen(path) + sizeof("/device") > sizeof(path)) {
		return -ENAMETOOLONG;
	}
	strcat(path, "/device");
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0) {
		n = 0;
	}
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (sscanf(base, "nvme%u%n", &x, &end) != 1 || base[end] != '\0') {
		base = name;
	}
	*ret = path_join(r->devdir, base);
	return *ret ? 0 : -ENOMEM;
}

static bool is_nvme_namespace(const char *name)
{
	unsigned a, b;
	int end = 0;

	/* nvme1n1, not nvme1n1p1 (a partition shares its disk's counters
	 * on the EBS side) */
	return sscanf(name, "nvme%un%u%n", &a, &b, &end) == 2 && name[end] == '\0';
}

/* A volume that refused its page (no such page, no permission) keeps
 * refusing: it is not asked again at each refresh of the device list, only
 * when another volume takes its place. */
static void keep_refusals(const struct ebs_nvme_reader *r, struct ebs_entry *entries, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < r->n_entries; k++) {
			const struct ebs_entry *old = &r->entries[k];

			if (old->is_disabled && strcmp(old->device, entries[i].device) == 0 &&
			    strcmp(old->volume_id, entries[i].volume_id) == 0 &&
			    strcmp(old->controller_path, entries[i].controller_path) == 0) {
				entries[i].is_disabled = true;
				entries[i].error = old->error;
			}
		}
	}
}

int ebs_nvme_reader_refresh(struct ebs_nvme_reader *r, const char *const *names, size_t n)
{
	struct ebs_entry *entries = NULL;
	size_t n_entries = 0;

	for (size_t i = 0; i < n; i++) {
		char model[128], serial[128], nsid[32];
		struct ebs_entry *e;
		char *controller = NULL;
		unsigned long v;
		char *end;

		if (!is_nvme_namespace(names[i]) || strlen(names[i]) >= DISKSTATS_NAME_MAX ||
		    read_attr(r, names[i], "device/model", model, sizeof(model)) < 0 ||
		    !ebs_nvme_is_ebs_model(model) || controller_of(r, names[i], &controller) < 0) {
			continue;
		}
		e = reallocarray(entries, n_entries + 1, sizeof(*entries));
		if (!e) {
			free(controller);
			for (size_t k = 0; k < n_entries; k++) {
				free(entries[k].controller_path);
			}
			free(entries);
			return -ENOMEM;
		}
		entries = e;
		e = &entries[n_entries++];
		*e = (struct ebs_entry){.controller_path = controller, .nsid = 1};
		strcpy(e->device, names[i]);
		if (read_attr(r, names[i], "device/serial", serial, sizeof(serial)) < 0) {
			serial[0] = '\0';
		}
		ebs_nvme_volume_id_from_serial(serial, e->volume_id);
		if (read_attr(r, names[i], "nsid", nsid, sizeof(nsid)) >= 0) {
			errno = 0;
			v = strtoul(nsid, &end, 10);
			if (errno == 0 && end != nsid && *end == '\0' && v > 0 && v <= UINT32_MAX) {
				e->nsid = (uint32_t)v;
			}
		}
	}
	keep_refusals(r, entries, n_entries);
	clear_entries(r);
	r->entries = entries;
	r->n_entries = n_entries;
	return (int)n_entries;
}

int ebs_nvme_reader_sample(struct ebs_nvme_reader *r, struct ebs_nvme_volume **ret)
{
	_cleanup_free_ struct ebs_nvme_volume *vols = NULL;
	_cleanup_free_ uint8_t *page = NULL;
	size_t n = 0;

	*ret = NULL;
	if (r->n_entries == 0) {
		return 0;
	}
	vols = calloc(r->n_entries, sizeof(*vols));
	page = malloc(EBS_NVME_LOG_PAGE_SIZE);
	if (!vols || !page) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->n_entries; i++) {
		struct ebs_entry *e = &r->entries[i];
		int k;

		strcpy(vols[n].device, e->device);
		strcpy(vols[n].volume_id, e->volume_id);
		if (e->is_disabled) {
			vols[n++].error = e->error;
			continue;
		}
		k = r->read_page(e->controller_path, e->nsid, page, EBS_NVME_LOG_PAGE_SIZE, r->userdata);
		if (k >= 0) {
			k = ebs_nvme_parse_log_page(page, EBS_NVME_LOG_PAGE_SIZE, &vols[n].stats);
		}
		if (k < 0) {
			/* No permission (CAP_SYS_ADMIN), not NVMe after all, not
			 * EBS's page: asking every second would not change that. */
			e->is_disabled =
			    k == -EPERM || k == -EACCES || k == -ENOTTY || k == -EINVAL || k == -ENOMSG;
			e->error = k;
			r->last_error = k;
			vols[n].stats = (struct ebs_nvme_stats){0};
			vols[n].error = k;
		}
		n++;
	}
	*ret = TAKE_PTR(vols);
	return (int)n;
}

int ebs_nvme_reader_last_error(const struct ebs_nvme_reader *r)
{
	return r->last_error;
}
