/* Probe targets: the probe file DIRECTORY/.iopsd/NAME.dat (created O_EXCL
 * and O_NOFOLLOW, fully written with non-repeating data and fsync'd before
 * anything reads it, reused while its size and allocation match), and raw
 * block devices (opened read-only, never written). Every fd is O_DIRECT. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBEFILE_DIR ".iopsd"

/* Returns true when the caller wants the layout to stop (cancel, deadline). */
typedef bool (*probefile_stop_fn)(void *userdata);

struct probefile {
	int fd;	       /* O_DIRECT; O_RDWR for writers, O_RDONLY otherwise */
	uint64_t size; /* bytes usable by the probe */
	bool is_block_device;
	uint64_t layout_usec; /* time spent laying out the file, 0 when reused */
};

/* Open DIRECTORY (O_DIRECTORY, following symlinks in the configured path)
 * for probefile_open_at(), and return its filesystem in *ret_dev. When
 * `expect_dev` is not 0 the directory must still be on that filesystem:
 * after its mount went away (a lazy umount, a mount that failed at boot)
 * the same path names a directory of the filesystem underneath, and a probe
 * there would write to the wrong disk: -EXDEV with a message. Returns the
 * fd or -errno with a message. */
int probefile_open_directory(const char *directory, dev_t expect_dev, dev_t *ret_dev, char *msg,
			     size_t msg_len);

/* Open the probe file of probe `name` (`size` bytes, a multiple of 4096 or
 * of the block size) in the directory open at `dfd` (from
 * probefile_open_directory(); `directory` only names it in messages),
 * laying it out first when it is missing or does not match. Writes only
 * inside DIRECTORY/.iopsd/. `stop` (may be NULL) is asked between layout
 * chunks. `seed` varies the file's data. On failure returns -errno and a
 * human explanation in `msg` (never written on success).
 * Everything happens relative to dfd, so a path swapped after dfd was
 * opened cannot redirect a write. */
int probefile_open_at(int dfd, const char *directory, const char *name, uint64_t size, bool is_writable,
		      uint64_t seed, probefile_stop_fn stop, void *userdata, char *msg, size_t msg_len,
		      struct probefile *ret);

/* Open a raw block device O_RDONLY|O_DIRECT. `size` 0 uses the whole
 * device; a larger size than the device is -EINVAL. */
/* Remove the probe files (STEM.dat) in .iopsd of the directory dfd (as
 * probefile_open_directory() opened it) whose stem `keep` does not claim:
 * those of a probe removed or renamed since the last start. Only in a
 * .iopsd of iopsd's own; nothing else is touched. Returns the number
 * removed, or -errno. */
typedef bool (*probefile_keep_fn)(const char *stem, void *userdata);
int probefile_remove_strays(int dfd, probefile_keep_fn keep, void *userdata);

int probefile_open_device(const char *path, uint64_t size, char *msg, size_t msg_len, struct probefile *ret);

/* Fill `buf` (`len` bytes, a multiple of 8) with data that does not repeat
 * within a file: each 8-byte word comes from splitmix64 of (seed, offset). */
void probefile_fill(void *buf, size_t len, uint64_t seed, uint64_t offset);

/* Whether a probe file found on disk can be reused without a new layout. */
bool probefile_is_reusable(uint64_t st_size, uint64_t st_blocks, unsigned st_nlink, uint64_t want_size);

/* "Invalid argument (EINVAL)" for messages; thread-safe. */
const char *probefile_strerror(int err, char *buf, size_t len);
