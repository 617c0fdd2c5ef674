/* log: "<N>" priority prefixes only when stderr is the journal (JOURNAL_STREAM
 * names stderr's device and inode, as systemd checks it), "iopsd: LEVEL: "
 * lines on a pipe, a file or a terminal. Real fds, no mocks. */
#include <errno.h>
#include <fcntl.h>
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

#include "log.h"

/* JOURNAL_STREAM's value for fd: "DEVICE:INODE". */
static void stream_of(int fd, char *buf, size_t len)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	snprintf(buf, len, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

static int temp_file(void)
{
	char path[] = "/tmp/iopsd-test-log-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(unlink(path), 0);
	return fd;
}

static void test_journal_stream_must_name_the_fd(void **state)
{
	static const char *const malformed[] = {
	    "", ":", "1:", ":2", "x:1", "1:2x", "1 :2", "-1:2", "1:-2", "99999999999999999999999:1",
	};
	int p[2], file = temp_file();
	char pipe_stream[64], file_stream[64], other[80];
	struct stat st;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	stream_of(p[1], pipe_stream, sizeof(pipe_stream));
	stream_of(file, file_stream, sizeof(file_stream));

	assert_true(log_fd_is_journal(p[1], pipe_stream));
	assert_true(log_fd_is_journal(file, file_stream));
	/* inherited from a service, but this fd goes elsewhere */
	assert_false(log_fd_is_journal(p[1], file_stream));
	assert_false(log_fd_is_journal(file, pipe_stream));
	/* the same device, another inode */
	assert_int_equal(fstat(file, &st), 0);
	snprintf(other, sizeof(other), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	assert_false(log_fd_is_journal(file, other));

	assert_false(log_fd_is_journal(p[1], NULL));
	for (size_t i = 0; i < ELEMENTSOF(malformed); i++) {
		assert_false(log_fd_is_journal(p[1], malformed[i]));
	}
	snprintf(other, sizeof(other), "%s:", file_stream);
	assert_false(log_fd_is_journal(file, other));
	close(p[0]);
	close(p[1]);
	close(file);
}

/* Point stderr at `fd` and log one line at each level with JOURNAL_STREAM
 * set to `journal_stream` (NULL: unset); a file is rewound for reading. */
static void logged(int fd, const char *journal_stream)
{
	int saved = dup(STDERR_FILENO);

	assert_true(saved >= 0);
	if (journal_stream) {
		assert_int_equal(setenv("JOURNAL_STREAM", journal_stream, 1), 0);
	} else {
		assert_int_equal(unsetenv("JOURNAL_STREAM"), 0);
	}
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	log_open();
	log_max_level = LOG_DEBUG;
	log_error("a.conf:3: unknown key 'loops'");
	log_warning("w");
	log_notice("n");
	log_info("i");
	log_debug("d");
	errno = 0;
	(void)log_error_errno(-ENOENT, "x: %m");
	log_max_level = LOG_INFO;
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	log_open();

	if (lseek(fd, 0, SEEK_CUR) > 0) {
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	}
}

static char *drain(int fd, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len - 1);

	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static const char plain[] = "iopsd: error: a.conf:3: unknown key 'loops'\n"
			    "iopsd: warning: w\n"
			    "iopsd: notice: n\n"
			    "iopsd: info: i\n"
			    "iopsd: debug: d\n"
			    "iopsd: error: x: No such file or directory\n";
static const char journal[] = "<3>a.conf:3: unknown key 'loops'\n"
			      "<4>w\n"
			      "<5>n\n"
			      "<6>i\n"
			      "<7>d\n"
			      "<3>x: No such file or directory\n";

static void test_pipe_gets_plain_lines_unless_it_is_the_journal(void **state)
{
	int p[2], file = temp_file();
	char stream[64], file_stream[64], buf[4096];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	stream_of(p[1], stream, sizeof(stream));
	stream_of(file, file_stream, sizeof(file_stream));

	logged(p[1], NULL);
	assert_string_equal(drain(p[0], buf, sizeof(buf)), plain);
	/* JOURNAL_STREAM inherited, stderr redirected to a pipe */
	logged(p[1], file_stream);
	assert_string_equal(drain(p[0], buf, sizeof(buf)), plain);
	/* journald's own stream socket is what systemd names; a pipe stands in
	 * for it here: the rule is only the device and inode */
	logged(p[1], stream);
	assert_string_equal(drain(p[0], buf, sizeof(buf)), journal);
	close(p[0]);
	close(p[1]);
	close(file);
}

static void test_file_gets_plain_lines_unless_it_is_the_journal(void **state)
{
	int file = temp_file(), p[2];
	char stream[64], pipe_stream[64], buf[4096];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	stream_of(file, stream, sizeof(stream));
	stream_of(p[1], pipe_stream, sizeof(pipe_stream));

	logged(file, pipe_stream);
	assert_string_equal(drain(file, buf, sizeof(buf)), plain);
	assert_int_equal(ftruncate(file, 0), 0);
	assert_int_equal(lseek(file, 0, SEEK_SET), 0);
	logged(file, stream);
	assert_string_equal(drain(file, buf, sizeof(buf)), journal);
	close(file);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_journal_stream_must_name_the_fd),
	    cmocka_unit_test(test_pipe_gets_plain_lines_unless_it_is_the_journal),
	    cmocka_unit_test(test_file_gets_plain_lines_unless_it_is_the_journal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
