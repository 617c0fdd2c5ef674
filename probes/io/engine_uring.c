/* The io_uring engine (liburing): one ring per job, its buffers and files
 * registered where the kernel allows (no page pinning or file lookup per
 * I/O), completions reaped from the ring without a system call when they
 * are there. Waits carry no timeout: a poll on the run's wake fd completes
 * at the deadline or on cancel and ends the wait. */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "engine.h"
#include "fileio.h"
#include "macro.h"
#include "timeutil.h"

#define UNWATCHED_WAIT_NS (100 * NSEC_PER_MSEC)
/* user_data of the ring's own requests; a slot's is its address */
#define TAG_WAKE   0
#define TAG_CANCEL 1

struct engine {
	struct io_uring ring;
	bool has_ring;
	bool has_fixed_bufs;
	bool has_fixed_files;
	bool is_wake_armed;
	int broken; /* -errno: the ring refused a submission; it takes no more */
	unsigned inflight;
	int *fds;
	unsigned n_fds;
	struct io_uring_cqe **cqes;
	unsigned n_cqes;
};

/* Why io_uring_setup() failed, in words an operator can act on. */
static void explain_setup_error(int k, const char *prefix, char *msg, size_t len)
{
	char v[16] = "";
	const char *why;

	read_one_line("/proc/sys/kernel/io_uring_disabled", v, sizeof(v));
	if (k == -EPERM && strcmp(v, "2") == 0) {
		why = " (kernel.io_uring_disabled=2)";
	} else if (k == -EPERM && strcmp(v, "1") == 0) {
		why = " (kernel.io_uring_disabled=1 and iopsd is not in kernel.io_uring_group)";
	} else if (k == -EPERM) {
		why = " (a seccomp filter, e.g. a unit's SystemCallFilter=, refuses it)";
	} else if (k == -ENOSYS) {
		why = " (a kernel before 5.1 or without CONFIG_IO_URING, or a seccomp filter)";
	} else if (k == -ENOMEM) {
		why = " (RLIMIT_MEMLOCK too low for the ring?)";
	} else {
		why = "";
	}
	snprintf(msg, len, "%sio_uring_setup() failed: %s%s", prefix, strerror(-k), why);
}

/* A ring of `entries`, with the cheapest completion handling the kernel
 * offers: task work run only when this thread waits (6.1), or at least
 * without an interrupt of the thread (5.19). */
static int ring_init(struct io_uring *ring, unsigned entries)
{
	static const unsigned flag_sets[] = {
	    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
	    0,
	};
	int k = -EINVAL;

	for (size_t i = 0; i < ELEMENTSOF(flag_sets); i++) {
		struct io_uring_params p = {.flags = flag_sets[i]};

		k = io_uring_queue_init_params(entries, ring, &p);
		if (k != -EINVAL) {
			break;
		}
	}
	return k;
}

int engine_uring_check(char *msg, size_t len)
{
	struct io_uring ring;
	int k = ring_init(&ring, 2);

	if (k < 0) {
		explain_setup_error(k, "", msg, len);
		return k;
	}
	io_uring_queue_exit(&ring);
	return 0;
}

/* Wait for every slot the kernel still holds: their buffers are freed
 * after us, and closing a ring does not wait for its block I/O. Entries a
 * short submit left in the ring go in with the wait. */
static void uring_drain(struct engine *e)
{
	struct io_uring_cqe *cqe;
	unsigned head, n;

	while (e->inflight > 0) {
		int k = io_uring_submit_and_wait(&e->ring, 1);

		if (k == -EINTR) {
			continue;
		}
		if (k < 0) {
			break;
		}
		n = 0;
		io_uring_for_each_cqe(&e->ring, head, cqe)
		{
			if (cqe->user_data > TAG_CANCEL && e->inflight > 0) {
				e->inflight--;
			}
			n++;
		}
		io_uring_cq_advance(&e->ring, n);
	}
}

static void uring_free(struct engine *e)
{
	if (!e) {
		return;
	}
	if (e->has_ring) {
		uring_drain(e);
		io_uring_queue_exit(&e->ring);
	}
	free(e->fds);
	free(e->cqes);
	free(e);
}

static void register_resources(struct engine *e, const struct engine_setup *s)
{
	_cleanup_free_ struct iovec *iov = calloc(s->depth, sizeof(*iov));

	/* pinned once here instead of on every I/O; counts against
	 * RLIMIT_MEMLOCK, so a large probe may go without */
	if (iov) {
		for (unsigned i = 0; i < s->depth; i++) {
			iov[i].iov_base = (char *)s->bufs + i * s->buf_size;
			iov[i].iov_len = s->buf_size;
		}
		e->has_fixed_bufs = io_uring_register_buffers(&e->ring, iov, s->depth) == 0;
	}
	/* no file table lookup (and its atomic reference in a threaded
	 * process) per I/O */
	e->has_fixed_files = io_uring_register_files(&e->ring, s->fds, s->n_fds) == 0;
}

