/* The daemon: owns the configuration, the event loop and every module, and
 * wires them together. Modules are created in dependency order and freed in
 * exactly the reverse order. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "cli.h"
#include "config.h"
#include "identities.h"
#include "log.h"
#include "macro.h"

struct daemon {
	const struct cli_args *args;
	struct config *cfg;
	sd_event *event;
	uint64_t watchdog_usec;

	struct sampler *sampler;
	struct detect *detect;	       /* the detection stage, run after each sample */
	struct fine_reads *fine_reads; /* the pulse test's reads between samples */
	sd_event_source *sample_timer; /* every cfg->sample_interval_usec, on realtime multiples */
	struct history *history;       /* derived device rates and probe points for /api/v1/history */
	struct ratelimit sample_log_ratelimit;
	struct ratelimit publish_log_ratelimit;
	uint64_t diskstats_parse_errors_seen; /* the sampler's count at the last sample */
	bool has_diskstats_garbage;	      /* the last sample skipped malformed lines */
	struct identities ids;		      /* the probes' identities, aligned with cfg->probes */
	struct registry *registry;
	double process_start_time; /* seconds since the epoch, for process_start_time_seconds */
	int wake_fd;		   /* eventfd: probe threads ask for a publish */
	sd_event_source *wake_source;
	struct scheduler *scheduler;
	struct pin_store *pins;		   /* the probe directories' filesystems, in the state directory */
	struct ceiling_gate *ceiling_gate; /* when ceiling probes may run; fed by the sampler */
	struct http_server *http;
};

/* Load the configuration the command line asks for (--config, else
 * /etc/iopsd/iopsd.conf when it exists, else the built-in default) and apply
 * command-line overrides. Logs what went wrong and returns -EINVAL for a
 * bad config (FILE:LINE messages), -ENOMEM, or the -errno of a file that
 * cannot be read (-ENOENT, -EACCES, ...). */
int daemon_load_config(const struct cli_args *args, struct config **ret);

/* What --check-config can tell of the start beyond the file: every listen
 * address parses and resolves as the server will bind it (else -EINVAL,
 * logged), and a warning for each probe directory that does not exist (yet)
 * or is not a directory (a warning only: a mount may appear after boot). */
int daemon_check_start(const struct config *cfg);

/* Whether this host runs each probe engine: a summary of io_uring's state
 * into buf ("io_uring: available", or why not), and a warning logged for
 * every probe whose engine the host refuses (its runs would fail; no probe
 * changes engine). */
void daemon_check_engines(const struct config *cfg, char *buf, size_t len);

/* Build the daemon: modules in dependency order (event loop, registry,
 * sampler and history, ceiling gate and scheduler, HTTP last). Takes
 * ownership of cfg, also on failure. Logs and returns -errno; -EINVAL
 * means a configuration error (exit 78). */
int daemon_new(const struct cli_args *args, struct config *cfg, struct daemon **ret);
/* Free the modules in the reverse order; copes with a half-built daemon. */
struct daemon *daemon_free(struct daemon *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct daemon *, daemon_free);

/* Run until SIGTERM/SIGINT. Returns 0 on a clean stop. */
int daemon_run(struct daemon *d);
