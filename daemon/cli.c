/* iopsd's flags, named after the Prometheus exporter conventions. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "iopsd-build.h"
#include "log.h"
#include "netaddr.h"
#include "once.h"

enum {
	ARG_CONFIG = 0x100,
	ARG_CHECK_CONFIG,
	ARG_ONCE,
	ARG_OUTPUT_FORMAT,
	ARG_OUTPUT,
	ARG_LISTEN,
	ARG_WEB_CONFIG,
	ARG_PROCFS,
	ARG_SYSFS,
	ARG_DEV_INCLUDE,
	ARG_DEV_EXCLUDE,
	ARG_LOG_LEVEL,
	ARG_VERSION,
};

static void help(void)
{
	printf("Usage: iopsd [OPTIONS]\n"
	       "\n"
	       "Make disk performance ceilings visible: budgeted O_DIRECT probes, per-second\n"
	       "/proc/diskstats sampling, Prometheus and JSON over HTTP.\n"
	       "\n"
	       "  --config FILE                 configuration (default " CONFIG_DEFAULT_PATH ",\n"
	       "                                else a built-in default)\n"
	       "  --check-config                validate the configuration, print a summary, exit\n"
	       "  --once                        run every probe once as fio would, print the report, exit\n"
	       "  --output-format LIST          --once: normal (default), terse, json, json+ (fio's)\n"
	       "  --output FILE                 --once: write the report to FILE\n"
	       "  --web.listen-address ADDR     HOST:PORT to listen on (default " CONFIG_DEFAULT_LISTEN ")\n"
	       "  --web.config.file FILE        TLS and basic auth (exporter-toolkit format)\n"
	       "  --path.procfs DIR             procfs mount point (default /proc)\n"
	       "  --path.sysfs DIR              sysfs mount point (default /sys)\n"
	       "  --collector.diskstats.device-include REGEX  devices to sample\n"
	       "  --collector.diskstats.device-exclude REGEX  devices to skip\n"
	       "  --log.level LEVEL             error, warning, info or debug (default info)\n"
	       "  --version                     print the version and exit\n"
	       "  --help                        print this help and exit\n"
	       "\n"
	       "See iopsd(8) and iopsd.conf(5).\n");
}

static bool valid_regex(const char *flag, const char *value)
{
	regex_t re;

	if (regcomp(&re, value, REG_EXTENDED | REG_NOSUB) != 0) {
		log_error("%s: '%s' is not a valid extended regular expression", flag, value);
		return false;
	}
	regfree(&re);
	return true;
}

/* The server's own parser (netaddr.h), so that a flag that passes here binds. */
static bool valid_listen_address(const char *value)
{
	struct netaddr_list l;
	char err[NETADDR_HOST_MAX + 64];

	if (netaddr_parse_list_explain(value, &l, err, sizeof(err)) < 0) {
		log_error("--web.listen-address: %s", err);
		return false;
	}
	return true;
}

static const struct option options[] = {
    {"config", required_argument, NULL, ARG_CONFIG},
    {"check-config", no_argument, NULL, ARG_CHECK_CONFIG},
    {"once", no_argument, NULL, ARG_ONCE},
    {"output-format", required_argument, NULL, ARG_OUTPUT_FORMAT},
    {"output", required_argument, NULL, ARG_OUTPUT},
    {"web.listen-address", required_argument, NULL, ARG_LISTEN},
    {"web.config.file", required_argument, NULL, ARG_WEB_CONFIG},
    {"path.procfs", required_argument, NULL, ARG_PROCFS},
    {"path.sysfs", required_argument, NULL, ARG_SYSFS},
    {"collector.diskstats.device-include", required_argument, NULL, ARG_DEV_INCLUDE},
    {"collector.diskstats.device-exclude", required_argument, NULL, ARG_DEV_EXCLUDE},
    {"log.level", required_argument, NULL, ARG_LOG_LEVEL},
    {"version", no_argument, NULL, ARG_VERSION},
    {"help", no_argument, NULL, 'h'},
    {},
};

/* The field of an option whose value is stored as given; NULL for others. */
static const char **plain_option(int c, struct cli_args *a)
{
	switch (c) {
	case ARG_CONFIG:
		return &a->config_path;
	case ARG_WEB_CONFIG:
		return &a->web_config_file;
	case ARG_PROCFS:
		return &a->procfs;
	case ARG_SYSFS:
		return &a->sysfs;
	case ARG_OUTPUT:
		return &a->output;
	default:
		return NULL;
	}
}

static enum cli_action bad_format(const char *value)
{
	log_error("--output-format: '%s' is not a list of normal, terse, json, json+", value);
	return CLI_EXIT_USAGE;
}

/* getopt_long()'s '?': a flag it does not know, or one whose argument is
 * missing or unexpected. */
static enum cli_action bad_option(char **argv)
{
	if (optopt) {
		log_error("%s: missing or unexpected argument", argv[optind - 1]);
	} else {
		log_error("%s: unknown flag; see --help", argv[optind - 1]);
	}
	return CLI_EXIT_USAGE;
}

/* Check and store one option of getopt_long(); CLI_RUN to go on, anything
 * else ends the parse (help or version printed, or a usage error). */
static enum cli_action parse_option(int c, char **argv, struct cli_args *a)
{
	const char **plain = plain_option(c, a);

	if (plain) {
		*plain = optarg;
		return CLI_RUN;
	}
	switch (c) {
	case ARG_CHECK_CONFIG:
		a->check_config = true;
		break;
	case ARG_ONCE:
		a->once = true;
		break;
	case ARG_OUTPUT_FORMAT:
		return once_output_formats_parse(optarg, &a->output_formats) == 0 ? CLI_RUN
										  : bad_format(optarg);
	case ARG_LISTEN:
		if (!valid_listen_address(optarg)) {
			return CLI_EXIT_USAGE;
		}
		a->listen_address = optarg;
		break;
	case ARG_DEV_INCLUDE:
		if (!valid_regex("--collector.diskstats.device-include", optarg)) {
			return CLI_EXIT_USAGE;
		}
		a->device_include = optarg;
		break;
	case ARG_DEV_EXCLUDE:
		if (!valid_regex("--collector.diskstats.device-exclude", optarg)) {
			return CLI_EXIT_USAGE;
		}
		a->device_exclude = optarg;
		break;
	case ARG_LOG_LEVEL:
		a->log_level = log_level_from_string(optarg);
		if (a->log_level < 0) {
			log_error("--log.level: '%s' is not one of error, warning, info, debug", optarg);
			return CLI_EXIT_USAGE;
		}
		break;
	case ARG_VERSION:
		printf("iopsd %s\n", IOPSD_VERSION);
		return CLI_EXIT_OK;
	case 'h':
		help();
		return CLI_EXIT_OK;
	case '?':
		return bad_option(argv);
	default:
		return CLI_EXIT_USAGE;
	}
	return CLI_RUN;
}

enum cli_action cli_parse(int argc, char **argv, struct cli_args *ret)
{
	struct cli_args a = {
	    .procfs = "/proc", .sysfs = "/sys", .log_level = -1, .output_formats = ONCE_OUTPUT_NORMAL};
	enum cli_action action;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		action = parse_option(c, argv, &a);
		if (action != CLI_RUN) {
			return action;
		}
	}
	if (optind < argc) {
		log_error("'%s': unexpected argument; see --help", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	*ret = a;
	return CLI_RUN;
}
