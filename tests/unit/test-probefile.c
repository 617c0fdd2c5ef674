/* Probe files and whole runs on a real file in a scratch directory, which
 * must support O_DIRECT (see setup(); the tests that do I/O skip, saying
 * why, where none does): layout before any read, reuse, refusals, and
 * what a run counts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "probe.h"
#include "probefile.h"
#include "timeutil.h"

#define MIB (1024ULL * 1024ULL)

static char scratch[256];
/* Why the tests that do O_DIRECT I/O cannot run here; "" when they can. */
static char no_direct_reason[sizeof(scratch) + 160];

/* Whether files in `dir` open with O_DIRECT (tmpfs, for one, refuses it). */
static bool has_direct_io(const char *dir)
{
	char path[sizeof(scratch) + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/direct-check", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
	}
	unlink(path);
	return fd >= 0;
}

static bool make_scratch(const char *base)
{
	snprintf(scratch, sizeof(scratch), "%s/probefile-test-XXXXXX", base);
	return mkdtemp(scratch) != NULL;
}

/* The scratch directory: under IOPSD_TEST_DIRECT_DIR when set, else under
 * the working directory (the build tree) or, when that has no O_DIRECT,
 * /var/tmp (on disk where /tmp is often tmpfs). */
static int setup(void **state)
{
	const char *base = getenv("IOPSD_TEST_DIRECT_DIR");

	if (!make_scratch(base ? base : ".")) {
		return -1;
	}
	if (has_direct_io(scratch) || base) {
		goto out;
	}
	rmdir(scratch);
	if (!make_scratch("/var/tmp") && !make_scratch(".")) {
		return -1;
	}
out:
	if (!has_direct_io(scratch)) {
		snprintf(
		    no_direct_reason, sizeof(no_direct_reason),
		    "%s has no O_DIRECT: set IOPSD_TEST_DIRECT_DIR to a directory on a filesystem with it "
		    "(ext4, xfs, btrfs)",
		    scratch);
	}
	return 0;
}

/* Skip a test that needs O_DIRECT, saying why (tests/run.sh fails a
 * skip under CI). */
static void skip_without_direct_io(void)
{
	print_message("skipped: %s\n", no_direct_reason[0] ? no_direct_reason : "O_DIRECT not supported");
	skip();
}

static int teardown(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	return system(cmd) == 0 ? 0 : -1;
}

static char *sub(const char *name)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", scratch, name) > 0);
	mkdir(p, 0755);
	return p;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_file_equals(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "re");

	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, text);
}

/* Open the probe file as a run does: the directory, then the file in it. */
static int open_probe_file(const char *directory, const char *name, uint64_t size, bool is_writable,
			   uint64_t seed, probefile_stop_fn stop, void *userdata, char *msg, size_t msg_len,
			   struct probefile *ret)
{
	_cleanup_close_ int dfd = -1;
	dev_t dev;

	dfd = probefile_open_directory(directory, 0, &dev, msg, msg_len);
	if (dfd < 0) {
		return dfd;
	}
	return probefile_open_at(dfd, directory, name, size, is_writable, seed, stop, userdata, msg, msg_len,
				 ret);
}

/* Open a probe file, skipping the test when O_DIRECT is not available here. */
static int open_or_skip(const char *dir, const char *name, uint64_t size, bool is_writable, char *msg,
			size_t len, struct probefile *ret)
{
	int r = open_probe_file(dir, name, size, is_writable, 1, NULL, NULL, msg, len, ret);

	if (r == -EINVAL && strstr(msg, "O_DIRECT not supported")) {
		skip_without_direct_io();
	}
	return r;
}

