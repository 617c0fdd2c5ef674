/* fileio: read_virtual_file() reads a file whole however large it is up
 * to its limit, from a small first buffer, and refuses a larger one. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"

/* A temporary file of `len` bytes of a repeating pattern; its path goes to
 * `path` (64 bytes). */
static void make_file(char *path, size_t len)
{
	FILE *f;
	int fd;

	snprintf(path, 64, "/tmp/iopsd-test-fileio-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (size_t i = 0; i < len; i++) {
		fputc('a' + (int)(i % 26), f);
	}
	assert_int_equal(fclose(f), 0);
}

static void check_whole(size_t len, size_t max)
{
	char path[64], *buf = NULL;

	make_file(path, len);
	assert_int_equal(read_virtual_file(path, max, &buf), (int)len);
	assert_int_equal(strlen(buf), len);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(buf[i], 'a' + (int)(i % 26));
	}
	free(buf);
	unlink(path);
}

static void test_reads_small_and_large_files_whole(void **state)
{
	check_whole(0, 1 << 20);
	check_whole(100, 1 << 20);
	/* past the first buffer, and past several of its growth steps */
	check_whole(16384, 1 << 20);
	check_whole(16385, 1 << 20);
	check_whole(300000, 1 << 20);
	/* exactly the limit, and a limit below the first buffer */
	check_whole(1 << 20, 1 << 20);
	check_whole(1000, 1000);
}

static void test_refuses_a_file_over_the_limit(void **state)
{
	char path[64], *buf = NULL;

	make_file(path, 1000001);
	assert_int_equal(read_virtual_file(path, 1000000, &buf), -EFBIG);
	assert_null(buf);
	unlink(path);
	make_file(path, 101);
	assert_int_equal(read_virtual_file(path, 100, &buf), -EFBIG);
	unlink(path);
	assert_int_equal(read_virtual_file("/nonexistent/iopsd", 100, &buf), -ENOENT);
}

/* A procfs seq file gives at most a page per read() (mountinfo in a
 * container or on a Kubernetes node is longer): read on to its end.
 * /proc/self/smaps has a record of about 1 KiB per mapping, each ending
 * with its VmFlags line, and this process has dozens of mappings. */
static void test_reads_a_seq_file_longer_than_a_page_whole(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t records = 0, flags = 0;
	char *buf = NULL;
	int n;

	n = read_virtual_file("/proc/self/smaps", 16 << 20, &buf);
	assert_true(n > 2 * page);
	assert_int_equal(buf[n - 1], '\n');
	for (char *line = buf; *line; line = strchr(line, '\n') + 1) {
		/* a record starts with its mapping's address range, "START-END " */
		size_t hex = strspn(line, "0123456789abcdef");

		records += hex > 0 && line[hex] == '-';
		flags += strncmp(line, "VmFlags:", 8) == 0;
	}
	assert_true(records > 8);
	assert_int_equal(flags, records);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reads_small_and_large_files_whole),
	    cmocka_unit_test(test_refuses_a_file_over_the_limit),
	    cmocka_unit_test(test_reads_a_seq_file_longer_than_a_page_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
