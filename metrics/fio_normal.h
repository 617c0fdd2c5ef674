/* fio 3.33's normal (human-readable) output for `iopsd --once`. */
#pragma once

#include <stdio.h>

#include "config.h"
#include "fio_report.h"

/* What fio prints before it runs: each job's description line, its
 * version, and how many jobs start. */
void fio_normal_header(const struct config *cfg, const char *version, FILE *out);
/* The report: every job's block, each group's "Run status" and the disks. */
void fio_normal_write(const struct fio_report *r, FILE *out);