static void test_fill_never_repeats_a_word(void **state)
{
	size_t n = 4 * MIB / 8;
	uint64_t *w = malloc(4 * MIB), *v = malloc(4 * MIB);

	assert_non_null(w);
	assert_non_null(v);
	probefile_fill(w, 4 * MIB, 77, 0);
	/* the same offset gives the same data, the next chunk continues it */
	probefile_fill(v, 4096, 77, 4 * MIB - 4096);
	assert_memory_equal(v, (char *)w + 4 * MIB - 4096, 4096);
	for (size_t i = 0; i < n; i++) {
		assert_true(w[i] != 0);
	}
	/* sort and look for any equal neighbours */
	for (size_t gap = n / 2; gap > 0; gap /= 2) {
		for (size_t i = gap; i < n; i++) {
			uint64_t t = w[i];
			size_t j = i;

			for (; j >= gap && w[j - gap] > t; j -= gap) {
				w[j] = w[j - gap];
			}
			w[j] = t;
		}
	}
	for (size_t i = 1; i < n; i++) {
		assert_true(w[i] != w[i - 1]);
	}
	free(w);
	free(v);
}

static void test_reuse_needs_size_allocation_and_one_link(void **state)
{
	assert_true(probefile_is_reusable(64 * MIB, 64 * MIB / 512, 1, 64 * MIB));
	assert_true(probefile_is_reusable(64 * MIB, 64 * MIB / 512 + 8, 1, 64 * MIB));
	assert_false(probefile_is_reusable(32 * MIB, 32 * MIB / 512, 1, 64 * MIB));
	/* sparse: a hole would read as zeros without touching the disk */
	assert_false(probefile_is_reusable(64 * MIB, 64 * MIB / 512 - 8, 1, 64 * MIB));
	assert_false(probefile_is_reusable(64 * MIB, 0, 1, 64 * MIB));
	/* hard-linked elsewhere: writing it would modify someone else's file */
	assert_false(probefile_is_reusable(64 * MIB, 64 * MIB / 512, 2, 64 * MIB));
}

static void test_layout_writes_every_block_before_use(void **state)
{
	_cleanup_free_ char *dir = sub("layout"), *path = NULL;
	struct probefile pf = {0}, again = {0};
	char msg[256] = "";
	struct stat st, st2;
	int fd;
	char *buf;

	assert_int_equal(open_or_skip(dir, "p", 4 * MIB, false, msg, sizeof(msg), &pf), 0);
	assert_true(pf.layout_usec > 0);
	assert_int_equal(pf.size, 4 * MIB);
	assert_true(asprintf(&path, "%s/.iopsd/p.dat", dir) > 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 4 * MIB);
	assert_true((uint64_t)st.st_blocks * 512 >= 4 * MIB);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* no hole anywhere, and data that is not zeros */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 0, SEEK_HOLE), 4 * MIB);
	buf = calloc(1, 4096);
	assert_int_equal(pread(fd, buf, 4096, 2 * MIB), 4096);
	assert_true(((uint64_t *)buf)[0] != 0 || ((uint64_t *)buf)[1] != 0);
	free(buf);
	close(fd);
	close(pf.fd);

	/* the second open reuses it */
	assert_int_equal(open_or_skip(dir, "p", 4 * MIB, true, msg, sizeof(msg), &again), 0);
	assert_int_equal(again.layout_usec, 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st.st_ino, st2.st_ino);
	close(again.fd);

	/* a size change lays it out anew */
	assert_int_equal(open_or_skip(dir, "p", 2 * MIB, true, msg, sizeof(msg), &again), 0);
	assert_true(again.layout_usec > 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st2.st_size, 2 * MIB);
	close(again.fd);
}

