/* Probe directories' filesystem pins in the state directory. See pins.h. */
#include "pins.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include "fileio.h"
#include "macro.h"

#define PINS_HEADER "# iopsd: the filesystem of each probe directory at the probe's first good run\n"
#define PINS_MAX    1024 /* more than any configuration has probes */

struct pin_store {
	pthread_mutex_t lock; /* the pins, and the file's writers */
	char *state_directory;
	char boot_id[64];
	struct pin *pins;
	size_t n;
};

void pins_free(struct pin *pins, size_t n)
{
	for (size_t i = 0; pins && i < n; i++) {
		free(pins[i].name);
		free(pins[i].directory);
	}
	free(pins);
}

/* "pin MAJOR:MINOR NAME DIRECTORY" into *p; false when it is not one. */
static bool parse_pin_line(const char *line, size_t len, struct pin *p)
{
	_cleanup_free_ char *copy = strndup(line, len);
	unsigned maj, min;
	int name_at = 0, name_end = 0, dir_at = 0;

	if (!copy || sscanf(copy, "pin %u:%u %n%*s%n %n", &maj, &min, &name_at, &name_end, &dir_at) != 2 ||
	    dir_at == 0 || copy[dir_at] != '/') {
		return false;
	}
	p->name = strndup(copy + name_at, (size_t)(name_end - name_at));
	p->directory = strdup(copy + dir_at);
	p->dev = makedev(maj, min);
	if (!p->name || !p->directory) {
		free(p->name);
		free(p->directory);
		return false;
	}
	return true;
}

int pins_parse(const char *text, const char *boot_id, struct pin **ret_pins, size_t *ret_n)
{
	struct pin *pins = calloc(PINS_MAX, sizeof(*pins));
	bool is_same_boot = false, has_boot = false;
	size_t n = 0;

	if (!pins) {
		return -ENOMEM;
	}
	for (const char *p = text; *p;) {
		const char *nl = strchrnul(p, '\n');
		size_t len = (size_t)(nl - p);

		if (len > 5 && strncmp(p, "boot ", 5) == 0 && !has_boot) {
			has_boot = true;
			is_same_boot = len - 5 == strlen(boot_id) && strncmp(p + 5, boot_id, len - 5) == 0;
		} else if (has_boot && n < PINS_MAX && len > 4 && strncmp(p, "pin ", 4) == 0) {
			n += parse_pin_line(p, len, &pins[n]);
		}
		p = *nl ? nl + 1 : nl;
	}
	if (!has_boot) {
		pins_free(pins, n);
		return -EINVAL;
	}
	if (!is_same_boot) {
		pins_free(pins, n);
		*ret_n = n;
		return -ESTALE;
	}
	*ret_pins = pins;
	*ret_n = n;
	return 0;
}

char *pins_format(const struct pin *pins, size_t n, const char *boot_id)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f) {
		return NULL;
	}
	fprintf(f, PINS_HEADER "boot %s\n", boot_id);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "pin %u:%u %s %s\n", major(pins[i].dev), minor(pins[i].dev), pins[i].name,
			pins[i].directory);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int pin_store_new(const char *state_directory, struct pin_store **ret, size_t *ret_dropped)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	struct pin_store *ps = calloc(1, sizeof(*ps));
	int r;

	*ret_dropped = 0;
	if (!ps) {
		return -ENOMEM;
	}
	pthread_mutex_init(&ps->lock, NULL);
	ps->state_directory = strdup(state_directory);
	path = path_join(state_directory, PINS_FILE);
	if (!ps->state_directory || !path) {
		pin_store_free(ps);
		return -ENOMEM;
	}
	/* the boot's id, or none: then no pin of an earlier start is trusted */
	if (read_one_line("/proc/sys/kernel/random/boot_id", ps->boot_id, sizeof(ps->boot_id)) < 0) {
		ps->boot_id[0] = '\0';
	}
	if (ps->boot_id[0] && read_virtual_file(path, 1 << 20, &text) >= 0) {
		r = pins_parse(text, ps->boot_id, &ps->pins, &ps->n);
		if (r == -ESTALE) {
			*ret_dropped = ps->n;
			ps->n = 0;
		}
	}
	*ret = ps;
	return 0;
}

struct pin_store *pin_store_free(struct pin_store *ps)
{
	if (!ps) {
		return NULL;
	}
	pins_free(ps->pins, ps->n);
	free(ps->state_directory);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
	return NULL;
}

static struct pin *find_locked(struct pin_store *ps, const char *name, const char *directory)
{
	for (size_t i = 0; i < ps->n; i++) {
		if (strcmp(ps->pins[i].name, name) == 0 && strcmp(ps->pins[i].directory, directory) == 0) {
			return &ps->pins[i];
		}
	}
	return NULL;
}

bool pin_store_get(struct pin_store *ps, const char *name, const char *directory, dev_t *ret_dev)
{
	struct pin *p;

	if (!ps) {
		return false;
	}
	pthread_mutex_lock(&ps->lock);
	p = find_locked(ps, name, directory);
	if (p) {
		*ret_dev = p->dev;
	}
	pthread_mutex_unlock(&ps->lock);
	return p != NULL;
}

void pin_store_retain(struct pin_store *ps, pin_keep_fn keep, void *userdata)
{
	size_t n = 0;

	if (!ps) {
		return;
	}
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < ps->n; i++) {
		if (keep(&ps->pins[i], userdata)) {
			ps->pins[n++] = ps->pins[i];
		} else {
			free(ps->pins[i].name);
			free(ps->pins[i].directory);
		}
	}
	ps->n = n;
	pthread_mutex_unlock(&ps->lock);
}

/* Write `text` to DIR/pins through a temporary file of its own. */
static int write_atomically(const char *directory, const char *text)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	size_t len = strlen(text);
	int r = 0;

	dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		return -errno;
	}
	fd = openat(dfd, "." PINS_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		return -errno;
	}
	errno = 0;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
		r = errno ? -errno : -EIO;
	} else if (renameat(dfd, "." PINS_FILE ".tmp", dfd, PINS_FILE) < 0) {
		r = -errno;
	} else if (fsync(dfd) < 0) {
		r = -errno;
	}
	if (r < 0) {
		unlinkat(dfd, "." PINS_FILE ".tmp", 0);
	}
	return r;
}

static int add_locked(struct pin_store *ps, const char *name, const char *directory, dev_t dev)
{
	struct pin *p = find_locked(ps, name, directory), *grown;

	if (p) {
		p->dev = dev;
		return 0;
	}
	if (ps->n >= PINS_MAX) {
		return -E2BIG;
	}
	grown = realloc(ps->pins, (ps->n + 1) * sizeof(*ps->pins));
	if (!grown) {
		return -ENOMEM;
	}
	ps->pins = grown;
	p = &ps->pins[ps->n];
	*p = (struct pin){.name = strdup(name), .directory = strdup(directory), .dev = dev};
	if (!p->name || !p->directory) {
		free(p->name);
		free(p->directory);
		return -ENOMEM;
	}
	ps->n++;
	return 0;
}

int pin_store_set(struct pin_store *ps, const char *name, const char *directory, dev_t dev)
{
	_cleanup_free_ char *text = NULL;
	int r;

	if (!ps) {
		return 0;
	}
	pthread_mutex_lock(&ps->lock);
	r = add_locked(ps, name, directory, dev);
	if (r >= 0 && ps->boot_id[0]) {
		text = pins_format(ps->pins, ps->n, ps->boot_id);
		r = text ? write_atomically(ps->state_directory, text) : -ENOMEM;
	}
	pthread_mutex_unlock(&ps->lock);
	return r;
}
