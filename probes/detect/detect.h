/* The detection stage, which the daemon runs after each sample: every
 * tracked device's ceiling (ceiling.h), md/dm arrays held by a throttled
 * member (holds.c), ceilings shared by several disks (shared_ceiling.h) and
 * the [instance] sum (instance.c). It reads the sampler's last sample and
 * fills the snapshot in, before anything else sees it. No I/O. */
#pragma once

#include "config.h"
#include "sampler.h"

struct detect;
struct ceiling_set;

/* Takes no ownership of cfg, which must outlive the stage (replace it with
 * detect_set_config on reload). -EINVAL when [instance] devices= does not
 * compile, -ENOMEM. */
int detect_new(const struct config *cfg, struct detect **ret);
struct detect *detect_free(struct detect *d);
/* Switch to cfg (always); -EINVAL when its [instance] devices= does not
 * compile, and the previous regex stays in force. */
int detect_set_config(struct detect *d, const struct config *cfg);

/* Run on the sample just taken: fills snap's devices' ceiling, its shared
 * ceilings and its [instance] sum. 0, or -ENOMEM (then snap is incomplete
 * and must not be published). */
int detect_run(struct detect *d, const struct sample *sample, struct sampler_snapshot *snap);

/* The ceiling detector state of every tracked device, for the ceiling
 * probe's gate (is a device quiet; what a ceiling probe measured). Use it
 * on the thread that calls detect_run() only. */
struct ceiling_set *detect_ceilings(struct detect *d);
