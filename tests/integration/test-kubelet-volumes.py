#!/usr/bin/env python3
"""Which PersistentVolume a device is, from the kubelet's mount paths, as a
Kubernetes node has them (no cluster: the mounts alone), under a kubelet
root of the test's own (TMP/var/lib/kubelet, as --root-dir would put it):

  - an ext4 loop device staged where a CSI driver stages it
    (plugins/kubernetes.io/csi/DRIVER/HASH/globalmount, which names no PV)
    and bind-mounted into two pods
    (pods/POD_UID/volumes/kubernetes.io~csi/PV/mount);
  - a second loop device published as a raw block volume: its device node
    bind-mounted at plugins/kubernetes.io/csi/volumeDevices/PV/dev/POD_UID;
  - before them, small tmpfs mounts of the test's own until
    /proc/self/mountinfo is longer than two pages, as a node's is: procfs
    gives a page per read(), and a mountinfo read in one read() lost the
    kubelet's mounts, which come last (a gate run once listed one of the
    two pods that way).

iopsd runs a probe in the first pod's volume, and

  - /metrics has iopsd_device_persistentvolume_info{device, persistentvolume,
    pod_uid} 1 for the filesystem's device once per pod, for the raw block
    device with its pod, and for no other device;
  - iopsd_device_info keeps its labels (no persistentvolume);
  - the probe in the pod's volume runs and is placed on that device;
  - /api/v1/devices has the same in each device's kubernetes.persistentvolumes;
  - a third pod's mount of the volume, made after iopsd started, is on
    /metrics within REFRESH_BOUND s: iopsd polls mountinfo for changes and
    reads the topology again at the next sample (its periodic refresh is
    every 60 s, and the mount is made long before that)."""
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

PV = f"pvc-{uuid.uuid4()}"
RAW_PV = f"pvc-{uuid.uuid4()}"
PODS = sorted(str(uuid.uuid4()) for _ in range(2))
LATE_POD = str(uuid.uuid4())
REFRESH_BOUND = 30  # s: a hung-test bound, well under the 60-s periodic refresh
DRIVER = "ebs.csi.aws.com"
HASH = uuid.uuid4().hex * 2  # a sha256's length

CONFIG = """[global]
state_directory=@TMP@

[claim]
directory={directory}
rw=randread
bs=4k
size=8m
runtime=1s
interval=2s
"""


