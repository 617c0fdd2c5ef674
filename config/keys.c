/* The key table. Every fio job option (fio 3.33's general options, and the
 * engine options its example job files use) has a row, so that a job file
 * from a runbook either loads or is refused with a reason, never with
 * "unknown key". */
#include "keys.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "macro.h"
#include "units.h"

#define MIB	     (1ULL << 20)
#define GIB	     (1ULL << 30)
#define TIB	     (1ULL << 40)
#define SEC	     USEC_PER_SEC
#define MIN_INTERVAL (100ULL * USEC_PER_MSEC)
#define MAX_INTERVAL (24ULL * 3600ULL * SEC)

#define G(o) offsetof(struct config, o)
#define P(o) offsetof(struct probe_config, o)
#define D(o) offsetof(struct device_config, o)
#define I(o) offsetof(struct instance_config, o)

/* An iopsd daemon setting, in [global]. */
#define GLOBAL(n, k, sp, o, mn, mx, s, t)                                                                    \
	{                                                                                                    \
		.name = n, .scope = CONFIG_SCOPE_GLOBAL, .cls = CONFIG_KEY_HONOURED, .kind = k,              \
		.special = sp, .offset = G(o), .min = mn, .max = mx, .seen = s, .text = t                    \
	}
#define DEVICE(n, k, sp, o, mn, mx, t)                                                                       \
	{                                                                                                    \
		.name = n, .scope = CONFIG_SCOPE_DEVICE, .cls = CONFIG_KEY_HONOURED, .kind = k,              \
		.special = sp, .offset = D(o), .min = mn, .max = mx, .text = t                               \
	}
#define INSTANCE(n, k, sp, o, mn, mx, t)                                                                     \
	{                                                                                                    \
		.name = n, .scope = CONFIG_SCOPE_INSTANCE, .cls = CONFIG_KEY_HONOURED, .kind = k,            \
		.special = sp, .offset = I(o), .min = mn, .max = mx, .text = t                               \
	}
/* A probe key with fio's meaning (or iopsd's own); a1, a2: aliases. */
#define PROBE(n, a1, a2, k, sp, o, mn, mx, s, t)                                                             \
	{                                                                                                    \
		.name = n, .aliases = {a1, a2}, .scope = CONFIG_SCOPE_PROBE, .cls = CONFIG_KEY_HONOURED,     \
		.kind = k, .special = sp, .offset = P(o), .min = mn, .max = mx, .seen = s, .text = t         \
	}
#define BUDGET(n, a1, k, o, mn, mx, s, t)                                                                    \
	{                                                                                                    \
		.name = n, .aliases = {a1}, .scope = CONFIG_SCOPE_PROBE, .cls = CONFIG_KEY_BUDGET,           \
		.kind = k, .offset = P(o), .min = mn, .max = mx, .seen = s, .text = t                        \
	}
#define IGNORED(n, a1, t)                                                                                    \
	{                                                                                                    \
		.name = n, .aliases = {a1}, .scope = CONFIG_SCOPE_PROBE, .cls = CONFIG_KEY_IGNORED,          \
		.text = t                                                                                    \
	}
/* Refused unless the value is one of `off` ("0|none"; NULL: any value refused). */
#define REFUSED(n, a1, o, t)                                                                                 \
	{                                                                                                    \
		.name = n, .aliases = {a1}, .scope = CONFIG_SCOPE_PROBE, .cls = CONFIG_KEY_REFUSED,          \
		.off = o, .text = t                                                                          \
	}

/* Shared reasons. */
#define WHY_REPORT "reporting only: iopsd reports each probe in its own metrics and JSON"
#define WHY_LOG	   "fio's log files: iopsd exports its measurements as metrics instead"
#define WHY_LAT                                                                                              \
	"fio's latency bookkeeping: iopsd always measures completion latency, on a thread that "             \
	"does nothing else"
#define WHY_CPU "CPU and memory placement of the submitting threads: the device sees the same I/O"
#define WHY_FILES                                                                                            \
	"file housekeeping: iopsd lays out its own probe files (fully written, synced) and keeps them"
#define WHY_EXIT       "ends jobs early on another job's exit or an error: iopsd runs each job to its own budget"
#define WHY_RANDOM     "iopsd's random offsets are uniform over the region, with repeats (as norandommap=1)"
#define WHY_VERIFY_OPT "only used with verify=, which iopsd refuses"
#define WHY_VERIFY                                                                                           \
	"iopsd never verifies data: a probe measures the device, and reading back to compare would "         \
	"change what it measures"
#define WHY_TRIM   "iopsd never trims (discards) blocks: it measures reads and writes"
#define WHY_ZONED  "zoned block devices and zone modes are not supported: iopsd probes a whole region"
#define WHY_REPLAY "replaying an I/O trace: iopsd generates its own I/O from the job's keys"
#define WHY_NET	   "an option of fio's network and remote-storage engines, which do not measure a local disk"
#define WHY_URING  "an option of fio's io_uring engines: iopsd's engine chooses its own submission settings"
#define WHY_ENGINE "an option of a fio engine that does not measure a disk (refused with ioengine=)"
#define WHY_SYNC   "O_SYNC or barrier writes change what a write costs: use fsync= to measure flushes"

