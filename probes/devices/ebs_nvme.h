/* Amazon EBS NVMe volumes: recognised by their controller model in sysfs,
 * and their vendor log page 0xD0 ("detailed performance statistics": time
 * spent over the volume's and the instance's IOPS and throughput limits,
 * queue length, latency histograms) read with NVME_IOCTL_ADMIN_CMD and
 * parsed by a pure function. Elsewhere nothing is found and nothing is
 * said. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diskstats.h"

#define EBS_NVME_MODEL		"Amazon Elastic Block Store"
#define EBS_NVME_LOG_PAGE_ID	0xD0
#define EBS_NVME_LOG_PAGE_SIZE	4096
#define EBS_NVME_STATS_MAGIC	0x3C23B510U
#define EBS_NVME_HISTOGRAM_BINS 64
#define EBS_NVME_VOLUME_ID_MAX	32

struct ebs_nvme_bin {
	uint64_t lower_usec;
	uint64_t upper_usec;
	uint32_t count;
};

struct ebs_nvme_histogram {
	unsigned n_bins;
	struct ebs_nvme_bin bins[EBS_NVME_HISTOGRAM_BINS];
};

/* The log page, in base units as the device counts them; every field but
 * queue_length is a counter since the volume was attached. */
struct ebs_nvme_stats {
	uint64_t read_ops, write_ops;
	uint64_t read_bytes, write_bytes;
	uint64_t read_time_usec, write_time_usec; /* summed latency of completed I/O */
	uint64_t volume_exceeded_iops_usec;	  /* demand above the volume's IOPS */
	uint64_t volume_exceeded_throughput_usec;
	uint64_t instance_exceeded_iops_usec; /* ... above the instance's EBS limits */
	uint64_t instance_exceeded_throughput_usec;
	uint64_t queue_length; /* point in time */
	struct ebs_nvme_histogram read_latency, write_latency;
};

/* Parse a log page (little-endian, EBS_NVME_LOG_PAGE_SIZE bytes). Returns 0,
 * -EINVAL when `len` is short or the magic is not EBS's, -EBADMSG when a
 * histogram claims more than EBS_NVME_HISTOGRAM_BINS bins or its bins are
 * not in increasing order. */
int ebs_nvme_parse_log_page(const void *buf, size_t len, struct ebs_nvme_stats *ret);

/* Is this sysfs model string (space padded) an EBS volume? */
bool ebs_nvme_is_ebs_model(const char *model);

/* Does a controller serial look like an EBS volume id ("vol" and 8 or 17
 * hex digits, with or without the dash; space padded)? */
bool ebs_nvme_is_volume_serial(const char *serial);

/* "vol0123456789abcdef0   " (the controller serial) -> "vol-0123456789abcdef0".
 * ret has EBS_NVME_VOLUME_ID_MAX bytes; an unexpected serial is copied
 * trimmed. */
void ebs_nvme_volume_id_from_serial(const char *serial, char *ret);

/* Read the log page of the namespace `nsid` through the controller `fd`.
 * Returns 0 or -errno (-EPERM without CAP_SYS_ADMIN, -ENOTTY not NVMe,
 * -ENOMSG when the controller has no such page). */
int ebs_nvme_read_log_page(int fd, uint32_t nsid, void *buf, size_t len);

/* One EBS volume as the sampler reports it. */
struct ebs_nvme_volume {
	char device[DISKSTATS_NAME_MAX];	/* "nvme1n1" */
	char volume_id[EBS_NVME_VOLUME_ID_MAX]; /* "vol-0123..." */
	int error;				/* 0, or why the page was not read (-errno; stats zero) */
	struct ebs_nvme_stats stats;
};

/* The EBS volumes among a sampler's devices. refresh() finds them in sysfs
 * whenever the topology changes; sample() reads every one's log page and
 * reports every volume, with its error where the page could not be read
 * (no permission: the controller's node is root's and the command needs
 * CAP_SYS_ADMIN; not really EBS; no such page). A volume that refused is
 * not asked again while the same volume is there;
 * ebs_nvme_reader_last_error() is the latest error. Devices whose model is
 * not EBS's (QEMU's NVMe) are never asked. */
struct ebs_nvme_reader;

/* read_page is how pages are fetched: NULL for the NVMe ioctl on
 * DEV/nvmeX; tests pass a function that returns fixtures. */
typedef int (*ebs_nvme_read_page_fn)(const char *controller_path, uint32_t nsid, void *buf, size_t len,
				     void *userdata);

int ebs_nvme_reader_new(const char *sysfs, const char *devdir, ebs_nvme_read_page_fn read_page,
			void *userdata, struct ebs_nvme_reader **ret);
struct ebs_nvme_reader *ebs_nvme_reader_free(struct ebs_nvme_reader *r);

/* Look at each of the n devices named in `names` (NVMe namespaces whose
 * SYSFS/class/block/NAME/device/model is EBS's). Returns the number of EBS
 * volumes found, or -ENOMEM. */
int ebs_nvme_reader_refresh(struct ebs_nvme_reader *r, const char *const *names, size_t n);

/* Read every EBS volume found. Returns the number of volumes in a newly
 * allocated *ret (NULL when 0) the caller frees, or -ENOMEM. */
int ebs_nvme_reader_sample(struct ebs_nvme_reader *r, struct ebs_nvme_volume **ret);

int ebs_nvme_reader_last_error(const struct ebs_nvme_reader *r);