def volume_series(text):
    """{device: [labels of each iopsd_device_persistentvolume_info series]}"""
    found = {}
    for line in text.splitlines():
        if not line.startswith("iopsd_device_persistentvolume_info{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        assert line.rsplit(" ", 1)[1] == "1", line
        found.setdefault(labels.pop("device"), []).append(labels)
    return found


def info_labels(text, device):
    """The label names of the device's iopsd_device_info series."""
    for line in text.splitlines():
        if line.startswith("iopsd_device_info{") and f'device="{device}"' in line:
            return sorted(re.findall(r'(\w+)="', line.split("}", 1)[0]))
    return None


class KubeletMounts:
    """The node's mounts, made in order and undone in reverse."""

    def __init__(self, root):
        self.kubelet = os.path.join(root, "var/lib/kubelet")
        self.mounted = []

    def pod_volume(self, pod, pv):
        return os.path.join(self.kubelet, "pods", pod, "volumes/kubernetes.io~csi", pv, "mount")

    def mount(self, target, *args, is_file=False):
        os.makedirs(os.path.dirname(target) if is_file else target, exist_ok=True)
        if is_file:
            open(target, "w").close()
        t.run("mount", *args, target)
        self.mounted.append(target)

    def pad_mountinfo(self, root):
        """tmpfs mounts until mountinfo passes two pages; their count."""
        page, n = os.sysconf("SC_PAGE_SIZE"), 0
        while len(open("/proc/self/mountinfo", "rb").read()) <= 2 * page:
            target = os.path.join(root, "pad", str(n))
            self.mount(target, "-t", "tmpfs", "-o", "size=64k", f"iopsd-kubelet-pad{n}")
            n += 1
            assert n < 200, "mountinfo does not grow with mounts"
        return n

    def staging(self):
        return os.path.join(self.kubelet, "plugins/kubernetes.io/csi", DRIVER, HASH, "globalmount")

    def stage_and_publish(self, dev):
        """A CSI driver's staging mount, then a bind mount into each pod."""
        self.mount(self.staging(), "-t", "ext4", dev)
        for pod in PODS:
            self.mount(self.pod_volume(pod, PV), "--bind", self.staging())

    def map_block(self, dev, pod):
        """A raw block volume: the kubelet bind-mounts the device node."""
        node = os.path.join(self.kubelet, "plugins/kubernetes.io/csi/volumeDevices", RAW_PV, "dev", pod)
        self.mount(node, "--bind", dev, is_file=True)

    def cleanup(self):
        for target in reversed(self.mounted):
            if t.run("umount", target, check=False).returncode != 0:
                t.run("umount", "-l", target, check=False)
        self.mounted = []


def check_metrics(d, fs, raw):
    text = t.wait_until(
        lambda: (lambda m: m if t.metric_value(m, "iopsd_probe_runs_total", {"probe": "claim"}) else None)(
            d.metrics()), 60, 0.5, "a run of the probe in the pod's volume")
    series = volume_series(text)
    print(f"iopsd_device_persistentvolume_info: {json.dumps(series, sort_keys=True)}")
    want_fs = [{"persistentvolume": PV, "pod_uid": pod} for pod in PODS]
    want_raw = [{"persistentvolume": RAW_PV, "pod_uid": PODS[1]}]
    assert series.get(fs.name) == want_fs, f"{fs.name}: {series.get(fs.name)}, want {want_fs}"
    assert series.get(raw.name) == want_raw, f"{raw.name}: {series.get(raw.name)}, want {want_raw}"
    assert set(series) == {fs.name, raw.name}, f"other devices with a volume: {sorted(series)}"
    labels = info_labels(text, fs.name)
    assert labels == ["device", "kind", "members", "mountpoint"], f"iopsd_device_info of {fs.name}: {labels}"
    assert t.metric_value(text, "iopsd_probe_info", {"probe": "claim", "device": fs.name}) == 1, \
        [line for line in text.splitlines() if line.startswith("iopsd_probe_info")]
    assert t.metric_value(text, "iopsd_probe_success", {"probe": "claim"}) == 1, d.read_log()[-2000:]
    return want_fs, want_raw


def check_json(d, fs, raw, want_fs, want_raw):
    for dev, want in ((fs, want_fs), (raw, want_raw)):
        doc = d.get_json(f"/api/v1/devices?device={dev.name}")
        got = doc["devices"][0]["kubernetes"]
        print(f"/api/v1/devices {dev.name} kubernetes: {json.dumps(got)}")
        assert got == {"persistentvolumes": want}, f"{dev.name}: {got}, want {want}"


def check_late_pod(d, fs, node, started):
    """A pod's mount made while iopsd runs is seen at a sample, not at the
    next periodic refresh."""
    node.mount(node.pod_volume(LATE_POD, PV), "--bind", node.staging())
    t0 = time.monotonic()
    assert t0 - started < REFRESH_BOUND, f"the mount came {t0 - started:.0f} s after the start: too late to tell"

    def seen():
        pods = [v["pod_uid"] for v in volume_series(d.metrics()).get(fs.name, [])]
        return pods if LATE_POD in pods else None
    pods = t.wait_until(seen, REFRESH_BOUND, 0.25, f"pod {LATE_POD} mounted at {t0 - started:.1f} s after the start")
    print(f"a pod's mount made {t0 - started:.1f} s after iopsd started was on /metrics "
          f"{time.monotonic() - t0:.1f} s later ({len(pods)} pods)")


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "mount", "umount")
    root = tempfile.mkdtemp(prefix="iopsd-kubelet-", dir="/var/tmp")
    node = KubeletMounts(root)
    fs = raw = d = None
    try:
        fs = t.LoopDevice("kubelet-fs", 64, in_memory=True)
        raw = t.LoopDevice("kubelet-raw", 16, in_memory=True)
        t.run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", fs.path)
        pads = node.pad_mountinfo(root)
        print(f"{pads} tmpfs mounts before the kubelet's: /proc/self/mountinfo is "
              f"{len(open('/proc/self/mountinfo', 'rb').read())} bytes")
        node.stage_and_publish(fs.path)
        node.map_block(raw.path, PODS[1])
        d = t.Daemon(CONFIG.format(directory=node.pod_volume(PODS[0], PV)))
        started = time.monotonic()
        d.start()
        want_fs, want_raw = check_metrics(d, fs, raw)
        check_json(d, fs, raw, want_fs, want_raw)
        check_late_pod(d, fs, node, started)
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
        print(f"ok: {fs.name} is {PV} for pods {', '.join(PODS)}, and its probe ran there; "
              f"{raw.name} is the raw block volume {RAW_PV} of pod {PODS[1]}")
    finally:
        if d:
            d.cleanup()
        node.cleanup()
        for loop in (fs, raw):
            if loop:
                loop.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
