/* The device sampler: one read() of PROCFS/diskstats per tick into a reused
 * buffer, iostat -x rates per device, md/dm member aggregates, filtering,
 * and an immutable snapshot. Topology (sysfs, mountinfo) is re-read only
 * when the set of devices changes, when an unused loop device starts doing
 * I/O, when counters reset, and every SAMPLER_TOPOLOGY_REFRESH_USEC. */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include "ebs_nvme.h"
#include "fileio.h"
#include "macro.h"
#include "multipath.h"
#include "name_index.h"
#include "pressure.h"
#include "strutil.h"
#include "timeutil.h"
#include "targets.h"
#include "topology.h"

#define DISKSTATS_BUF_INITIAL (64U << 10)
#define DISKSTATS_BUF_MAX     (64U << 20)

/* The filter's regexes, one slot each. */
enum {
	REGEX_INCLUDE,
	REGEX_EXCLUDE,
	_REGEX_MAX,
};

/* Per-device state that lives from one tick to the next. */
struct sampler_dev {
	struct diskstats_raw raw; /* the last sample */
	bool has_prev;		  /* raw is a previous sample of this device */
	struct device_rates rates;
	bool has_member_rates;
	struct device_rates member_rates;
	const struct device_config *dc; /* its [device] section, NULL when none */
	bool is_kept;			/* passes the filter */
	bool is_tracked;		/* kept, or a member (at any depth) of a kept md/dm
					 * device: its ceiling is followed so that the array
					 * can say which member holds it */
	bool is_array_member;		/* a member of a tracked md/dm device */
	struct md_health md;		/* md: read every sample */
};

struct sampler {
	char *procfs, *sysfs;
	const struct config *cfg;
	regex_t regex[_REGEX_MAX];
	bool has_regex[_REGEX_MAX];

	int diskstats_fd;
	char *buf;
	size_t buf_size;
	struct diskstats_raw *cur; /* parse target, reused */
	size_t cur_cap;
	struct diskstats_raw *fine; /* sampler_read_ios()'s parse target, reused */
	size_t fine_cap;
	struct dmi_info dmi; /* read once: the machine does not change under it */

	struct sampler_dev *devs; /* aligned with the last parsed list */
	size_t n_devs;
	struct topology *topo; /* aligned with devs; NULL until built */
	bool need_refresh;
	int mounts_fd; /* mountinfo, polled for changes to the mount table; -1 */
	bool mounts_checked;
	uint64_t refresh_usec;
	uint64_t last_refresh_usec;

	bool has_last;
	uint64_t last_monotonic_usec;
	uint64_t parse_errors_total;
	uint64_t samples_total;

	sampler_clock_fn clock;
	void *clock_userdata;

	int pressure_fd;       /* kept open while the kernel has PSI */
	bool pressure_checked; /* absent PSI is looked for again at each refresh */

	struct ebs_nvme_reader *ebs; /* EBS NVMe volumes among the kept devices */

	struct probe_identity *const *ids; /* the probes, borrowed (sampler_set_identities) */
	size_t n_ids;

	struct sample_device *view; /* the last sample, for the detection stage */
	struct sample last;
};

static uint64_t clock_usec(clockid_t clock, void *userdata)
{
	return now_usec(clock);
}

static void free_regexes(struct sampler *s)
{
	for (size_t i = 0; i < _REGEX_MAX; i++) {
		if (s->has_regex[i]) {
			regfree(&s->regex[i]);
			s->has_regex[i] = false;
		}
	}
}

/* All or nothing: the previous ones stay when one does not compile. */
static int compile_regexes(struct sampler *s, const struct config *cfg)
{
	const char *patterns[_REGEX_MAX] = {cfg->device_include, cfg->device_exclude};
	regex_t re[_REGEX_MAX];
	bool has[_REGEX_MAX] = {false};

	for (size_t i = 0; i < _REGEX_MAX; i++) {
		if (!patterns[i] || patterns[i][0] == '\0') {
			continue;
		}
		if (regcomp(&re[i], patterns[i], REG_EXTENDED | REG_NOSUB) != 0) {
			for (size_t k = 0; k < i; k++) {
				if (has[k]) {
					regfree(&re[k]);
				}
			}
			return -EINVAL;
		}
		has[i] = true;
	}
	free_regexes(s);
	memcpy(s->regex, re, sizeof(re));
	memcpy(s->has_regex, has, sizeof(has));
	return 0;
}

