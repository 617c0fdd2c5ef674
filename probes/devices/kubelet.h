/* The kubelet's volume paths: which Kubernetes PersistentVolume, and which
 * pod, a mount point names (pure), and a device's list of them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "device.h"

/* A PersistentVolume's name is a DNS subdomain: 253 characters at most. */
#define KUBELET_PV_NAME_MAX 253
/* A pod's UID: 36 characters from the API server (a UUID), 32 for a
 * static pod (a hash of its manifest). */
#define KUBELET_POD_UID_MAX 64

struct kubelet_volume {
	char persistentvolume[KUBELET_PV_NAME_MAX + 1];
	char pod_uid[KUBELET_POD_UID_MAX + 1]; /* "" when the path names no pod */
};

/* Whether `mountpoint` (unescaped, as mountinfo_parse() leaves it) is one
 * of the paths where the kubelet mounts a CSI PersistentVolume, below its
 * root directory (/var/lib/kubelet unless --root-dir moved it; any root is
 * recognised):
 *   ROOT/pods/POD_UID/volumes/kubernetes.io~csi/PV/mount        a pod's volume
 *   ROOT/pods/POD_UID/volumeDevices/kubernetes.io~csi/PV        a pod's raw block volume
 *   ROOT/plugins/kubernetes.io/csi/pv/PV/globalmount            the node's staging mount,
 *                                                               as older kubelets name it
 *   ROOT/plugins/kubernetes.io/csi/volumeDevices/PV/dev/POD_UID a raw block volume's device
 *                                                               node, bind-mounted
 * with a valid PV name and pod UID. Newer kubelets name the staging mount
 * ROOT/plugins/kubernetes.io/csi/DRIVER/SHA256/globalmount, by a hash of
 * the volume's handle: that path names no PersistentVolume (the pods'
 * mounts of the same device do), and is not one of them. Fills *ret only
 * when it is. */
bool kubelet_volume_parse(const char *mountpoint, struct kubelet_volume *ret);

/* Adds v to a device's list (*list, *n; sorted by PersistentVolume, then
 * pod UID): once, DEVICE_MAX_PERSISTENTVOLUMES at most, and a volume
 * without a pod only while no pod of it is known (one with a pod replaces
 * it). Returns 0, or -ENOMEM (the list stays valid). */
int kubelet_volume_add(struct device_persistentvolume **list, size_t *n, const struct kubelet_volume *v);

/* Frees a list that kubelet_volume_add() built; accepts NULL. */
void kubelet_volumes_free(struct device_persistentvolume *list, size_t n);
