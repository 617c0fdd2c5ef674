/* Daemon lifecycle: event loop, signals, reload, sd_notify and watchdog. */
#include "daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/eventfd.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "ceiling_gate.h"
#include "fine_reads.h"
#include "fit.h"
#include "detect.h"
#include "identities.h"
#include "proclimits.h"
#include "process_stats.h"
#include "sampler.h"
#include "history.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "macro.h"
#include "pins.h"
#include "probe.h"
#include "registry.h"
#include "scheduler.h"
#include "timeutil.h"

static int replace_string(char **dst, const char *value)
{
	char *s;

	if (!value) {
		return 0;
	}
	s = strdup(value);
	if (!s) {
		return -ENOMEM;
	}
	free(*dst);
	*dst = s;
	return 0;
}

static void print_config_errors(const struct config_errors *errs)
{
	for (size_t i = 0; i < errs->n; i++) {
		const struct config_error *e = &errs->items[i];

		if (e->line > 0) {
			log_error("%s:%u: %s", e->file, e->line, e->message ? e->message : "out of memory");
		} else {
			log_error("%s: %s", e->file, e->message ? e->message : "out of memory");
		}
	}
	if (errs->n_dropped > 0) {
		log_error("... and %zu more errors", errs->n_dropped);
	}
}

void daemon_check_engines(const struct config *cfg, char *buf, size_t len)
{
	char msg[_PROBE_ENGINE_MAX][256];
	int k[_PROBE_ENGINE_MAX];

	for (size_t e = 0; e < _PROBE_ENGINE_MAX; e++) {
		k[e] = probe_engine_check((enum probe_engine)e, msg[e], sizeof(msg[e]));
	}
	if (k[PROBE_ENGINE_IO_URING] >= 0) {
		snprintf(buf, len, "io_uring: available");
	} else {
		snprintf(buf, len, "io_uring: unavailable (%s)", msg[PROBE_ENGINE_IO_URING]);
	}
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];

		if (k[pc->ioengine] < 0) {
			log_warning(
			    "[%s]: ioengine=%s is not available on this host: %s; its runs will fail.",
			    pc->name, probe_engine_to_string(pc->ioengine), msg[pc->ioengine]);
		}
	}
}

/* A probe directory that is missing now is a warning, not an error: a mount
 * may appear after boot, and the probe's runs fail (reason "enoent") only
 * until it does. */
static void check_probe_directory(const struct config *cfg, const struct probe_config *pc)
{
	struct stat st;

	if (!pc->directory) {
		return;
	}
	if (stat(pc->directory, &st) < 0) {
		if (errno == ENOENT) {
			log_warning(
			    "%s:%u: [%s]: directory '%s' does not exist (yet); its runs fail until it does.",
			    cfg->path, pc->line, pc->name, pc->directory);
		} else {
			log_warning_errno(errno, "%s:%u: [%s]: directory '%s' cannot be checked: %m.",
					  cfg->path, pc->line, pc->name, pc->directory);
		}
	} else if (!S_ISDIR(st.st_mode)) {
		log_warning("%s:%u: [%s]: '%s' is not a directory; its runs fail until it is.", cfg->path,
			    pc->line, pc->name, pc->directory);
	}
}

int daemon_check_start(const struct config *cfg)
{
	int r = listen_check(cfg);

	if (r >= 0) {
		r = limits_check(cfg);
	}

	for (size_t i = 0; i < cfg->n_probes; i++) {
		check_probe_directory(cfg, &cfg->probes[i]);
	}
	return r < 0 ? r : 0;
}

/* What loading and fitting did to fio keys, one line each. */
static void print_config_notices(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_notices; i++) {
		const struct config_error *n = &cfg->notices[i];

		if (n->line > 0) {
			log_notice("%s:%u: %s", n->file, n->line, n->message);
		} else {
			log_notice("%s: %s", n->file, n->message);
		}
	}
}