static bool matches(const struct sampler *s, unsigned which, const char *name)
{
	return s->has_regex[which] && regexec(&s->regex[which], name, 0, NULL, 0) == 0;
}

/* The device filter. device_exclude always drops; device_include, when set,
 * alone decides; otherwise a device that holds a configured target stays,
 * and ram, zram, floppy drives (node_exporter's default leaves fd* out too),
 * unused loop devices and other partitions go. */
static bool device_is_kept(const struct sampler *s, const struct topology_device *td, bool holds_target)
{
	if (matches(s, REGEX_EXCLUDE, td->name)) {
		return false;
	}
	if (s->has_regex[REGEX_INCLUDE]) {
		return matches(s, REGEX_INCLUDE, td->name);
	}
	if (holds_target) {
		return true;
	}
	if (has_prefix_number(td->name, "ram") || has_prefix_number(td->name, "zram") ||
	    has_prefix_number(td->name, "fd") || td->is_unused_loop) {
		return false;
	}
	return td->topo.kind != DEVICE_KIND_PARTITION;
}

/* The members of device i, and theirs, are tracked: a RAID0 over partitions
 * that the filter drops is still told which member holds it. */
static void track_members(struct sampler *s, size_t i, unsigned depth)
{
	const struct topology_device *td = &s->topo->devices[i];

	if (depth >= TOPOLOGY_MAX_DEPTH) {
		return;
	}
	for (size_t k = 0; k < td->n_members; k++) {
		size_t m = td->members[k];

		s->devs[m].is_array_member = true;
		if (!s->devs[m].is_tracked) {
			s->devs[m].is_tracked = true;
			track_members(s, m, depth + 1);
		}
	}
}

/* Recompute every device's filter verdict and [device] section from the
 * topology and the config. No I/O. */
static void apply_filter(struct sampler *s)
{
	const struct config *cfg = s->cfg;
	const struct topology *t = s->topo;
	_cleanup_free_ bool *holds = NULL;

	if (!t || t->n_devices != s->n_devs) {
		return;
	}
	holds = calloc(s->n_devs ? s->n_devs : 1, sizeof(*holds));
	for (size_t i = 0; i < s->n_devs; i++) {
		s->devs[i].dc = NULL;
	}
	/* the probes' targets by the mount table, and where their runs found
	 * them: no filesystem call here */
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		const struct topology_device *d;

		d = topology_device_for_path(t, pc->directory ? pc->directory : pc->filename);
		if (d && holds) {
			holds[d - t->devices] = true;
		}
	}
	for (size_t i = 0; i < s->n_ids; i++) {
		const struct topology_device *d = targets_identity_device(t, s->ids[i]);

		if (d && holds) {
			holds[d - t->devices] = true;
		}
	}
	for (size_t i = 0; i < cfg->n_devices; i++) {
		const struct device_config *dc = &cfg->devices[i];
		const struct topology_device *d = topology_find(t, dc->name);

		if (!d && dc->name[0] == '/') {
			d = topology_device_for_path(t, dc->name);
		}
		if (!d) {
			continue;
		}
		if (holds) {
			holds[d - t->devices] = true;
		}
		/* a section naming the device itself wins over one naming its mount */
		if (!s->devs[d - t->devices].dc || strcmp(dc->name, d->name) == 0) {
			s->devs[d - t->devices].dc = dc;
		}
	}
	for (size_t i = 0; i < s->n_devs; i++) {
		s->devs[i].is_kept = device_is_kept(s, &t->devices[i], holds && holds[i]);
		s->devs[i].is_tracked = s->devs[i].is_kept;
		s->devs[i].is_array_member = false;
	}
	for (size_t i = 0; i < s->n_devs; i++) {
		if (s->devs[i].is_kept) {
			track_members(s, i, 0);
		}
	}
}

