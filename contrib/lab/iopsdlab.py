"""The VM lab: cloud volumes in a box. A Debian 12 guest under QEMU
(iopsdvm.py, beside this file) with volumes whose limits the hypervisor enforces, as
a cloud provider does below an instance: IOPS and throughput caps (total or
read/write), a burst bucket, an instance-wide limit shared by several
volumes (a QEMU throttle group), md arrays over them, EBS-style serials on
virtio or NVMe; iopsd installed in the guest from its package (or a built
binary with the shipped units) and reachable on the host's loopback; a
Prometheus on the host scraping it with the shipped rules. While it runs,
caps change live (QMP block_set_io_throttle, as a volume modification
does), volumes detach and reattach (device_del/device_add), and faults are
injected under a volume's filesystem (dm-flakey, dm-delay).

    lab = Lab(LabConfig.parse(text), deb="iopsd_0.1_amd64.deb")
    with lab:
        lab.cap("data1", iops=2000)
        lab.fault("data2", "delay", delay_ms=50)

`iopsd-lab vm` (iopsd_lab_vm.py) is the command line over it; contrib/lab/
README.md describes both."""
import contextlib
import ctypes
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request


# the QEMU harness, beside this file in the tree and where it is installed
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import iopsdvm  # noqa: E402
from iopsdvm import VMError  # noqa: E402,F401

HERE = os.path.dirname(os.path.realpath(__file__))
STATE_BASE = os.environ.get("IOPSD_LAB_VM_DIR", "/run/iopsd-lab")
GUEST_PORT = 9477

# --- the declaration ---------------------------------------------------------

SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
TIME_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "": 1}


class SpecError(ValueError):
    pass


def parse_size(v, what):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", str(v).strip().lower())
    if not m:
        raise SpecError(f"{what}={v}: not a size (e.g. 125m, 1g)")
    return int(float(m.group(1)) * SIZE_UNITS[m.group(2)])


def parse_count(v, what):
    if not re.fullmatch(r"\d+", str(v).strip()):
        raise SpecError(f"{what}={v}: not a whole number")
    return int(v)


def parse_seconds(v, what):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|)", str(v).strip().lower())
    if not m:
        raise SpecError(f"{what}={v}: not a duration (e.g. 30s, 50ms)")
    return float(m.group(1)) * TIME_UNITS[m.group(2)]


def split_spec(text):
    """'NAME,k=v,k=v' or 'NAME k=v k=v' -> (NAME, {k: v}). A key given
    twice is an error; iopsd.* keys keep their case and order."""
    tokens = [t for t in re.split(r"[,\s]+", text.strip()) if t]
    if not tokens or "=" in tokens[0]:
        raise SpecError(f"'{text}': starts with a name (NAME,key=value,...)")
    name, opts = tokens[0], {}
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,23}", name):
        raise SpecError(f"'{name}': names are [a-z0-9][a-z0-9_-]*, at most 24 characters")
    for t in tokens[1:]:
        k, eq, v = t.partition("=")
        if not eq:
            raise SpecError(f"{name}: '{t}' is not key=value")
        if k in opts:
            raise SpecError(f"{name}: {k} given twice")
        opts[k] = v
    return name, opts


def ebs_serial(name):
    """An EBS-style serial for a volume without one: 'vol' and 17 hex
    digits (an EBS NVMe volume's serial is its id without the dash)."""
    import hashlib
    return "vol0" + hashlib.sha256(name.encode()).hexdigest()[:16]


CAP_KEYS = {  # spec key -> (QEMU throttling key, QMP block_set_io_throttle field)
    "iops": ("iops-total", "iops"), "iops-read": ("iops-read", "iops_rd"),
    "iops-write": ("iops-write", "iops_wr"), "bps": ("bps-total", "bps"),
    "bps-read": ("bps-read", "bps_rd"), "bps-write": ("bps-write", "bps_wr"),
}


class Caps:
    """A volume's (or a group's) limits: IOPS and bytes/s, total or
    read/write, and an IOPS burst: `burst` IOPS for `burst_seconds` of
    demand above it, refilling at the base rate (QEMU's iops-*-max).
    `iops_size` is the provider's I/O unit (QEMU's iops-size: an I/O
    larger than it counts as size / iops_size operations, as EBS counts
    in 256 KiB units on SSD volumes)."""

    def __init__(self, iops=0, iops_read=0, iops_write=0, bps=0, bps_read=0, bps_write=0,
                 burst=0, burst_seconds=0.0, iops_size=0):
        self.values = {"iops": iops, "iops-read": iops_read, "iops-write": iops_write,
                       "bps": bps, "bps-read": bps_read, "bps-write": bps_write}
        self.burst, self.burst_seconds = burst, burst_seconds
        self.iops_size = iops_size
        self.check()

    @classmethod
    def from_opts(cls, opts, what):
        c = cls()
        for k in CAP_KEYS:
            if k in opts:
                c.values[k] = (parse_count if k.startswith("iops") else parse_size)(opts.pop(k), k)
        if "iops-size" in opts:
            c.iops_size = parse_size(opts.pop("iops-size"), "iops-size")
        if "burst" in opts:
            c.burst = parse_count(opts.pop("burst"), "burst")
            c.burst_seconds = parse_seconds(opts.pop("burst-length", "30s"), "burst-length")
        elif "burst-length" in opts:
            raise SpecError(f"{what}: burst-length= without burst=")
        c.check(what)
        return c

    def check(self, what="caps"):
        v = self.values
        if v["iops"] and (v["iops-read"] or v["iops-write"]):
            raise SpecError(f"{what}: iops= (total) and iops-read=/iops-write= exclude each other (as in QEMU)")
        if v["bps"] and (v["bps-read"] or v["bps-write"]):
            raise SpecError(f"{what}: bps= (total) and bps-read=/bps-write= exclude each other (as in QEMU)")
        if self.burst:
            bases = [v[k] for k in ("iops", "iops-read", "iops-write") if v[k]]
            if not bases:
                raise SpecError(f"{what}: burst= needs an IOPS base (iops=, iops-read= or iops-write=)")
            if any(self.burst <= b for b in bases):
                raise SpecError(f"{what}: burst={self.burst} must be above the base IOPS {max(bases)}")
            if self.burst_seconds < 1:
                raise SpecError(f"{what}: burst-length must be at least 1s")
        if self.iops_size and (self.iops_size < 512 or self.iops_size % 512):
            raise SpecError(f"{what}: iops-size={self.iops_size}: a multiple of 512 bytes")
        if self.iops_size and not any(v[k] for k in ("iops", "iops-read", "iops-write")):
            raise SpecError(f"{what}: iops-size= needs an IOPS cap (iops=, iops-read= or iops-write=)")

    def max_length(self, base):
        """QEMU's iops-*-max-length for this burst over `base`. QEMU's
        bucket holds burst x max-length I/Os and leaks at the base rate, so
        under a demand above the burst rate it lasts max-length x burst /
        (burst - base) seconds; the lab declares the latter (as a provider
        does: how long the burst lasts) and converts."""
        return max(1, round(self.burst_seconds * (self.burst - base) / self.burst))

    def effective_burst_seconds(self, base):
        return self.max_length(base) * self.burst / (self.burst - base)

    def qemu(self):
        """-drive throttling.* keys (without the prefix)."""
        out = {}
        for k, (qk, _) in CAP_KEYS.items():
            if self.values[k]:
                out[qk] = self.values[k]
                if self.burst and k.startswith("iops"):
                    out[f"{qk}-max"] = self.burst
                    out[f"{qk}-max-length"] = self.max_length(self.values[k])
        if self.iops_size:
            out["iops-size"] = self.iops_size
        return out

    def qmp(self):
        """block_set_io_throttle fields; caps not set are 0 (off)."""
        out = {}
        for k, (_, qf) in CAP_KEYS.items():
            out[qf] = self.values[k]
            if self.burst and k.startswith("iops") and self.values[k]:
                out[f"{qf}_max"] = self.burst
                out[f"{qf}_max_length"] = self.max_length(self.values[k])
        out["iops_size"] = self.iops_size
        return out

    def describe(self):
        parts = [f"{k}={v}" for k, v in self.values.items() if v]
        if self.burst:
            base = next(self.values[k] for k in ("iops", "iops-read", "iops-write") if self.values[k])
            parts.append(f"burst={self.burst} for {self.effective_burst_seconds(base):g}s")
        if self.iops_size:
            parts.append(f"iops-size={self.iops_size}")
        return ",".join(parts) or "uncapped"

    def as_dict(self):
        d = {k: v for k, v in self.values.items() if v}
        if self.burst:
            d["burst"], d["burst_seconds"] = self.burst, self.burst_seconds
        if self.iops_size:
            d["iops_size"] = self.iops_size
        return d