/* The configuration file at `path`, read as --once reads a job file (in
 * the working directory) or as the daemon does; errors are logged. */
static int load_config_file(const char *path, bool is_once, struct config **ret)
{
	_cleanup_free_ char *cwd = NULL;
	struct config_errors errs = {0};
	int r;

	if (is_once) {
		cwd = getcwd(NULL, 0);
		if (!cwd) {
			return log_error_errno(-errno, "Cannot get the working directory: %m");
		}
	}
	r = config_load_job_file(path, cwd, &errs, ret);
	if (r == -EINVAL) {
		print_config_errors(&errs);
		config_errors_clear(&errs);
		return -EINVAL;
	}
	if (r == -EFBIG) {
		/* readable, but no configuration of ours is that long */
		log_error_errno(r, "%s: cannot read configuration: %m", path);
		return -EINVAL;
	}
	if (r < 0) {
		/* the errno goes on to main(): a file we cannot read is
		 * EX_NOINPUT, not a configuration error */
		return log_error_errno(r, "%s: cannot read configuration: %m", path);
	}
	return 0;
}

int daemon_load_config(const struct cli_args *args, struct config **ret)
{
	struct config *cfg = NULL;
	const char *path = args->config_path;
	int r;

	if (!path && access(CONFIG_DEFAULT_PATH, F_OK) == 0) {
		path = CONFIG_DEFAULT_PATH;
	}
	if (path) {
		r = load_config_file(path, args->once, &cfg);
		if (r < 0) {
			return r;
		}
	} else {
		r = config_load_builtin(&cfg);
		if (r < 0) {
			return log_error_errno(r, "Failed to load the built-in configuration: %m");
		}
	}

	/* Command-line values win over the file. */
	if (replace_string(&cfg->listen_address, args->listen_address) < 0 ||
	    replace_string(&cfg->web_config_file, args->web_config_file) < 0 ||
	    replace_string(&cfg->device_include, args->device_include) < 0 ||
	    replace_string(&cfg->device_exclude, args->device_exclude) < 0) {
		config_free(cfg);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	if (args->log_level >= 0) {
		cfg->log_level = args->log_level;
	}
	/* --once runs a job file as fio would; the daemon on its schedule */
	if (!args->once && config_fit_schedule(cfg) < 0) {
		config_free(cfg);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	print_config_notices(cfg);
	*ret = cfg;
	return 0;
}

/* The probes' devices from the last sample's topology, for the scheduler,
 * the ceiling gate and the registry's labels. */
static void daemon_place_probes(struct daemon *d)
{
	identities_place(&d->ids, sampler_last_sample(d->sampler)->topology);
	registry_update_devices(d->registry);
}

/* One device sample: into the registry (published by the caller) and the
 * history. Failures are counted and logged, rate-limited, and the daemon
 * carries on. */
static void daemon_sample(struct daemon *d)
{
	struct sampler_snapshot *snap = NULL;
	int r;

	/* probe runs since the last sample: iopsd's own I/O, ceiling measurements */
	ceiling_gate_collect(d->ceiling_gate, detect_ceilings(d->detect));
	r = sampler_sample(d->sampler, &snap);
	if (r >= 0) {
		/* detection: ceilings, holds, shared ceilings, the instance */
		r = detect_run(d->detect, sampler_last_sample(d->sampler), snap);
		if (r < 0) {
			snap = sampler_snapshot_unref(snap);
		}
	}
	if (r < 0) {
		if (ratelimit_below(&d->sample_log_ratelimit)) {
			log_warning_errno(r, "Failed to sample %s/diskstats: %m, ignoring.", d->args->procfs);
		}
		return;
	}
	/* malformed lines: one line when they start and one when they stop,
	 * not one per sample (the count is in iopsd_diskstats_parse_errors_total) */
	if (snap->parse_errors_total > d->diskstats_parse_errors_seen) {
		if (!d->has_diskstats_garbage) {
			log_warning("Skipping %" PRIu64 " malformed line(s) of %s/diskstats, ignoring them.",
				    snap->parse_errors_total - d->diskstats_parse_errors_seen,
				    d->args->procfs);
		}
		d->has_diskstats_garbage = true;
	} else if (d->has_diskstats_garbage) {
		log_info("%s/diskstats parses cleanly again.", d->args->procfs);
		d->has_diskstats_garbage = false;
	}
	d->diskstats_parse_errors_seen = snap->parse_errors_total;
	registry_set_samples(d->registry, snap);
	daemon_place_probes(d);
	ceiling_gate_refresh(d->ceiling_gate, detect_ceilings(d->detect));
	r = history_append(d->history, snap);
	if (r < 0 && ratelimit_below(&d->sample_log_ratelimit)) {
		log_warning_errno(r, "Failed to record device history: %m, ignoring.");
	}
	sampler_snapshot_unref(snap);
	fine_reads_after_sample(d->fine_reads);
}

/* Publish what the modules hold now, with the process's figures and the
 * host's name read here (the host may be renamed while we run). */
static int daemon_publish_now(struct daemon *d)
{
	struct process_stats ps = {0};
	char hostname[HOST_NAME_MAX + 1] = "";
	int r;

	r = process_stats_read(&ps);
	if (r < 0) {
		log_debug_errno(r, "Cannot read /proc/self: %m, omitting process_* metrics.");
	}
	ps.start_time_seconds = d->process_start_time;
	if (gethostname(hostname, sizeof(hostname)) < 0) {
		hostname[0] = '\0';
	}
	hostname[sizeof(hostname) - 1] = '\0';
	registry_set_process(d->registry, &ps, hostname);
	return registry_publish(d->registry);
}

/* On failure (out of memory) the previous snapshot stays served; logged,
 * rate-limited. */
static void daemon_publish(struct daemon *d)
{
	int r = daemon_publish_now(d);

	if (r < 0 && ratelimit_below(&d->publish_log_ratelimit)) {
		log_warning_errno(r, "Failed to publish a snapshot: %m, serving the previous one.");
	}
}

static int on_sample_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	uint64_t interval = d->cfg->sample_interval_usec, now = 0, next = usec + interval;

	daemon_sample(d);
	daemon_publish(d);

	/* fixed rate from the scheduled time, so samples stay evenly spaced;
	 * after a stall (suspend, a stopped process) skip the missed ticks */
	(void)sd_event_now(d->event, CLOCK_MONOTONIC, &now);
	while (next <= now) {
		next += interval;
	}
	if (sd_event_source_set_time(s, next) < 0 || sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0) {
		log_error("Failed to schedule the next device sample, device sampling stopped.");
	}
	return 0;
}

/* (Re)arm the sample timer for the next multiple of the interval on the
 * realtime clock, so that samples land on whole seconds (with the default
 * 1 s) and line up with other 1 s tools; later ticks follow at a fixed rate
 * on CLOCK_MONOTONIC, with 1 ms accuracy. */
static int daemon_schedule_sampling(struct daemon *d)
{
	uint64_t interval = d->cfg->sample_interval_usec, mono = 0, real = now_usec(CLOCK_REALTIME);
	uint64_t next;
	int r;

	r = sd_event_now(d->event, CLOCK_MONOTONIC, &mono);
	if (r < 0) {
		return r;
	}
	next = mono + (interval - real % interval);
	if (d->sample_timer) {
		r = sd_event_source_set_time(d->sample_timer, next);
		if (r >= 0) {
			r = sd_event_source_set_enabled(d->sample_timer, SD_EVENT_ONESHOT);
		}
		return r;
	}
	return sd_event_add_time(d->event, &d->sample_timer, CLOCK_MONOTONIC, next, USEC_PER_MSEC,
				 on_sample_timer, d);
}

static void daemon_set_log_level(const struct config *cfg)
{
	if (cfg->log_level >= 0) {
		log_max_level = cfg->log_level;
	}
}

/* The sampler, detection, history and sample timer on cfg, which becomes
 * d->cfg. */
static void daemon_apply_sampling(struct daemon *d, struct config *cfg)
{
	uint64_t old_interval = d->cfg->sample_interval_usec;
	int r;

	/* the sampler points into the configuration: move it over first */
	r = sampler_set_config(d->sampler, cfg);
	r = detect_set_config(d->detect, cfg) < 0 ? -EINVAL : r;
	if (r < 0) {
		log_error_errno(
		    r, "Invalid device_include/device_exclude: %m, keeping the previous device filter.");
	}
	r = history_set_config(d->history, cfg);
	if (r < 0) {
		log_error_errno(r, "Failed to resize the history: %m, keeping the previous history.");
	}
	d->cfg = cfg;
	if (old_interval != cfg->sample_interval_usec) {
		r = daemon_schedule_sampling(d);
		if (r < 0) {
			log_error_errno(r, "Failed to reschedule device sampling: %m");
		}
	}
}

/* The web config file read again, with the new connection limits; on
 * failure (logged) the running web config stays. */
static int daemon_apply_http(struct daemon *d)
{
	char err[512];
	int r;

	r = http_server_reload(d->http, d->cfg, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	if (d->cfg->web_config_file) {
		log_info("Reloaded the web config %s.", d->cfg->web_config_file);
	}
	return 0;
}

/* The probes of d->cfg: identities, registry, ceiling gate, scheduler.
 * Returns -errno (logged) when they cannot all be set up. */
static int daemon_apply_probes(struct daemon *d)
{
	struct identities ids = {0};
	int r;

	r = identities_build(d->cfg, &d->ids, &ids);
	if (r >= 0) {
		identities_clear(&d->ids);
		d->ids = ids;
		sampler_set_identities(d->sampler, d->ids.ids, d->ids.n);
		r = registry_set_probes(d->registry, d->cfg, d->ids.ids);
	}
	if (r < 0) {
		/* the gate must not keep probes of the old configuration */
		ceiling_gate_clear(d->ceiling_gate);
		return log_error_errno(r, "Failed to set up the probes: %m");
	}
	/* new probes' devices, before their first runs */
	daemon_place_probes(d);
	daemon_publish(d);
	r = ceiling_gate_set_config(d->ceiling_gate, d->cfg, d->ids.ids);
	if (r < 0) {
		return log_error_errno(r, "Failed to set up the ceiling probes: %m");
	}
	r = scheduler_start(d->scheduler, d->cfg, d->ids.ids);
	if (r < 0) {
		return log_error_errno(r, "Failed to start the probes: %m");
	}
	return 0;
}

/* cfg in d->cfg's place for sampling and the probes: -errno (logged) when
 * they cannot be set up. */
static int daemon_apply_probing(struct daemon *d, struct config *cfg)
{
	daemon_set_log_level(cfg);
	/* probe threads read the configuration: stop them before it goes */
	scheduler_stop(d->scheduler);
	daemon_apply_sampling(d, cfg);
	return daemon_apply_probes(d);
}

/* Swap a new, already validated configuration in for the running one (a
 * reload: every module exists). When a part of it cannot be set up (the
 * web config it names, threads for its probes) the running configuration
 * is put back and the reload fails. The configuration that goes is freed
 * last, once no module points into it. */
static int daemon_apply_config(struct daemon *d, struct config *cfg)
{
	struct config *old = d->cfg;
	int r;

	if (strcmp(old->listen_address, cfg->listen_address) != 0) {
		log_warning("listen_address changed from %s to %s: takes effect on restart, ignoring.",
			    old->listen_address, cfg->listen_address);
	}
	r = daemon_apply_probing(d, cfg);
	/* the web config last: one that cannot be loaded changes nothing of
	 * the server, and the probes can still go back */
	if (r >= 0) {
		r = daemon_apply_http(d);
	}
	if (r < 0) {
		if (daemon_apply_probing(d, old) < 0) {
			log_error("Failed to put the previous probes back in full; see above.");
		}
		config_free(cfg);
		return r;
	}
	config_free(old);
	return 0;
}

static void reload_failed(struct daemon *d, const char *why)
{
	log_error("Reload failed: %s, keeping the running configuration.", why);
	registry_set_reload(d->registry, false);
	daemon_publish(d);
	sd_notify(0, "READY=1\nSTATUS=Reload failed, running the previous configuration");
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;
	struct config *cfg = NULL;
	char summary[512];
	int r;

	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration",
		   now_usec(CLOCK_MONOTONIC));
	r = daemon_load_config(d->args, &cfg);
	if (r >= 0 && limits_check(cfg) < 0) {
		config_free(cfg);
		r = -EINVAL;
	}
	if (r < 0) {
		reload_failed(d, "the configuration has errors");
		return 0;
	}
	if (daemon_apply_config(d, cfg) < 0) {
		reload_failed(d, "the new configuration could not be set up");
		return 0;
	}
	registry_set_reload(d->registry, true);
	daemon_publish(d);
	config_summary(d->cfg, summary, sizeof(summary));
	log_info("Reloaded %s", summary);
	sd_notifyf(0, "READY=1\nSTATUS=Running: %s", summary);
	return 0;
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;

	log_info("Received %s, stopping.", strsignal((int)si->ssi_signo));
	sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
	return sd_event_exit(d->event, 0);
}

/* A probe thread finished a run: publish a snapshot with its result. */
static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
		log_warning_errno(errno, "Failed to read the wake eventfd: %m, ignoring.");
	}
	daemon_publish(d);
	return 0;
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;

	sd_notify(0, "WATCHDOG=1");
	/* time sources are one-shot: re-arm for the next half period */
	if (sd_event_source_set_time(s, usec + d->watchdog_usec / 2) < 0) {
		return log_error_errno(-EIO, "Failed to re-arm the watchdog timer");
	}
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* The event loop with its signal handlers and, under a systemd watchdog,
 * the keep-alive timer. */