int sampler_new(const char *procfs, const char *sysfs, const struct config *cfg, struct sampler **ret)
{
	struct sampler *s;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	s->diskstats_fd = -1;
	s->pressure_fd = -1;
	s->mounts_fd = -1;
	s->refresh_usec = SAMPLER_TOPOLOGY_REFRESH_USEC;
	s->clock = clock_usec;
	s->need_refresh = true;
	s->cfg = cfg;
	s->procfs = strdup(procfs);
	s->sysfs = strdup(sysfs);
	s->buf_size = DISKSTATS_BUF_INITIAL;
	s->buf = malloc(s->buf_size);
	if (!s->procfs || !s->sysfs || !s->buf ||
	    ebs_nvme_reader_new(s->sysfs, "/dev", NULL, NULL, &s->ebs) < 0) {
		sampler_free(s);
		return -ENOMEM;
	}
	if (dmi_read(s->sysfs, &s->dmi) < 0) {
		sampler_free(s);
		return -ENOMEM;
	}
	r = compile_regexes(s, cfg);
	if (r < 0) {
		sampler_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

struct sampler *sampler_free(struct sampler *s)
{
	if (!s) {
		return NULL;
	}
	free_regexes(s);
	if (s->diskstats_fd >= 0) {
		close(s->diskstats_fd);
	}
	if (s->pressure_fd >= 0) {
		close(s->pressure_fd);
	}
	if (s->mounts_fd >= 0) {
		close(s->mounts_fd);
	}
	topology_unref(s->topo);
	ebs_nvme_reader_free(s->ebs);
	free(s->devs);
	free(s->view);
	free(s->cur);
	free(s->fine);
	free(s->buf);
	free(s->procfs);
	free(s->sysfs);
	free(s);
	return NULL;
}

int sampler_set_config(struct sampler *s, const struct config *cfg)
{
	int r;

	/* the old config is about to be freed: adopt the new one even when its
	 * regexes do not compile (the previous ones stay in force then) */
	r = compile_regexes(s, cfg);
	s->cfg = cfg;
	/* dc pointers must not outlive the old config: recompute now */
	apply_filter(s);
	return r;
}

void sampler_set_identities(struct sampler *s, struct probe_identity *const *ids, size_t n)
{
	s->ids = ids;
	s->n_ids = n;
	apply_filter(s);
}

void sampler_set_clock(struct sampler *s, sampler_clock_fn fn, void *userdata)
{
	s->clock = fn ? fn : clock_usec;
	s->clock_userdata = userdata;
}

/* Read all of PROCFS/diskstats with one read() into the reused buffer,
 * growing it (and reading again) only when the file no longer fits. */
static int read_diskstats(struct sampler *s)
{
	for (;;) {
		ssize_t n;

		if (!s->buf) {
			/* a failed grow left no buffer: start over small */
			s->buf = malloc(DISKSTATS_BUF_INITIAL);
			if (!s->buf) {
				return -ENOMEM;
			}
			s->buf_size = DISKSTATS_BUF_INITIAL;
		}
		if (s->diskstats_fd < 0) {
			_cleanup_free_ char *path = path_join(s->procfs, "diskstats");

			if (!path) {
				return -ENOMEM;
			}
			s->diskstats_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
			if (s->diskstats_fd < 0) {
				return -errno;
			}
		}
		/* to its end: a seq file gives a page (some 60 devices) per read */
		n = read_from_start(s->diskstats_fd, s->buf, s->buf_size);
		if (n < 0) {
			close(s->diskstats_fd);
			s->diskstats_fd = -1;
			return (int)n;
		}
		if ((size_t)n < s->buf_size) {
			/* the parser reads a C string: a NUL byte (a corrupt or
			 * hostile fixture) would silently hide every later line,
			 * so make it a malformed character of its own line */
			for (char *p = memchr(s->buf, '\0', (size_t)n); p;
			     p = memchr(p, '\0', (size_t)(s->buf + n - p))) {
				*p = '?';
			}
			s->buf[n] = '\0';
			return 0;
		}
		if (s->buf_size >= DISKSTATS_BUF_MAX) {
			return -EFBIG;
		}
		free(s->buf);
		s->buf_size *= 2;
		s->buf = malloc(s->buf_size);
		if (!s->buf) {
			return -ENOMEM;
		}
	}
}

static bool same_device(const struct diskstats_raw *a, const struct diskstats_raw *b)
{
	return a->major == b->major && a->minor == b->minor && strcmp(a->name, b->name) == 0;
}

static const char *dev_name_get(const void *base, size_t i)
{
	return ((const struct sampler_dev *)base)[i].raw.name;
}

/* The list of devices changed: carry each surviving device's state over to
 * its new position; a new (or returning) device starts without a previous
 * sample. */
static int remap_devices(struct sampler *s, size_t n)
{
	struct name_index idx = {0};
	struct sampler_dev *devs;
	int r;

	devs = calloc(n ? n : 1, sizeof(*devs));
	if (!devs) {
		return -ENOMEM;
	}
	r = name_index_build(&idx, s->devs, s->n_devs, dev_name_get);
	if (r < 0) {
		free(devs);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		size_t j = name_index_find(&idx, s->devs, dev_name_get, s->cur[i].name);

		if (j != SIZE_MAX && same_device(&s->devs[j].raw, &s->cur[i])) {
			devs[i] = s->devs[j];
			devs[i].dc = NULL;
		}
	}
	name_index_done(&idx);
	free(s->devs);
	s->devs = devs;
	s->n_devs = n;
	s->topo = topology_unref(s->topo);
	s->need_refresh = true;
	return 0;
}

/* Which kept devices are EBS NVMe volumes (sysfs model): their log page
 * is read every tick. */
static int refresh_ebs(struct sampler *s)
{
	_cleanup_free_ const char **names = calloc(s->n_devs ? s->n_devs : 1, sizeof(*names));
	size_t n = 0;
	int r;

	if (!names) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n_devs; i++) {
		if (s->devs[i].is_kept) {
			names[n++] = s->devs[i].raw.name;
		}
	}
	r = ebs_nvme_reader_refresh(s->ebs, names, n);
	return r < 0 ? r : 0;
}

/* Whether the mount table changed since the last call: the kernel marks an
 * open mountinfo POLLPRI when a mount or an unmount happens in its
 * namespace (a kubelet publishing a pod's volume), so that the topology,
 * the mount points and the PersistentVolumes are read again at the next
 * sample, not at the next periodic refresh. A procfs without mountinfo
 * (a fixture) or a plain file never says so. */
static bool mounts_changed(struct sampler *s)
{
	struct pollfd pfd;

	if (s->mounts_fd < 0 && !s->mounts_checked) {
		_cleanup_free_ char *path = path_join(s->procfs, "self/mountinfo");

		s->mounts_checked = true;
		s->mounts_fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
	}
	if (s->mounts_fd < 0) {
		return false;
	}
	pfd = (struct pollfd){.fd = s->mounts_fd, .events = POLLPRI};
	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLERR | POLLPRI));
}

