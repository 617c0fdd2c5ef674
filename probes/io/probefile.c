/* Probe file layout and target opening. Everything below DIRECTORY happens
 * relative to directory fds opened once, with O_NOFOLLOW, so a symlink
 * planted in the path never redirects a write. */
#include "probefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "errstr.h"
#include "macro.h"
#include "splitmix.h"
#include "timeutil.h"

#define LAYOUT_CHUNK (1024 * 1024)
#define LAYOUT_ALIGN 4096

const char *probefile_strerror(int err, char *buf, size_t len)
{
	const char *name, *desc;

	err = err < 0 ? -err : err;
	name = strerrorname_np(err);
	desc = strerrordesc_np(err);
	snprintf(buf, len, "%s (%s)", desc ? desc : "Unknown error", name ? name : "?");
	return buf;
}

void probefile_fill(void *buf, size_t len, uint64_t seed, uint64_t offset)
{
	uint64_t *w = buf;

	/* word i of the file is splitmix64_mix(seed + i * golden): distinct for every
	 * word, so no block of the file repeats another (no dedup, no
	 * compression shortcut below the filesystem) */
	for (size_t i = 0; i < len / sizeof(uint64_t); i++) {
		w[i] = splitmix64_mix(seed + (offset / sizeof(uint64_t) + i) * SPLITMIX64_GOLDEN);
	}
}

bool probefile_is_reusable(uint64_t st_size, uint64_t st_blocks, unsigned st_nlink, uint64_t want_size)
{
	/* a file that was written all through has blocks for all of its size;
	 * a hole (an interrupted layout, a truncate) would read as zeros
	 * without touching the disk */
	return st_nlink == 1 && st_size == want_size && st_blocks * 512 >= want_size;
}

/* Open (creating it when missing) DIRECTORY/.iopsd and check that it is a
 * real directory of ours that nobody else can write into. */