static int daemon_setup_event(struct daemon *d)
{
	sigset_t mask;
	int r;

	r = sd_event_default(&d->event);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the event loop: %m");
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((r = sd_event_add_signal(d->event, NULL, SIGTERM, on_terminate, d)) < 0 ||
	    (r = sd_event_add_signal(d->event, NULL, SIGINT, on_terminate, d)) < 0 ||
	    (r = sd_event_add_signal(d->event, NULL, SIGHUP, on_reload, d)) < 0) {
		return log_error_errno(r, "Failed to install signal handlers: %m");
	}
	if (sd_watchdog_enabled(0, &d->watchdog_usec) > 0) {
		r = sd_event_add_time_relative(d->event, NULL, CLOCK_MONOTONIC, d->watchdog_usec / 2, 0,
					       on_watchdog, d);
		if (r < 0) {
			return log_error_errno(r, "Failed to set up the watchdog: %m");
		}
	}
	return 0;
}

/* The registry with the configured probes, and the eventfd through which
 * probe threads ask the main loop to publish. */
static int daemon_setup_registry(struct daemon *d)
{
	int r;

	r = registry_new(&d->registry);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the registry: %m");
	}
	r = process_stats_start_time(&d->process_start_time);
	if (r < 0) {
		log_warning_errno(r, "Cannot read the process start time from /proc: %m, ignoring.");
		d->process_start_time = usec_to_sec(now_usec(CLOCK_REALTIME));
	}
	r = identities_build(d->cfg, NULL, &d->ids);
	if (r >= 0) {
		r = registry_set_probes(d->registry, d->cfg, d->ids.ids);
	}
	if (r < 0) {
		return log_error_errno(r, "Failed to set up the probes: %m");
	}
	d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->wake_fd < 0) {
		return log_error_errno(errno, "Failed to create the wake eventfd: %m");
	}
	r = sd_event_add_io(d->event, &d->wake_source, d->wake_fd, EPOLLIN, on_wake, d);
	if (r < 0) {
		return log_error_errno(r, "Failed to watch the wake eventfd: %m");
	}
	return 0;
}