class Volume:
    KEYS = ("size", "bus", "serial", "group", "array", "fs", "mount", "faults", "cache", "paths")

    def __init__(self, name, opts):
        opts = dict(opts)
        self.name = name
        self.caps = Caps.from_opts(opts, name)
        self.iopsd = {k[6:]: opts.pop(k) for k in list(opts) if k.startswith("iopsd.")}
        unknown = set(opts) - set(self.KEYS)
        if unknown:
            raise SpecError(f"volume {name}: unknown key(s) {', '.join(sorted(unknown))}")
        self.size = opts.get("size", "1G")
        parse_size(self.size, "size")
        self.bus = opts.get("bus", "virtio")
        if self.bus not in ("virtio", "nvme"):
            raise SpecError(f"volume {name}: bus={self.bus}: virtio or nvme")
        self.serial = opts.get("serial") or ebs_serial(name)
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,20}", self.serial):
            raise SpecError(f"volume {name}: serial={self.serial}: at most 20 characters [A-Za-z0-9_.-]")
        # NVMe native multipath: one namespace shared by `paths` controllers
        # of one subsystem (the guest sees the head nvmeXnY and hidden paths
        # nvmeXcZnY)
        self.paths = parse_count(opts.get("paths", "1"), "paths")
        if self.paths < 1 or self.paths > 4:
            raise SpecError(f"volume {name}: paths={self.paths}: 1 to 4")
        if self.paths > 1 and self.bus != "nvme":
            raise SpecError(f"volume {name}: paths= is NVMe multipath: needs bus=nvme")
        self.group = opts.get("group")
        self.array = opts.get("array")
        self.fs = opts.get("fs", "ext4" if "mount" in opts else "none")
        if self.fs not in ("ext4", "xfs", "none"):
            raise SpecError(f"volume {name}: fs={self.fs}: ext4, xfs or none")
        self.mount = opts.get("mount") or (f"/mnt/{name}" if self.fs != "none" else None)
        self.faults = opts.get("faults", "no") in ("yes", "1", "true", "on")
        self.cache = opts.get("cache", "none")
        if self.array and (self.fs != "none" or "mount" in opts):
            raise SpecError(f"volume {name}: a member of array {self.array} has no filesystem of its own")
        # in the guest, once booted
        self.disk = None      # kernel name of the volume's disk (vdb, nvme0n1): where the cap shows
        self.attached = True
        self.fault = "none"

    @property
    def dm_name(self):
        return f"lab-{self.name}"

    @property
    def top(self):
        """The device a filesystem or an array sits on: the dm wrapper when
        faults can be injected, else the disk."""
        return f"/dev/mapper/{self.dm_name}" if self.faults else f"/dev/{self.disk}"

    def as_dict(self):
        return {"name": self.name, "kind": "volume", "size": self.size, "bus": self.bus, "serial": self.serial,
                "paths": self.paths,
                "caps": self.caps.as_dict(), "describe": self.caps.describe(), "group": self.group,
                "array": self.array, "fs": self.fs, "mount": self.mount, "faults": self.faults,
                "disk": self.disk, "device": self.top if self.disk else None, "attached": self.attached,
                "fault": self.fault, "iopsd": self.iopsd}


class Group:
    """An instance-wide limit shared by its volumes (a QEMU throttle group
    as a filter below each member's own caps)."""

    def __init__(self, name, opts):
        opts = dict(opts)
        self.name = name
        self.caps = Caps.from_opts(opts, f"group {name}")
        if opts:
            raise SpecError(f"group {name}: unknown key(s) {', '.join(sorted(opts))}")

    def object_arg(self):
        return ",".join([f"throttle-group,id=g-{self.name}"] +
                        [f"x-{k}={v}" for k, v in self.caps.qemu().items()])

    def as_dict(self):
        return {"name": self.name, "kind": "group", "caps": self.caps.as_dict(), "describe": self.caps.describe()}