static void test_truncated_probe_file_is_laid_out_again(void **state)
{
	_cleanup_free_ char *dir = sub("truncated"), *path = NULL;
	struct probefile pf = {0};
	char msg[256] = "";
	struct stat st;

	assert_int_equal(open_or_skip(dir, "p", 1 * MIB, true, msg, sizeof(msg), &pf), 0);
	close(pf.fd);
	assert_true(asprintf(&path, "%s/.iopsd/p.dat", dir) > 0);
	/* punch it sparse: same size, missing blocks */
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(truncate(path, 1 * MIB), 0);
	assert_int_equal(open_or_skip(dir, "p", 1 * MIB, true, msg, sizeof(msg), &pf), 0);
	assert_true(pf.layout_usec > 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true((uint64_t)st.st_blocks * 512 >= 1 * MIB);
	close(pf.fd);
}

static void test_symlinked_state_directory_is_refused(void **state)
{
	_cleanup_free_ char *dir = sub("symlinked"), *elsewhere = sub("elsewhere"), *link = NULL;
	struct probefile pf = {0};
	char msg[256] = "";
	DIR *d;
	struct dirent *de;
	unsigned n = 0;
	char target[PATH_MAX];

	/* a link to an existing directory, and a dangling one */
	assert_non_null(realpath(elsewhere, target));
	assert_true(asprintf(&link, "%s/.iopsd", dir) > 0);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(open_probe_file(dir, "p", MIB, true, 1, NULL, NULL, msg, sizeof(msg), &pf), -ELOOP);
	assert_non_null(strstr(msg, ".iopsd is a symlink: refusing to use it"));
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("/nonexistent-iopsd-target", link), 0);
	assert_int_equal(open_probe_file(dir, "p", MIB, true, 1, NULL, NULL, msg, sizeof(msg), &pf), -ELOOP);
	assert_non_null(strstr(msg, ".iopsd is a symlink: refusing to use it"));
	/* nothing was created where the link points */
	d = opendir(elsewhere);
	assert_non_null(d);
	while ((de = readdir(d))) {
		n += de->d_name[0] != '.';
	}
	closedir(d);
	assert_int_equal(n, 0);
}

static void test_symlink_in_the_directory_path_is_refused(void **state)
{
	_cleanup_free_ char *real = sub("real-target"), *link = NULL, *via = NULL, *made = NULL;
	char msg[256] = "";
	dev_t dev;

	assert_true(asprintf(&link, "%s/link", scratch) > 0);
	assert_int_equal(symlink(real, link), 0);
	assert_true(asprintf(&via, "%s/link/", scratch) > 0);
	assert_int_equal(probefile_open_directory(via, 0, &dev, msg, sizeof(msg)), -ELOOP);
	assert_non_null(strstr(msg, "has a symlink in its path"));
	assert_true(asprintf(&made, "%s/.iopsd", real) > 0);
	assert_int_equal(access(made, F_OK), -1);
	/* the real path is fine */
	{
		int dfd = probefile_open_directory(real, 0, &dev, msg, sizeof(msg));

		assert_true(dfd >= 0);
		close(dfd);
	}
}

static void test_state_directory_writable_by_others_is_refused(void **state)
{
	_cleanup_free_ char *dir = sub("open"), *sd = NULL;
	struct probefile pf = {0};
	char msg[256] = "";

	assert_true(asprintf(&sd, "%s/.iopsd", dir) > 0);
	assert_int_equal(mkdir(sd, 0700), 0);
	assert_int_equal(chmod(sd, 0777), 0);
	assert_int_equal(open_probe_file(dir, "p", MIB, true, 1, NULL, NULL, msg, sizeof(msg), &pf), -EPERM);
	assert_non_null(strstr(msg, "writable by other users"));
}

static void test_symlinked_probe_file_is_refused(void **state)
{
	_cleanup_free_ char *dir = sub("symfile"), *sd = NULL, *victim = NULL, *link = NULL;
	struct probefile pf = {0};
	char msg[256] = "";

	assert_true(asprintf(&sd, "%s/.iopsd", dir) > 0);
	assert_int_equal(mkdir(sd, 0700), 0);
	assert_true(asprintf(&victim, "%s/victim", dir) > 0);
	write_file(victim, "precious\n");
	assert_true(asprintf(&link, "%s/p.dat", sd) > 0);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(open_probe_file(dir, "p", MIB, true, 1, NULL, NULL, msg, sizeof(msg), &pf), -ELOOP);
	assert_non_null(strstr(msg, "symlink"));
	assert_file_equals(victim, "precious\n");
}

