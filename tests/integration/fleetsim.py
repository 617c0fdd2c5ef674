"""Simulated hosts for iopsd's --path.procfs/--path.sysfs: each a procfs/
sysfs tree with NVMe volumes (an EBS-style serial, so a volume_id; each
mounted), optionally an md RAID0 over two of them, and a generator that
advances every tree's /proc/diskstats by the time elapsed, as a disk's
counters grow, so that a sample iopsd takes late (50 daemons on two CPUs
are late by tens of ms) counts the I/Os of the time it covers: at one step
a second, a flat 1000 IOPS sampled 30 ms late reads 3% low, twice the
plateau band, and the plateau is lost.

A volume's load is a profile: a function of the seconds since the
generator started, returning (IOPS, queue depth, utilization). Hosts with
a volume flat at a level (flat()) are advanced every 10 ms, the others
every 250 ms.
iopsd keeps diskstats open and pread()s it, so the file is rewritten in
place, with fixed-width fields, by one pwrite()."""
import importlib.util
import os
import random
import socket
import subprocess
import threading
import time

_spec = importlib.util.spec_from_file_location(
    "make_fixtures", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sampler",
                                  "make-fixtures.py"))
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

SECTORS_PER_IO = 8  # 4 KiB requests


def idle(_t):
    return (random.uniform(0, 3), 0.0, random.uniform(0, 0.01))


def busy(level):
    """Busy below any limit: about `level` IOPS, a short queue, util under 70%."""
    def f(_t):
        return (level * random.uniform(0.7, 1.3), random.uniform(0.2, 0.6), random.uniform(0.3, 0.7))
    return f


def flat(level, start, until=None, before=None):
    """From `start` s: exactly `level` IOPS while the queue grows by half a
    request a second up to 32, busy all the time (a volume held at its cap);
    before it (and after `until`) the `before` profile, idle by default."""
    before = before or idle

    def f(t):
        if t < start or (until is not None and t >= until):
            return before(t)
        return (float(level), min(2.0 + 0.5 * (t - start), 32.0), 1.0)
    f.is_flat = True
    return f


class Volume:
    def __init__(self, name, major, minor, profile, mountpoint=None, serial=None):
        self.name, self.major, self.minor = name, major, minor
        self.profile, self.mountpoint, self.serial = profile, mountpoint, serial
        self.members = []  # md: the member Volumes
        # reads, sectors read, read ms, in flight, io ms, weighted ms (floats: fractions carry over)
        self.c = [float(1000 * (minor + 1)), float(8000 * (minor + 1)), 500.0, 0.0, 300.0, 500.0]
        self.rate = (0.0, 0.0, 0.0)

    def advance(self, t, dt):
        if self.members:  # bio-based md: the members' I/Os, no busy time of its own
            iops = sum(m.rate[0] for m in self.members)
            self.rate = (iops, 0.0, 0.0)
            self.c[0] += iops * dt
            self.c[1] += iops * dt * SECTORS_PER_IO
            return
        iops, queue, util = self.profile(t)
        self.rate = (iops, queue, util)
        self.c[0] += iops * dt
        self.c[1] += iops * dt * SECTORS_PER_IO
        self.c[2] += queue * dt * 1000  # each request waited queue/iops s (Little)
        self.c[3] = round(queue)
        self.c[4] += util * dt * 1000
        self.c[5] += queue * dt * 1000

    def line(self):
        r, s, ms, q, io, w = (int(v) for v in self.c)
        fields = [r, 0, s, ms, 0, 0, 0, 0, q, io, w, 0, 0, 0, 0, 0, 0]
        return f"{self.major:4d} {self.minor:7d} {self.name} " + " ".join(f"{v:20d}" for v in fields) + "\n"


