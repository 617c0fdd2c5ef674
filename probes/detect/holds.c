/* md/dm arrays held by their members: a stripe waits for its slowest
 * member, so a RAID0 over one capped and one idle volume is flat at twice
 * the cap while neither its own queue nor its own IOPS need look capped. */
#include <math.h>

#include "detect-private.h"
#include "topology.h"

/* held_by_mask has a bit per member. */
_Static_assert(DEVICE_MAX_MEMBERS <= 64, "a member's bit must fit held_by_mask (uint64_t)");

/* Samples an array stays held after its last holder, while it queues. */
#define DETECT_HOLD_OVER 5

static bool is_array(const struct sample_device *sd)
{
	return sd->td->topo.kind == DEVICE_KIND_MD || sd->td->topo.kind == DEVICE_KIND_DM;
}

/* Sets the bits of device i's held_by_mask for each member that is
 * throttled (and is_throttled when any); true when a bit was added. */
static bool hold_by_members(struct detect *d, const struct sample *sample, size_t i)
{
	const struct sample_device *sd = &sample->devices[i];
	struct device_ceiling *c = &d->devs[i].ceiling;
	uint64_t mask = 0;

	if (!sd->is_tracked || !is_array(sd)) {
		return false;
	}
	for (unsigned k = 0; k < sd->td->topo.n_members && k < DEVICE_MAX_MEMBERS; k++) {
		const struct topology_device *m = topology_find(sample->topology, sd->td->topo.members[k]);
		size_t j = m ? (size_t)(m - sample->topology->devices) : SIZE_MAX;

		if (m && sample->devices[j].is_tracked && d->devs[j].ceiling.is_throttled) {
			mask |= UINT64_C(1) << k;
		}
	}
	if ((c->held_by_mask | mask) == c->held_by_mask) {
		return false;
	}
	c->held_by_mask |= mask;
	c->is_throttled = true;
	return true;
}

/* Members capped alike take turns at holding a stripe's queue: when it
 * moves over, the one that had it stops queueing at once, and the other
 * needs a few queueing seconds in its window before its plateau shows. For
 * DETECT_HOLD_OVER samples the array, still queueing, stays held: by the
 * members that queue now, else by the last holders. */
static void hold_over(struct detect *d, const struct sample *sample, size_t i)
{
	const struct sample_device *sd = &sample->devices[i];
	struct detect_dev *dd = &d->devs[i];
	struct device_rates x = *sd->rates;
	uint64_t mask = 0;

	if (dd->ceiling.held_by_mask != 0) {
		dd->last_held_by_mask = dd->ceiling.held_by_mask;
		dd->hold_over_left = DETECT_HOLD_OVER;
		return;
	}
	if (sd->member_rates && sd->member_rates->valid) {
		x.queue_depth = fmax(x.queue_depth, sd->member_rates->queue_depth);
		x.utilization = fmax(x.utilization, sd->member_rates->utilization);
	}
	if (dd->hold_over_left == 0 || !ceiling_set_is_queueing(d->ceilings, &x)) {
		dd->hold_over_left = 0;
		return;
	}
	dd->hold_over_left--;
	for (unsigned k = 0; k < sd->td->topo.n_members && k < DEVICE_MAX_MEMBERS; k++) {
		const struct topology_device *m = topology_find(sample->topology, sd->td->topo.members[k]);

		if (m && ceiling_set_is_queueing(d->ceilings,
						 sample->devices[m - sample->topology->devices].rates)) {
			mask |= UINT64_C(1) << k;
		}
	}
	dd->ceiling.held_by_mask = mask ? mask : dd->last_held_by_mask;
	dd->ceiling.is_throttled = true;
}

static void hold_by_all_members(struct detect *d, const struct sample *sample)
{
	bool changed = true;

	for (unsigned pass = 0; changed && pass <= TOPOLOGY_MAX_DEPTH; pass++) {
		changed = false;
		for (size_t i = 0; i < sample->n_devices; i++) {
			changed |= hold_by_members(d, sample, i);
		}
	}
}

/* Holds go up through nested devices (dm over md over disks) until
 * nothing changes; then arrays left without a holder get their hold-over,
 * which goes up again. */
void detect_propagate_holds(struct detect *d, const struct sample *sample)
{
	hold_by_all_members(d, sample);
	for (size_t i = 0; i < sample->n_devices; i++) {
		if (sample->devices[i].is_tracked && is_array(&sample->devices[i])) {
			hold_over(d, sample, i);
		}
	}
	hold_by_all_members(d, sample);
}