static void test_files_next_to_the_probe_file_are_untouched(void **state)
{
	_cleanup_free_ char *dir = sub("neighbours"), *a = NULL, *b = NULL;
	struct probefile pf = {0};
	char msg[256] = "";

	assert_true(asprintf(&a, "%s/user.txt", dir) > 0);
	write_file(a, "user data\n");
	assert_int_equal(open_or_skip(dir, "p", MIB, true, msg, sizeof(msg), &pf), 0);
	close(pf.fd);
	assert_true(asprintf(&b, "%s/.iopsd/other.dat", dir) > 0);
	write_file(b, "another probe's file\n");
	/* re-layout (size change) and reuse */
	assert_int_equal(open_or_skip(dir, "p", 2 * MIB, true, msg, sizeof(msg), &pf), 0);
	close(pf.fd);
	assert_int_equal(open_or_skip(dir, "p", 2 * MIB, true, msg, sizeof(msg), &pf), 0);
	close(pf.fd);
	assert_file_equals(a, "user data\n");
	assert_file_equals(b, "another probe's file\n");
}

static void test_layouts_have_their_own_temporary_names(void **state)
{
	_cleanup_free_ char *dir = sub("temporaries"), *state_dir = NULL, *mine = NULL, *stale = NULL,
			    *legacy = NULL, *user = NULL, *other = NULL;
	struct probefile pf = {0};
	char msg[256] = "";

	assert_true(asprintf(&state_dir, "%s/.iopsd", dir) > 0);
	assert_int_equal(mkdir(state_dir, 0700), 0);
	/* a run of this process still writing its own, a crashed process's,
	 * an old version's, a user's file and another probe's */
	assert_true(asprintf(&mine, "%s/.p.dat.%ld.999.tmp", state_dir, (long)getpid()) > 0);
	assert_true(asprintf(&stale, "%s/.p.dat.1.7.tmp", state_dir) > 0);
	assert_true(asprintf(&legacy, "%s/.p.dat.tmp", state_dir) > 0);
	assert_true(asprintf(&user, "%s/.p.dat.notes.tmp", state_dir) > 0);
	assert_true(asprintf(&other, "%s/.p.0.dat.1.7.tmp", state_dir) > 0);
	write_file(mine, "in progress\n");
	write_file(stale, "left behind\n");
	write_file(legacy, "left behind\n");
	write_file(user, "user data\n");
	write_file(other, "another probe's\n");
	assert_int_equal(open_or_skip(dir, "p", MIB, true, msg, sizeof(msg), &pf), 0);
	close(pf.fd);
	assert_file_equals(mine, "in progress\n");
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(legacy, F_OK), -1);
	assert_file_equals(user, "user data\n");
	assert_file_equals(other, "another probe's\n");
}

static void test_missing_directory_gives_a_clear_error(void **state)
{
	struct probefile pf = {0};
	char msg[256] = "", path[300];

	snprintf(path, sizeof(path), "%s/does-not-exist", scratch);
	assert_int_equal(open_probe_file(path, "p", MIB, true, 1, NULL, NULL, msg, sizeof(msg), &pf),
			 -ENOENT);
	assert_non_null(strstr(msg, "does-not-exist"));
	assert_non_null(strstr(msg, "(ENOENT)"));
}

static struct probe_config file_probe(const char *dir, enum probe_rw rw)
{
	return (struct probe_config){
	    .name = (char *)"unit",
	    .rw = rw,
	    .bs = 4096,
	    .size = MIB,
	    .directory = (char *)dir,
	    .iodepth = 4,
	    .numjobs = 2,
	    .rwmixread = 50,
	    .number_ios = 200,
	    .interval_usec = 10000000,
	};
}

