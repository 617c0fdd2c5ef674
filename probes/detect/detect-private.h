/* The detection stage's state, shared by detect.c, holds.c and instance.c. */
#pragma once

#include <regex.h>

#include "ceiling.h"
#include "ceiling_dir.h"
#include "detect.h"
#include "shared_ceiling.h"

/* Per-device state from one sample to the next, aligned with the sample's
 * devices (remapped by name when their list changes). */
struct detect_dev {
	char name[DISKSTATS_NAME_MAX];
	struct device_ceiling ceiling; /* this sample's verdict (counters live in ceilings) */
	uint64_t last_held_by_mask;    /* md/dm: the members that held it last */
	unsigned hold_over_left;       /* samples it stays held without a holder */
	bool has_dir;		       /* dir below is initialised */
	struct ceiling_dir dir;	       /* its reads and writes, each on its own */
	/* EBS NVMe: the log page's exceeded counters at the last sample */
	bool has_exceeded;
	uint64_t exceeded_iops_usec, exceeded_throughput_usec;
};

struct detect {
	const struct config *cfg;
	regex_t instance_regex; /* [instance] devices= */
	bool has_instance_regex;
	struct ceiling_set *ceilings;		 /* ceiling detector state by device name */
	struct ceiling_params params;		 /* of the per-direction detectors */
	struct shared_ceiling *shared;		 /* ceilings shared by several disks */
	struct shared_ceiling_instance instance; /* the [instance] limits' counters */
	struct detect_dev *devs;
	size_t n_devs;
};

/* holds.c: holds go up through nested md/dm devices. */
void detect_propagate_holds(struct detect *d, const struct sample *sample);

/* instance.c: the [instance] limits against the sum of its volumes. */
int detect_account_instance(struct detect *d, const struct sample *sample, struct instance_state *ret);