static int refresh_topology(struct sampler *s, uint64_t now)
{
	struct topology *t;
	int r;

	r = topology_build(s->procfs, s->sysfs, s->cur, s->n_devs, &t);
	if (r < 0) {
		s->topo = topology_unref(s->topo);
		return r;
	}
	topology_unref(s->topo);
	s->topo = t;
	s->need_refresh = false;
	s->last_refresh_usec = now;
	apply_filter(s);
	s->pressure_checked = false;
	return refresh_ebs(s);
}

/* fio's aggregate over the members of an md/dm device (see sampler.h). */
static void derive_member_rates(struct sampler *s, size_t i)
{
	const struct topology_device *td = &s->topo->devices[i];
	struct sampler_dev *sd = &s->devs[i];
	const struct device_rates *members[DEVICE_MAX_MEMBERS];
	size_t n = 0;

	sd->has_member_rates =
	    (td->topo.kind == DEVICE_KIND_MD || td->topo.kind == DEVICE_KIND_DM) && td->n_members > 0;
	if (!sd->has_member_rates) {
		return;
	}
	for (size_t k = 0; k < td->n_members && n < ELEMENTSOF(members); k++) {
		members[n++] = &s->devs[td->members[k]].rates;
	}
	diskstats_aggregate_members(members, n, &sd->member_rates);
}

/* A member's failure changes no line of /proc/diskstats: the md arrays'
 * health is read every sample, not with the topology. */
static void read_md_health(struct sampler *s)
{
	for (size_t i = 0; i < s->n_devs; i++) {
		const struct topology_device *td = &s->topo->devices[i];

		s->devs[i].md = (struct md_health){0};
		if (s->devs[i].is_kept && td->topo.kind == DEVICE_KIND_MD) {
			(void)md_health_read(s->sysfs, s->devs[i].raw.name, td->topo.members,
					     td->topo.n_members, &s->devs[i].md);
		}
	}
}

