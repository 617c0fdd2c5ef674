/* /metrics: the daemon itself (build, health, snapshot, process_*) and its
 * sampler (sample time, parse errors, /proc/pressure/io). */
#include "prom.h"

#include "iopsd-build.h"
#include "macro.h"
#include "sampler.h"

/* ---- process and self ---- */

void prom_render_self(struct prom_writer *w, const struct snapshot *s)
{
	const struct process_stats *p = &s->process;
	struct prom_label l = {"version", IOPSD_VERSION};

	prom_family(w, "iopsd_build_info", FAMILY_GAUGE, "Always 1; the version of the running iopsd.");
	prom_sample(w, "iopsd_build_info", &l, 1, 1);
	prom_family(w, "iopsd_healthy", FAMILY_GAUGE,
		    "1 while every probe and the sampler run on schedule (the /healthz verdict), else 0.");
	prom_sample(w, "iopsd_healthy", NULL, 0, s->is_healthy ? 1 : 0);
	prom_family(w, "iopsd_snapshot_timestamp_seconds", FAMILY_GAUGE,
		    "When the served snapshot was published, seconds since the epoch.");
	prom_sample(w, "iopsd_snapshot_timestamp_seconds", NULL, 0,
		    (double)s->realtime_usec / (double)USEC_PER_SEC);
	prom_family(w, "iopsd_snapshot_publishes_total", FAMILY_COUNTER, "Snapshots published since start.");
	prom_sample_u64(w, "iopsd_snapshot_publishes_total", NULL, 0, s->generation);
	prom_family(w, "iopsd_snapshot_render_seconds", FAMILY_GAUGE,
		    "Time the previous publish took to pre-render the /metrics bodies scraped lately.");
	prom_sample(w, "iopsd_snapshot_render_seconds", NULL, 0, s->last_render_seconds);
	prom_family(w, "iopsd_start_time_seconds", FAMILY_GAUGE,
		    "When the daemon started, seconds since the epoch.");
	prom_sample(w, "iopsd_start_time_seconds", NULL, 0,
		    (double)s->start_realtime_usec / (double)USEC_PER_SEC);
	prom_family(w, "iopsd_config_last_reload_successful", FAMILY_GAUGE,
		    "0 when the last reload failed and the previous configuration runs on, else 1.");
	prom_sample(w, "iopsd_config_last_reload_successful", NULL, 0, s->has_failed_reload ? 0 : 1);
	prom_family(w, "iopsd_config_last_reload_success_timestamp_seconds", FAMILY_GAUGE,
		    "When the running configuration was loaded (the start or the last good reload), seconds "
		    "since the epoch.");
	prom_sample(w, "iopsd_config_last_reload_success_timestamp_seconds", NULL, 0,
		    (double)(s->config_loaded_realtime_usec ? s->config_loaded_realtime_usec
							    : s->start_realtime_usec) /
			(double)USEC_PER_SEC);

	if (!p->available) {
		return;
	}
	prom_family(w, "process_cpu_seconds_total", FAMILY_COUNTER,
		    "CPU time (user and system) the daemon used, in seconds.");
	prom_sample(w, "process_cpu_seconds_total", NULL, 0, p->cpu_seconds);
	prom_family(w, "process_max_fds", FAMILY_GAUGE,
		    "The limit on open file descriptors (RLIMIT_NOFILE).");
	prom_sample_u64(w, "process_max_fds", NULL, 0, p->max_fds);
	prom_family(w, "process_open_fds", FAMILY_GAUGE, "File descriptors the daemon has open.");
	prom_sample_u64(w, "process_open_fds", NULL, 0, p->open_fds);
	prom_family(w, "process_resident_memory_bytes", FAMILY_GAUGE,
		    "Resident set size of the daemon in bytes.");
	prom_sample_u64(w, "process_resident_memory_bytes", NULL, 0, p->resident_memory_bytes);
	prom_family(w, "process_start_time_seconds", FAMILY_GAUGE,
		    "When the process started, seconds since the epoch.");
	prom_sample(w, "process_start_time_seconds", NULL, 0, p->start_time_seconds);
	prom_family(w, "process_virtual_memory_bytes", FAMILY_GAUGE,
		    "Virtual memory size of the daemon in bytes.");
	prom_sample_u64(w, "process_virtual_memory_bytes", NULL, 0, p->virtual_memory_bytes);
}

void prom_render_sampler(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	if (!ss) {
		return;
	}
	prom_family(w, "iopsd_sample_timestamp_seconds", FAMILY_GAUGE,
		    "When the latest /proc/diskstats sample was taken, seconds since the epoch.");
	prom_sample(w, "iopsd_sample_timestamp_seconds", NULL, 0,
		    (double)ss->realtime_usec / (double)USEC_PER_SEC);
	prom_family(w, "iopsd_diskstats_parse_errors_total", FAMILY_COUNTER,
		    "Malformed /proc/diskstats lines skipped since start.");
	prom_sample_u64(w, "iopsd_diskstats_parse_errors_total", NULL, 0, ss->parse_errors_total);
	if (ss->pressure.available) {
		prom_family(w, "iopsd_pressure_io_waiting_seconds_total", FAMILY_COUNTER,
			    "Time in seconds that some tasks were stalled on I/O (/proc/pressure/io some).");
		prom_sample(w, "iopsd_pressure_io_waiting_seconds_total", NULL, 0,
			    (double)ss->pressure.some_total_usec / (double)USEC_PER_SEC);
		prom_family(
		    w, "iopsd_pressure_io_stalled_seconds_total", FAMILY_COUNTER,
		    "Time in seconds that all non-idle tasks were stalled on I/O (/proc/pressure/io full).");
		prom_sample(w, "iopsd_pressure_io_stalled_seconds_total", NULL, 0,
			    (double)ss->pressure.full_total_usec / (double)USEC_PER_SEC);
	}
}
