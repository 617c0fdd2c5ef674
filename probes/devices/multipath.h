/* NVMe native multipath: a namespace reached through several controllers
 * shows as a head (nvme2n1, the /dev node everyone mounts) and hidden paths
 * (nvme2c1n1, nvme2c2n1), all in /proc/diskstats. Which of them the kernel
 * counts an I/O on depends on its version (Debian 12's 6.1 counts on one
 * path and nothing on the head; newer kernels may count on both). Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "diskstats.h"

/* True when `name` is a hidden path "nvme<S>c<C>n<N>"; its head's name
 * "nvme<S>n<N>" goes to head (head_len bytes, NUL-terminated). */
bool multipath_head_of(const char *name, char *head, size_t head_len);

/* Fold every hidden path of `entries` into its head and drop the paths:
 * each counter of a head becomes the larger of its own and its paths' sum
 * (so that an I/O counted on both is counted once, whichever the kernel
 * counts on), busy time the larger of its own and its busiest path's (two
 * paths busy at once are one device busy). A path whose head is not in the
 * list stays as it is. Returns the new number of entries (the array is
 * compacted in place, in its order). */
size_t multipath_fold(struct diskstats_raw *entries, size_t n);