static void run_or_skip(const struct probe_config *pc, struct probe_result *res)
{
	assert_int_equal(probe_run(pc, res), 0);
	if (res->error == -EINVAL && strstr(res->message, "O_DIRECT not supported")) {
		skip_without_direct_io();
	}
}

static void test_number_ios_run_counts_every_op(void **state)
{
	_cleanup_free_ char *dir = sub("run");
	struct probe_config pc = file_probe(dir, PROBE_RW_RANDRW);
	struct probe_result *res = malloc(sizeof(*res));
	const struct probe_op_result *rd, *wr;

	assert_non_null(res);
	run_or_skip(&pc, res);
	assert_true(res->success);
	assert_int_equal(res->error, 0);
	rd = &res->op[PROBE_OP_READ];
	wr = &res->op[PROBE_OP_WRITE];
	/* number_ios is per job, as in fio */
	assert_int_equal(rd->ops + wr->ops, 400);
	assert_true(rd->ops > 100 && wr->ops > 100);
	assert_int_equal(rd->bytes, rd->ops * 4096);
	assert_int_equal(wr->lat.count, wr->ops);
	assert_true(rd->lat.min_ns > 0);
	assert_true(rd->iops > 0 && res->runtime_usec > 0);
	assert_true(res->layout_usec > 0);
	free(res);
}

static void test_fsync_every_n_writes_and_at_the_end(void **state)
{
	_cleanup_free_ char *dir = sub("fsync");
	struct probe_config pc = file_probe(dir, PROBE_RW_RANDWRITE);
	struct probe_result *res = malloc(sizeof(*res));

	assert_non_null(res);
	pc.fsync = 10;
	pc.end_fsync = true;
	pc.number_ios = 100;
	run_or_skip(&pc, res);
	assert_true(res->success);
	assert_int_equal(res->op[PROBE_OP_WRITE].ops, 200);
	/* 10 per job, plus one at the end */
	assert_int_equal(res->op[PROBE_OP_FSYNC].ops, 21);
	assert_int_equal(res->op[PROBE_OP_FSYNC].bytes, 0);
	assert_int_equal(res->op[PROBE_OP_READ].ops, 0);
	free(res);
}

static void test_rewrite_and_sequential_modes_run(void **state)
{
	static const enum probe_rw modes[] = {PROBE_RW_READ, PROBE_RW_WRITE, PROBE_RW_RW, PROBE_RW_REWRITE,
					      PROBE_RW_RANDREAD};
	_cleanup_free_ char *dir = sub("modes");
	struct probe_result *res = malloc(sizeof(*res));

	assert_non_null(res);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct probe_config pc = file_probe(dir, modes[m]);

		pc.ioengine = m % 2 ? PROBE_ENGINE_PSYNC : PROBE_ENGINE_LIBAIO;
		run_or_skip(&pc, res);
		assert_true(res->success);
		assert_int_equal(res->op[PROBE_OP_READ].ops + res->op[PROBE_OP_WRITE].ops, 400);
		assert_int_equal(res->op[PROBE_OP_READ].ops > 0, probe_rw_reads(modes[m]));
		assert_int_equal(res->op[PROBE_OP_WRITE].ops > 0, probe_rw_writes(modes[m]));
	}
	free(res);
}

static void test_rate_iops_caps_a_timed_run(void **state)
{
	_cleanup_free_ char *dir = sub("rate");
	struct probe_config pc = file_probe(dir, PROBE_RW_RANDREAD);
	struct probe_result *res = malloc(sizeof(*res));
	uint64_t ops;

	assert_non_null(res);
	pc.number_ios = 0;
	pc.runtime_usec = 500000;
	pc.rate_iops = 100;
	run_or_skip(&pc, res);
	assert_true(res->success);
	ops = res->op[PROBE_OP_READ].ops;
	/* 100/s per job (fio's meaning) for 0.5 s, both jobs: never more than
	 * 100 (the bound this pins); fewer when a loaded machine wakes a job
	 * late (84 were seen at load average 10), so the floor only says the
	 * run was paced, not stalled */
	if (ops < 50 || ops > 101) {
		fail_msg("%" PRIu64 " reads at 200 IOPS in 0.5 s", ops);
	}
	assert_true(res->runtime_usec >= 490000 && res->runtime_usec < 1000000);
	free(res);
}