const struct config_key config_keys[] = {
    /* [global]: the daemon */
    {.name = "listen_address",
     .aliases = {"web.listen-address"},
     .scope = CONFIG_SCOPE_GLOBAL,
     .cls = CONFIG_KEY_HONOURED,
     .kind = CONFIG_KIND_SPECIAL,
     .special = CONFIG_SPECIAL_LISTEN,
     .offset = G(listen_address),
     .text = "HOST:PORT, [IPV6]:PORT or :PORT, or a comma-separated list"},
    GLOBAL("state_directory", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_STATE_DIRECTORY, state_directory, 0, 0, 0,
	   "absolute path of iopsd's state"),
    GLOBAL("web_config_file", CONFIG_KIND_STRING, CONFIG_SPECIAL_NONE, web_config_file, 0, 0, 0,
	   "TLS and basic auth, exporter-toolkit format"),
    GLOBAL("log_level", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_LOG_LEVEL, log_level, 0, 0, 0,
	   "error, warning, info or debug"),
    GLOBAL("probe_interval", CONFIG_KIND_DURATION, CONFIG_SPECIAL_NONE, probe_interval_usec, MIN_INTERVAL,
	   MAX_INTERVAL, 0, "default time between two runs of a probe"),
    GLOBAL("sample_interval", CONFIG_KIND_DURATION, CONFIG_SPECIAL_NONE, sample_interval_usec, MIN_INTERVAL,
	   60 * SEC, CONFIG_SEEN_HISTORY, "time between two samples of /proc/diskstats"),
    GLOBAL("history", CONFIG_KIND_DURATION, CONFIG_SPECIAL_NONE, history_usec, 10 * SEC,
	   7ULL * 24 * 3600 * SEC, CONFIG_SEEN_HISTORY, "length of the in-memory history"),
    GLOBAL("device_include", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_REGEX, device_include, 0, 0, 0,
	   "extended regex of the devices to sample"),
    GLOBAL("device_exclude", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_REGEX, device_exclude, 0, 0, 0,
	   "extended regex of the devices to skip"),
    GLOBAL("ceiling_threshold", CONFIG_KIND_RATIO, CONFIG_SPECIAL_NONE, ceiling_threshold, 0, 0, 0,
	   "fraction of a declared limit counted as at the limit"),
    GLOBAL("max_connections", CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, max_connections, 1, 65536, 0,
	   "HTTP connections at once"),
    GLOBAL("max_connections_per_ip", CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, max_connections_per_ip, 1, 65536,
	   0, "HTTP connections from one address"),
    GLOBAL("connection_timeout", CONFIG_KIND_DURATION, CONFIG_SPECIAL_NONE, connection_timeout_usec, SEC,
	   3600 * SEC, 0, "idle and header timeout of a connection"),
    GLOBAL("max_devices", CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, max_devices, 1, 65536, 0,
	   "devices tracked at most"),
    GLOBAL("max_history_memory", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, max_history_memory, MIB, 64 * GIB,
	   CONFIG_SEEN_HISTORY, "memory of the history of device rates"),
    GLOBAL("max_probe_memory", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, max_probe_memory, MIB, 64 * GIB, 0,
	   "I/O buffers of all probes together"),
    GLOBAL("max_history_points", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, max_history_points, 1000, 100000000, 0,
	   "points in one /api/v1/history answer"),

    /* [device NAME] */
    DEVICE("iops_limit", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, iops_limit, 1, 100000000, "provisioned IOPS"),
    DEVICE("throughput_limit", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, throughput_limit, 1, 1ULL << 50,
	   "provisioned bytes per second"),
    DEVICE("burst_iops", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, burst_iops, 1, 100000000,
	   "burst rate of a gp2-style bucket"),
    DEVICE("burst_credits", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, burst_credits, 1, 1000000000000ULL,
	   "size of the bucket in I/O credits"),
    DEVICE("credit_rate", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_CREDIT_RATE, credit_rate, 0, 0,
	   "credits earned per second"),
    DEVICE("ceiling_threshold", CONFIG_KIND_RATIO, CONFIG_SPECIAL_NONE, ceiling_threshold, 0, 0,
	   "overrides the global ceiling_threshold"),
    DEVICE("volume_type", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_VOLUME_TYPE, provider.volume_type, 0, 0,
	   "EBS volume type: its limits, I/O unit and burst model"),
    DEVICE("iops", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, provider.iops, 1, 100000000,
	   "provisioned IOPS, volume_type's input"),
    DEVICE("throughput", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_PROVISIONED_THROUGHPUT, provider.throughput, 0,
	   0, "provisioned throughput, volume_type's input"),
    {.name = "iops_per_gb",
     .aliases = {"iopsPerGB"},
     .scope = CONFIG_SCOPE_DEVICE,
     .cls = CONFIG_KEY_HONOURED,
     .kind = CONFIG_KIND_U64,
     .offset = D(provider.iops_per_gb),
     .min = 1,
     .max = 1000000,
     .text = "provisioned IOPS per GiB, volume_type's input"},
    DEVICE("iops_unit", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, provider.iops_unit, 512, 64 * MIB,
	   "the provider's I/O unit"),
    DEVICE("read_iops_limit", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, provider.read_iops_limit, 1, 100000000,
	   "provisioned read IOPS"),
    DEVICE("write_iops_limit", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, provider.write_iops_limit, 1, 100000000,
	   "provisioned write IOPS"),
    DEVICE("read_throughput_limit", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, provider.read_throughput_limit, 1,
	   1ULL << 50, "provisioned read bytes per second"),
    DEVICE("write_throughput_limit", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, provider.write_throughput_limit,
	   1, 1ULL << 50, "provisioned write bytes per second"),

    /* [instance] */
    INSTANCE("iops_limit", CONFIG_KIND_U64, CONFIG_SPECIAL_NONE, iops_limit, 1, 100000000,
	     "IOPS of the instance over all its volumes"),
    INSTANCE("throughput_limit", CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, throughput_limit, 1, 1ULL << 50,
	     "bytes per second of the instance over all its volumes"),
    INSTANCE("devices", CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_REGEX, devices, 0, 0,
	     "extended regex of the volumes that count"),
    INSTANCE("ceiling_threshold", CONFIG_KIND_RATIO, CONFIG_SPECIAL_NONE, ceiling_threshold, 0, 0,
	     "overrides the global ceiling_threshold"),

    /* probe keys: iopsd's own */
    PROBE("interval", NULL, NULL, CONFIG_KIND_DURATION, CONFIG_SPECIAL_NONE, interval_usec, MIN_INTERVAL,
	  MAX_INTERVAL, CONFIG_SEEN_INTERVAL, "time between two runs of this probe"),
    PROBE("ceiling", NULL, NULL, CONFIG_KIND_BOOL, CONFIG_SPECIAL_NONE, ceiling, 0, 1, 0,
	  "a ceiling probe: a short burst while the device is quiet"),
    PROBE("allow_overlap", NULL, NULL, CONFIG_KIND_BOOL, CONFIG_SPECIAL_NONE, allow_overlap, 0, 1, 0,
	  "may run at the same time as other probes on its device"),

    /* probe keys: fio's, honoured */
    PROBE("rw", "readwrite", NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_RW, rw, 0, 0, 0,
	  "read, write, randread, randwrite, rw, randrw, rewrite, with fio's :N offset modifier; trims are "
	  "refused"),
    PROBE("bs", "blocksize", NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_BS, bs_rw, 512, 16 * MIB, 0,
	  "I/O size; READ,WRITE sizes as in fio"),
    PROBE("bsrange", "blocksize_range", NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_BSRANGE, bsdir, 512,
	  16 * MIB, 0, "MIN-MAX: each I/O a multiple of MIN up to MAX"),
    PROBE("random_distribution", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_RANDOM_DISTRIBUTION, dist, 0,
	  0, 0, "random offsets: random, zipf:THETA, pareto:H, normal:DEV, zoned:..., zoned_abs:... (fio's)"),
    PROBE("bssplit", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_BSSPLIT, bsdir, 512, 16 * MIB, 0,
	  "BS/PERCENT:...: each I/O's size drawn from the list"),
    PROBE("blockalign", "ba", NULL, CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, blockalign, 512, 16 * MIB, 0,
	  "alignment of random offsets (default: the smallest I/O)"),
    PROBE("size", NULL, NULL, CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, size, 512, TIB, CONFIG_SEEN_SIZE,
	  "the region the jobs share; fio's is per job, see SIZE"),
    PROBE("filesize", NULL, NULL, CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, filesize, 512, TIB,
	  CONFIG_SEEN_FILESIZE, "size of each probe file"),
    PROBE("nrfiles", "nr_files", NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, nrfiles, 1, UINT32_MAX,
	  CONFIG_SEEN_NRFILES, "probe files, used round robin"),
    PROBE("directory", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_DIRECTORY, directory, 0, 0,
	  CONFIG_SEEN_DIRECTORY, "probe file DIR/.iopsd/PROBE.dat"),
    PROBE("filename", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_FILENAME, filename, 0, 0,
	  CONFIG_SEEN_FILENAME, "a block device (read only), or a file: a probe file on its filesystem"),
    PROBE("offset", NULL, NULL, CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, offset, 0, 1ULL << 50,
	  CONFIG_SEEN_OFFSET, "start of the region in each file or the device"),
    PROBE("offset_increment", NULL, NULL, CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, offset_increment, 0,
	  1ULL << 50, CONFIG_SEEN_OFFSET_INCREMENT, "job N starts at offset + N * offset_increment"),
    PROBE("io_size", "io_limit", NULL, CONFIG_KIND_SIZE, CONFIG_SPECIAL_NONE, io_size, 512, 1ULL << 50,
	  CONFIG_SEEN_IO_SIZE, "bytes a job moves per loop (--once, without time_based)"),
    PROBE("iodepth", NULL, NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, iodepth, 1, 256, 0,
	  "I/Os in flight per job"),
    PROBE("iodepth_batch", "iodepth_batch_submit", NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, iodepth_batch,
	  0, 256, 0, "I/Os gathered before one submit"),
    PROBE("iodepth_batch_complete_min", "iodepth_batch_complete", NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE,
	  iodepth_batch_complete_min, 0, 256, 0, "completions waited for at once"),
    PROBE("iodepth_batch_complete_max", NULL, NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE,
	  iodepth_batch_complete_max, 0, 256, 0, "completions reaped at once"),
    PROBE("numjobs", NULL, NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, numjobs, 1, 64, 0,
	  "parallel submitters sharing the region"),
    PROBE("rwmixread", NULL, NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, rwmixread, 0, 100,
	  CONFIG_SEEN_RWMIXREAD, "percent of reads in rw and randrw"),
    PROBE("rwmixwrite", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_RWMIXWRITE, rwmixread, 0, 100,
	  CONFIG_SEEN_RWMIXWRITE, "percent of writes in rw and randrw"),
    PROBE("fsync", NULL, NULL, CONFIG_KIND_UINT, CONFIG_SPECIAL_NONE, fsync, 0, 1000000, CONFIG_SEEN_FSYNC,
	  "fsync after every N writes"),
    PROBE("end_fsync", NULL, NULL, CONFIG_KIND_BOOL, CONFIG_SPECIAL_NONE, end_fsync, 0, 1, 0,
	  "fsync once at the end of a run"),
    PROBE("direct", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_DIRECT, name, 0, 1, 0,
	  "always O_DIRECT: direct=0 is refused"),
    PROBE("buffered", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_BUFFERED, name, 0, 1, 0,
	  "never buffered: buffered=1 is refused"),
    PROBE("ioengine", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_IOENGINE, ioengine, 0, 0, 0,
	  "libaio or io_uring; sync, psync, vsync, pvsync, pvsync2 run at depth 1; engines that are not a "
	  "disk are "
	  "refused"),
    PROBE("rate", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_RATE, rate_bytes, 1, 1ULL << 50,
	  CONFIG_SEEN_RATE, "bytes per second per job"),
    PROBE("rate_iops", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_RATE_IOPS, rate_iops, 1, 10000000,
	  CONFIG_SEEN_RATE_IOPS, "I/Os per second per job"),
    PROBE("stonewall", "wait_for_previous", NULL, CONFIG_KIND_BOOL, CONFIG_SPECIAL_NONE, stonewall, 0, 1, 0,
	  "--once waits for the jobs before it, as fio; the daemon never overlaps runs on one device "
	  "(unless allow_overlap=1), which is what stonewall asks"),

    /* budget: a one-shot run's length; fitted to the schedule in the daemon */
    BUDGET("runtime", "timeout", CONFIG_KIND_DURATION, runtime_usec, USEC_PER_MSEC, 3650ULL * 24 * 3600 * SEC,
	   CONFIG_SEEN_RUNTIME, "length of a run; the daemon fits a run longer than the interval to 1s"),
    BUDGET("time_based", NULL, CONFIG_KIND_BOOL, time_based, 0, 1, CONFIG_SEEN_TIME_BASED,
	   "--once runs for runtime, not until io_size is done; daemon runs are always time based"),
    BUDGET("loops", NULL, CONFIG_KIND_UINT, loops, 1, 1000000000, CONFIG_SEEN_LOOPS,
	   "--once repeats io_size; the daemon's runs last their runtime"),
    BUDGET("number_ios", NULL, CONFIG_KIND_U64, number_ios, 1, 1000000000000ULL, CONFIG_SEEN_NUMBER_IOS,
	   "a run stops after this many I/Os per job; in the daemon also at its runtime"),
    BUDGET("ramp_time", NULL, CONFIG_KIND_DURATION, ramp_usec, 0, 3600 * SEC, CONFIG_SEEN_RAMP,
	   "run this long before measuring, excluded from the figures; dropped where it does not fit"),
    BUDGET("startdelay", NULL, CONFIG_KIND_DURATION, startdelay_usec, 0, 24ULL * 3600 * SEC,
	   CONFIG_SEEN_STARTDELAY,
	   "--once starts the job this long after its group; the daemon's schedule staggers"),

    /* accepted and ignored: nothing measured changes */
    IGNORED("name", NULL, "fio's job name: the section name is the probe's"),
    IGNORED("description", NULL, WHY_REPORT),
    IGNORED("group_reporting", NULL, WHY_REPORT),
    IGNORED("new_group", NULL, WHY_REPORT),
    IGNORED("stats", NULL, WHY_REPORT),
    IGNORED("unified_rw_reporting", NULL, WHY_REPORT),
    IGNORED("clat_percentiles", NULL, WHY_REPORT),
    IGNORED("lat_percentiles", NULL, WHY_REPORT),
    IGNORED("slat_percentiles", NULL, WHY_REPORT),
    IGNORED("percentile_list", NULL, WHY_REPORT),
    IGNORED("significant_figures", NULL, WHY_REPORT),
    IGNORED("block_error_percentiles", NULL, WHY_REPORT),
    IGNORED("disk_util", NULL, WHY_REPORT),
    IGNORED("kb_base", NULL, "output units; sizes in iopsd's files always read k as 1024 (fio's default)"),
    IGNORED("unit_base", NULL, WHY_REPORT),
    IGNORED("per_job_logs", NULL, WHY_LOG),
    IGNORED("write_bw_log", NULL, WHY_LOG),
    IGNORED("write_lat_log", NULL, WHY_LOG),
    IGNORED("write_iops_log", NULL, WHY_LOG),
    IGNORED("write_hist_log", NULL, WHY_LOG),
    IGNORED("write_iolog", NULL, WHY_LOG),
    IGNORED("bwavgtime", NULL, WHY_LOG),
    IGNORED("iopsavgtime", NULL, WHY_LOG),
    IGNORED("log_entries", NULL, WHY_LOG),
    IGNORED("log_avg_msec", NULL, WHY_LOG),
    IGNORED("log_hist_msec", NULL, WHY_LOG),
    IGNORED("log_hist_coarseness", NULL, WHY_LOG),
    IGNORED("log_max_value", NULL, WHY_LOG),
    IGNORED("log_offset", NULL, WHY_LOG),
    IGNORED("log_prio", NULL, WHY_LOG),
    IGNORED("log_compression", NULL, WHY_LOG),
    IGNORED("log_compression_cpus", NULL, WHY_LOG),
    IGNORED("log_store_compressed", NULL, WHY_LOG),
    IGNORED("log_unix_epoch", NULL, WHY_LOG),
    IGNORED("log_alternate_epoch", NULL, WHY_LOG),
    IGNORED("log_alternate_epoch_clock_id", NULL, WHY_LOG),
    IGNORED("gtod_reduce", NULL, WHY_LAT),
    IGNORED("gtod_cpu", NULL, WHY_LAT),
    IGNORED("clocksource", NULL, WHY_LAT),
    IGNORED("disable_lat", NULL, WHY_LAT),
    IGNORED("disable_clat", NULL, WHY_LAT),
    IGNORED("disable_slat", NULL, WHY_LAT),
    IGNORED("disable_bw_measurement", "disable_bw", WHY_LAT),
    IGNORED("thread", "threads", "iopsd's jobs are always threads"),
    IGNORED("cpumask", NULL, WHY_CPU),
    IGNORED("cpus_allowed", NULL, WHY_CPU),
    IGNORED("cpus_allowed_policy", NULL, WHY_CPU),
    IGNORED("numa_cpu_nodes", NULL, WHY_CPU),
    IGNORED("numa_mem_policy", NULL, WHY_CPU),
    IGNORED("nice", NULL, WHY_CPU),
    IGNORED("lockmem", NULL, WHY_CPU),
    IGNORED("mem", "iomem", "where fio allocates its buffers: iopsd's are aligned heap memory"),
    IGNORED("hugepage-size", NULL, "where fio allocates its buffers: iopsd's are aligned heap memory"),
    IGNORED("uid", NULL, "iopsd runs as its own user"),
    IGNORED("gid", NULL, "iopsd runs as its own group"),
    IGNORED(
	"io_submit_mode", NULL,
	"fio's submitting thread (inline or offload): iopsd's jobs submit their own I/O at the same depth"),
    IGNORED("iodepth_low", NULL, "iopsd refills the queue as completions arrive"),
    IGNORED("serialize_overlap", NULL, "overlapping in-flight writes only matter for verification"),
    IGNORED("norandommap", NULL, WHY_RANDOM),
    IGNORED("randrepeat", NULL, WHY_RANDOM),
    IGNORED("randseed", NULL, WHY_RANDOM),
    IGNORED("allrandrepeat", NULL, WHY_RANDOM),
    IGNORED("random_generator", NULL, WHY_RANDOM),
    IGNORED("offset_align", NULL, "only applies to percentage offsets, which iopsd does not take"),
    IGNORED("invalidate", NULL, "no page cache is involved: every probe uses O_DIRECT"),
    IGNORED("fadvise_hint", NULL, "no page cache is involved: every probe uses O_DIRECT"),
    IGNORED("pre_read", NULL, "no page cache is involved: every probe uses O_DIRECT"),
    IGNORED("overwrite", NULL, "a probe file is always fully laid out, so writes overwrite it"),
    IGNORED("create_serialize", NULL, WHY_FILES),
    IGNORED("create_fsync", NULL, WHY_FILES),
    IGNORED("create_on_open", NULL, WHY_FILES),
    IGNORED("allow_file_create", NULL, WHY_FILES),
    IGNORED("fallocate", NULL, WHY_FILES),
    IGNORED("unlink", NULL, WHY_FILES),
    IGNORED("unlink_each_loop", NULL, WHY_FILES),
    IGNORED("fsync_on_close", NULL, WHY_FILES),
    IGNORED("filename_format", NULL, WHY_FILES),
    IGNORED("unique_filename", NULL, WHY_FILES),
    IGNORED("lockfile", NULL, WHY_FILES),
    IGNORED("openfiles", NULL, WHY_FILES),
    IGNORED("allow_mounted_write", NULL, "iopsd never writes a raw device"),
    IGNORED("exitall", NULL, WHY_EXIT),
    IGNORED("exit_what", NULL, WHY_EXIT),
    IGNORED("exitall_on_error", NULL, WHY_EXIT),
    IGNORED("continue_on_error", NULL, "iopsd stops a run at its first I/O error and reports it"),
    IGNORED("ignore_error", NULL, "iopsd stops a run at its first I/O error and reports it"),
    IGNORED("error_dump", NULL, "iopsd stops a run at its first I/O error and reports it"),
    IGNORED("rate_min", "ratemin", "a floor that only aborts a slow job: iopsd reports the rate instead"),
    IGNORED("rate_iops_min", NULL, "a floor that only aborts a slow job: iopsd reports the rate instead"),
    IGNORED("rate_cycle", NULL, "the window of rate_min"),
    REFUSED("rate_ignore_thinktime", NULL, "0",
	    "iopsd's rate catches up after a thinktime pause, as fio's does by default; a rate that "
	    "leaves the pauses out is not implemented"),
    IGNORED("max_latency", NULL, "a ceiling that only aborts a slow job: iopsd reports latency instead"),
    IGNORED("write_hint", NULL, "a lifetime hint for the written data"),
    IGNORED("refill_buffers", NULL, "iopsd already stamps every write with fresh data"),
    IGNORED("scramble_buffers", NULL, "iopsd already stamps every write with fresh data"),
    IGNORED("do_verify", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_interval", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_offset", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_pattern", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_fatal", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_dump", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_async", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_async_cpus", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_backlog", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_backlog_batch", NULL, WHY_VERIFY_OPT),
    IGNORED("experimental_verify", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_state_load", NULL, WHY_VERIFY_OPT),
    IGNORED("verify_state_save", NULL, WHY_VERIFY_OPT),
    IGNORED("userspace_reap", NULL, "libaio's reaping without a system call: the same I/O"),

    /* refused: would change what is measured */
    REFUSED("verify", NULL, "0|none", WHY_VERIFY),
    REFUSED("verify_only", NULL, "0", WHY_VERIFY),
    REFUSED("trim_percentage", NULL, "0", WHY_TRIM),
    REFUSED("trim_verify_zero", NULL, "0", WHY_TRIM),
    REFUSED("trim_backlog", NULL, "0", WHY_TRIM),
    REFUSED("trim_backlog_batch", NULL, "0", WHY_TRIM),
    REFUSED("zonemode", NULL, "none", WHY_ZONED),
    REFUSED("zonesize", NULL, "0", WHY_ZONED),
    REFUSED("zonecapacity", NULL, "0", WHY_ZONED),
    REFUSED("zonerange", NULL, "0", WHY_ZONED),
    REFUSED("zoneskip", NULL, "0", WHY_ZONED),
    REFUSED("read_beyond_wp", NULL, "0", WHY_ZONED),
    REFUSED("max_open_zones", NULL, "0", WHY_ZONED),
    REFUSED("job_max_open_zones", NULL, "0", WHY_ZONED),
    REFUSED("ignore_zone_limits", NULL, "0", WHY_ZONED),
    REFUSED("zone_reset_threshold", NULL, "0", WHY_ZONED),
    REFUSED("zone_reset_frequency", NULL, "0", WHY_ZONED),
    REFUSED("percentage_random", NULL, "100",
	    "mixing sequential and random offsets in one job is not supported: use two probes"),
    REFUSED("rw_sequencer", NULL, "sequential",
	    "identical (the same offset again between random ones) is not supported; sequential, fio's "
	    "default, is"),
    REFUSED("file_service_type", NULL, "roundrobin", "iopsd uses a job's files round robin (fio's default)"),
    REFUSED("bs_unaligned", NULL, "0", "O_DIRECT needs I/O sizes that are multiples of the sector size"),
    REFUSED("fdatasync", NULL, "0", "fdatasync is not supported: use fsync="),
    REFUSED("sync", NULL, "0|none", WHY_SYNC),
    REFUSED("atomic", NULL, "0", WHY_SYNC),
    REFUSED("write_barrier", NULL, "0", WHY_SYNC),
    REFUSED("sync_file_range", NULL, NULL, WHY_SYNC),
    PROBE("thinktime", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "a pause after each thinktime_blocks I/Os (fio's; a bare number is microseconds)"),
    PROBE("thinktime_spin", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the part of thinktime spent spinning on the CPU"),
    PROBE("thinktime_blocks", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "I/Os between pauses (1)"),
    PROBE("thinktime_blocks_type", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "complete (a pause after that many completed, draining first) or issue"),
    PROBE("thinktime_iotime", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "a pause also after this much I/O time (a bare number is seconds); without thinktime_blocks, only "
	  "after it, as fio"),
    PROBE("rate_process", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "linear, or poisson: rate_iops as a Poisson process (exponential gaps)"),
    PROBE("latency_target", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "as fio: find the deepest queue, up to iodepth, whose I/Os' latency stays within this (a bare "
	  "number is microseconds), ramping up from 1 and bisecting; the run ends after a window at the "
	  "depth found, whose figures are the report's, with latency_depth"),
    PROBE("latency_window", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "each depth's trial (a bare number is microseconds)"),
    PROBE("latency_percentile", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the share of a window's I/Os that must be within latency_target (100)"),
    PROBE("latency_run", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "keep adjusting the depth for the whole run rather than end at the one found"),
    PROBE("prio", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the job's I/O priority level 0..7 (ioprio_set(2)), with prioclass"),
    PROBE("prioclass", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the job's I/O priority class: 1 realtime, 2 best effort, 3 idle"),
    PROBE("cmdprio_percentage", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "share of the I/Os sent with cmdprio_class/cmdprio (per I/O priority), READ,WRITE"),
    PROBE("cmdprio_class", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "class of those I/Os, READ,WRITE"),
    PROBE("cmdprio", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "level of those I/Os, READ,WRITE"),
    PROBE("cmdprio_bssplit", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "BS/PERCENT[/CLASS/LEVEL]:...: that share of the I/Os of each size sent with a priority (the "
	  "entry's, else cmdprio_class/cmdprio's), READ,WRITE"),
    REFUSED("cgroup", NULL, NULL, "iopsd never creates cgroups: run its unit in the slice to measure from"),
    REFUSED("cgroup_weight", NULL, NULL,
	    "iopsd never creates cgroups: run its unit in the slice to measure from"),
    REFUSED("cgroup_nodelete", NULL, "0",
	    "iopsd never creates cgroups: run its unit in the slice to measure from"),
    REFUSED("ioscheduler", NULL, NULL, "iopsd never changes a device's I/O scheduler"),
    REFUSED("exec_prerun", NULL, NULL, "iopsd runs no commands"),
    REFUSED("exec_postrun", NULL, NULL, "iopsd runs no commands"),
    REFUSED("read_iolog", NULL, NULL, WHY_REPLAY),
    REFUSED("read_iolog_chunked", NULL, "0", WHY_REPLAY),
    REFUSED("replay_no_stall", NULL, "0", WHY_REPLAY),
    REFUSED("replay_redirect", NULL, NULL, WHY_REPLAY),
    REFUSED("replay_scale", NULL, NULL, WHY_REPLAY),
    REFUSED("replay_align", NULL, NULL, WHY_REPLAY),
    REFUSED("replay_time_scale", NULL, NULL, WHY_REPLAY),
    REFUSED("replay_skip", NULL, NULL, WHY_REPLAY),
    REFUSED("merge_blktrace_file", NULL, NULL, WHY_REPLAY),
    REFUSED("merge_blktrace_scalars", NULL, NULL, WHY_REPLAY),
    REFUSED("merge_blktrace_iters", NULL, NULL, WHY_REPLAY),
    REFUSED("zero_buffers", NULL, "0", "spell zeroed buffers buffer_pattern=0x00, which iopsd honours"),
    PROBE("buffer_pattern", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "write buffers filled with this pattern (0xHEX, \"string\", a number)"),
    PROBE("buffer_compress_percentage", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "write buffers compressible to this percent (the rest of each chunk the pattern or zeros)"),
    PROBE("buffer_compress_chunk", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the unit of buffer_compress_percentage (512)"),
    PROBE("dedupe_percentage", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "share of writes that repeat an earlier buffer"),
    PROBE("dedupe_mode", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "repeat (the last buffers) or working_set"),
    PROBE("dedupe_working_set_percentage", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0,
	  0, "working_set: the share of the region the repeats come from (5)"),
    PROBE("dedupe_global", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "working_set: one set for the jobs of the file, spread over their buffers, as fio's"),
    REFUSED("fill_device", "fill_fs", "0",
	    "filling the filesystem or device is what iopsd promises never to do"),
    REFUSED("file_append", NULL, "0", "a probe writes inside its own laid-out file, never past its end"),
    REFUSED("create_only", NULL, "0", "a job that only creates files measures no I/O"),
    REFUSED("opendir", NULL, NULL, "iopsd writes only its own probe files, never a directory tree of yours"),
    PROBE("flow", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "a weight: the jobs of a flow_id share its I/Os in proportion, as fio's token flow control "
	  "(--once: across the group's probes; the daemon: a probe's jobs)"),
    PROBE("flow_id", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the flow a job's weight counts in (0)"),
    PROBE("flow_sleep", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "how long a job ahead of its share pauses (fio's; a bare number is microseconds)"),
    PROBE("wait_for", NULL, NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "--once starts the job when the named job has ended, as fio; the daemon never overlaps runs on one "
	  "device"),
    PROBE("steadystate", "ss", NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "iops:LIMIT, iops_slope:LIMIT, bw:LIMIT or bw_slope:LIMIT: the run ends when the last ss_dur "
	  "seconds' IOPS or bandwidth are within LIMIT (% of the mean) of their mean, or their slope is, as "
	  "fio's steady state"),
    PROBE("steadystate_duration", "ss_dur", NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "the window, 1s to 300s"),
    PROBE("steadystate_ramp_time", "ss_ramp", NULL, CONFIG_KIND_SPECIAL, CONFIG_SPECIAL_WORKLOAD, wl, 0, 0, 0,
	  "seconds left out before the window fills"),
    REFUSED("profile", NULL, NULL, "fio's built-in profiles are not supported"),
    REFUSED("sqthread_poll", NULL, "0", WHY_URING),
    REFUSED("sqthread_poll_cpu", NULL, NULL, WHY_URING),
    REFUSED("registerfiles", NULL, "0", WHY_URING),
    REFUSED("fixedbufs", NULL, "0", WHY_URING),
    REFUSED("nonvectored", NULL, "0", WHY_URING),
    REFUSED("hipri", NULL, "0", WHY_URING),
    REFUSED("cmd_type", NULL, NULL, WHY_URING),
    REFUSED("force_async", NULL, "0", WHY_URING),
    REFUSED("hostname", NULL, NULL, WHY_NET),
    REFUSED("port", NULL, NULL, WHY_NET),
    REFUSED("protocol", "proto", NULL, WHY_NET),
    REFUSED("listen", NULL, NULL, WHY_NET),
    REFUSED("pingpong", NULL, NULL, WHY_NET),
    REFUSED("ttl", NULL, NULL, WHY_NET),
    REFUSED("interface", NULL, NULL, WHY_NET),
    REFUSED("verb", NULL, NULL, WHY_NET),
    REFUSED("serverip", NULL, NULL, WHY_NET),
    REFUSED("https", NULL, NULL, WHY_NET),
    REFUSED("http_host", NULL, NULL, WHY_NET),
    REFUSED("http_mode", NULL, NULL, WHY_NET),
    REFUSED("http_verbose", NULL, NULL, WHY_NET),
    REFUSED("http_s3_key", NULL, NULL, WHY_NET),
    REFUSED("http_s3_keyid", NULL, NULL, WHY_NET),
    REFUSED("http_s3_region", NULL, NULL, WHY_NET),
    REFUSED("http_s3_storage_class", NULL, NULL, WHY_NET),
    REFUSED("http_s3_sse_customer_key", NULL, NULL, WHY_NET),
    REFUSED("http_s3_sse_customer_algorithm", NULL, NULL, WHY_NET),
    REFUSED("http_swift_auth_token", NULL, NULL, WHY_NET),
    REFUSED("clientname", NULL, NULL, WHY_NET),
    REFUSED("pool", NULL, NULL, WHY_NET),
    REFUSED("cont", NULL, NULL, WHY_NET),
    REFUSED("conf", NULL, NULL, WHY_NET),
    REFUSED("busy_poll", NULL, NULL, WHY_NET),
    REFUSED("rbdname", NULL, NULL, WHY_NET),
    REFUSED("volume", NULL, NULL, WHY_NET),
    REFUSED("brick", NULL, NULL, WHY_NET),
    REFUSED("nfs_url", NULL, NULL, WHY_NET),
    REFUSED("uri", NULL, NULL, WHY_NET),
    REFUSED("direct_write_to_pmem", NULL, NULL, WHY_NET),
    REFUSED("busy_wait_polling", NULL, NULL, WHY_NET),
    REFUSED("gpu_dev_id", NULL, NULL, WHY_ENGINE),
    REFUSED("gpu_dev_ids", NULL, NULL, WHY_ENGINE),
    REFUSED("cuda_io", NULL, NULL, WHY_ENGINE),
    REFUSED("cpuload", NULL, NULL, WHY_ENGINE),
    REFUSED("cpumode", NULL, NULL, WHY_ENGINE),
    REFUSED("cpuchunks", NULL, NULL, WHY_ENGINE),
    REFUSED("program", NULL, NULL, WHY_ENGINE),
    REFUSED("arguments", NULL, NULL, WHY_ENGINE),
    REFUSED("grace_time", NULL, NULL, WHY_ENGINE),
    REFUSED("std_redirect", NULL, NULL, WHY_ENGINE),
    REFUSED("donorname", NULL, NULL, WHY_ENGINE),
    REFUSED("inplace", NULL, NULL, WHY_ENGINE),
    REFUSED("sg_write_mode", NULL, NULL, WHY_ENGINE),
    REFUSED("skip_bad", NULL, NULL, WHY_ENGINE),
};

const size_t config_keys_count = ELEMENTSOF(config_keys);

static bool key_has_name(const struct config_key *k, const char *name)
{
	if (strcmp(k->name, name) == 0) {
		return true;
	}
	for (size_t i = 0; i < CONFIG_KEY_MAX_ALIASES && k->aliases[i]; i++) {
		if (strcmp(k->aliases[i], name) == 0) {
			return true;
		}
	}
	return false;
}

const struct config_key *config_key_find(const char *name, enum config_key_scope scope)
{
	for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
		if (config_keys[i].scope == scope && key_has_name(&config_keys[i], name)) {
			return &config_keys[i];
		}
	}
	return NULL;
}

const struct config_key *config_key_find_any(const char *name)
{
	for (int s = 0; s < _CONFIG_SCOPE_MAX; s++) {
		const struct config_key *k = config_key_find(name, (enum config_key_scope)s);

		if (k) {
			return k;
		}
	}
	return NULL;
}

size_t config_key_index(const struct config_key *k)
{
	return (size_t)(k - config_keys);
}

const char *config_key_class_to_string(enum config_key_class c)
{
	static const char *const names[_CONFIG_KEY_CLASS_MAX] = {
	    [CONFIG_KEY_HONOURED] = "honoured",
	    [CONFIG_KEY_BUDGET] = "budget",
	    [CONFIG_KEY_IGNORED] = "ignored",
	    [CONFIG_KEY_REFUSED] = "refused",
	};

	return c < _CONFIG_KEY_CLASS_MAX ? names[c] : "unknown";
}

const char *config_key_scope_to_string(enum config_key_scope s)
{
	static const char *const names[_CONFIG_SCOPE_MAX] = {
	    [CONFIG_SCOPE_GLOBAL] = "global",
	    [CONFIG_SCOPE_PROBE] = "probe",
	    [CONFIG_SCOPE_DEVICE] = "device",
	    [CONFIG_SCOPE_INSTANCE] = "instance",
	};

	return s < _CONFIG_SCOPE_MAX ? names[s] : "unknown";
}

bool config_key_value_is_off(const struct config_key *k, const char *value)
{
	const char *s = k->off;
	size_t n = strlen(value);

	while (s && *s) {
		size_t l = strcspn(s, "|");

		if (l == n && strncasecmp(s, value, n) == 0) {
			return true;
		}
		s += l + (s[l] == '|');
	}
	return false;
}

int config_keys_list(enum config_key_scope scope, char *buf, size_t len)
{
	size_t n = 0;

	if (len > 0) {
		buf[0] = '\0';
	}
	for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
		const struct config_key *k = &config_keys[i];
		int w;

		if (k->scope != scope || (k->cls != CONFIG_KEY_HONOURED && k->cls != CONFIG_KEY_BUDGET)) {
			continue;
		}
		/* buf may be NULL with len 0: the caller asks for the length */
		w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "%s%s%s%s%s", n ? ", " : "",
			     k->name, k->aliases[0] ? " (" : "", k->aliases[0] ? k->aliases[0] : "",
			     k->aliases[0] ? ")" : "");
		if (w < 0) {
			return w;
		}
		n += (size_t)w;
	}
	return (int)n;
}
