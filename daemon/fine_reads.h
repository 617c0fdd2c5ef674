/* The pulse test's reads (pulse.h): between samples, every 50 ms, the
 * counters of the devices in the first seconds of a demand, read by the
 * sampler and noted in their ceiling states. The timer runs only while a
 * device wants them (ceiling_set_fine_wanted()). */
#pragma once

#include <systemd/sd-event.h>

struct fine_reads;
struct sampler;
struct detect;

/* Borrows sampler and detect, which must outlive it. -ENOMEM. */
int fine_reads_new(sd_event *event, struct sampler *sampler, struct detect *detect, struct fine_reads **ret);
struct fine_reads *fine_reads_free(struct fine_reads *f);

/* After each sample: the devices that want reads now. Starts the timer
 * when some do (keeping its pace when it runs), stops it when none do. */
void fine_reads_after_sample(struct fine_reads *f);
