/* The kubelet's volume paths (kubelet.h): matched by their last
 * components, whatever the kubelet's root directory. */
#include "kubelet.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* The layouts below the kubelet's root; {pv} and {pod} stand for the
 * names they carry. */
static const char *const layouts[] = {
    "pods/{pod}/volumes/kubernetes.io~csi/{pv}/mount",
    "pods/{pod}/volumeDevices/kubernetes.io~csi/{pv}",
    "plugins/kubernetes.io/csi/pv/{pv}/globalmount",
    "plugins/kubernetes.io/csi/volumeDevices/{pv}/dev/{pod}",
};

/* The most components a layout has. */
#define LAYOUT_MAX_COMPONENTS 7

struct component {
	const char *s;
	size_t len;
};

static bool component_eq(struct component a, struct component b)
{
	return a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
}

static bool component_is(struct component c, const char *s)
{
	return component_eq(c, (struct component){s, strlen(s)});
}

/* The last LAYOUT_MAX_COMPONENTS components of `path` (fewer when it has
 * fewer) into ret, in order; returns how many. */
static size_t path_tail(const char *path, struct component ret[LAYOUT_MAX_COMPONENTS])
{
	struct component rev[LAYOUT_MAX_COMPONENTS];
	size_t end = strlen(path), n = 0;

	while (n < LAYOUT_MAX_COMPONENTS) {
		size_t start;

		while (end > 0 && path[end - 1] == '/') {
			end--;
		}
		if (end == 0) {
			break;
		}
		for (start = end; start > 0 && path[start - 1] != '/';) {
			start--;
		}
		rev[n++] = (struct component){path + start, end - start};
		end = start;
	}
	for (size_t i = 0; i < n; i++) {
		ret[i] = rev[n - 1 - i];
	}
	return n;
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A DNS subdomain (RFC 1123), as Kubernetes requires of a
 * PersistentVolume's name: lower-case letters, digits, '-' and '.', with a
 * letter or digit at each end and on each side of a '.'. */
static bool is_pv_name(struct component c)
{
	if (c.len == 0 || c.len > KUBELET_PV_NAME_MAX) {
		return false;
	}
	for (size_t i = 0; i < c.len; i++) {
		bool is_edge = i == 0 || i == c.len - 1 || c.s[i - 1] == '.' || c.s[i + 1] == '.';

		if (!is_lower_alnum(c.s[i]) && (is_edge || (c.s[i] != '-' && c.s[i] != '.'))) {
			return false;
		}
	}
	return true;
}

/* Letters, digits and '-': a UUID, or a static pod's hash. */
static bool is_pod_uid(struct component c)
{
	if (c.len == 0 || c.len > KUBELET_POD_UID_MAX) {
		return false;
	}
	for (size_t i = 0; i < c.len; i++) {
		char ch = c.s[i];

		if (!is_lower_alnum(ch) && !(ch >= 'A' && ch <= 'Z') && ch != '-') {
			return false;
		}
	}
	return true;
}

/* Copies a component checked to fit. */
static void copy_name(char *dst, struct component c)
{
	memcpy(dst, c.s, c.len);
	dst[c.len] = '\0';
}

/* Whether the last components of a path (n of them in `got`) are `layout`;
 * fills *v with the names it carries. */
static bool match_layout(const char *layout, const struct component *got, size_t n, struct kubelet_volume *v)
{
	struct component want[LAYOUT_MAX_COMPONENTS];
	size_t k = path_tail(layout, want);

	if (n < k) {
		return false;
	}
	got += n - k;
	for (size_t i = 0; i < k; i++) {
		if (component_is(want[i], "{pv}")) {
			if (!is_pv_name(got[i])) {
				return false;
			}
			copy_name(v->persistentvolume, got[i]);
		} else if (component_is(want[i], "{pod}")) {
			if (!is_pod_uid(got[i])) {
				return false;
			}
			copy_name(v->pod_uid, got[i]);
		} else if (!component_eq(got[i], want[i])) {
			return false;
		}
	}
	return true;
}

bool kubelet_volume_parse(const char *mountpoint, struct kubelet_volume *ret)
{
	struct component got[LAYOUT_MAX_COMPONENTS];
	size_t n;

	if (!mountpoint) {
		return false;
	}
	n = path_tail(mountpoint, got);
	for (size_t i = 0; i < ELEMENTSOF(layouts); i++) {
		struct kubelet_volume v = {{0}};

		if (match_layout(layouts[i], got, n, &v)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

static int insert_volume(struct device_persistentvolume **list, size_t *n, size_t at,
			 const struct kubelet_volume *v)
{
	struct device_persistentvolume e = {strdup(v->persistentvolume), strdup(v->pod_uid)}, *l;

	l = e.persistentvolume && e.pod_uid ? realloc(*list, (*n + 1) * sizeof(*l)) : NULL;
	if (!l) {
		free(e.persistentvolume);
		free(e.pod_uid);
		return -ENOMEM;
	}
	*list = l;
	memmove(l + at + 1, l + at, (*n - at) * sizeof(*l));
	l[at] = e;
	(*n)++;
	return 0;
}

static int set_pod_uid(struct device_persistentvolume *e, const char *pod_uid)
{
	char *s = strdup(pod_uid);

	if (!s) {
		return -ENOMEM;
	}
	free(e->pod_uid);
	e->pod_uid = s;
	return 0;
}

int kubelet_volume_add(struct device_persistentvolume **list, size_t *n, const struct kubelet_volume *v)
{
	struct device_persistentvolume *l = *list;
	size_t at;

	for (at = 0; at < *n; at++) {
		int by_pv = strcmp(l[at].persistentvolume, v->persistentvolume);
		int by_pod = strcmp(l[at].pod_uid, v->pod_uid);

		if (by_pv == 0 && (v->pod_uid[0] == '\0' || by_pod == 0)) {
			return 0; /* known, or a pod of it is */
		}
		if (by_pv == 0 && l[at].pod_uid[0] == '\0') {
			/* the volume's first pod: its only entry so far */
			return set_pod_uid(&l[at], v->pod_uid);
		}
		if (by_pv > 0 || (by_pv == 0 && by_pod > 0)) {
			break;
		}
	}
	if (*n >= DEVICE_MAX_PERSISTENTVOLUMES) {
		return 0;
	}
	return insert_volume(list, n, at, v);
}

void kubelet_volumes_free(struct device_persistentvolume *list, size_t n)
{
	for (size_t i = 0; list && i < n; i++) {
		free(list[i].persistentvolume);
		free(list[i].pod_uid);
	}
	free(list);
}
