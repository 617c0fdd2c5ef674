/* Atomic reference counting for structs shared between threads (snapshots,
 * topologies, probe runs). Header only. */
#pragma once

/* For a struct with an `unsigned refcount` field (set to 1 by its
 * constructor), define
 *   type *name_ref(type *p):   one more reference; returns p;
 *   type *name_unref(type *p): one fewer; the last calls destroy(p);
 *                              returns NULL, to clear the caller's pointer.
 * Both accept NULL. The unref is acquire-release, so the thread that
 * destroys the object sees every write made before the others let go. */
#define DEFINE_REFCOUNT(type, name, destroy) _DEFINE_REFCOUNT(, type, name, destroy)

/* The same, as static functions of one .c file (either may go unused). */
#define DEFINE_PRIVATE_REFCOUNT(type, name, destroy)                                                         \
	_DEFINE_REFCOUNT(static __attribute__((unused)), type, name, destroy)

#define _DEFINE_REFCOUNT(scope, type, name, destroy)                                                         \
	scope type *name##_ref(type *p)                                                                      \
	{                                                                                                    \
		if (p) {                                                                                     \
			__atomic_add_fetch(&p->refcount, 1, __ATOMIC_RELAXED);                               \
		}                                                                                            \
		return p;                                                                                    \
	}                                                                                                    \
	scope type *name##_unref(type *p)                                                                    \
	{                                                                                                    \
		if (p && __atomic_sub_fetch(&p->refcount, 1, __ATOMIC_ACQ_REL) == 0) {                       \
			destroy(p);                                                                          \
		}                                                                                            \
		return NULL;                                                                                 \
	}
