/* The pulse test's reads (fine_reads.h). */
#include "fine_reads.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ceiling.h"
#include "detect.h"
#include "log.h"
#include "macro.h"
#include "sampler.h"
#include "timeutil.h"

/* Devices read at once: a demand rarely starts on more at a time. */
#define FINE_READS_MAX 16

struct fine_reads {
	sd_event *event;
	struct sampler *sampler;
	struct detect *detect;
	sd_event_source *timer;
	uint64_t period_usec;
	char names[FINE_READS_MAX][DISKSTATS_NAME_MAX];
	size_t n;
	struct ratelimit log_ratelimit;
};

static int on_fine_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct fine_reads *f = userdata;
	const char *names[FINE_READS_MAX];
	uint64_t ios[FINE_READS_MAX], mono = 0, now = 0, next;
	int r;

	for (size_t i = 0; i < f->n; i++) {
		names[i] = f->names[i];
	}
	r = sampler_read_ios(f->sampler, names, f->n, ios, &mono);
	if (r < 0 && ratelimit_below(&f->log_ratelimit)) {
		log_warning_errno(r, "Failed to read diskstats between samples: %m, ignoring.");
	}
	for (size_t i = 0; r > 0 && i < f->n; i++) {
		if (ios[i] != UINT64_MAX) {
			ceiling_set_note_fine_read(detect_ceilings(f->detect), f->names[i], mono, ios[i]);
		}
	}
	/* a fixed pace; a stall skips the reads it missed (the pulse test
	 * turns the uneven spacing down); a timer that cannot be set again
	 * stays off until the next sample starts it */
	(void)sd_event_now(f->event, CLOCK_MONOTONIC, &now);
	next = usec + f->period_usec;
	while (next <= now) {
		next += f->period_usec;
	}
	if (sd_event_source_set_time(s, next) >= 0) {
		(void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	return 0;
}

/* Whether the timer is set (sd-event turns a oneshot off as it fires,
 * and on_fine_timer() sets it again). */
static bool is_running(const struct fine_reads *f)
{
	int enabled = SD_EVENT_OFF;

	return f->timer && sd_event_source_get_enabled(f->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF;
}

int fine_reads_new(sd_event *event, struct sampler *sampler, struct detect *detect, struct fine_reads **ret)
{
	struct fine_reads *f = calloc(1, sizeof(*f));

	if (!f) {
		return -ENOMEM;
	}
	*f = (struct fine_reads){
	    .event = event,
	    .sampler = sampler,
	    .detect = detect,
	    .log_ratelimit = RATELIMIT_INIT(60 * USEC_PER_SEC, 1),
	};
	*ret = f;
	return 0;
}

struct fine_reads *fine_reads_free(struct fine_reads *f)
{
	if (!f) {
		return NULL;
	}
	sd_event_source_unref(f->timer);
	free(f);
	return NULL;
}

static int start(struct fine_reads *f)
{
	uint64_t now = 0;
	int r;

	r = sd_event_now(f->event, CLOCK_MONOTONIC, &now);
	if (r < 0) {
		return r;
	}
	if (!f->timer) {
		/* 1 us accuracy: reads that drift move their windows' edges */
		return sd_event_add_time(f->event, &f->timer, CLOCK_MONOTONIC, now + f->period_usec, 1,
					 on_fine_timer, f);
	}
	r = sd_event_source_set_time(f->timer, now + f->period_usec);
	return r < 0 ? r : sd_event_source_set_enabled(f->timer, SD_EVENT_ONESHOT);
}

void fine_reads_after_sample(struct fine_reads *f)
{
	const char *names[FINE_READS_MAX];
	uint64_t period = 0;
	int r;

	if (!f) {
		return;
	}
	f->n = ceiling_set_fine_wanted(detect_ceilings(f->detect), names, FINE_READS_MAX, &period);
	for (size_t i = 0; i < f->n; i++) {
		strncpy(f->names[i], names[i], sizeof(f->names[i]) - 1);
		f->names[i][sizeof(f->names[i]) - 1] = '\0';
	}
	if (f->n == 0 || period == 0) {
		if (is_running(f)) {
			(void)sd_event_source_set_enabled(f->timer, SD_EVENT_OFF);
		}
		return;
	}
	f->period_usec = period;
	if (!is_running(f)) {
		r = start(f);
		if (r < 0 && ratelimit_below(&f->log_ratelimit)) {
			log_warning_errno(r, "Failed to schedule reads between samples: %m, ignoring.");
		}
	}
}