static uint64_t mono_msec(void)
{
	return now_nsec(CLOCK_MONOTONIC) / NSEC_PER_MSEC;
}

/* The threads of this process, from /proc/self/task. */
static unsigned count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		n += e->d_name[0] != '.';
	}
	closedir(d);
	return n;
}

/* The process's threads once those that just exited are gone: a joined
 * thread stays in /proc/self/task until the kernel has reaped it, a moment
 * after pthread_join returned. Polls up to 1 s for `want` (0: until two
 * counts 20 ms apart agree). */
static unsigned settled_threads(unsigned want)
{
	struct timespec ts = {.tv_nsec = 20000000};
	unsigned n = count_threads(), prev;

	for (int i = 0; i < 50 && (want ? n != want : true); i++) {
		prev = n;
		nanosleep(&ts, NULL);
		n = count_threads();
		if (!want && n == prev) {
			break;
		}
	}
	return n;
}

static void test_cancel_stops_a_run_at_once(void **state)
{
	_cleanup_free_ char *dir = sub("cancel");
	struct probe_config pc = file_probe(dir, PROBE_RW_RANDREAD);
	struct probe_result *res = malloc(sizeof(*res));
	struct probe_run *run = NULL;
	struct timespec ts = {.tv_nsec = 200000000};
	unsigned threads_before;
	uint64_t t0;

	assert_non_null(res);
	pc.number_ios = 0;
	pc.runtime_usec = 5000000;
	pc.rate_iops = 100; /* mostly waiting for its next slot */
	/* lay the file out first so that the run below is in its I/O phase */
	run_or_skip(&(struct probe_config){.name = (char *)"unit",
					   .rw = PROBE_RW_RANDREAD,
					   .bs = 4096,
					   .size = MIB,
					   .directory = dir,
					   .iodepth = 1,
					   .numjobs = 1,
					   .number_ios = 1,
					   .interval_usec = 1000000},
		    res);
	assert_true(probe_threads_wait(2 * 1000000));
	threads_before = settled_threads(0);
	assert_int_equal(probe_start(&pc, NULL, &run), 0);
	nanosleep(&ts, NULL);
	assert_true(count_threads() > threads_before);
	t0 = mono_msec();
	probe_cancel(run);
	probe_wait(run, res);
	assert_true(mono_msec() - t0 < 500);
	assert_int_equal(res->error, -ECANCELED);
	assert_false(res->success);
	probe_run_free(run);
	/* its threads end too, and are joined: the process is back to the
	 * threads it had before the run (what exit waits for) */
	assert_true(probe_threads_wait(2 * 1000000));
	assert_int_equal(settled_threads(threads_before), threads_before);
	free(res);
}

