/* kubelet: the PersistentVolume and pod a kubelet's mount path names, from
 * mountinfo lines as a Kubernetes node has them, and a device's list of
 * them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kubelet.h"
#include "macro.h"
#include "mountinfo.h"

#define PV   "pvc-5b1f0c2e-7d3a-4e9b-8c6d-0f1e2d3c4b5a"
#define POD  "8d3c1f0e-6b9a-4c2d-9e7f-1a2b3c4d5e6f"
#define HASH "3f0b2b2c6e0e4a0d9f5f0a1e8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c"

static struct mountinfo_entry *parse_one(const char *line)
{
	struct mountinfo_entry *m = NULL;

	assert_int_equal(mountinfo_parse(line, &m), 1);
	return m;
}

/* Whether the mount point of a mountinfo line names a volume; *ret has
 * what it names. */
static bool parse_line(const char *line, struct kubelet_volume *ret)
{
	struct mountinfo_entry *m = parse_one(line);
	bool is_volume = kubelet_volume_parse(m->mountpoint, ret);

	mountinfo_free(m, 1);
	return is_volume;
}

/* The mountinfo line's mount point names PersistentVolume pv and pod pod. */
static void assert_names(const char *line, const char *pv, const char *pod)
{
	struct kubelet_volume v;

	if (!parse_line(line, &v)) {
		fail_msg("%s names no volume", line);
	}
	assert_string_equal(v.persistentvolume, pv);
	assert_string_equal(v.pod_uid, pod);
}

/* A CSI volume as the node has it: staged by its driver, then
 * bind-mounted into a pod. Newer kubelets name the staging mount by a hash
 * of the volume's handle, which names no PV; older ones named it
 * plugins/kubernetes.io/csi/pv/PV/, which names the PV and no pod. */
static void test_filesystem_volume_paths_name_the_pv_and_the_pod(void **state)
{
	struct kubelet_volume v = {.persistentvolume = "untouched"};

	assert_names("1482 29 259:3 / /var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~csi/" PV
		     "/mount rw,relatime shared:712 - ext4 /dev/nvme1n1 rw\n",
		     PV, POD);
	assert_false(
	    parse_line("1450 29 259:3 / /var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/" HASH
		       "/globalmount rw,relatime shared:712 - ext4 /dev/nvme1n1 rw\n",
		       &v));
	assert_string_equal(v.persistentvolume, "untouched");
	assert_names(
	    "1510 29 259:5 / /var/lib/kubelet/plugins/kubernetes.io/csi/pv/pvc-legacy.1/globalmount rw "
	    "- ext4 /dev/nvme3n1 rw\n",
	    "pvc-legacy.1", "");
}

/* A raw block volume: the kubelet bind-mounts the device node, so that
 * mountinfo shows devtmpfs's device and the node as the root. */
static void test_raw_block_volume_bind_names_the_pv_and_the_pod(void **state)
{
	assert_names("1501 29 0:5 /nvme2n1 /var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/" PV
		     "/dev/" POD " rw,nosuid shared:2 - devtmpfs udev rw,size=4011284k\n",
		     PV, POD);
	assert_names("1502 29 0:5 /nvme2n1 /var/lib/kubelet/pods/" POD "/volumeDevices/kubernetes.io~csi/" PV
		     " rw - devtmpfs udev rw\n",
		     PV, POD);
}

/* kubelet --root-dir elsewhere, with a space (mountinfo's \040) in it; a
 * static pod's UID, a hash without dashes; the root directory itself. */
static void test_any_kubelet_root_with_escapes(void **state)
{
	assert_names("60 29 8:16 / /srv/kube\\040let/pods/0f3e9c1d2b4a59687f6e5d4c3b2a1908/volumes/"
		     "kubernetes.io~csi/pv-a/mount rw - xfs /dev/sdb rw\n",
		     "pv-a", "0f3e9c1d2b4a59687f6e5d4c3b2a1908");
	assert_names("61 29 8:16 / /pods/u1/volumes/kubernetes.io~csi/pv-b/mount rw - xfs /dev/sdb rw\n",
		     "pv-b", "u1");
}