/* What the detection stage reads of this sample: every device, kept or
 * not, and where the kept ones are in the snapshot. */
static int build_view(struct sampler *s, uint64_t real)
{
	struct sample_device *v = realloc(s->view, (s->n_devs ? s->n_devs : 1) * sizeof(*v));
	size_t k = 0;

	if (!v) {
		return -ENOMEM;
	}
	s->view = v;
	for (size_t i = 0; i < s->n_devs; i++) {
		const struct sampler_dev *sd = &s->devs[i];

		v[i] = (struct sample_device){
		    .name = sd->raw.name,
		    .rates = &sd->rates,
		    .member_rates = sd->has_member_rates ? &sd->member_rates : NULL,
		    .dc = sd->dc,
		    .td = &s->topo->devices[i],
		    .is_kept = sd->is_kept,
		    .is_tracked = sd->is_tracked,
		    .is_array_member = sd->is_array_member,
		    .snapshot_index = sd->is_kept ? k++ : SIZE_MAX,
		};
	}
	s->last =
	    (struct sample){.devices = v, .n_devices = s->n_devs, .topology = s->topo, .realtime_usec = real};
	return 0;
}

const struct sample *sampler_last_sample(const struct sampler *s)
{
	return &s->last;
}

static int build_snapshot(struct sampler *s, uint64_t mono, uint64_t real, struct sampler_snapshot **ret)
{
	struct sampler_snapshot *snap;
	size_t n_kept = 0, max = s->cfg->max_devices ? s->cfg->max_devices : SIZE_MAX, k = 0;
	int r;

	for (size_t i = 0; i < s->n_devs; i++) {
		n_kept += s->devs[i].is_kept;
	}
	snap = calloc(1, sizeof(*snap));
	if (!snap) {
		return -ENOMEM;
	}
	snap->refcount = 1;
	snap->n_devices_dropped = n_kept > max ? n_kept - max : 0;
	n_kept = n_kept > max ? max : n_kept;
	snap->devices = calloc(n_kept ? n_kept : 1, sizeof(*snap->devices));
	if (!snap->devices) {
		free(snap);
		return -ENOMEM;
	}
	snap->topology = topology_ref(s->topo);
	for (size_t i = 0; i < s->n_devs && k < n_kept; i++) {
		const struct sampler_dev *sd = &s->devs[i];
		struct device_state *d = &snap->devices[k];

		if (!sd->is_kept) {
			continue;
		}
		d->raw = sd->raw;
		d->rates = sd->rates;
		d->has_member_rates = sd->has_member_rates;
		d->member_rates = sd->member_rates;
		d->topo = s->topo->devices[i].topo;
		d->md = sd->md;
		k++;
	}
	snap->n_devices = k;
	r = build_view(s, real);
	if (r < 0) {
		sampler_snapshot_unref(snap);
		return r;
	}
	snap->realtime_usec = real;
	snap->monotonic_usec = mono;
	snap->parse_errors_total = s->parse_errors_total;
	snap->n_devices_seen = s->n_devs;
	*ret = snap;
	return 0;
}

/* Each device's rates over the interval since the previous sample (none
 * for a device seen for the first time); a reset, or a loop device that was
 * set up, asks for the topology again. */
static void derive_rates(struct sampler *s, size_t n, uint64_t mono)
{
	double interval_sec;

	interval_sec = s->has_last ? (double)(mono - s->last_monotonic_usec) / (double)USEC_PER_SEC : 0.0;
	for (size_t i = 0; i < n; i++) {
		struct sampler_dev *sd = &s->devs[i];
		const struct diskstats_raw *cur = &s->cur[i];

		if (sd->has_prev) {
			diskstats_derive(&sd->raw, cur, interval_sec, &sd->rates);
			if (!sd->rates.valid) {
				/* reset or replaced: its sysfs may have changed too */
				s->need_refresh = true;
			} else if (s->topo && s->topo->devices[i].is_unused_loop &&
				   (cur->reads != sd->raw.reads || cur->writes != sd->raw.writes)) {
				/* an unused loop device was just set up */
				s->need_refresh = true;
			}
		} else {
			sd->rates = (struct device_rates){.interval_sec = interval_sec};
		}
		sd->raw = *cur;
		sd->has_prev = true;
	}
}