static int open_state_dir(int dfd, const char *directory, bool *ret_created, char *msg, size_t msg_len)
{
	_cleanup_close_ int idfd = -1;
	char e[96];
	struct stat st;
	bool created = false;

	if (mkdirat(dfd, PROBEFILE_DIR, 0700) == 0) {
		created = true;
	} else if (errno != EEXIST) {
		int r = -errno;

		errstr_set(msg, msg_len, 0, "cannot create %s/" PROBEFILE_DIR ": %s", directory,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	idfd = openat(dfd, PROBEFILE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (idfd < 0) {
		int r = -errno;

		if (r == -ELOOP || r == -ENOTDIR) {
			/* O_DIRECTORY wins over O_NOFOLLOW for a link to a directory */
			bool is_link =
			    fstatat(dfd, PROBEFILE_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);

			errstr_set(msg, msg_len, 0, "%s/" PROBEFILE_DIR " is %s: refusing to use it",
				   directory, is_link ? "a symlink" : "not a directory");
			return is_link ? -ELOOP : -ENOTDIR;
		}
		errstr_set(msg, msg_len, 0, "cannot open %s/" PROBEFILE_DIR ": %s", directory,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	if (fstat(idfd, &st) < 0) {
		return -errno;
	}
	if (st.st_uid != geteuid()) {
		errstr_set(msg, msg_len, 0,
			   "%s/" PROBEFILE_DIR
			   " belongs to uid %u, not to iopsd (uid %u): refusing to use it",
			   directory, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		errstr_set(msg, msg_len, 0,
			   "%s/" PROBEFILE_DIR " is writable by other users (mode %04o): refusing to use it",
			   directory, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	*ret_created = created;
	return TAKE_FD(idfd);
}

/* Write `size` bytes of non-repeating data with O_DIRECT, then fsync. */
static int write_layout(int fd, uint64_t size, uint64_t seed, probefile_stop_fn stop, void *userdata,
			char *msg, size_t msg_len, const char *what)
{
	_cleanup_free_ void *buf = NULL;
	char e[96];
	uint64_t off = 0;
	int r;

	r = posix_memalign(&buf, LAYOUT_ALIGN, LAYOUT_CHUNK);
	if (r != 0) {
		return -r;
	}
	while (off < size) {
		size_t n = size - off < LAYOUT_CHUNK ? (size_t)(size - off) : LAYOUT_CHUNK;
		ssize_t w;

		if (stop && stop(userdata)) {
			errstr_set(msg, msg_len, 0,
				   "laying out %s was stopped after %" PRIu64 " of %" PRIu64 " bytes", what,
				   off, size);
			return -ECANCELED;
		}
		probefile_fill(buf, n, seed, off);
		w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0) {
			r = -errno;
			errstr_set(msg, msg_len, 0, "laying out %s failed at offset %" PRIu64 ": %s", what,
				   off, probefile_strerror(r, e, sizeof(e)));
			return r;
		}
		if ((size_t)w != n) {
			errstr_set(msg, msg_len, 0, "laying out %s: short write at offset %" PRIu64, what,
				   off);
			return -EIO;
		}
		off += n;
	}
	if (fsync(fd) < 0) {
		r = -errno;
		errstr_set(msg, msg_len, 0, "fsync of %s failed: %s", what,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	return 0;
}

/* -ENOSPC, with a message, when the filesystem of idfd lacks room for a
 * probe file of `size` bytes (counting the `reclaim` bytes an old one
 * frees); 0 otherwise. */
static int check_space(int idfd, const char *directory, uint64_t size, uint64_t reclaim, char *msg,
		       size_t msg_len)
{
	struct statvfs sv;
	uint64_t avail;

	/* (f_blocks 0: a filesystem that does not account space, like ramfs) */
	if (fstatvfs(idfd, &sv) == 0 && sv.f_blocks > 0) {
		avail = (uint64_t)sv.f_bavail * sv.f_frsize + reclaim;
		/* keep 1% + 1 MiB spare for the filesystem's own metadata */
		if (avail < size + size / 100 + (1ULL << 20)) {
			errstr_set(msg, msg_len, 0,
				   "not enough free space in %s for a %" PRIu64 " byte probe file (%" PRIu64
				   " bytes available)",
				   directory, size, avail);
			return -ENOSPC;
		}
	}
	return 0;
}

/* Each layout's own temporary name, .NAME.dat.PID.N.tmp: a run that a
 * reload left stuck in the kernel, waking up, removes or renames only its
 * own file, never the one the next run is writing. */
static char *temporary_name(const char *name)
{
	static unsigned seq; /* atomic */
	char *t;

	if (asprintf(&t, ".%s.dat.%ld.%u.tmp", name, (long)getpid(),
		     __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED)) < 0) {
		return NULL;
	}
	return t;
}

/* Remove the temporary files of NAME that another process left (a crash or
 * a kill during a layout; ours belong to runs that may still be going), and
 * the single .NAME.dat.tmp of older versions. */
static void remove_stale_temporaries(int idfd, const char *name)
{
	_cleanup_free_ char *prefix = NULL, *legacy = NULL;
	struct dirent *de;
	DIR *d;
	int fd;

	if (asprintf(&prefix, ".%s.dat.", name) < 0 || asprintf(&legacy, ".%s.dat.tmp", name) < 0) {
		return;
	}
	fd = openat(idfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0) {
			close(fd);
		}
		return;
	}
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strcmp(de->d_name, legacy) == 0) {
			unlinkat(idfd, de->d_name, 0);
			continue;
		}
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0) {
			continue;
		}
		pid = strtol(de->d_name + strlen(prefix), &end, 10);
		if (pid > 0 && pid != (long)getpid() && end[0] == '.' && strlen(end) > 4 &&
		    strcmp(end + strlen(end) - 4, ".tmp") == 0) {
			unlinkat(idfd, de->d_name, 0);
		}
	}
	closedir(d);
}

/* Lay out a fresh file under a temporary name and rename it into place, so
 * that NAME.dat only ever exists fully written. Returns an O_RDWR|O_DIRECT
 * fd of the new file. */
static int layout(int idfd, const char *directory, const char *fname, const char *tmpname, uint64_t size,
		  uint64_t reclaim, uint64_t seed, probefile_stop_fn stop, void *userdata, char *msg,
		  size_t msg_len)
{
	_cleanup_close_ int fd = -1;
	char e[96], what[512];
	int r;

	snprintf(what, sizeof(what), "%s/" PROBEFILE_DIR "/%s", directory, fname);
	r = check_space(idfd, directory, size, reclaim, msg, msg_len);
	if (r < 0) {
		return r;
	}
	fd = openat(idfd, tmpname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		r = -errno;
		errstr_set(msg, msg_len, 0, "cannot create %s/" PROBEFILE_DIR "/%s: %s", directory, tmpname,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	/* set O_DIRECT after the create: an open() with O_DIRECT on a
	 * filesystem without it fails only after creating the file */
	if (fcntl(fd, F_SETFL, O_DIRECT) < 0) {
		r = -errno;
		unlinkat(idfd, tmpname, 0);
		if (r == -EINVAL) {
			errstr_set(msg, msg_len, 0, "O_DIRECT not supported by the filesystem at %s (EINVAL)",
				   directory);
		} else {
			errstr_set(msg, msg_len, 0, "cannot enable O_DIRECT on %s: %s", what,
				   probefile_strerror(r, e, sizeof(e)));
		}
		return r;
	}
	r = write_layout(fd, size, seed, stop, userdata, msg, msg_len, what);
	if (r < 0) {
		unlinkat(idfd, tmpname, 0);
		return r;
	}
	if (renameat(idfd, tmpname, idfd, fname) < 0) {
		r = -errno;
		unlinkat(idfd, tmpname, 0);
		errstr_set(msg, msg_len, 0, "cannot rename the laid-out probe file to %s: %s", what,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	if (fsync(idfd) < 0) {
		r = -errno;
		errstr_set(msg, msg_len, 0, "fsync of %s/" PROBEFILE_DIR " failed: %s", directory,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	return TAKE_FD(fd);
}

/* Why an existing probe file could not be opened (r: -errno, not
 * -ENOENT), as a message; the error to report. */
static int open_failed(int idfd, const char *directory, const char *fname, int r, char *msg, size_t msg_len)
{
	struct stat st;
	char e[96];

	if (r == -ELOOP) {
		errstr_set(msg, msg_len, 0, "%s/" PROBEFILE_DIR "/%s is a symlink: refusing to use it",
			   directory, fname);
	} else if (fstatat(idfd, fname, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		/* a FIFO or a device node refuses O_DIRECT */
		errstr_set(msg, msg_len, 0,
			   "%s/" PROBEFILE_DIR "/%s is not a regular file of iopsd's: refusing to use it",
			   directory, fname);
		return -EPERM;
	} else if (r == -EINVAL) {
		errstr_set(msg, msg_len, 0, "O_DIRECT not supported by the filesystem at %s (EINVAL)",
			   directory);
	} else {
		errstr_set(msg, msg_len, 0, "cannot open %s/" PROBEFILE_DIR "/%s: %s", directory, fname,
			   probefile_strerror(r, e, sizeof(e)));
	}
	return r;
}

/* Open an existing probe file: a reusable fd (>= 0), -ENOENT when it must
 * be (re-)laid out (with *ret_reclaim the bytes the old one frees), or
 * another -errno with a message. */
static int open_existing(int idfd, const char *directory, const char *fname, uint64_t size, bool is_writable,
			 uint64_t *ret_reclaim, char *msg, size_t msg_len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	char e[96];
	int r;

	*ret_reclaim = 0;
	/* O_NONBLOCK until it is known to be a regular file: opening a FIFO
	 * planted in its place would otherwise block the run for good */
	fd = openat(idfd, fname,
		    (is_writable ? O_RDWR : O_RDONLY) | O_DIRECT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
			O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT) {
			return r;
		}
		return open_failed(idfd, directory, fname, r, msg, msg_len);
	}
	if (fstat(fd, &st) < 0) {
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		errstr_set(msg, msg_len, 0,
			   "%s/" PROBEFILE_DIR "/%s is not a regular file of iopsd's: refusing to use it",
			   directory, fname);
		return -EPERM;
	}
	if (probefile_is_reusable((uint64_t)st.st_size, (uint64_t)st.st_blocks, (unsigned)st.st_nlink,
				  size)) {
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
			return -errno;
		}
		return TAKE_FD(fd);
	}
	/* a hard link to it elsewhere keeps its blocks: count none as freed */
	*ret_reclaim = st.st_nlink == 1 ? (uint64_t)st.st_blocks * 512 : 0;
	if (unlinkat(idfd, fname, 0) < 0) {
		r = -errno;
		errstr_set(msg, msg_len, 0, "cannot remove the outdated %s/" PROBEFILE_DIR "/%s: %s",
			   directory, fname, probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	return -ENOENT;
}

static const char *dev_string(dev_t dev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", major(dev), minor(dev));
	return buf;
}

/* DIR itself, never through a symlink in its path: whoever owns a link
 * could point iopsd's writes anywhere (openat2 with RESOLVE_NO_SYMLINKS; a
 * kernel or a seccomp filter without openat2 gets open()). */
static int open_directory_nofollow(const char *directory)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	long fd = syscall(SYS_openat2, AT_FDCWD, directory, &how, sizeof(how));

	if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
		fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : (int)fd;
}

int probefile_open_directory(const char *directory, dev_t expect_dev, dev_t *ret_dev, char *msg,
			     size_t msg_len)
{
	_cleanup_close_ int dfd = -1;
	struct stat st;
	char e[96], was[32], now[32];
	int r;

	dfd = open_directory_nofollow(directory);
	if (dfd < 0) {
		r = dfd;
		if (r == -ELOOP) {
			errstr_set(msg, msg_len, 0,
				   "directory=%s has a symlink in its path: refusing to follow it (give the "
				   "path it points to)",
				   directory);
		} else if (r == -ENOTDIR && stat(directory, &st) == 0 && S_ISBLK(st.st_mode)) {
			errstr_set(msg, msg_len, 0,
				   "directory=%s is a block device: a probe never writes to one (filename= "
				   "reads it)",
				   directory);
		} else {
			errstr_set(msg, msg_len, 0, "cannot open directory %s: %s", directory,
				   probefile_strerror(r, e, sizeof(e)));
		}
		return r;
	}
	if (fstat(dfd, &st) < 0) {
		return -errno;
	}
	if (expect_dev != 0 && st.st_dev != expect_dev) {
		errstr_set(msg, msg_len, 0,
			   "%s is now on another filesystem (device %s, was %s): unmounted? Not probing the "
			   "filesystem underneath (if the move is meant: remove the probe's line from the "
			   "pins file of iopsd's state directory, then restart iopsd)",
			   directory, dev_string(st.st_dev, now, sizeof(now)),
			   dev_string(expect_dev, was, sizeof(was)));
		return -EXDEV;
	}
	*ret_dev = st.st_dev;
	return TAKE_FD(dfd);
}

int probefile_remove_strays(int dfd, probefile_keep_fn keep, void *userdata)
{
	_cleanup_close_ int idfd = -1;
	struct dirent *de;
	struct stat st;
	int n = 0;
	DIR *d;

	idfd = openat(dfd, PROBEFILE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (idfd < 0) {
		return errno == ENOENT ? 0 : -errno;
	}
	if (fstat(idfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 0022)) {
		return -EPERM; /* not iopsd's own: leave it alone */
	}
	d = fdopendir(dup(idfd));
	if (!d) {
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char stem[NAME_MAX + 1];

		if (len <= 4 || de->d_name[0] == '.' || strcmp(de->d_name + len - 4, ".dat") != 0) {
			continue;
		}
		memcpy(stem, de->d_name, len - 4);
		stem[len - 4] = '\0';
		if (!keep(stem, userdata) && unlinkat(idfd, de->d_name, 0) == 0) {
			n++;
		}
	}
	closedir(d);
	return n;
}

/* The probe file's name, NAME.dat, and the temporary_name() it is laid
 * out under. */
static int file_names(const char *name, char **ret_fname, char **ret_tmpname)
{
	_cleanup_free_ char *fname = NULL;

	if (asprintf(&fname, "%s.dat", name) < 0) {
		fname = NULL;
		return -ENOMEM;
	}
	*ret_tmpname = temporary_name(name);
	if (!*ret_tmpname) {
		return -ENOMEM;
	}
	*ret_fname = TAKE_PTR(fname);
	return 0;
}

/* Replace the freshly laid out file *fd by the same file opened read-only,
 * for a probe that does not write. */
static int reopen_read_only(int idfd, const char *fname, int *fd)
{
	int rofd = openat(idfd, fname, O_RDONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

	if (rofd < 0) {
		return -errno;
	}
	close(*fd);
	*fd = rofd;
	return 0;
}

int probefile_open_at(int dfd, const char *directory, const char *name, uint64_t size, bool is_writable,
		      uint64_t seed, probefile_stop_fn stop, void *userdata, char *msg, size_t msg_len,
		      struct probefile *ret)
{
	_cleanup_close_ int idfd = -1, fd = -1;
	_cleanup_free_ char *fname = NULL, *tmpname = NULL;
	uint64_t reclaim, t0;
	bool created = false;
	int r;

	if (size == 0 || size % 512 != 0) {
		errstr_set(msg, msg_len, 0, "invalid probe file size %" PRIu64, size);
		return -EINVAL;
	}
	r = file_names(name, &fname, &tmpname);
	if (r < 0) {
		return r;
	}
	idfd = open_state_dir(dfd, directory, &created, msg, msg_len);
	if (idfd < 0) {
		return idfd;
	}
	fd = open_existing(idfd, directory, fname, size, is_writable, &reclaim, msg, msg_len);
	if (fd >= 0) {
		*ret = (struct probefile){.fd = TAKE_FD(fd), .size = size};
		return 0;
	}
	if (fd != -ENOENT) {
		return fd;
	}
	t0 = now_usec(CLOCK_MONOTONIC);
	remove_stale_temporaries(idfd, name);
	fd = layout(idfd, directory, fname, tmpname, size, reclaim, seed, stop, userdata, msg, msg_len);
	if (fd < 0) {
		r = fd;
		fd = -1;
		if (created) {
			/* leave nothing behind when the filesystem cannot be probed
			 * (AT_REMOVEDIR only removes it while it is empty) */
			unlinkat(dfd, PROBEFILE_DIR, AT_REMOVEDIR);
		}
		return r;
	}
	if (!is_writable) {
		r = reopen_read_only(idfd, fname, &fd);
		if (r < 0) {
			return r;
		}
	}
	*ret = (struct probefile){
	    .fd = TAKE_FD(fd), .size = size, .layout_usec = now_usec(CLOCK_MONOTONIC) - t0};
	if (ret->layout_usec == 0) {
		ret->layout_usec = 1;
	}
	return 0;
}

int probefile_open_device(const char *path, uint64_t size, char *msg, size_t msg_len, struct probefile *ret)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint64_t dev_size = 0;
	char e[96];
	int r;

	/* look before opening: opening some character devices has effects */
	if (stat(path, &st) < 0) {
		r = -errno;
		errstr_set(msg, msg_len, 0, "cannot open %s: %s", path, probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	if (!S_ISBLK(st.st_mode)) {
		errstr_set(msg, msg_len, 0,
			   "filename=%s is not a block device: use directory= for a probe file", path);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -EINVAL) {
			errstr_set(msg, msg_len, 0, "O_DIRECT not supported by %s (EINVAL)", path);
		} else {
			errstr_set(msg, msg_len, 0, "cannot open %s: %s", path,
				   probefile_strerror(r, e, sizeof(e)));
		}
		return r;
	}
	if (fstat(fd, &st) < 0) {
		return -errno;
	}
	if (!S_ISBLK(st.st_mode)) {
		errstr_set(msg, msg_len, 0,
			   "filename=%s is not a block device: use directory= for a probe file", path);
		return -EINVAL;
	}
	if (ioctl(fd, BLKGETSIZE64, &dev_size) < 0) {
		r = -errno;
		errstr_set(msg, msg_len, 0, "cannot read the size of %s: %s", path,
			   probefile_strerror(r, e, sizeof(e)));
		return r;
	}
	if (dev_size == 0) {
		errstr_set(msg, msg_len, 0, "%s has no medium (0 bytes): detached or ejected?", path);
		return -ENXIO;
	}
	if (size > dev_size) {
		errstr_set(msg, msg_len, 0, "size=%" PRIu64 " is larger than %s (%" PRIu64 " bytes)", size,
			   path, dev_size);
		return -EINVAL;
	}
	*ret = (struct probefile){
	    .fd = TAKE_FD(fd),
	    .size = size ? size : dev_size,
	    .is_block_device = true,
	};
	return 0;
}
