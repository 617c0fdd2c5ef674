/* iopsd: parse the command line, load the configuration, run the daemon. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>

#include "check_limits.h"
#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "once.h"

static struct cli_args args;

/* The exit status when loading the configuration failed with `r`
 * (sysexits(3)): invalid is EX_CONFIG, unreadable (missing, no permission)
 * EX_NOINPUT, out of memory a plain failure. */
static int load_failure_status(int r)
{
	switch (r) {
	case -EINVAL:
		return EX_CONFIG;
	case -ENOMEM:
		return EXIT_FAILURE;
	default:
		return EX_NOINPUT;
	}
}

/* A daemon of a few threads that mostly sleep: one malloc arena, not
 * one per thread each keeping its own freed memory; and blocks from
 * 32 KiB up (probe results, snapshots, rendered bodies) mapped and
 * unmapped, not left in the heap once used. Fixed values: glibc's
 * adaptive threshold would rise to the largest block ever freed. */
static void tune_malloc(void)
{
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 32 * 1024);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024);
}

/* --check-config: check the loaded configuration, print its summary and
 * the device limits, free it; the exit status. */
static int check_config(struct config *cfg)
{
	char summary[512], engines[320];
	int r;

	if (daemon_check_start(cfg) < 0) {
		config_free(cfg);
		return EX_CONFIG;
	}
	config_summary(cfg, summary, sizeof(summary));
	daemon_check_engines(cfg, engines, sizeof(engines));
	printf("%s; %s\n", summary, engines);
	r = daemon_check_device_limits(cfg, args.sysfs, stdout);
	config_free(cfg);
	return r < 0 ? EX_CONFIG : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	struct config *cfg = NULL;
	struct daemon *d = NULL;
	int r;

	tune_malloc();
	log_open();
	switch (cli_parse(argc, argv, &args)) {
	case CLI_EXIT_OK:
		return EXIT_SUCCESS;
	case CLI_EXIT_USAGE:
		return EX_USAGE;
	case CLI_RUN:
		break;
	}
	if (args.log_level >= 0) {
		log_max_level = args.log_level;
	}

	r = daemon_load_config(&args, &cfg);
	if (r < 0) {
		return load_failure_status(r);
	}
	if (args.check_config) {
		return check_config(cfg);
	}

	if (args.once) {
		struct once_output o = {args.output_formats, args.output, args.procfs, args.sysfs};

		r = once_run(cfg, &o, stdout);
		config_free(cfg);
		return r;
	}

	r = daemon_new(&args, cfg, &d);
	if (r < 0) {
		/* daemon_new() freed cfg */
		return r == -EINVAL ? EX_CONFIG : EXIT_FAILURE;
	}
	r = daemon_run(d);
	daemon_free(d);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