static void test_directory_on_another_filesystem_is_not_written(void **state)
{
	_cleanup_free_ char *dir = sub("pinned");
	_cleanup_free_ char *state_dir = NULL;
	struct probe_config pc = file_probe(dir, PROBE_RW_RANDWRITE);
	/* as if the directory had been on another filesystem at the first run:
	 * what a lazy umount leaves behind */
	struct probe_options o = {.directory_dev = makedev(1, 255)};
	struct probe_result *res = malloc(sizeof(*res));
	_cleanup_(probe_run_freep) struct probe_run *run = NULL;
	struct stat st;
	char msg[256] = "";
	dev_t dev = 0;
	int dfd;

	assert_non_null(res);
	assert_int_equal(probe_start(&pc, &o, &run), 0);
	probe_wait(run, res);
	assert_false(res->success);
	assert_int_equal(res->error, -EXDEV);
	assert_non_null(strstr(res->message, "another filesystem"));
	assert_int_equal(res->op[PROBE_OP_WRITE].errors[PROBE_ERR_ENOENT], 1);
	assert_int_equal(res->op[PROBE_OP_WRITE].ops, 0);
	assert_true(asprintf(&state_dir, "%s/" PROBEFILE_DIR, dir) > 0);
	assert_int_equal(lstat(state_dir, &st), -1);

	/* the directory's own filesystem passes and is reported */
	assert_int_equal(stat(dir, &st), 0);
	dfd = probefile_open_directory(dir, st.st_dev, &dev, msg, sizeof(msg));
	assert_true(dfd >= 0);
	assert_true(dev == st.st_dev);
	close(dfd);
	free(res);
}

static struct probe_config raw_probe(enum probe_rw rw, const char *path)
{
	return (struct probe_config){
	    .name = (char *)"raw",
	    .rw = rw,
	    .bs = 4096,
	    .filename = (char *)path,
	    .iodepth = 1,
	    .numjobs = 1,
	    .number_ios = 10,
	    .interval_usec = 1000000,
	};
}

static void test_write_probe_on_a_device_is_refused_before_opening_it(void **state)
{
	struct probe_config pc = raw_probe(PROBE_RW_RANDWRITE, "/dev/null");
	struct probe_result *res = malloc(sizeof(*res));

	assert_non_null(res);
	assert_int_equal(probe_run(&pc, res), 0);
	assert_false(res->success);
	assert_int_equal(res->error, -EINVAL);
	assert_non_null(strstr(res->message, "refusing rw=randwrite on the raw block device /dev/null"));
	assert_int_equal(res->op[PROBE_OP_WRITE].errors[PROBE_ERR_EINVAL], 1);
	assert_int_equal(res->op[PROBE_OP_WRITE].ops, 0);
	free(res);
}

static void test_filename_must_be_a_block_device(void **state)
{
	struct probe_config pc = raw_probe(PROBE_RW_RANDREAD, "/dev/zero");
	struct probe_result *res = malloc(sizeof(*res));

	assert_non_null(res);
	assert_int_equal(probe_run(&pc, res), 0);
	assert_false(res->success);
	assert_non_null(strstr(res->message, "not a block device"));
	free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fill_never_repeats_a_word),
	    cmocka_unit_test(test_reuse_needs_size_allocation_and_one_link),
	    cmocka_unit_test(test_layout_writes_every_block_before_use),
	    cmocka_unit_test(test_truncated_probe_file_is_laid_out_again),
	    cmocka_unit_test(test_symlinked_state_directory_is_refused),
	    cmocka_unit_test(test_symlink_in_the_directory_path_is_refused),
	    cmocka_unit_test(test_state_directory_writable_by_others_is_refused),
	    cmocka_unit_test(test_symlinked_probe_file_is_refused),
	    cmocka_unit_test(test_files_next_to_the_probe_file_are_untouched),
	    cmocka_unit_test(test_layouts_have_their_own_temporary_names),
	    cmocka_unit_test(test_missing_directory_gives_a_clear_error),
	    cmocka_unit_test(test_number_ios_run_counts_every_op),
	    cmocka_unit_test(test_fsync_every_n_writes_and_at_the_end),
	    cmocka_unit_test(test_rewrite_and_sequential_modes_run),
	    cmocka_unit_test(test_rate_iops_caps_a_timed_run),
	    cmocka_unit_test(test_cancel_stops_a_run_at_once),
	    cmocka_unit_test(test_directory_on_another_filesystem_is_not_written),
	    cmocka_unit_test(test_write_probe_on_a_device_is_refused_before_opening_it),
	    cmocka_unit_test(test_filename_must_be_a_block_device),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