class Host:
    """A tree under `root` with `n` NVMe volumes nvme{i}n1 on /mnt/vol{i}
    (profiles[i], idle by default); with md, the last two are members of
    md0, a RAID0 on /data, instead of being mounted."""

    def __init__(self, root, index, n=16, profiles=None, md=False):
        self.root, self.index = root, index
        self.proc, self.sys = os.path.join(root, "proc"), os.path.join(root, "sys")
        profiles = profiles or {}
        self.volumes = []
        t = _fixtures.Tree(root)
        mounts = ["21 1 259:999 / / rw,relatime shared:1 - ext4 /dev/root rw\n"]
        rels = {}
        for i in range(n):
            member = md and i >= n - 2
            v = Volume(f"nvme{i}n1", 259, i, profiles.get(i, idle), None if member else f"/mnt/vol{i}",
                       f"vol0{index:07x}{i:09x}")
            rels[i] = t.disk(f"pci0000:00/0000:00:{4 + i // 8:02x}.{i % 8}/nvme/nvme{i}", v.name, 259, i,
                             (100 + i) * 2097152, model="iopsd fleet NVMe",
                             extra={"device/serial": v.serial + "\n"})
            if v.mountpoint:
                mounts.append(f"{30 + i} 21 259:{i} / {v.mountpoint} rw,relatime shared:{2 + i} - ext4 "
                              f"/dev/{v.name} rw\n")
            self.volumes.append(v)
        if md:
            a = Volume("md0", 9, 0, None, "/data")
            a.members = self.volumes[-2:]
            rel = t.disk("virtual", "md0", 9, 0, 2 * (100 + n) * 2097152,
                         extra={"md/level": "raid0\n", "md/array_state": "clean\n", "md/degraded": "0\n"})
            for i in (n - 2, n - 1):
                t.slave(rel, rels[i])
            mounts.append(f"{30 + n} 21 9:0 / /data rw,noatime shared:{2 + n} - xfs /dev/md0 rw\n")
            self.volumes.append(a)
        t.proc_file("self/mountinfo", "".join(mounts))
        t.proc_file("pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        self.diskstats = os.path.join(self.proc, "diskstats")
        self.is_fine = any(getattr(v.profile, "is_flat", False) for v in self.volumes)
        self.write()

    def advance(self, t, dt):
        for v in self.volumes:  # members before their array (md0 is last)
            v.advance(t, dt)
        self.write()

    def write(self):
        data = "".join(v.line() for v in self.volumes).encode()
        fd = os.open(self.diskstats, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, 0)
        finally:
            os.close(fd)


class Generator:
    """Advances every host's diskstats by the time elapsed, on two threads
    until stop(): hosts with a flat volume every 10 ms, the others every
    250 ms (their rates are not judged to 1.5%, but a sample late by half a
    second must not read two steps: a busy volume would touch its limit)."""

    FINE_PERIOD, COARSE_PERIOD = 0.01, 0.25

    def __init__(self, hosts):
        self.hosts = hosts
        self.t0 = None
        self.late = 0  # writes of either thread more than a period late
        self.writes = 0
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(False, self.COARSE_PERIOD), daemon=True),
                        threading.Thread(target=self.run, args=(True, self.FINE_PERIOD), daemon=True)]

    def start(self, hold=False):
        """With hold, the profiles' clock stands before its zero (every
        volume runs what it runs before its start) until begin()."""
        self.t0 = None if hold else time.time()
        for t in self.threads:
            t.start()

    def begin(self):
        """Time zero of the profiles: now."""
        self.t0 = time.time()

    def elapsed(self):
        return 0.0 if self.t0 is None else time.time() - self.t0

    def run(self, fine, period):
        hosts = [h for h in self.hosts if h.is_fine == fine]
        if fine:
            try:
                # ahead of 50 daemons for the CPU: a late write is a sample
                # off its plateau (root only; the thread alone)
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
            except OSError:
                pass
        last = time.time()
        while hosts and not self.stopping.wait(period):
            now = time.time()
            self.late += now - last > 2 * period
            for h in hosts:
                h.advance(-1.0 if self.t0 is None else now - self.t0, now - last)
            self.writes += 1
            last = now

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            if t.is_alive():
                t.join(5)


class Fleet:
    """n hosts host00.., each an iopsd on its own tree of `volumes` volumes
    with iops_limit=`limit` declared on each (not on md members), profiles
    from `profiles(host_index, volume_index)`; hosts in `md` have md0 over
    their last two volumes; hosts in `down` are listed for Prometheus but
    never started. `extra_config` goes into every [global] (a profile's
    device_include, say); `device_keys` {(host, volume name): keys} replace
    that volume's iops_limit (volume_type=gp2, say); `host_sections` {host:
    text} go at the end of that host's file (a probe, say)."""

    def __init__(self, base, iopsd, n, volumes, profiles, md=(), down=(), limit=1000, extra_config="",
                 device_keys=None, host_sections=None):
        self.base, self.iopsd, self.down = base, iopsd, set(down)
        self.hosts, self.ports, self.procs = [], {}, {}
        for h in range(n):
            root = os.path.join(base, f"host{h:02d}")
            host = Host(root, h, n=volumes, md=h in md,
                        profiles={i: profiles(h, i) for i in range(volumes)})
            self.hosts.append(host)
            self.ports[h] = _free_port(set(self.ports.values()))
            keys = device_keys or {}
            sections = "".join(f"[device {v.name}]\n" + keys.get((h, v.name), f"iops_limit={limit}\n")
                               for v in host.volumes if v.mountpoint and not v.members)
            with open(os.path.join(root, "iopsd.conf"), "w") as f:
                f.write(f"[global]\nlisten_address=127.0.0.1:{self.ports[h]}\n"
                        f"state_directory={root}/state\n{extra_config}{sections}"
                        + (host_sections or {}).get(h, ""))
            os.makedirs(os.path.join(root, "state"), exist_ok=True)
        self.generator = Generator(self.hosts)

    def name(self, h):
        return f"host{h:02d}"

    def instance(self, h):
        return f"127.0.0.1:{self.ports[h]}"

    def start(self, hold=False):
        self.generator.start(hold)
        for h, host in enumerate(self.hosts):
            if h in self.down:
                continue
            logf = open(os.path.join(host.root, "iopsd.log"), "wb")
            self.procs[h] = (subprocess.Popen([self.iopsd, "--config", os.path.join(host.root, "iopsd.conf"),
                                               "--path.procfs", host.proc, "--path.sysfs", host.sys],
                                              stdout=logf, stderr=subprocess.STDOUT), logf)

    def write_file_sd(self, path):
        """One file_sd target per host, with its host label."""
        with open(path, "w") as f:
            for h in range(len(self.hosts)):
                f.write(f"- targets: ['{self.instance(h)}']\n  labels:\n    host: {self.name(h)}\n"
                        "    role: db\n    env: test\n")

    def stop(self):
        """SIGTERM to every daemon; returns {host: exit status}."""
        for p, _ in self.procs.values():
            if p.poll() is None:
                p.terminate()
        rcs = {}
        for h, (p, logf) in self.procs.items():
            try:
                rcs[h] = p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                rcs[h] = p.wait()
            logf.close()
        self.procs = {}
        self.generator.stop()
        return rcs


def _free_port(taken):
    """A port free now and not in `taken` (the kernel may hand out a port
    again once the probing socket is closed: two hosts got the same one)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in taken:
            return port