/* The device sampler and the history. The first sample is taken here,
 * before READY=1, so that the first scrape already has every device. */
static int daemon_setup_sampling(struct daemon *d)
{
	int r;

	r = sampler_new(d->args->procfs, d->args->sysfs, d->cfg, &d->sampler);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the device sampler: %m");
	}
	sampler_set_identities(d->sampler, d->ids.ids, d->ids.n);
	r = detect_new(d->cfg, &d->detect);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the device sampler: %m");
	}
	r = fine_reads_new(d->event, d->sampler, d->detect, &d->fine_reads);
	if (r < 0) {
		return log_error_errno(r, "Failed to allocate the reads between samples: %m");
	}
	r = history_new(d->cfg, &d->history);
	if (r < 0) {
		return log_error_errno(r, "Failed to allocate the history: %m");
	}
	registry_set_history(d->registry, d->history);
	daemon_sample(d);
	r = daemon_schedule_sampling(d);
	if (r < 0) {
		return log_error_errno(r, "Failed to schedule device sampling: %m");
	}
	return 0;
}

/* A probe run completed, on its thread: into the registry, and to the
 * ceiling gate (iopsd's own I/O, a ceiling probe's measurement). */
static void on_probe_done(void *userdata, const struct probe_identity *id, const struct probe_result *res)
{
	struct daemon *d = userdata;

	registry_probe_done(d->registry, id, res);
	ceiling_gate_probe_done(d->ceiling_gate, id, res);
}

