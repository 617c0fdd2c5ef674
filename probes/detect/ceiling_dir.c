/* Reads and writes, each against its own plateau and its own limit. */
#include <math.h>
#include <string.h>

#include "ceiling_dir.h"
#include "provider_units.h"

void ceiling_dir_init(struct ceiling_dir *cd)
{
	memset(cd, 0, sizeof(*cd));
	ceiling_state_init(&cd->read);
	ceiling_state_init(&cd->write);
}

/* One direction's figures as a device of their own: its queue is its rate
 * times its await (Little's law; diskstats has no queue per direction). */
static struct device_rates direction(const struct device_rates *r, bool is_write)
{
	struct device_rates d = {
	    .valid = r->valid, .interval_sec = r->interval_sec, .utilization = r->utilization};

	if (is_write) {
		d.write_iops = r->write_iops;
		d.write_bytes_per_sec = r->write_bytes_per_sec;
		d.write_await_sec = r->write_await_sec;
		d.queue_depth = r->write_iops * r->write_await_sec;
	} else {
		d.read_iops = r->read_iops;
		d.read_bytes_per_sec = r->read_bytes_per_sec;
		d.read_await_sec = r->read_await_sec;
		d.queue_depth = r->read_iops * r->read_await_sec;
	}
	return d;
}

static double ratio(double rate, uint64_t limit)
{
	return limit ? rate / (double)limit : NAN;
}

/* Seconds at the limit: a valid interval at `threshold` of it or above. */
static double at_limit(double sec, double ratio, double threshold, const struct device_rates *r)
{
	return r->valid && ratio >= threshold ? sec + r->interval_sec : sec;
}

/* Ratios and seconds at the limit against the declared figures. */
static void against_limits(struct ceiling_dir *cd, const struct device_limits *lim, double threshold,
			   const struct device_rates *r, struct ceiling_dir_result *ret)
{
	uint64_t unit = lim ? lim->iops_unit : 0;
	double reads = provider_units(r->read_iops, r->read_bytes_per_sec, unit);
	double writes = provider_units(r->write_iops, r->write_bytes_per_sec, unit);

	ret->provider_iops = unit ? reads + writes : NAN;
	ret->iops_limit_ratio = lim ? ratio(reads + writes, lim->iops_limit) : NAN;
	ret->read_iops_limit_ratio = lim ? ratio(reads, lim->read_iops_limit) : NAN;
	ret->write_iops_limit_ratio = lim ? ratio(writes, lim->write_iops_limit) : NAN;
	ret->read_throughput_limit_ratio =
	    lim ? ratio(r->read_bytes_per_sec, lim->read_throughput_limit) : NAN;
	ret->write_throughput_limit_ratio =
	    lim ? ratio(r->write_bytes_per_sec, lim->write_throughput_limit) : NAN;
	cd->at_ceiling_read_sec = at_limit(cd->at_ceiling_read_sec, ret->read_iops_limit_ratio, threshold, r);
	cd->at_ceiling_write_sec =
	    at_limit(cd->at_ceiling_write_sec, ret->write_iops_limit_ratio, threshold, r);
	cd->at_ceiling_read_bytes_sec =
	    at_limit(cd->at_ceiling_read_bytes_sec, ret->read_throughput_limit_ratio, threshold, r);
	cd->at_ceiling_write_bytes_sec =
	    at_limit(cd->at_ceiling_write_bytes_sec, ret->write_throughput_limit_ratio, threshold, r);
	ret->at_ceiling_read_seconds = cd->at_ceiling_read_sec;
	ret->at_ceiling_write_seconds = cd->at_ceiling_write_sec;
	ret->at_ceiling_read_throughput_seconds = cd->at_ceiling_read_bytes_sec;
	ret->at_ceiling_write_throughput_seconds = cd->at_ceiling_write_bytes_sec;
}

static void decide(const struct device_limits *lim, const struct device_rates *r,
		   const struct device_ceiling *total, const struct device_ceiling *rd,
		   const struct device_ceiling *wr, struct ceiling_dir_result *ret)
{
	double ios = r->read_iops + r->write_iops;
	struct ceiling_plateaus pl = {
	    .has_iops = total->is_throttled && total->iops_ceiling_estimate > 0,
	    .has_read_iops = rd->is_throttled && rd->iops_ceiling_estimate > 0,
	    .has_write_iops = wr->is_throttled && wr->iops_ceiling_estimate > 0,
	    .has_throughput = total->is_throttled && total->throughput_ceiling_estimate > 0,
	    .iops = total->iops_ceiling_estimate,
	    .read_iops = rd->iops_ceiling_estimate,
	    .write_iops = wr->iops_ceiling_estimate,
	    .bytes_per_sec = total->throughput_ceiling_estimate,
	    .read_await_sec = r->read_await_sec,
	    .write_await_sec = r->write_await_sec,
	    .avg_io_bytes = ret->average_io_bytes,
	};
	struct ceiling_declared d = {0};

	if (lim) {
		d = (struct ceiling_declared){
		    .iops_limit = lim->iops_limit,
		    .read_iops_limit = lim->read_iops_limit,
		    .write_iops_limit = lim->write_iops_limit,
		    .throughput_limit = lim->throughput_limit,
		    .iops = isnan(ret->provider_iops) ? ios : ret->provider_iops,
		    .read_iops = provider_units(r->read_iops, r->read_bytes_per_sec, lim->iops_unit),
		    .write_iops = provider_units(r->write_iops, r->write_bytes_per_sec, lim->iops_unit),
		    .bytes_per_sec = r->read_bytes_per_sec + r->write_bytes_per_sec,
		};
	}
	ceiling_resource_decide(&pl, lim ? &d : NULL, &ret->verdict);
	ret->read_iops_estimate = ret->verdict.is_read_flagged ? rd->iops_ceiling_estimate : 0;
	ret->write_iops_estimate = ret->verdict.is_write_flagged ? wr->iops_ceiling_estimate : 0;
}

/* A verdict holds while the load is away (the estimates it judged persist
 * too): the latest that named a resource stands until another does. */
static void keep_last(struct ceiling_dir *cd, struct ceiling_dir_result *ret)
{
	if (ret->verdict.resource != CEILING_RESOURCE_NONE) {
		cd->last = ret->verdict;
		cd->last_read_estimate = ret->read_iops_estimate;
		cd->last_write_estimate = ret->write_iops_estimate;
		return;
	}
	ret->verdict = cd->last;
	ret->read_iops_estimate = cd->last_read_estimate;
	ret->write_iops_estimate = cd->last_write_estimate;
	/* flagged only while a plateau holds */
	ret->verdict.is_read_flagged = ret->verdict.is_write_flagged = false;
}

void ceiling_dir_update(struct ceiling_dir *cd, const struct ceiling_params *p,
			const struct device_limits *lim, double threshold, const struct device_rates *r,
			const struct device_ceiling *total, struct ceiling_dir_result *ret)
{
	struct device_rates rr = direction(r, false), wr = direction(r, true);
	struct device_ceiling rd, wd;
	double ios = r->read_iops + r->write_iops;

	memset(ret, 0, sizeof(*ret));
	ceiling_update(&cd->read, p, NULL, &rr, &rd);
	ceiling_update(&cd->write, p, NULL, &wr, &wd);
	ret->average_io_bytes = ios > 0 ? (r->read_bytes_per_sec + r->write_bytes_per_sec) / ios : 0;
	against_limits(cd, lim, threshold, r, ret);
	decide(lim, r, total, &rd, &wd, ret);
	keep_last(cd, ret);
}
