/* fio's terse output, version 3 (--output-format=terse): one line of
 * semicolon-separated fields per job, the disks' at its end. */
#pragma once

#include <stdio.h>

#include "fio_report.h"

void fio_terse_write(const struct fio_report *r, FILE *out);
