/* The probe engines: how a job's I/O reaches the kernel and comes back
 * (libaio, io_uring). Internal to probes/: the job loop in probe.c owns the
 * slots, the clock and the budget; an engine only submits and reaps. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"

/* One I/O of a job, in flight or free. The job fills op, file, buf, len and
 * offset; submit_ns is when the kernel took it (clat starts there). */
struct slot {
	enum probe_op op; /* PROBE_OP_READ or PROBE_OP_WRITE */
	unsigned index;	  /* in the job's slots: the engine's per-slot state */
	unsigned file;	  /* in engine_setup.fds */
	void *buf;
	uint64_t len;
	uint64_t offset;
	uint64_t prep_ns; /* taken from iogen: the start of fio's slat */
	uint16_t ioprio;  /* cmdprio: the I/O's own priority (ioprio_set(2)'s value), 0: the thread's */
	uint64_t submit_ns;
	bool is_inflight;
};

struct engine_setup {
	unsigned depth; /* slots, at most in flight at once */
	const int *fds; /* the files the slots refer to */
	unsigned n_fds;
	void *bufs; /* depth buffers of buf_size bytes, slot i's at i * buf_size */
	size_t buf_size;
	int wake_fd; /* becomes readable at the run's deadline or cancel */
};

/* A completion; slot NULL: wake_fd became readable (the engine stops
 * watching it then; later waits must pass a timeout). */
struct engine_event {
	struct slot *slot;
	long res; /* bytes, or -errno */
};

#define ENGINE_WAIT_FOREVER UINT64_MAX

struct engine;

struct engine_ops {
	/* Set up for s (copied); on failure returns -errno and a reason in msg. */
	int (*setup)(const struct engine_setup *s, char *msg, size_t msg_len, struct engine **ret);
	/* Waits for whatever I/O the kernel still holds, then frees. NULL ok. */
	void (*free)(struct engine *e);
	/* Hand slots[0..n) to the kernel, in order. Returns how many it took
	 * (from the front; 0: it takes none now, EAGAIN), or -errno when it
	 * refused slots[0]. */
	int (*submit)(struct engine *e, struct slot *const *slots, unsigned n);
	/* Take up to max completions into ev, waiting for at least one up to
	 * timeout_ns (0: do not wait; ENGINE_WAIT_FOREVER: until a completion
	 * or wake_fd). Returns how many (0: timed out), or -errno. */
	int (*reap)(struct engine *e, struct engine_event *ev, unsigned max, uint64_t timeout_ns);
	/* Ask the kernel to give up on slot s (block I/O rarely can). */
	void (*cancel)(struct engine *e, struct slot *s);
};

extern const struct engine_ops engine_libaio_ops;
extern const struct engine_ops engine_uring_ops;

/* Whether this host lets the engine run (creates and destroys a context);
 * -errno and the reason in msg when not. */
int engine_libaio_check(char *msg, size_t len);
int engine_uring_check(char *msg, size_t len);
