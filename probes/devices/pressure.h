/* /proc/pressure/io: the cumulative "some" and "full" stall times (PSI).
 * A kernel without PSI (or booted with psi=0) is not an error: the result
 * says it is not available. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct pressure_io {
	bool available;
	uint64_t some_total_usec;
	uint64_t full_total_usec;
};

/* Parse the text of PROCFS/pressure/io (pure). Returns 0, or -EINVAL when
 * no "some ... total=N" line is present. */
int pressure_parse(const char *buf, struct pressure_io *ret);

/* Read PROCFS/pressure/io through `*fd` (opened on first use and kept; pass
 * -1 initially, close it when done). A missing or unsupported file yields
 * available=false and 0. Other errors -errno. */
int pressure_read(const char *procfs, int *fd, struct pressure_io *ret);