class Array:
    KEYS = ("level", "chunk", "fs", "mount")

    def __init__(self, name, opts):
        opts = dict(opts)
        self.name = name
        self.iopsd = {k[6:]: opts.pop(k) for k in list(opts) if k.startswith("iopsd.")}
        unknown = set(opts) - set(self.KEYS)
        if unknown:
            raise SpecError(f"array {name}: unknown key(s) {', '.join(sorted(unknown))}")
        self.level = opts.get("level", "0")
        if self.level not in ("0", "1", "10"):
            raise SpecError(f"array {name}: level={self.level}: 0, 1 or 10")
        if self.level == "1" and "chunk" in opts:
            raise SpecError(f"array {name}: a mirror (level=1) has no chunk")
        self.chunk = parse_size(opts.get("chunk", "512k"), "chunk") if self.level != "1" else 0
        if self.level != "1" and (self.chunk < 4096 or self.chunk & (self.chunk - 1)):
            raise SpecError(f"array {name}: chunk= must be a power of two of at least 4k")
        self.fs = opts.get("fs", "ext4")
        self.mount = opts.get("mount") or (f"/mnt/{name}" if self.fs != "none" else None)
        self.members = []
        self.disk = None      # md127

    @property
    def top(self):
        return f"/dev/{self.disk}"

    def as_dict(self):
        return {"name": self.name, "kind": "array", "level": self.level, "chunk": self.chunk,
                "members": [m.name for m in self.members], "fs": self.fs, "mount": self.mount,
                "disk": self.disk, "iopsd": self.iopsd}


class LabConfig:
    """The lab's declaration: lines `volume NAME key=value ...`, `group
    NAME ...`, `array NAME ...` (commas or spaces between the keys, # for
    comments), the same specs as the command line's --volume/--group/
    --array, and optionally an iopsd.conf template (`iopsd-config FILE`)."""

    def __init__(self):
        self.volumes, self.groups, self.arrays = {}, {}, {}
        self.iopsd_template = None

    def add(self, kind, spec, where=""):
        name, opts = split_spec(spec)
        table = {"volume": (self.volumes, Volume), "group": (self.groups, Group), "array": (self.arrays, Array)}
        if kind not in table:
            raise SpecError(f"{where}'{kind}': volume, group or array")
        if name in self.volumes or name in self.groups or name in self.arrays:
            raise SpecError(f"{where}{kind} {name}: that name is taken")
        try:
            table[kind][0][name] = table[kind][1](name, opts)
        except SpecError as e:
            raise SpecError(f"{where}{e}") from None

    @classmethod
    def parse(cls, text, path="<lab>"):
        cfg = cls()
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            kind, _, rest = line.partition(" ")
            if kind == "iopsd-config":
                p = os.path.join(os.path.dirname(path), rest.strip())
                with open(p) as f:
                    cfg.iopsd_template = f.read()
                continue
            cfg.add(kind, rest, where=f"{path}:{n}: ")
        cfg.check()
        return cfg

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.parse(f.read(), path)

    def check(self):
        if not self.volumes:
            raise SpecError("the lab has no volume (volume NAME iops=... or --volume NAME,iops=...)")
        for a in self.arrays.values():
            a.members = [v for v in self.volumes.values() if v.array == a.name]
        for v in self.volumes.values():
            if v.group and v.group not in self.groups:
                raise SpecError(f"volume {v.name}: group={v.group} is not declared (group {v.group} iops=...)")
            if v.array and v.array not in self.arrays:
                raise SpecError(f"volume {v.name}: array={v.array} is not declared (array {v.array} level=0 ...)")
        for a in self.arrays.values():
            if len(a.members) < 2:
                raise SpecError(f"array {a.name}: needs at least two member volumes (array={a.name})")
        mounts = [x.mount for x in list(self.volumes.values()) + list(self.arrays.values()) if x.mount]
        dup = {m for m in mounts if mounts.count(m) > 1}
        if dup:
            raise SpecError(f"mount point {sorted(dup)[0]} used twice")
        return self

    def items(self):
        return list(self.volumes.values()) + list(self.arrays.values())


# --- QEMU side -----------------------------------------------------------------

class LabDisk(iopsdvm.Disk):
    """A volume's disk: its caps on the drive, and, for a member of an
    instance-wide group, a throttle filter node of that group below them
    (the volume is held by whichever of its own caps and the group's share
    binds first)."""

    def __init__(self, vol):
        # a volume counting I/O-size units gets a virtqueue of 1024: QEMU's
        # default of 256 gives seg_max 254, and the guest splits a 1 MiB
        # I/O of 256 scattered pages into 1016 KiB + 8 KiB, which QEMU
        # counts as 5 units (a lab run: 302.8 I/O/s through a 1000-unit cap
        # under 1 MiB reads, not 250)
        opts = {"queue-size": 1024} if vol.caps.iops_size and vol.bus == "virtio" else None
        super().__init__(vol.name, vol.size, bus=vol.bus, serial=vol.serial, throttle=vol.caps.qemu(),
                         cache=vol.cache, device_opts=opts)
        self.group = vol.group
        self.paths = vol.paths

    def args(self):
        """NVMe multipath: a subsystem, its controllers (one serial, as one
        volume's), and the drive as a namespace shared by all of them."""
        if self.paths == 1:
            return super().args()
        ss = f"ss-{self.name}"
        out = ["-drive", self.drive_arg(), "-device", f"nvme-subsys,id={ss},nqn=nqn.2026-01.iopsd-lab:{self.name}"]
        for i in range(self.paths):
            out += ["-device", f"nvme,id=dev-{self.name}{'' if i == 0 else f'-{i}'},serial={self.serial},subsys={ss}"]
        return out + ["-device", f"nvme-ns,drive={self.drive_id},nsid=1,shared=on"]

    def drive_arg(self):
        if not self.group:
            return super().drive_arg()
        opts = [f"if=none,id={self.drive_id}", "driver=throttle", f"throttle-group=g-{self.group}",
                "file.driver=raw", "file.file.driver=file", f"file.file.filename={self.path}",
                "file.file.aio=threads", f"cache={self.cache}"]
        opts += [f"throttling.{k}={v}" for k, v in self.throttle.items()]
        return ",".join(opts)


# --- the guest's iopsd -----------------------------------------------------------

def source_root():
    """The source tree this file is in, or None when installed."""
    root = os.path.realpath(os.path.join(HERE, "..", ".."))
    return root if os.path.exists(os.path.join(root, "systemd", "iopsd.service.in")) else None


def default_iopsd_binary():
    root = source_root()
    for p in ([os.path.join(root, "build", "daemon", "iopsd")] if root else []) + ["/usr/sbin/iopsd"]:
        if os.access(p, os.X_OK):
            return p
    return shutil.which("iopsd")


