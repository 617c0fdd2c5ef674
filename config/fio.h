/* fio's value syntaxes: per-direction lists ("4k,8k"), block size ranges and
 * splits, rates, rw and ioengine names. Pure functions, so that unit tests
 * can feed them strings: on error they return -EINVAL and put a message
 * naming `key` (as the user spelled it) in `err`. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* bs=4k, bs=4k,8k (reads, writes), bs=,8k (writes only), a third (trim)
 * size is accepted and unused. Sizes are 512 bytes to 16 MiB, multiples of
 * 512. Directions not given keep their value in ret[]. */
int fio_parse_bs(const char *key, const char *value, uint64_t ret[_PROBE_DIR_MAX], char *err, size_t len);

/* bsrange=1k-4k[,2k-8k]: min and max of each direction. */
int fio_parse_bsrange(const char *key, const char *value, struct probe_bs ret[_PROBE_DIR_MAX], char *err,
		      size_t len);

/* bssplit=4k/60:64k/40[,1m/100]: sizes with percentages; a percentage left
 * out gets an even share of what the others leave (as in fio). */
int fio_parse_bssplit(const char *key, const char *value, struct probe_bs ret[_PROBE_DIR_MAX], char *err,
		      size_t len);

/* rate=1m or rate_iops=500 (is_iops), or the same value for reads and
 * writes ("300,300,300"); different values per direction are refused. */
int fio_parse_rate(const char *key, const char *value, bool is_iops, uint64_t *ret, char *err, size_t len);

/* random_distribution=zipf:1.2, pareto:0.2, normal:10, zoned:50/5:50/95,
 * zoned_abs:60/1g:40/9g, random, each with fio's optional :CENTER (not
 * zoned), one for both directions or READ,WRITE. */
int fio_parse_random_distribution(const char *key, const char *value, struct probe_dist ret[_PROBE_DIR_MAX],
				  char *err, size_t len);

/* One of fio's workload keys (`name` as the key table spells it, `key`
 * as the file did) into *wl: rate_process, thinktime, thinktime_spin,
 * thinktime_blocks, thinktime_blocks_type, thinktime_iotime,
 * buffer_pattern, buffer_compress_percentage, buffer_compress_chunk,
 * dedupe_percentage, dedupe_mode, dedupe_working_set_percentage,
 * dedupe_global, prio, prioclass, cmdprio_percentage, cmdprio_class,
 * cmdprio, wait_for. *wl is unchanged on error. */
int fio_parse_workload(const char *name, const char *key, const char *value, struct probe_workload *wl,
		       char *err, size_t len);
/* What the value of workload key `name` should look like. */
const char *fio_workload_syntax(const char *name);

/* rw=randread etc. into pc->rw, with fio's "MODE:N" offset modifier
 * (pc->rw_seq_nr for random modes, pc->rw_seq_add for sequential ones);
 * trims are refused. */
int fio_parse_rw(const char *key, const char *value, struct probe_config *pc, char *err, size_t len);

/* ioengine=libaio, sync, psync and their synchronous relatives; engines
 * that do not measure a disk are refused with the reason. */
int fio_parse_ioengine(const char *value, enum probe_engine *ret, char *err, size_t len);

/* Fill pc->bsdir from bs= (pc->bs_rw), bsrange= and bssplit= (bssplit wins
 * over bsrange, bsrange over bs, as in fio) and set pc->bs to the largest
 * I/O any direction the mode uses can issue. */
void fio_resolve_bs(struct probe_config *pc);

/* The smallest I/O a probe issues (the default alignment of offsets). */
uint64_t fio_min_bs(const struct probe_config *pc);

/* What filename= names. */
enum fio_target {
	FIO_TARGET_DEVICE, /* a block device (or a /dev path that is not there yet): read raw */
	FIO_TARGET_FILE,   /* a regular file, or a path that does not exist yet outside /dev */
};

/* Resolve filename= as fio finds it: a relative name is inside `directory`
 * (which may be NULL: then it is an error). Returns 0 with the absolute
 * path (the caller frees it) and what it names, or -EINVAL with a message
 * for a directory, a character device, a FIFO or several files. Does a
 * stat(). */
int fio_resolve_filename(const char *directory, const char *filename, char **ret_path,
			 enum fio_target *ret_kind, char *err, size_t len);

/* Where a probe's I/O goes: each probe file's size, and the region the jobs
 * use in each file (or in the raw device). */
struct fio_layout {
	uint64_t file_size; /* each probe file's size, a multiple of 4096; 0 for a raw device */
	uint64_t offset;    /* start of job 0's region */
	uint64_t increment; /* job N's region starts N * increment later; 0: see probe_job_region() */
	uint64_t region;    /* bytes of the region (of each job's when increment > 0) */
};

/* Compute the layout from size, filesize, nrfiles, offset and
 * offset_increment. `device_size` is the raw device's size (0 for probe
 * files). Returns -EINVAL with a message when the region is smaller than
 * the largest I/O, or (for a device) runs past its end. */
int fio_layout(const struct probe_config *pc, uint64_t device_size, struct fio_layout *ret, char *err,
	       size_t len);