/* Read and parse PROCFS/diskstats (the clock read right after it), and
 * align the per-device state with its lines. The number of devices, or
 * -errno. */
static int take_counters(struct sampler *s, uint64_t *ret_mono, uint64_t *ret_real)
{
	size_t n_bad = 0, n;
	bool same;
	int r;

	r = read_diskstats(s);
	*ret_mono = s->clock(CLOCK_MONOTONIC, s->clock_userdata);
	*ret_real = s->clock(CLOCK_REALTIME, s->clock_userdata);
	if (r < 0) {
		return r;
	}
	r = diskstats_parse_into(s->buf, &s->cur, &s->cur_cap, &n_bad);
	if (r < 0) {
		return r;
	}
	/* NVMe multipath: the head counts its hidden paths' I/O, which are not
	 * devices of their own (nothing counted twice in a sum) */
	n = multipath_fold(s->cur, (size_t)r);
	s->parse_errors_total += n_bad;
	same = n == s->n_devs;
	for (size_t i = 0; same && i < n; i++) {
		same = same_device(&s->devs[i].raw, &s->cur[i]);
	}
	if (!same) {
		r = remap_devices(s, n);
		if (r < 0) {
			return r;
		}
	}
	return (int)n;
}

/* The figures of the n devices: rates, the topology when due, the md/dm
 * member aggregates and the md arrays' health. */
static int derive(struct sampler *s, size_t n, uint64_t mono)
{
	int r;

	derive_rates(s, n, mono);
	s->has_last = true;
	s->last_monotonic_usec = mono;
	if (mounts_changed(s)) {
		s->need_refresh = true;
	}
	if (s->need_refresh || !s->topo || mono - s->last_refresh_usec >= s->refresh_usec) {
		r = refresh_topology(s, mono);
		if (r < 0) {
			return r;
		}
	}
	for (size_t i = 0; i < n; i++) {
		derive_member_rates(s, i);
	}
	read_md_health(s);
	return 0;
}

/* What the snapshot has beside the devices: pressure, EBS log pages. */
static int read_extras(struct sampler *s, struct sampler_snapshot *snap)
{
	int r;

	if (s->pressure_fd >= 0 || !s->pressure_checked) {
		r = pressure_read(s->procfs, &s->pressure_fd, &snap->pressure);
		if (r < 0) {
			return r;
		}
		s->pressure_checked = true;
	}
	r = ebs_nvme_reader_sample(s->ebs, &snap->ebs);
	if (r < 0) {
		return r;
	}
	snap->n_ebs = (size_t)r;
	return 0;
}

int sampler_sample(struct sampler *s, struct sampler_snapshot **ret)
{
	struct sampler_snapshot *snap = NULL;
	uint64_t mono, real;
	int r;

	r = take_counters(s, &mono, &real);
	if (r >= 0) {
		r = derive(s, (size_t)r, mono);
	}
	if (r >= 0) {
		r = build_snapshot(s, mono, real, &snap);
	}
	if (r >= 0) {
		r = read_extras(s, snap);
	}
	if (r < 0) {
		sampler_snapshot_unref(snap);
		return r;
	}
	s->samples_total++;
	snap->samples_total = s->samples_total;
	snap->dmi = s->dmi;
	*ret = snap;
	return 0;
}

int sampler_read_ios(struct sampler *s, const char *const *names, size_t n, uint64_t *ret_ios,
		     uint64_t *ret_monotonic_usec)
{
	size_t n_lines;
	int r, found = 0;

	r = read_diskstats(s);
	*ret_monotonic_usec = s->clock(CLOCK_MONOTONIC, s->clock_userdata);
	if (r < 0) {
		return r;
	}
	r = diskstats_parse_into(s->buf, &s->fine, &s->fine_cap, NULL);
	if (r < 0) {
		return r;
	}
	/* counted as the samples count them: an NVMe multipath head with its paths */
	n_lines = multipath_fold(s->fine, (size_t)r);
	for (size_t i = 0; i < n; i++) {
		ret_ios[i] = UINT64_MAX;
		for (size_t j = 0; j < n_lines; j++) {
			if (strcmp(s->fine[j].name, names[i]) == 0) {
				ret_ios[i] = s->fine[j].reads + s->fine[j].writes;
				found++;
				break;
			}
		}
	}
	return found;
}
