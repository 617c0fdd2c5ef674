/* The libaio engine: one AIO context per job. Waits carry no timeout (the
 * kernel would arm a timer on every call): an IOCB_CMD_POLL on the run's
 * wake fd completes at the deadline or on cancel and ends the wait. */
#include <errno.h>
#include <libaio.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "macro.h"
#include "timeutil.h"

/* A wait that nothing else would end (the kernel has no aio poll, or the
 * wake fd fired already) returns after this long, for the job to look at
 * its deadline and the cancel flag. */
#define UNWATCHED_WAIT_NS (100 * NSEC_PER_MSEC)

/* The completion ring the kernel maps at the context's address (fs/aio.c);
 * reading it here saves an io_getevents() call when completions are
 * already there. */
#define AIO_RING_MAGIC 0xa10a10a1
struct aio_ring {
	unsigned id;
	unsigned nr;
	unsigned head;
	unsigned tail;
	unsigned magic;
	unsigned compat_features;
	unsigned incompat_features;
	unsigned header_length;
	struct io_event io_events[];
};

struct engine {
	io_context_t ctx;
	bool has_ctx;
	bool is_wake_armed;
	struct aio_ring *ring; /* NULL: reap through the syscall only */
	struct iocb wake;
	struct iocb *iocbs; /* one per slot */
	struct iocb **batch;
	struct io_event *events;
	unsigned n_events;
	int *fds;
	unsigned n_fds;
};

static void libaio_free(struct engine *e)
{
	if (!e) {
		return;
	}
	if (e->has_ctx) {
		/* cancels the wake poll, waits for the I/O the kernel holds */
		io_destroy(e->ctx);
	}
	free(e->iocbs);
	free(e->batch);
	free(e->events);
	free(e->fds);
	free(e);
}

static int libaio_setup(const struct engine_setup *s, char *msg, size_t msg_len, struct engine **ret)
{
	struct engine *e;
	struct iocb *w;
	int k;

	e = calloc(1, sizeof(*e));
	if (!e) {
		return -ENOMEM;
	}
	e->n_events = s->depth + 1; /* the slots and the wake poll */
	e->n_fds = s->n_fds;
	e->iocbs = calloc(s->depth, sizeof(*e->iocbs));
	e->batch = calloc(s->depth, sizeof(*e->batch));
	e->events = calloc(e->n_events, sizeof(*e->events));
	e->fds = calloc(s->n_fds, sizeof(*e->fds));
	if (!e->iocbs || !e->batch || !e->events || !e->fds) {
		libaio_free(e);
		return -ENOMEM;
	}
	memcpy(e->fds, s->fds, s->n_fds * sizeof(*e->fds));
	k = io_setup((int)e->n_events, &e->ctx);
	if (k < 0) {
		snprintf(msg, msg_len, "io_setup() failed: %s%s", strerror(-k),
			 k == -EAGAIN ? " (fs.aio-max-nr too low?)" : "");
		libaio_free(e);
		return k;
	}
	e->has_ctx = true;
	e->ring = (struct aio_ring *)e->ctx;
	if (e->ring->magic != AIO_RING_MAGIC || e->ring->incompat_features != 0) {
		e->ring = NULL;
	}
	w = &e->wake;
	io_prep_poll(w, s->wake_fd, POLLIN);
	w->data = NULL;
	/* before Linux 4.18 there is no aio poll: waits are sliced instead */
	e->is_wake_armed = io_submit(e->ctx, 1, &w) == 1;
	*ret = e;
	return 0;
}

static int libaio_submit(struct engine *e, struct slot *const *slots, unsigned n)
{
	int k;

	for (unsigned i = 0; i < n; i++) {
		struct slot *s = slots[i];
		struct iocb *cb = &e->iocbs[s->index];

		if (s->op == PROBE_OP_READ) {
			io_prep_pread(cb, e->fds[s->file], s->buf, s->len, (long long)s->offset);
		} else {
			io_prep_pwrite(cb, e->fds[s->file], s->buf, s->len, (long long)s->offset);
		}
		if (s->ioprio) {
			/* cmdprio: fio's per-I/O priority (linux/aio_abi.h's IOCB_FLAG_IOPRIO) */
			cb->aio_reqprio = (short)s->ioprio;
			cb->u.c.flags |= 1u << 1;
		}
		cb->data = s;
		e->batch[i] = cb;
	}
	k = io_submit(e->ctx, (long)n, e->batch);
	return k == -EAGAIN ? 0 : k;
}

/* Completions already in the ring, without a system call. The kernel
 * publishes an event before it moves the tail (smp_wmb in aio_complete);
 * we move the head only after copying the events out. */
static unsigned ring_reap(struct aio_ring *ring, struct io_event *ev, unsigned max)
{
	unsigned head = __atomic_load_n(&ring->head, __ATOMIC_RELAXED);
	unsigned tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	unsigned n = 0;

	while (head != tail && n < max) {
		ev[n++] = ring->io_events[head];
		head = (head + 1) % ring->nr;
	}
	if (n > 0) {
		__atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
	}
	return n;
}

static int libaio_reap(struct engine *e, struct engine_event *ev, unsigned max, uint64_t timeout_ns)
{
	struct timespec ts, *tsp = &ts;
	int n = 0;

	if (max > e->n_events) {
		max = e->n_events;
	}
	if (e->ring) {
		n = (int)ring_reap(e->ring, e->events, max);
	}
	/* without the ring, even a look that must not wait is a system call */
	if (n == 0 && (timeout_ns > 0 || !e->ring)) {
		if (timeout_ns == ENGINE_WAIT_FOREVER && e->is_wake_armed) {
			tsp = NULL;
		} else if (timeout_ns > UNWATCHED_WAIT_NS && !e->is_wake_armed) {
			timeout_ns = UNWATCHED_WAIT_NS;
		}
		if (tsp) {
			ts = timespec_from_nsec(timeout_ns);
		}
		n = io_getevents(e->ctx, 1, (long)max, e->events, tsp);
		if (n < 0) {
			return n;
		}
	}
	for (int i = 0; i < n; i++) {
		ev[i].slot = e->events[i].data;
		ev[i].res = (long)e->events[i].res;
		if (!ev[i].slot) {
			e->is_wake_armed = false;
		}
	}
	return n;
}

static void libaio_cancel(struct engine *e, struct slot *s)
{
	struct io_event ev;

	io_cancel(e->ctx, &e->iocbs[s->index], &ev);
}

int engine_libaio_check(char *msg, size_t len)
{
	io_context_t ctx = 0;
	int k = io_setup(1, &ctx);

	if (k < 0) {
		snprintf(msg, len, "libaio is not available on this host: io_setup() failed: %s",
			 strerror(-k));
		return k;
	}
	io_destroy(ctx);
	return 0;
}

const struct engine_ops engine_libaio_ops = {
    .setup = libaio_setup,
    .free = libaio_free,
    .submit = libaio_submit,
    .reap = libaio_reap,
    .cancel = libaio_cancel,
};