static void test_paths_that_only_look_like_the_kubelets_name_nothing(void **state)
{
	static const char *const paths[] = {
	    "",
	    "/",
	    "/data",
	    /* below a volume's mount, or a sibling of it */
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~csi/" PV "/mount/sub",
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~csi/" PV "/mounted",
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~csi/" PV,
	    /* another volume plugin: an emptyDir, a secret, an in-tree NFS volume */
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~empty-dir/cache",
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~secret/token",
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~nfs/" PV "/mount",
	    "/var/lib/kubelet/pods/" POD "/volume-subpaths/" PV "/app/0",
	    /* a name Kubernetes would refuse: not a PV's (a space, upper case,
	     * a dot at an end) or not a pod's UID */
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~csi/my pv/mount",
	    "/var/lib/kubelet/pods/" POD "/volumes/kubernetes.io~csi/PVC-1/mount",
	    "/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pvc-1./globalmount",
	    "/var/lib/kubelet/pods/a b/volumes/kubernetes.io~csi/" PV "/mount",
	    /* components that are not whole: "xpods", "csi" as a suffix */
	    "/var/lib/kubelet/xpods/" POD "/volumes/kubernetes.io~csi/" PV "/mount",
	    "/var/lib/kubelet/plugins/kubernetes.io/xcsi/pv/" PV "/globalmount",
	    /* the staging directory, not its globalmount; a block volume's dev/ */
	    "/var/lib/kubelet/plugins/kubernetes.io/csi/pv/" PV,
	    "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/" PV "/dev",
	    /* an empty component */
	    "/var/lib/kubelet/pods//volumes/kubernetes.io~csi//mount",
	};
	struct kubelet_volume v = {.persistentvolume = "untouched"};

	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		if (kubelet_volume_parse(paths[i], &v)) {
			fail_msg("\"%s\" names %s", paths[i], v.persistentvolume);
		}
	}
	assert_false(kubelet_volume_parse(NULL, &v));
	assert_string_equal(v.persistentvolume, "untouched");
	/* the escaped name in a mountinfo line: a PV named with a space is none */
	assert_false(parse_line("61 29 8:16 / /var/lib/kubelet/pods/" POD
				"/volumes/kubernetes.io~csi/my\\040pv/"
				"mount rw - xfs /dev/sdb rw\n",
				&v));
}

static void add(struct device_persistentvolume **l, size_t *n, const char *pv, const char *pod)
{
	struct kubelet_volume v = {{0}};

	strcpy(v.persistentvolume, pv);
	strcpy(v.pod_uid, pod);
	assert_int_equal(kubelet_volume_add(l, n, &v), 0);
}

/* Sorted, once each; a volume without a pod only until a pod of it is
 * known, in either order; DEVICE_MAX_PERSISTENTVOLUMES at most. */
static void test_device_list_is_sorted_unique_and_bounded(void **state)
{
	struct device_persistentvolume *l = NULL;
	char pod[16];
	size_t n = 0;

	add(&l, &n, "pv-b", "");
	add(&l, &n, "pv-b", "pod-2");
	add(&l, &n, "pv-b", "pod-1");
	add(&l, &n, "pv-b", "");
	add(&l, &n, "pv-b", "pod-2");
	add(&l, &n, "pv-a", "");
	add(&l, &n, "pv-a", "");
	assert_int_equal(n, 3);
	assert_string_equal(l[0].persistentvolume, "pv-a");
	assert_string_equal(l[0].pod_uid, "");
	assert_string_equal(l[1].persistentvolume, "pv-b");
	assert_string_equal(l[1].pod_uid, "pod-1");
	assert_string_equal(l[2].pod_uid, "pod-2");
	for (int i = 0; i < 30; i++) {
		snprintf(pod, sizeof(pod), "pod-%02d", i);
		add(&l, &n, "pv-c", pod);
	}
	assert_int_equal(n, DEVICE_MAX_PERSISTENTVOLUMES);
	assert_string_equal(l[3].pod_uid, "pod-00");
	kubelet_volumes_free(l, n);
	kubelet_volumes_free(NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_filesystem_volume_paths_name_the_pv_and_the_pod),
	    cmocka_unit_test(test_raw_block_volume_bind_names_the_pv_and_the_pod),
	    cmocka_unit_test(test_any_kubelet_root_with_escapes),
	    cmocka_unit_test(test_paths_that_only_look_like_the_kubelets_name_nothing),
	    cmocka_unit_test(test_device_list_is_sorted_unique_and_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