/* The ceiling gate and the scheduler; probe threads report through
 * on_probe_done() and the wake eventfd. */
static int daemon_setup_probes(struct daemon *d)
{
	char engines[320];
	int r;

	daemon_check_engines(d->cfg, engines, sizeof(engines));
	log_debug("Probe engines: %s", engines);
	r = ceiling_gate_new(&d->ceiling_gate);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the ceiling gate: %m");
	}
	r = ceiling_gate_set_config(d->ceiling_gate, d->cfg, d->ids.ids);
	if (r < 0) {
		return log_error_errno(r, "Failed to set up the ceiling probes: %m");
	}
	r = scheduler_new(on_probe_done, d, d->wake_fd, d->args->sysfs, &d->scheduler);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the probe scheduler: %m");
	}
	/* ceiling probes wait for a quiet device */
	scheduler_set_gate(d->scheduler, ceiling_gate_check, d->ceiling_gate);
	scheduler_set_pins(d->scheduler, d->pins);
	r = scheduler_start(d->scheduler, d->cfg, d->ids.ids);
	if (r < 0) {
		return log_error_errno(r, "Failed to start the probe scheduler: %m");
	}
	return 0;
}

/* The first snapshot, then HTTP: it serves what the modules above publish,
 * and is bound before READY=1. -EINVAL is a configuration error (web
 * config, listen address). */