def unit_files():
    """The units and sysusers snippet that go with a bare binary: from the
    source tree, or from the host's installed package."""
    root = source_root()
    if root:
        with open(os.path.join(root, "systemd", "iopsd.service.in")) as f:
            service = f.read().replace("@sbindir@", "/usr/sbin").replace("@sysconfdir@", "/etc")
        read = lambda n: open(os.path.join(root, "systemd", n)).read()  # noqa: E731
        return service, read("iopsd.socket"), read("iopsd.sysusers")
    for d in ("/lib/systemd/system", "/usr/lib/systemd/system"):
        if os.path.exists(os.path.join(d, "iopsd.service")):
            read = lambda p: open(p).read()  # noqa: E731
            return (read(os.path.join(d, "iopsd.service")), read(os.path.join(d, "iopsd.socket")),
                    read("/usr/lib/sysusers.d/iopsd.conf"))
    raise VMError("no iopsd units: run from the source tree or install the package (or give --deb)")


def binary_packages(binary):
    """The Debian packages of the libraries `binary` links directly (its
    NEEDED entries; what they pull in comes with them). The guest has no
    network: they must be in the image, and naming only these keeps the
    image the one the package's dependencies give."""
    out = subprocess.run(["readelf", "-d", binary], check=True, stdout=subprocess.PIPE, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    ldd = subprocess.run(["ldd", binary], check=True, stdout=subprocess.PIPE, text=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M))
    pkgs = set()
    for lib in needed:
        path = paths.get(lib)
        if not path:
            continue
        for cand in (path, os.path.realpath(path)):
            r = subprocess.run(["dpkg", "-S", cand], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if r.returncode == 0:
                pkgs.add(r.stdout.split(":", 1)[0].strip())
                break
    return sorted(p for p in pkgs if p != "libc6")


DEFAULT_IOPSD_CONF = """\
# iopsd in the lab guest: written by iopsd-lab vm (the template's ${NAME}
# are the volumes' devices, ${NAME.mount} their mount points)
[global]
sample_interval=1s
probe_interval=10s
history=1h
"""

DEFAULT_PROBE = """
[lab-{name}]
readwrite=randread
blocksize=4k
size=16m
directory={mount}
iodepth=1
rate_iops=20
runtime=1s
"""


# --- the lab ---------------------------------------------------------------------

class Lab:
    """One running lab: a guest with its volumes, iopsd in it, optionally a
    Prometheus on the host. Methods are safe to call from several threads
    (the command socket runs them on its own)."""

    def __init__(self, config, name="default", state_dir=None, deb=None, iopsd_binary=None,
                 port=None, extra_ports=(), prometheus=False, prometheus_port=None,
                 prometheus_rules=None, prometheus_interval="5s", memory="2048M", smp=2,
                 console_copy=None, log=None, instance_type=None, instance_vendor="Amazon EC2"):
        self.cfg = config
        self.name = name
        self.state_dir = state_dir or os.path.join(STATE_BASE, name)
        self.deb = deb
        self.iopsd_binary = None if deb else (iopsd_binary or default_iopsd_binary())
        if not deb and not self.iopsd_binary:
            raise VMError("no iopsd to install: give --deb FILE or --iopsd BINARY")
        self.port = port
        self.extra_ports = list(extra_ports)
        self.want_prometheus = prometheus
        self.prometheus_port = prometheus_port
        self.prometheus_rules = prometheus_rules
        self.prometheus_interval = prometheus_interval
        self.memory, self.smp, self.console_copy = memory, smp, console_copy
        # the instance the guest says it is (SMBIOS type 1: the guest's
        # /sys/class/dmi/id/product_name and sys_vendor, as on EC2 Nitro)
        self.instance_type, self.instance_vendor = instance_type, instance_vendor
        self.log = log or iopsdvm.log
        self.vm = None
        self.prom = None
        self.lock = threading.RLock()
        self._guest_tick_ms = None  # its kernel tick, for dm-delay (_dm_delay_ms)
        self.iopsd_conf = None
        self.server = None
        self.t_up = None

    # lifecycle

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        t0 = time.monotonic()
        os.makedirs(self.state_dir, exist_ok=True)
        marker = os.path.join(self.state_dir, ".iopsd-lab-vm")
        with open(marker, "w") as f:
            f.write(f"iopsd-lab vm {self.name} {os.getpid()}\n")
        image = iopsdvm.Image.ensure(extra_packages=self.extra_packages())
        disks = [LabDisk(v) for v in self.cfg.volumes.values()]
        qemu_extra = []
        for g in self.cfg.groups.values():
            qemu_extra += ["-object", g.object_arg()]
        if self.instance_type:
            qemu_extra += ["-smbios", f"type=1,manufacturer={self.instance_vendor},product={self.instance_type}"]
        ports = [GUEST_PORT] + self.extra_ports
        self.vm = iopsdvm.VM(image, disks=disks, extra_args=qemu_extra, ports=ports, memory=self.memory,
                             smp=self.smp, name=f"iopsd-lab-{self.name}", console_copy=self.console_copy,
                             host_ports={GUEST_PORT: self.port} if self.port else None)
        self.disks = {d.name: d for d in disks}
        self.vm.__enter__()
        self.log(f"guest up in {self.vm.boot_seconds:.0f} s; setting up {len(disks)} volume(s)")
        t = time.monotonic()
        self.setup_volumes()
        self.log(f"volumes, arrays and filesystems set up in {time.monotonic() - t:.0f} s")
        t = time.monotonic()
        self.install_iopsd()
        self.configure_iopsd()
        self.log(f"iopsd installed and started in {time.monotonic() - t:.0f} s")
        if self.want_prometheus:
            self.start_prometheus()
        self.t_up = time.monotonic() - t0
        self.write_state()
        self.log(f"lab {self.name} up in {self.t_up:.0f} s: iopsd at {self.url()}"
                 + (f", Prometheus at {self.prometheus_url()}" if self.prom else ""))

    def extra_packages(self):
        """What iopsd needs beyond the base image, which has its runtime
        libraries and systemd: usually nothing, so that the lab boots the
        image the other VM tests use (each image is built once, about 1 GB,
        and only the two newest are kept)."""
        needed = iopsdvm.deb_depends(self.deb) if self.deb else binary_packages(self.iopsd_binary)
        present = set(iopsdvm.BASE_PACKAGES) | {"libc6", "systemd", "systemd-sysusers"}
        return sorted(p for p in needed if p not in present)

    def stop(self):
        if self.server:
            self.server.close()
            self.server = None
        if self.prom:
            self.prom.stop()
            self.prom = None
        if self.vm:
            self.vm.__exit__(None, None, None)
            self.vm = None
        if os.path.isdir(self.state_dir):
            for n in ("lab.json", "control.sock", ".iopsd-lab-vm"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.state_dir, n))
            shutil.rmtree(os.path.join(self.state_dir, "prometheus"), ignore_errors=True)
            with contextlib.suppress(OSError):
                os.rmdir(self.state_dir)

    # the guest

    def run(self, cmd, timeout=120, check=True, input=None):
        return self.vm.run(cmd, timeout=timeout, check=check, input=input)

    def sh(self, cmd, timeout=120):
        return self.vm.sh(cmd, timeout=timeout)

    def _find_disk(self, vol, timeout=60):
        return self._find_disks([vol], timeout)[vol.name]

    def _find_disks(self, vols, timeout=60):
        """{name: kernel name} of the volumes' disks, by serial (lsblk pads
        NVMe serials; a hot-plugged disk takes a moment to appear)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = {}
            for line in self.run(["lsblk", "-dn", "-o", "NAME,SERIAL"]).stdout.splitlines():
                name, _, serial = line.strip().partition(" ")
                # a multipath namespace: its head (nvme1n1), never a hidden
                # path (nvme1c0n1), which has no /dev node
                if not re.fullmatch(r"nvme\d+c\d+n\d+", name):
                    seen[serial.strip()] = name
            missing = [v for v in vols if v.serial not in seen]
            if not missing:
                return {v.name: seen[v.serial] for v in vols}
            if time.monotonic() > deadline:
                raise VMError(f"volume(s) {', '.join(v.name for v in missing)} do not show in the guest")
            time.sleep(0.5)

    def setup_volumes(self):
        """dm wrappers, arrays and filesystems, in one script (each guest
        command costs a round trip through the agent, a second under TCG)."""
        for name, disk in self._find_disks(list(self.cfg.volumes.values())).items():
            self.cfg.volumes[name].disk = disk
        sh = ["set -e", "modprobe -a dm_mod dm_delay dm_flakey raid0 raid1 raid10 >/dev/null 2>&1 || true"]
        for v in self.cfg.volumes.values():
            if v.faults:
                sh.append(f"dmsetup create {v.dm_name} --table \"{self._dm_table(v, 'none')}\"")
        sh.append("udevadm settle")
        for a in self.cfg.arrays.values():
            sh.append(self._mdadm_create(a))
        sh.append("udevadm settle")
        for a in self.cfg.arrays.values():
            sh.append(f"echo array {a.name} $(basename $(readlink -f /dev/md/{a.name}))")
        for x in self.cfg.items():
            if x.fs != "none" and not getattr(x, "array", None):
                sh.append(self._mkfs(x))
        out = self.run("\n".join(sh), timeout=900).stdout
        for m in re.finditer(r"^array (\S+) (\S+)$", out, re.M):
            self.cfg.arrays[m.group(1)].disk = m.group(2)

    def _dm_table(self, v, kind, delay_ms=0):
        """The table, as a shell word list (its size is read in the guest)."""
        disk = f"/dev/{v.disk}"
        n = f"$(blockdev --getsz {disk})"
        if kind == "none":
            return f"0 {n} linear {disk} 0"
        if kind == "eio":
            # dm-flakey down all the time (up 0 s, down 1 s, repeat): I/O
            # fails with EIO (on the guest's 6.1 kernel reads and writes)
            return f"0 {n} flakey {disk} 0 0 1"
        if kind == "delay":
            return f"0 {n} delay {disk} 0 {self._dm_delay_ms(delay_ms)}"
        raise VMError(f"fault {kind}: none, eio or delay")

    def _dm_delay_ms(self, delay_ms):
        """dm-delay's parameter for a device that adds `delay_ms` to each
        I/O. On the guest's kernel (Debian 12's 6.1) dm-delay holds an
        I/O until a timer, set msecs_to_jiffies(d) ticks on, fires; the timer wheel rounds that up by one tick so as never
        to fire early. An I/O is held (ceil(d / tick) + 1) ticks less the
        part of the current tick already gone: d=50 at 250 Hz held QD1
        reads 55.8 ms (14 ticks), d=48 52.2 ms, d=44 48.0 ms (fio p50 in
        this guest). So d is one tick less than the delay rounded up to
        whole ticks: 48 for 50 ms, held 48-52 ms, 52 at QD1."""
        if self._guest_tick_ms is None:
            out = self.run("sed -n 's/^CONFIG_HZ=//p' /boot/config-$(uname -r)", check=False).stdout.strip()
            self._guest_tick_ms = 1000 / int(out) if out.isdigit() and int(out) > 0 else 0
        tick = self._guest_tick_ms
        if not tick or delay_ms <= 0:
            return int(round(delay_ms))
        ticks = max(2, math.ceil(delay_ms / tick - 1e-9))
        return int((ticks - 1) * tick)

    def _dm_load(self, v, table):
        # without --nolockfs, suspend freezes a filesystem on it, which
        # fails while its I/O fails; the new table takes over at resume
        # with nothing lost in between
        name = v.dm_name
        self.run(f"dmsetup suspend --nolockfs {name} && dmsetup load {name} --table \"{table}\" "
                 f"&& dmsetup resume {name}", timeout=120)

    def _mdadm_create(self, a):
        tops = " ".join(shlex.quote(m.top) for m in a.members)
        # members are new and blank: a resync would only read and write
        # zeros through the caps, against the scenarios' load
        extra = "--assume-clean " if a.level != "0" else ""
        chunk = f"--chunk={a.chunk // 1024} " if a.chunk else ""
        return (f"mdadm --create /dev/md/{a.name} --run --quiet --metadata=1.2 --level={a.level} "
                f"{chunk}--raid-devices={len(a.members)} {extra}{tops}")

    def _mkfs(self, x):
        dev = f"/dev/md/{x.name}" if isinstance(x, Array) else x.top
        if x.fs == "ext4":
            # inode tables and journal written now: ext4's lazy init would
            # otherwise write them in the background during a measurement
            mk = f"mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -L {x.name[:16]} {dev}"
        else:
            mk = f"mkfs.xfs -q -f -K -L {x.name[:12]} {dev}"
        m = shlex.quote(x.mount)
        return f"{mk} && mkdir -p {m} && mount -o noatime {dev} {m}"

    # iopsd in the guest

    def put_files(self, files, then=""):
        """Write small files in the guest in one round trip: `files` maps a
        path to (text, mode); a tar goes in on stdin. `then` runs after."""
        import io
        import tarfile
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path, (text, mode) in files.items():
                data = text.encode() if isinstance(text, str) else text
                info = tarfile.TarInfo(path.lstrip("/"))
                info.size, info.mode, info.mtime = len(data), mode, time.time()
                tar.addfile(info, io.BytesIO(data))
        return self.run("tar -x -C / --no-same-owner" + (f" && {then}" if then else ""), input=buf.getvalue(),
                        timeout=300)

    def install_iopsd(self):
        # the guest's port reaches the host through the forwarding only
        # when iopsd listens on the guest's address
        files = {"/etc/systemd/system/iopsd.socket.d/lab.conf":
                 (f"[Socket]\nListenStream=\nListenStream={iopsdvm.GUEST_ADDR}:{GUEST_PORT}\nFreeBind=yes\n", 0o644)}
        if self.deb:
            # dpkg, not apt: its dependencies are in the image, and apt's
            # resolver took a minute more of a TCG guest's CPU
            target = f"/var/tmp/{os.path.basename(self.deb)}"
            self.vm.copy_in(self.deb, target, 0o644)
            self.put_files(files, f"dpkg -i {shlex.quote(target)} >&2 && systemctl daemon-reload")
        else:
            service, sock, sysusers = unit_files()
            self.vm.copy_in(self.iopsd_binary, "/usr/sbin/iopsd", 0o755)
            files.update({"/lib/systemd/system/iopsd.service": (service, 0o644),
                          "/lib/systemd/system/iopsd.socket": (sock, 0o644),
                          "/usr/lib/sysusers.d/iopsd.conf": (sysusers, 0o644)})
            self.put_files(files, "mkdir -p /etc/iopsd && systemd-sysusers && systemctl daemon-reload")
        self.log(f"iopsd installed ({'package ' + os.path.basename(self.deb) if self.deb else self.iopsd_binary})")

    def substitutions(self):
        subs = {}
        for v in self.cfg.volumes.values():
            if v.disk:
                subs[v.name] = v.top
                subs[f"{v.name}.disk"] = v.disk
                subs[f"{v.name}.by-id"] = self.by_id(v)
            if v.mount:
                subs[f"{v.name}.mount"] = v.mount
        for a in self.cfg.arrays.values():
            subs[a.name] = a.top
            subs[f"{a.name}.disk"] = a.disk
            if a.mount:
                subs[f"{a.name}.mount"] = a.mount
        return subs

    def by_id(self, v):
        """The stable name of a volume's disk as a user configures it
        (/dev/disk/by-id/virtio-SERIAL, nvme-QEMU_NVMe_Ctrl_SERIAL)."""
        if v.bus == "virtio":
            return f"/dev/disk/by-id/virtio-{v.serial}"
        return f"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_{v.serial}"

    def render_iopsd_conf(self, template=None):
        subs = self.substitutions()

        def sub(m):
            if m.group(1) not in subs:
                raise SpecError(f"iopsd config: ${{{m.group(1)}}}: no such volume or array (have "
                                f"{', '.join(sorted(k for k in subs if '.' not in k))})")
            return subs[m.group(1)]
        template = template if template is not None else self.cfg.iopsd_template
        if template is None:
            template = DEFAULT_IOPSD_CONF + "".join(
                DEFAULT_PROBE.format(name=x.name, mount=x.mount) for x in self.cfg.items() if x.mount)
        text = re.sub(r"\$\{([a-z0-9_.-]+)\}", sub, template)
        for x in self.cfg.items():
            if x.iopsd and x.disk:
                text += f"\n# declared for the lab's {x.name}\n[device {x.disk}]\n"
                text += "".join(f"{k}={val}\n" for k, val in x.iopsd.items())
        return text

    def probe_dirs(self, conf):
        return sorted({m.group(1).strip() for m in re.finditer(r"^\s*directory\s*=\s*(.+)$", conf, re.M)})

    def configure_iopsd(self, template=None):
        """Write /etc/iopsd/iopsd.conf (the template with the volumes' names
        filled in and their declared limits), make the probe directories
        writable for the service, and (re)start it."""
        with self.lock:
            conf = self.render_iopsd_conf(template)
            dirs = [d.rstrip("/") + "/.iopsd" for d in self.probe_dirs(conf) if not d.startswith("/var/lib/iopsd")]
            files = {"/etc/iopsd/iopsd.conf.new": (conf, 0o644),
                     "/etc/systemd/system/iopsd.service.d/lab.conf":
                     ("[Service]\n" + (f"ReadWritePaths={' '.join(dirs)}\n" if dirs else ""), 0o644)}
            mk = "".join(f"mkdir -p {shlex.quote(d)} && chown iopsd:iopsd {shlex.quote(d)} && "
                         f"chmod 0750 {shlex.quote(d)} && " for d in dirs)
            # checked before it replaces the running one; the socket cannot
            # be restarted under a running service
            script = (f"{mk}iopsd --check-config --config /etc/iopsd/iopsd.conf.new >&2 || exit 78\n"
                      "mv /etc/iopsd/iopsd.conf.new /etc/iopsd/iopsd.conf && systemctl daemon-reload && "
                      "systemctl stop iopsd.service && systemctl restart iopsd.socket && systemctl start iopsd.service "
                      "|| { journalctl -u iopsd.service -n 30 --no-pager -o cat >&2; exit 1; }")
            self.put_files(files)
            r = self.run(script, timeout=180, check=False)
            if not r.ok:
                what = "is refused" if r.returncode == 78 else "did not start iopsd"
                raise VMError(f"the lab's iopsd.conf {what}:\n{r.stderr}\n--- iopsd.conf\n{conf}")
            if template is not None:
                self.cfg.iopsd_template = template
            self.iopsd_conf = conf
            self.wait_iopsd()

    def reload_iopsd(self, template=None):
        """New configuration without a restart (SIGHUP, as systemctl reload)."""
        with self.lock:
            conf = self.render_iopsd_conf(template)
            if template is not None:
                self.cfg.iopsd_template = template
            self.vm.write_file("/etc/iopsd/iopsd.conf", conf)
            self.iopsd_conf = conf
            self.run("systemctl reload iopsd.service")

    def wait_iopsd(self, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            try:
                status, _, _ = self.vm.http("/healthz", timeout=5)
                if status in (200, 503):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                r = self.run("systemctl status iopsd.service iopsd.socket --no-pager; journalctl -u iopsd -n 40 "
                             "--no-pager", check=False)
                raise VMError(f"iopsd does not answer on {self.url()} after {timeout} s:\n{r.stdout}")
            time.sleep(0.5)

    # the host side

    def url(self, path="/"):
        return f"http://127.0.0.1:{self.vm.host_port(GUEST_PORT)}{path}"

    def http(self, path, guest_port=GUEST_PORT, timeout=10):
        return self.vm.http(path, guest_port=guest_port, timeout=timeout)

    def get_json(self, path, guest_port=GUEST_PORT):
        status, _, body = self.vm.http(path, guest_port=guest_port, timeout=10)
        if status != 200:
            raise VMError(f"GET {path}: {status} {body[:200]!r}")
        return json.loads(body)

    def metrics(self, guest_port=GUEST_PORT):
        status, _, body = self.vm.http("/metrics", guest_port=guest_port, timeout=10)
        if status != 200:
            raise VMError(f"GET /metrics: {status}")
        return body.decode()

    def start_prometheus(self):
        rules = self.prometheus_rules or shipped_rules()
        self.prom = Prometheus(os.path.join(self.state_dir, "prometheus"),
                               targets={"iopsd": [f"127.0.0.1:{self.vm.host_port(p)}" for p in
                                                  [GUEST_PORT] + self.extra_ports]},
                               rules=rules, interval=self.prometheus_interval, port=self.prometheus_port,
                               labels={"lab": self.name})
        self.prom.start()

    def prometheus_url(self):
        return self.prom.url if self.prom else None

    # what the lab can do to its volumes while it runs

    def _thing(self, name):
        for table in (self.cfg.volumes, self.cfg.groups):
            if name in table:
                return table[name]
        raise VMError(f"no volume or group '{name}' (have {', '.join(list(self.cfg.volumes) + list(self.cfg.groups))})")

    def cap(self, name, caps):
        """Change a volume's or a group's caps live (a volume modification):
        QMP block_set_io_throttle for a volume, the throttle group's limits
        for a group. `caps` is a Caps; what it does not set is lifted. A
        volume's burst bucket starts full again (QEMU resets it)."""
        with self.lock:
            x = self._thing(name)
            if isinstance(x, Group):
                limits = {k: 0 for k in ("iops-total", "iops-read", "iops-write", "bps-total", "bps-read",
                                         "bps-write")}
                limits.update(caps.qemu())
                self.vm.qmp.execute("qom-set", {"path": f"/objects/g-{name}", "property": "limits",
                                                "value": limits})
            else:
                if not x.attached:
                    raise VMError(f"volume {name} is detached")
                args = caps.qmp()
                args["device"] = f"d-{name}"
                self.vm.qmp.execute("block_set_io_throttle", args)
                self.disks[name].throttle = caps.qemu()
            x.caps = caps
            self.log(f"{name}: caps now {caps.describe()}")
            return x.as_dict()

    def detach(self, name, timeout=60):
        """Unplug a volume's device (as a detached volume). Its filesystem or
        array sees the disk vanish, as in the cloud."""
        with self.lock:
            v = self.cfg.volumes.get(name) or self._thing(name)
            if not isinstance(v, Volume):
                raise VMError(f"{name} is not a volume")
            if not v.attached:
                raise VMError(f"volume {name} is detached already")
            self.vm.qmp.events.clear()
            self.vm.qmp.execute("device_del", {"id": f"dev-{name}"})
            self.vm.qmp.wait_event("DEVICE_DELETED", timeout=timeout, match={"device": f"dev-{name}"})
            # -drive's backend goes with its device; wait until QEMU dropped it
            deadline = time.monotonic() + 30
            while any(b["device"] == f"d-{name}" for b in self.vm.qmp.execute("query-block")):
                if time.monotonic() > deadline:
                    raise VMError(f"drive d-{name} still there after its device went")
                time.sleep(0.2)
            self.run(f"udevadm settle; ! test -e /sys/block/{v.disk}", timeout=60)
            v.attached = False
            self.log(f"{name}: detached ({v.disk} gone from the guest)")
            return v.as_dict()

    def attach(self, name):
        """Plug a detached volume back with the same file, caps and serial.
        Its kernel name may differ; iopsd's configuration follows."""
        with self.lock:
            v = self.cfg.volumes.get(name)
            if v is None:
                raise VMError(f"no volume '{name}'")
            if v.attached:
                raise VMError(f"volume {name} is attached")
            d = self.disks[name]
            d.throttle = v.caps.qemu()
            self.vm.qmp.execute("human-monitor-command", {"command-line": f"drive_add 0 {d.drive_arg()}"})
            model, _, opts = d.device_arg().partition(",")
            dev = {"driver": model}
            for kv in opts.split(","):
                k, _, val = kv.partition("=")
                dev[k] = val
            self.vm.qmp.execute("device_add", dev)
            old = v.disk
            v.disk = self._find_disk(v)
            v.attached = True
            self.run("udevadm settle", timeout=60)
            if v.faults:
                kind, _, ms = v.fault.partition("=")
                self._dm_load(v, self._dm_table(v, kind, float(ms.rstrip("ms") or 0)))
            if old != v.disk and self.iopsd_conf is not None:
                self.reload_iopsd()
            self.log(f"{name}: attached again as {v.disk}")
            return v.as_dict()

    def fault(self, name, kind, delay_ms=0):
        """Switch the dm table under a volume (declared faults=yes): none
        (linear), eio (I/O fails with EIO: dm-flakey), delay (every I/O
        waits delay_ms: dm-delay)."""
        with self.lock:
            v = self.cfg.volumes.get(name)
            if v is None:
                raise VMError(f"no volume '{name}'")
            if not v.faults:
                raise VMError(f"volume {name} was not declared with faults=yes (a dm device under its users)")
            if not v.attached:
                raise VMError(f"volume {name} is detached")
            self._dm_load(v, self._dm_table(v, kind, delay_ms))
            v.fault = kind if kind != "delay" else f"delay={int(delay_ms)}ms"
            how = f" (dm-delay {self._dm_delay_ms(delay_ms)} ms, in ticks of {self._guest_tick_ms:g} ms)" \
                if kind == "delay" else ""
            self.log(f"{name}: fault {v.fault}{how}")
            return v.as_dict()

    def status(self):
        with self.lock:
            blocks = {}
            with contextlib.suppress(Exception):
                for b in self.vm.qmp.execute("query-block"):
                    ins = b.get("inserted") or {}
                    blocks[b["device"]] = {k: ins[k] for k in ("iops", "iops_rd", "iops_wr", "bps", "bps_rd",
                                                               "bps_wr", "iops_max", "iops_max_length", "group")
                                           if k in ins}
            items = []
            for v in self.cfg.volumes.values():
                d = v.as_dict()
                d["qemu"] = blocks.get(f"d-{v.name}")
                items.append(d)
            items += [g.as_dict() for g in self.cfg.groups.values()]
            items += [a.as_dict() for a in self.cfg.arrays.values()]
            return {"name": self.name, "pid": os.getpid(), "url": self.url() if self.vm else None,
                    "prometheus": self.prometheus_url(), "qmp": self.vm.path("qmp.sock") if self.vm else None,
                    "state_dir": self.state_dir, "items": items,
                    "ports": {str(g): h for g, h in (self.vm.ports.items() if self.vm else [])}}

    def write_state(self):
        with self.lock:
            tmp = os.path.join(self.state_dir, "lab.json.tmp")
            with open(tmp, "w") as f:
                json.dump(self.status(), f, indent=1)
            os.rename(tmp, os.path.join(self.state_dir, "lab.json"))

    # the command socket

    def serve(self):
        """Accept commands from `iopsd-lab vm CMD` on STATE/control.sock
        (on a thread of its own). Returns the server."""
        self.server = ControlServer(os.path.join(self.state_dir, "control.sock"), self)
        self.server.start()
        return self.server

    def handle(self, req):
        cmd, a = req.get("cmd"), req.get("args") or {}
        if cmd == "status":
            return self.status()
        if cmd == "cap":
            out = self.cap(a["name"], caps_from_args(a))
        elif cmd == "detach":
            out = self.detach(a["name"])
        elif cmd == "attach":
            out = self.attach(a["name"])
        elif cmd == "fault":
            out = self.fault(a["name"], a["kind"], a.get("delay_ms", 0))
        elif cmd == "exec":
            r = self.run(a["argv"] if isinstance(a["argv"], list) else a["argv"], timeout=a.get("timeout", 600),
                         check=False, input=a.get("input"))
            return {"returncode": r.returncode, "stdout": r.stdout, "stderr": r.stderr}
        elif cmd == "iopsd-config":
            self.configure_iopsd(a["template"])
            out = {"iopsd.conf": self.iopsd_conf}
        elif cmd == "down":
            threading.Thread(target=lambda: (time.sleep(0.2), os.kill(os.getpid(), signal.SIGTERM)),
                             daemon=True).start()
            return {"stopping": self.name}
        else:
            raise VMError(f"unknown command {cmd!r}")
        self.write_state()
        return out


