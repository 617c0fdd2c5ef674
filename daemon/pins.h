/* The filesystem each probe directory is pinned to (the one it was on at
 * the probe's first good run), kept in the state directory as STATE/pins
 * so that a restart keeps it as a reload does. Device numbers hold for one
 * boot: the file names the boot (/proc/sys/kernel/random/boot_id), and the
 * pins of another boot are dropped, to be learned again. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PINS_FILE "pins"

struct pin {
	char *name;	 /* the probe's */
	char *directory; /* its directory= */
	dev_t dev;
};

struct pin_store;

/* Load STATE/pins (a missing or unreadable one, or one of another boot,
 * is an empty store; *ret_dropped then counts the pins it had). The store
 * keeps `state_directory` (copied). */
int pin_store_new(const char *state_directory, struct pin_store **ret, size_t *ret_dropped);
struct pin_store *pin_store_free(struct pin_store *ps);

/* The pin of probe `name` with directory `directory`; false when none. */
bool pin_store_get(struct pin_store *ps, const char *name, const char *directory, dev_t *ret_dev);

/* Keep only the pins of probes that `keep` still names (a reload: the
 * removed probes' pins go at the next save). */
typedef bool (*pin_keep_fn)(const struct pin *p, void *userdata);
void pin_store_retain(struct pin_store *ps, pin_keep_fn keep, void *userdata);

/* Pin the directory of probe `name` to `dev` and write STATE/pins again,
 * atomically (a temporary file, fsync, rename, fsync of the directory).
 * Thread-safe; returns -errno when the file cannot be written (the pin
 * still holds in memory). */
int pin_store_set(struct pin_store *ps, const char *name, const char *directory, dev_t dev);

/* The pins of `text` (STATE/pins) if it was written on boot `boot_id`:
 * *ret_pins (the caller frees them with pins_free()); -EINVAL for a file
 * that is not one, -ESTALE for another boot's (with *ret_n its pins). */
int pins_parse(const char *text, const char *boot_id, struct pin **ret_pins, size_t *ret_n);
/* The text of `pins` for boot `boot_id`; NULL when out of memory. */
char *pins_format(const struct pin *pins, size_t n, const char *boot_id);
void pins_free(struct pin *pins, size_t n);