static int daemon_setup_http(struct daemon *d)
{
	struct listen_sockets ls;
	char err[512];
	int r;

	r = daemon_publish_now(d);
	if (r < 0) {
		return log_error_errno(r, "Failed to publish the first snapshot: %m");
	}
	r = http_server_new(d->cfg, d->registry, d->event, err, sizeof(err), &d->http);
	if (r < 0) {
		return log_error_errno(r, "%s", err);
	}
	r = listen_open(d->cfg->listen_address, &ls);
	if (r < 0) {
		return r;
	}
	r = http_server_start(d->http, ls.fds, ls.n, err, sizeof(err));
	if (r < 0) {
		return log_error_errno(r, "%s", err);
	}
	if (ls.is_activated) {
		log_info("Serving HTTP%s on %zu socket-activated socket(s).",
			 http_server_has_tls(d->http) ? "S" : "", ls.n);
	} else {
		log_info("Serving HTTP%s on %s.", http_server_has_tls(d->http) ? "S" : "",
			 d->cfg->listen_address);
	}
	return 0;
}

/* The state directory, and the probe directories' pins kept there. */
static int daemon_setup_state(struct daemon *d)
{
	size_t dropped = 0;
	int r;

	if (mkdir(d->cfg->state_directory, 0750) < 0 && errno != EEXIST) {
		log_warning_errno(errno, "Failed to create state directory %s: %m, ignoring.",
				  d->cfg->state_directory);
	}
	r = pin_store_new(d->cfg->state_directory, &d->pins, &dropped);
	if (r < 0) {
		return log_error_errno(r, "Failed to read the probe directories' pins: %m");
	}
	if (dropped > 0) {
		log_info("%s/" PINS_FILE
			 ": %zu probe directory pin(s) of an earlier boot, whose device numbers "
			 "may name other filesystems now: each probe pins its directory again at its first "
			 "good run.",
			 d->cfg->state_directory, dropped);
	}
	return 0;
}