def caps_from_args(a):
    opts = {k: str(v) for k, v in a.items() if k in CAP_KEYS or k in ("burst", "burst-length", "iops-size")}
    return Caps.from_opts(opts, a.get("name", "caps"))


class ControlServer:
    """JSON lines over a Unix socket (root only): {"cmd": ..., "args": {...}}
    -> {"ok": true, "result": ...} or {"ok": false, "error": "..."}."""

    def __init__(self, path, lab):
        self.path, self.lab = path, lab
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old = os.umask(0o077)
        try:
            self.sock.bind(path)
        finally:
            os.umask(old)
        self.sock.listen(8)
        self.closed = False

    def start(self):
        threading.Thread(target=self._accept, daemon=True, name="lab-control").start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn, conn.makefile("rwb") as f:
            for line in f:
                try:
                    req = json.loads(line)
                    resp = {"ok": True, "result": self.lab.handle(req)}
                except (VMError, SpecError) as e:
                    resp = {"ok": False, "error": str(e)}
                except Exception as e:  # noqa: BLE001 - a bad request must not end the lab
                    resp = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                f.write(json.dumps(resp).encode() + b"\n")
                f.flush()

    def close(self):
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class LabClient:
    """The other end of a running lab's control socket."""

    def __init__(self, state_dir, timeout=900):
        path = os.path.join(state_dir, "control.sock")
        if not os.path.exists(path):
            raise VMError(f"no lab running with state in {state_dir} (iopsd-lab vm up first)")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as e:
            raise VMError(f"cannot reach the lab at {path}: {e}") from None
        self.f = self.sock.makefile("rwb")

    def call(self, cmd, **args):
        self.f.write(json.dumps({"cmd": cmd, "args": args}).encode() + b"\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise VMError("the lab closed the connection")
        resp = json.loads(line)
        if not resp.get("ok"):
            raise VMError(resp.get("error", "failed"))
        return resp["result"]

    def close(self):
        with contextlib.suppress(OSError):
            self.f.close()
            self.sock.close()


# --- Prometheus on the host ---------------------------------------------------------

def shipped_rules():
    """The Prometheus rules iopsd ships: the source tree's, else the package's."""
    for d in (os.path.join(HERE, "..", "prometheus", "rules"), "/usr/share/iopsd/prometheus/rules"):
        if os.path.isdir(d):
            return sorted(os.path.realpath(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".yml"))
    return []


def _pdeathsig():
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Prometheus:
    """A Prometheus server on the host's loopback scraping the lab's iopsd,
    with rule files loaded; its data lives in `directory` (removed at stop)."""

    def __init__(self, directory, targets, rules=(), interval="5s", port=None, labels=None):
        self.dir, self.targets, self.rules, self.interval = directory, targets, list(rules), interval
        self.port = port or iopsdvm.free_port()
        self.labels = labels or {}
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def config(self):
        lines = ["global:", f"  scrape_interval: {self.interval}", f"  scrape_timeout: {self.interval}",
                 f"  evaluation_interval: {self.interval}", "rule_files:"]
        lines += [f"  - {json.dumps(r)}" for r in self.rules] or ["  []"]
        if not self.rules:
            lines[-2] = "rule_files: []"
            lines.pop()
        lines.append("scrape_configs:")
        for job, targets in self.targets.items():
            lines += [f"  - job_name: {job}", "    static_configs:",
                      f"      - targets: {json.dumps(targets)}"]
            if self.labels:
                lines.append(f"        labels: {json.dumps(self.labels)}")
        return "\n".join(lines) + "\n"

    def start(self, timeout=120):
        if not shutil.which("prometheus"):
            raise VMError("prometheus not found on the host (apt-get install prometheus)")
        os.makedirs(self.dir, exist_ok=True)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(self.config())
        self.logf = open(os.path.join(self.dir, "prometheus.log"), "ab")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={cfg}",
                                      f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                                      f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-lifecycle"],
                                     stdout=self.logf, stderr=subprocess.STDOUT, preexec_fn=_pdeathsig,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise VMError(f"prometheus did not come up:\n{self.read_log()[-3000:]}")
            time.sleep(0.5)

    def read_log(self):
        with open(os.path.join(self.dir, "prometheus.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def api(self, path, **params):
        import urllib.parse
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=20) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise VMError(f"prometheus {path}: {body}")
        return body["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def alerts(self):
        return self.api("alerts")["alerts"]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        with contextlib.suppress(Exception):
            self.logf.close()