static int uring_setup(const struct engine_setup *s, char *msg, size_t msg_len, struct engine **ret)
{
	struct engine *e;
	struct io_uring_sqe *sqe;
	int k;

	e = calloc(1, sizeof(*e));
	if (!e) {
		return -ENOMEM;
	}
	e->n_fds = s->n_fds;
	e->n_cqes = s->depth + 2; /* the slots, the wake poll, a cancel */
	e->fds = calloc(s->n_fds, sizeof(*e->fds));
	e->cqes = calloc(e->n_cqes, sizeof(*e->cqes));
	if (!e->fds || !e->cqes) {
		uring_free(e);
		return -ENOMEM;
	}
	memcpy(e->fds, s->fds, s->n_fds * sizeof(*e->fds));
	k = ring_init(&e->ring, s->depth + 2);
	if (k < 0) {
		explain_setup_error(k, "ioengine=io_uring is not available on this host: ", msg, msg_len);
		uring_free(e);
		return k;
	}
	e->has_ring = true;
	register_resources(e, s);
	sqe = io_uring_get_sqe(&e->ring);
	io_uring_prep_poll_add(sqe, s->wake_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, TAG_WAKE);
	e->is_wake_armed = io_uring_submit(&e->ring) == 1;
	*ret = e;
	return 0;
}

static void prep_slot(struct engine *e, struct io_uring_sqe *sqe, const struct slot *s)
{
	bool is_read = s->op == PROBE_OP_READ;
	int fd = e->has_fixed_files ? (int)s->file : e->fds[s->file];

	if (e->has_fixed_bufs && is_read) {
		io_uring_prep_read_fixed(sqe, fd, s->buf, (unsigned)s->len, s->offset, (int)s->index);
	} else if (e->has_fixed_bufs) {
		io_uring_prep_write_fixed(sqe, fd, s->buf, (unsigned)s->len, s->offset, (int)s->index);
	} else if (is_read) {
		io_uring_prep_read(sqe, fd, s->buf, (unsigned)s->len, s->offset);
	} else {
		io_uring_prep_write(sqe, fd, s->buf, (unsigned)s->len, s->offset);
	}
	sqe->ioprio = s->ioprio;
	if (e->has_fixed_files) {
		sqe->flags |= IOSQE_FIXED_FILE;
	}
	io_uring_sqe_set_data(sqe, (void *)s);
}

static int uring_submit(struct engine *e, struct slot *const *slots, unsigned n)
{
	unsigned taken = 0;
	int k;

	if (e->broken) {
		return e->broken;
	}
	for (unsigned i = 0; i < n; i++) {
		/* the ring has an entry for every slot and our own requests */
		prep_slot(e, io_uring_get_sqe(&e->ring), slots[i]);
	}
	/* the kernel consumes entries in order; one it fails gets a
	 * completion with the error (SUBMIT_ALL: the rest go on) */
	while (taken < n) {
		k = io_uring_submit(&e->ring);
		if (k > 0) {
			taken += (unsigned)k;
			continue;
		}
		if (k == -EINTR) {
			continue;
		}
		if (k == 0 || k == -EAGAIN || k == -EBUSY) {
			/* short of memory or of completion space: the entries wait
			 * in the ring for the next enter, which reap makes */
			break;
		}
		if (taken == 0) {
			/* the ring itself is unusable: its entries stay queued,
			 * so nothing more may go in */
			e->broken = k;
			return k;
		}
		break;
	}
	e->inflight += n;
	return (int)n;
}

static int uring_reap(struct engine *e, struct engine_event *ev, unsigned max, uint64_t timeout_ns)
{
	struct io_uring_cqe *cqe;
	unsigned n, got = 0;
	int k;

	if (max > e->n_cqes) {
		max = e->n_cqes;
	}
	n = io_uring_peek_batch_cqe(&e->ring, e->cqes, max);
	if (n == 0) {
		if (timeout_ns == ENGINE_WAIT_FOREVER && e->is_wake_armed) {
			k = io_uring_submit_and_wait(&e->ring, 1);
		} else {
			struct __kernel_timespec ts;
			struct timespec t;

			if (timeout_ns > UNWATCHED_WAIT_NS && !e->is_wake_armed) {
				timeout_ns = UNWATCHED_WAIT_NS;
			}
			t = timespec_from_nsec(timeout_ns);
			ts.tv_sec = t.tv_sec;
			ts.tv_nsec = t.tv_nsec;
			/* timeout 0 still runs the deferred completion work */
			k = io_uring_submit_and_wait_timeout(&e->ring, &cqe, 1, &ts, NULL);
		}
		if (k < 0 && k != -ETIME && k != -EINTR) {
			return k;
		}
		n = io_uring_peek_batch_cqe(&e->ring, e->cqes, max);
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t tag = io_uring_cqe_get_data64(e->cqes[i]);

		if (tag == TAG_CANCEL) {
			continue; /* a cancel's own answer: the slot's comes apart */
		}
		if (tag == TAG_WAKE) {
			e->is_wake_armed = false;
		} else {
			e->inflight--;
		}
		ev[got].slot = tag == TAG_WAKE ? NULL : (struct slot *)(uintptr_t)tag;
		ev[got].res = e->cqes[i]->res;
		got++;
	}
	io_uring_cq_advance(&e->ring, n);
	return (int)got;
}

static void uring_cancel(struct engine *e, struct slot *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);

	if (!sqe) {
		return;
	}
	io_uring_prep_cancel(sqe, s, 0);
	io_uring_sqe_set_data64(sqe, TAG_CANCEL);
	io_uring_submit(&e->ring);
}

const struct engine_ops engine_uring_ops = {
    .setup = uring_setup,
    .free = uring_free,
    .submit = uring_submit,
    .reap = uring_reap,
    .cancel = uring_cancel,
};