static int (*const setup_steps[])(struct daemon *d) = {
    daemon_setup_event, daemon_setup_registry, daemon_setup_sampling, daemon_setup_probes, daemon_setup_http,
};

int daemon_new(const struct cli_args *args, struct config *cfg, struct daemon **ret)
{
	_cleanup_(daemon_freep) struct daemon *d = NULL;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d) {
		config_free(cfg);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	/* from here on daemon_free() releases whatever was built, in reverse */
	d->cfg = cfg;
	d->args = args;
	d->wake_fd = -1;
	d->sample_log_ratelimit = RATELIMIT_INIT(60 * USEC_PER_SEC, 5);
	d->publish_log_ratelimit = RATELIMIT_INIT(60 * USEC_PER_SEC, 5);
	daemon_set_log_level(d->cfg);
	sd_notify(0, "STATUS=Starting: binding the HTTP socket, taking the first device sample");
	r = daemon_setup_state(d);
	if (r < 0) {
		return r;
	}

	/* Modules, in dependency order; daemon_free() releases them in reverse. */
	for (size_t i = 0; i < ELEMENTSOF(setup_steps); i++) {
		r = setup_steps[i](d);
		if (r < 0) {
			return r;
		}
	}
	*ret = TAKE_PTR(d);
	return 0;
}

struct daemon *daemon_free(struct daemon *d)
{
	if (!d) {
		return NULL;
	}
	/* first: stops the server thread, so nothing below is read by a request */
	http_server_free(d->http);
	scheduler_free(d->scheduler);
	/* the runs it cancelled end their I/O and free themselves */
	if (!probe_threads_wait(PROBE_THREADS_WAIT_USEC)) {
		log_warning("Probe I/O is still pending in the kernel after %u s, exiting without it.",
			    (unsigned)(PROBE_THREADS_WAIT_USEC / USEC_PER_SEC));
	}
	pin_store_free(d->pins);
	ceiling_gate_free(d->ceiling_gate);
	sd_event_source_unref(d->sample_timer);
	history_free(d->history);
	fine_reads_free(d->fine_reads);
	detect_free(d->detect);
	identities_clear(&d->ids);
	sampler_free(d->sampler);
	sd_event_source_unref(d->wake_source);
	if (d->wake_fd >= 0) {
		close(d->wake_fd);
	}
	registry_free(d->registry);
	sd_event_unref(d->event);
	config_free(d->cfg);
	free(d);
	return NULL;
}

int daemon_run(struct daemon *d)
{
	char summary[512];
	int r;

	config_summary(d->cfg, summary, sizeof(summary));
	log_info("iopsd started: %s", summary);
	sd_notifyf(0, "READY=1\nSTATUS=Running: %s", summary);

	r = sd_event_loop(d->event);
	if (r < 0) {
		return log_error_errno(r, "Event loop failed: %m");
	}
	return 0;
}
