/* Command-line parsing. The parsed values are the only other global state
 * besides the log level. */
#pragma once

#include <stdbool.h>

struct cli_args {
	const char *config_path; /* NULL: /etc/iopsd/iopsd.conf, else built-in */
	bool check_config;
	bool once;
	unsigned output_formats;    /* --once: ONCE_OUTPUT_* (normal when not given) */
	const char *output;	    /* --once: the report's file, NULL: stdout */
	const char *listen_address; /* overrides the config */
	const char *web_config_file;
	const char *procfs;
	const char *sysfs;
	const char *device_include;
	const char *device_exclude;
	int log_level; /* -1 when not given */
};

enum cli_action {
	CLI_RUN,
	CLI_EXIT_OK,	/* --help or --version printed */
	CLI_EXIT_USAGE, /* bad flag, message printed */
};

/* Parse argv into *ret; prints help/version/usage errors itself. */
enum cli_action cli_parse(int argc, char **argv, struct cli_args *ret);
