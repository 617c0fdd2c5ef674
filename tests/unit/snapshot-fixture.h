/* A fixed snapshot (three devices, two probes) for the renderer tests and
 * their golden files. */
#pragma once

#include "registry.h"

/* A snapshot (refcount 1) with fixed contents; with_devices false leaves
 * samples NULL and the probes without a last run (a daemon just started). */
struct snapshot *fixture_snapshot_new(bool with_devices);

/* Give a device the burst bucket iopsd learns in the QEMU lab: 3000 IOPS for
 * 30 s over a base of 1000, run out at 1699999970.5. */
void fixture_learned_burst(struct device_ceiling *c);

/* The n names as an instance_state's devices: a new array (the snapshot
 * frees it) of the given pointers, which must outlive it (literals). */
const char **fixture_names(const char *const *names, size_t n);

/* Compare `text` with the golden file FIXTURES_DIR/golden/NAME, where the
 * daemon's version is written as @VERSION@. With IOPSD_UPDATE_GOLDEN=1 in
 * the environment the golden file is rewritten instead. Fails the test on a
 * difference, printing the first differing line. */
void assert_golden(const char *name, const char *text);
