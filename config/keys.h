/* The one table of configuration keys: every key iopsd knows, fio's and its
 * own, with its value kind, range, the field it sets and its class. The
 * parser, the "valid keys" messages and the man page's table all follow it
 * (tests/unit/test-config-keys.c holds the man page to it). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum config_key_class {
	CONFIG_KEY_HONOURED, /* fio's meaning, or a key of iopsd's own */
	CONFIG_KEY_BUDGET,   /* sets a one-shot run's length: fitted to the probe schedule */
	CONFIG_KEY_IGNORED,  /* reporting and housekeeping: accepted, changes nothing measured */
	CONFIG_KEY_REFUSED,  /* would change what is measured in a way iopsd will not */
	_CONFIG_KEY_CLASS_MAX,
};

enum config_key_scope {
	CONFIG_SCOPE_GLOBAL,   /* [global] only: the daemon's settings */
	CONFIG_SCOPE_PROBE,    /* a probe section, or [global] as a default for later ones */
	CONFIG_SCOPE_DEVICE,   /* [device NAME] */
	CONFIG_SCOPE_INSTANCE, /* [instance] */
	_CONFIG_SCOPE_MAX,
};

enum config_key_kind {
	CONFIG_KIND_ANY,      /* any value (ignored and refused keys) */
	CONFIG_KIND_BOOL,     /* bool field */
	CONFIG_KIND_UINT,     /* unsigned field, min..max */
	CONFIG_KIND_U64,      /* uint64_t field, min..max */
	CONFIG_KIND_SIZE,     /* uint64_t bytes, min..max */
	CONFIG_KIND_DURATION, /* uint64_t usec, min..max; a bare number is seconds */
	CONFIG_KIND_RATIO,    /* double in (0, 1] */
	CONFIG_KIND_STRING,   /* char *, replaced */
	CONFIG_KIND_SPECIAL,  /* parsed by config.c's parser for `special` */
};

/* Keys whose value needs its own parser (config.c dispatches on this). */
enum config_key_special {
	CONFIG_SPECIAL_NONE,
	CONFIG_SPECIAL_RW,
	CONFIG_SPECIAL_IOENGINE,
	CONFIG_SPECIAL_BS,
	CONFIG_SPECIAL_BSRANGE,
	CONFIG_SPECIAL_BSSPLIT,
	CONFIG_SPECIAL_DIRECTORY,
	CONFIG_SPECIAL_FILENAME,
	CONFIG_SPECIAL_RWMIXWRITE,
	CONFIG_SPECIAL_DIRECT,
	CONFIG_SPECIAL_BUFFERED,
	CONFIG_SPECIAL_RATE,
	CONFIG_SPECIAL_RATE_IOPS,
	CONFIG_SPECIAL_LISTEN,
	CONFIG_SPECIAL_STATE_DIRECTORY,
	CONFIG_SPECIAL_LOG_LEVEL,
	CONFIG_SPECIAL_REGEX,
	CONFIG_SPECIAL_CREDIT_RATE,
	CONFIG_SPECIAL_VOLUME_TYPE,
	CONFIG_SPECIAL_PROVISIONED_THROUGHPUT,
	CONFIG_SPECIAL_RANDOM_DISTRIBUTION,
	CONFIG_SPECIAL_WORKLOAD, /* fio_parse_workload() by the key's name */
	_CONFIG_SPECIAL_MAX,
};

/* Which keys a section has set (in it, or inherited from [global]), for
 * conflicts, defaults and the fitting notices. */
enum {
	CONFIG_SEEN_DIRECTORY = 1u << 0,
	CONFIG_SEEN_FILENAME = 1u << 1,
	CONFIG_SEEN_RUNTIME = 1u << 2,
	CONFIG_SEEN_NUMBER_IOS = 1u << 3,
	CONFIG_SEEN_RWMIXREAD = 1u << 4,
	CONFIG_SEEN_RWMIXWRITE = 1u << 5,
	CONFIG_SEEN_INTERVAL = 1u << 6,
	CONFIG_SEEN_RATE_IOPS = 1u << 7,
	CONFIG_SEEN_SIZE = 1u << 8,
	CONFIG_SEEN_FSYNC = 1u << 9,
	CONFIG_SEEN_HISTORY = 1u << 10, /* history=, sample_interval=, max_history_memory= */
	CONFIG_SEEN_TIME_BASED = 1u << 11,
	CONFIG_SEEN_LOOPS = 1u << 12,
	CONFIG_SEEN_RAMP = 1u << 13,
	CONFIG_SEEN_STARTDELAY = 1u << 14,
	CONFIG_SEEN_FILESIZE = 1u << 15,
	CONFIG_SEEN_NRFILES = 1u << 16,
	CONFIG_SEEN_OFFSET = 1u << 17,
	CONFIG_SEEN_OFFSET_INCREMENT = 1u << 18,
	CONFIG_SEEN_RATE = 1u << 19,
	CONFIG_SEEN_IO_SIZE = 1u << 20,
};

#define CONFIG_KEY_MAX_ALIASES 3

struct config_key {
	const char *name;
	const char *aliases[CONFIG_KEY_MAX_ALIASES]; /* NULL-terminated when shorter */
	enum config_key_scope scope;
	enum config_key_class cls;
	enum config_key_kind kind;
	enum config_key_special special;
	size_t offset; /* of the field in struct config, probe_config or device_config */
	uint64_t min, max;
	unsigned seen;	  /* CONFIG_SEEN_* bits set when the key is given */
	const char *off;  /* refused keys: "|"-separated values that mean "off", accepted */
	const char *text; /* what iopsd does with it; for a refused key, why */
};

extern const struct config_key config_keys[];
extern const size_t config_keys_count;

/* The key called `name` (or with that alias) in `scope`; NULL when none. */
const struct config_key *config_key_find(const char *name, enum config_key_scope scope);
/* The same in any scope, for "belongs in [global]" messages. */
const struct config_key *config_key_find_any(const char *name);
/* Its index in config_keys[], for per-section bookkeeping. */
size_t config_key_index(const struct config_key *k);

const char *config_key_class_to_string(enum config_key_class c);
const char *config_key_scope_to_string(enum config_key_scope s);

/* Whether `value` is one of a refused key's "off" values ("0", "none"). */
bool config_key_value_is_off(const struct config_key *k, const char *value);

/* "rw (readwrite), bs (blocksize), ...": the honoured and budget keys of
 * `scope` in table order, for "valid keys are ..." messages. Returns the
 * length it needed (as snprintf does). */
int config_keys_list(enum config_key_scope scope, char *buf, size_t len);
