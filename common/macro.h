/* Small helpers shared by every layer: cleanup attributes, ownership transfer,
 * array sizes. Header only. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

/* Hand ownership of a pointer out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                          \
	({                                                                                                   \
		__typeof__(p) _p_ = (p);                                                                     \
		(p) = NULL;                                                                                  \
		_p_;                                                                                         \
	})

#define TAKE_FD(fd)                                                                                          \
	({                                                                                                   \
		int _fd_ = (fd);                                                                             \
		(fd) = -1;                                                                                   \
		_fd_;                                                                                        \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f) {
		fclose(*f);
	}
}

#define _cleanup_free_	 _cleanup_(freep)
#define _cleanup_close_	 _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Declare a cleanup function `namep(T **)` that calls `name(T *)`. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                              \
	static inline void func##p(type *p)                                                                  \
	{                                                                                                    \
		if (*p) {                                                                                    \
			func(*p);                                                                            \
		}                                                                                            \
	}

#define USEC_PER_SEC  ((uint64_t)1000000)
#define NSEC_PER_SEC  ((uint64_t)1000000000)
#define NSEC_PER_USEC ((uint64_t)1000)
#define NSEC_PER_MSEC ((uint64_t)1000000)
#define USEC_PER_MSEC ((uint64_t)1000)
