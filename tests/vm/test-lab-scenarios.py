#!/usr/bin/env python3
"""The field notes' volumes, built in one boot of the VM lab (contrib/lab/
iopsdlab.py: caps enforced by QEMU below the guest, iopsd installed as it
ships and started by systemd), each scenario asserting figures:

  flat     a volume capped at C under fio QD16: throttled within 20 s, the
           estimate within 2% of C; another declared (iops_limit=C): limit
           ratio >= 0.98, time at the limit growing ~1 s/s
  live     the cap moved C -> 2C under load: the estimate follows in 30 s
  burst    base C, 3C for 30 s: the base flagged within 10 s of QEMU's
           bucket running dry; with the model declared (a second iopsd) the
           burst is not flagged and the balance reaches 0 within 5 s of it;
           without, the burst rate, the base and when it ran out are
           learned, and the next burst is not flagged
  short    declared 3C while the hypervisor holds C: the mismatch
  raid0    md RAID0 -c256 of two C/2 volumes, ext4 on /data: the field
           notes' job file through fio and iopsd --once (within 3%, both
           near C), member utilization vs fio's aggrutil (1 point), --once's
           own disk_util aggrutil beside fio's (reported here: the members
           share a cap; test-lab-raid0-once.py judges it on an array one
           member holds),
           the array held by its throttled member, the /data probe on the array
  shared   three volumes capped at C in a group of 1.5C: a shared ceiling
           found (within 5%) and named; [instance] iops_limit= declared
  faults   a probed volume detached and reattached, dm-flakey EIO, dm-delay
           50 ms, a RAID1 member failing; every user file byte-identical
  naming   serial vol0123456789abcdef0 -> volume_id vol-0123456789abcdef0
  alerts   the shipped rules (minutes read as seconds) in a Prometheus on
           the host: each scenario's alert fires within its for: plus one
           evaluation interval of turning pending, none on the unthrottled
           control volume
  cgroup   contrib/lab/iopsd-lab's io.max (cgroup v2) path, in the guest

C is 1000 IOPS times IOPSD_LAB_SCALE (default 1: the field notes' 1000, a
burst of 3000). The TCG guest needs the host's two CPUs for that: with
other work on the host it now and then submitted 1200-1600 IOPS for ten
seconds of a 3000-IOPS burst, or 875 through the RAID0; the suite runs
alone (is_parallel: false); a slower or busier machine can run it at 0.7
(C = 700). fio's loads submit and reap in batches (1.8x the IOPS from
the guest's CPU); a burst the guest did not deliver as QEMU counted it runs once
more after the bucket refills; each scenario's line gives the host's CPU
and the share its own hypervisor stole. Every figure is printed and written to BUILDDIR/lab-scenarios.json; a failing check does not stop the others
(the test fails at the end). A check the lab could not deliver (QEMU's own
count says why) judged nothing about iopsd: it is inconclusive, and its
scenario runs once more; the run fails when a detection check is still
inconclusive after that, or when more than two checks are; the summary
gives the passed, failed and inconclusive counts. Screenshots of the live page (burst, RAID0)
go to BUILDDIR/lab-screenshots/."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.realpath(__file__))
SRCDIR = os.environ.get("SRCDIR", os.path.realpath(os.path.join(HERE, "..", "..")))
BUILDDIR = os.environ.get("BUILDDIR", os.path.join(SRCDIR, "build"))
sys.path.insert(0, os.path.join(SRCDIR, "contrib", "lab"))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
import iopsdlab  # noqa: E402
from iopsdlab import Lab, LabConfig  # noqa: E402

LAB_CLI = os.path.join(SRCDIR, "contrib", "lab", "iopsd-lab")
SCALE = float(os.environ.get("IOPSD_LAB_SCALE", "1"))
C = int(round(1000 * SCALE))   # the field notes' 1000 IOPS
DECLARED_PORT = 9478           # the second iopsd, with the burst model declared
EVAL = 1.0                     # Prometheus scrape and evaluation interval, seconds
T_START = time.monotonic()

LAB = f"""
# the control: uncapped, a light load all along; nothing may fire on it
volume ctl   size=256M bus=virtio mount=/mnt/ctl
volume flat  size=256M bus=virtio serial=vol0f1a7000000000001 iops={C}
volume decl  size=256M bus=nvme   serial=vol0123456789abcdef0 iops={C} iopsd.iops_limit={C}
volume short size=256M bus=virtio iops={C} iopsd.iops_limit={3 * C}
volume burst size=256M bus=virtio iops={C} burst={3 * C} burst-length=30s
volume r1    size=1280M   bus=virtio iops={C // 2} array=data
volume r2    size=1280M   bus=nvme   iops={C // 2} array=data
array  data  level=0 chunk=256k mount=/data
group  inst  iops={3 * C // 2}
volume g1    size=128M bus=virtio iops={C} group=inst
volume g2    size=128M bus=nvme   iops={C} group=inst
volume g3    size=128M bus=virtio iops={C} group=inst
volume hot   size=64M  bus=virtio iops={C}
volume flt   size=64M  bus=virtio faults=yes
volume m1    size=64M  bus=virtio faults=yes array=mirror
volume m2    size=64M  bus=virtio array=mirror
array  mirror level=1 mount=/mnt/mirror
"""

IOPSD_CONF = """\
[global]
sample_interval=1s
probe_interval=10s
history=30m
{instance}
[ctl]
readwrite=randread
blocksize=4k
size=8m
directory=${{ctl.mount}}
iodepth=1
rate_iops=20
runtime=500ms
interval=3s

[data]
readwrite=randread
blocksize=4k
size=8m
directory=/data
iodepth=1
rate_iops=10
runtime=300ms
interval=10s

[hot]
readwrite=randread
blocksize=4k
filename=${{hot.by-id}}
iodepth=1
rate_iops=20
runtime=300ms
interval=2s

[flt]
readwrite=randread
blocksize=4k
filename=${{flt}}
iodepth=1
rate_iops=20
runtime=1s
interval=2s

[mirror]
readwrite=randread
blocksize=4k
size=4m
directory=/mnt/mirror
iodepth=1
rate_iops=10
runtime=300ms
interval=5s
"""

INSTANCE_SECTION = "\n[instance]\niops_limit={limit}\ndevices=^({devices})$\n"

DECLARED_CONF = """\
[global]
sample_interval=1s
history=30m
state_directory=/var/lib/iopsd-declared
device_include=^{burst}$

[device {burst}]
burst_iops={burst_iops}
burst_credits={credits}
credit_rate={base}
"""

# The field notes' job file, and the one thing added for both fio and
# iopsd --once: a runtime (its loops would take an hour at these rates)
FIELD_NOTES_JOB = """\
[global]
runtime=60s

[randread4k]
readwrite=randread
blocksize=4k
size=100m
directory=/data
direct=1
loops=5
numjobs=16
"""

# --- results -----------------------------------------------------------------

RESULTS = []
SUPERSEDED = []   # the checks of a scenario's first run that its rerun replaced
# How much the lab may leave undecided after the reruns before the run is
# failed for judging too little of iopsd: no detection check, and two
# checks in all.
MAX_INCONCLUSIVE_DETECTION = 0
MAX_INCONCLUSIVE = 2


def log(msg):
    print(f"[{time.monotonic() - T_START:6.1f}s] {msg}", flush=True)


def check(scenario, what, ok, measured, threshold, lab_limit=None, detection=False):
    """Record one figure against its threshold (not fatal): passed, failed,
    or inconclusive when it missed and lab_limit says why the lab did not
    deliver what the check needs (with the reference measurement that shows
    it). An inconclusive check judged nothing about iopsd: its scenario runs
    once more (scenario()), and the suite fails when more than
    MAX_INCONCLUSIVE_DETECTION detection checks (about finding a ceiling),
    or more than MAX_INCONCLUSIVE checks in all, are still inconclusive
    after that (verdict())."""
    status = "passed" if ok else ("inconclusive" if lab_limit else "failed")
    entry = {"scenario": scenario, "check": what, "ok": bool(ok), "status": status, "detection": detection,
             "measured": measured, "threshold": threshold}
    if status == "inconclusive":
        entry["lab_limit"] = lab_limit
    RESULTS.append(entry)
    mark = {"passed": "ok  ", "failed": "FAIL", "inconclusive": "INCONCLUSIVE"}[status]
    log(f"{mark} {scenario}: {what}: {measured} (want {threshold})" + (f": {lab_limit}" if status == "inconclusive"
                                                                        else ""))
    return ok


def supersede(start):
    """The checks recorded from RESULTS[start] on are replaced by a rerun's."""
    first = RESULTS[start:]
    del RESULTS[start:]
    for r in first:
        r["superseded"] = True
    SUPERSEDED.extend(first)
    return first


def scenario(name, rerun=True):
    """Run a phase; an exception fails its scenario, not the others. When
    one of its checks is inconclusive, the phase runs once more (after the
    method before_rerun_NAME of its object, when there is one) and the
    rerun's checks replace the first run's."""
    def wrap(fn):
        def once(*a, **kw):
            t, t_wall = time.monotonic(), time.time()
            log(f"== {name}")
            try:
                return fn(*a, **kw)
            except Exception as e:  # noqa: BLE001 - recorded, then the next phase
                traceback.print_exc()
                check(name, "completed", False, f"{type(e).__name__}: {str(e)[:800]}", "no error")
            finally:
                rec = getattr(a[0], "rec", None) if a else None
                host = rec.host_cpu(t_wall, time.time()) if rec else None
                log(f"== {name} took {time.monotonic() - t:.0f} s" + (
                    f"; the host's CPUs {host[0]:.0f}% busy, another {host[1]:.0f}% stolen by its own hypervisor "
                    f"(worst second {host[2]:.0f}%)" if host else ""))

        def run(*a, **kw):
            start = len(RESULTS)
            out = once(*a, **kw)
            missed = [r for r in RESULTS[start:] if r["status"] == "inconclusive"]
            if not (rerun and missed):
                return out
            log(f"== {name}: {len(missed)} check(s) inconclusive ({'; '.join(r['check'] for r in missed)}): "
                "the scenario runs once more")
            t = time.monotonic()
            supersede(start)
            before = getattr(a[0], f"before_rerun_{fn.__name__}", None) if a else None
            if before:
                before()
            out = once(*a, **kw)
            for r in RESULTS[start:]:
                r["rerun"] = True
            if a and hasattr(a[0], "rerun_seconds"):
                a[0].rerun_seconds += time.monotonic() - t
            return out
        return run
    return wrap


def verdict(wall, scale):
    """The summary: passed, failed and inconclusive counts; the exit status."""
    by = {k: [r for r in RESULTS if r["status"] == k] for k in ("passed", "failed", "inconclusive")}
    undecided = [r for r in by["inconclusive"] if r["detection"]]
    print(f"\n{len(RESULTS)} checks in {wall:.0f} s (scale {scale}): {len(by['passed'])} passed, "
          f"{len(by['failed'])} failed, {len(by['inconclusive'])} inconclusive ({len(undecided)} of them detection "
          f"checks; at most {MAX_INCONCLUSIVE} and {MAX_INCONCLUSIVE_DETECTION} of those pass); "
          f"{len(SUPERSEDED)} check(s) of a first run "
          "replaced by its rerun")
    for r in by["inconclusive"]:
        print(f"INCONCLUSIVE{' (detection)' if r['detection'] else ''} {r['scenario']}: {r['check']}: "
              f"{r['measured']} (want {r['threshold']}): {r['lab_limit']}")
    for r in by["failed"]:
        print(f"FAILED {r['scenario']}: {r['check']}: {r['measured']} (want {r['threshold']})")
    ok = not by["failed"] and len(undecided) <= MAX_INCONCLUSIVE_DETECTION and \
        len(by["inconclusive"]) <= MAX_INCONCLUSIVE
    if not ok and not by["failed"]:
        print("the run judged too little of iopsd: " + (
            f"{len(undecided)} detection check(s) inconclusive after the rerun (more than "
            f"{MAX_INCONCLUSIVE_DETECTION})" if len(undecided) > MAX_INCONCLUSIVE_DETECTION else
            f"{len(by['inconclusive'])} checks inconclusive (more than {MAX_INCONCLUSIVE})"))
    return 0 if ok else 1


def first(series, pred):
    return next(((t, v) for t, v in series if pred(v)), None)


def settled(series, level, hold):
    """The first point of `series` at or below level that stays there for
    `hold` seconds (a busy host's dip is not a bucket running dry)."""
    for i, (t, v) in enumerate(series):
        if v <= level:
            rest = [x for u, x in series[i:] if u <= t + hold]
            if series[-1][0] >= t + hold and max(rest) <= level:
                return (t, v)
    return None


def settled_at(series, level, tol, hold):
    """The first point of `series` within tol (a share) of level that stays
    there for `hold` seconds: a bucket held at its base, not a dip below it."""
    near = lambda v: abs(v - level) <= tol * level  # noqa: E731
    for i, (t, v) in enumerate(series):
        if near(v):
            rest = [x for u, x in series[i:] if u <= t + hold]
            if series[-1][0] >= t + hold and all(near(x) for x in rest):
                return (t, v)
    return None


def ran_dry_at(series, settled, burst, base, tol):
    """When a bucket ran dry, given `settled` (settled_at's point): the
    first point of the low stretch that ends there, every point in it below
    0.8 x burst, the first within tol of base. A starved second inside that
    stretch refills the bucket a little, and the seconds that spend it again
    put off settled_at, not the moment the bucket first held the rate at
    its base. settled's time when there is no such point."""
    low = [(t, v) for t, v in series if t <= settled[0]]
    i = len(low)
    while i > 0 and low[i - 1][1] < 0.8 * burst:
        i -= 1
    return next((t for t, v in low[i:] if abs(v - base) <= tol * base), settled[0])


def plateau_at(secs, cap):
    """When 1-s rates [(t, IOPS)] first held a plateau at cap by iopsd's
    rule (iopsd(8), CEILING DETECTION): a window of 20 seconds in which all
    but 3 sit within 1.5% of the window's median, or make up with the next
    second for one that fell short (at most 3 such pairs), the median
    within 2% of cap. The time of the window's last second, or None."""
    for end in range(20, len(secs) + 1):
        w = [v for _, v in secs[end - 20:end]]
        med = statistics.median(w)
        band = 0.015 * med
        out = made_up = i = 0
        while i < len(w):
            if abs(w[i] - med) <= band:
                i += 1
                continue
            if (made_up < 3 and i + 1 < len(w) and w[i] < med - band and w[i + 1] > med + band
                    and abs((w[i] + w[i + 1]) / 2 - med) <= band / 2):
                made_up += 1
                i += 2
                continue
            out += 1
            i += 1
        if out <= 3 and abs(med - cap) <= 0.02 * cap:
            return secs[end - 1][0]
    return None


def plateau_when(at):
    """Scenarios.unflat()'s second figure, for a check's line."""
    return (f"iopsd's input held a 20-s plateau after {at:.1f} s" if at is not None
            else "iopsd's input held no 20-s plateau (yet)")


def fmt(v, spec=".1f"):
    return "none" if v is None else format(v, spec)


def pcts(d):
    return ", ".join(f"{k} {fmt(v, '.2f')}" for k, v in d.items())


# --- what the host sees ------------------------------------------------------------

class Recorder(threading.Thread):
    """The hypervisor's count of the I/O it let through to each volume
    (QMP query-blockstats, twice a second, stamped with the host's clock);
    iopsd's figures come from the Prometheus that scrapes both daemons
    every second (a second scraper would double iopsd's rendering in a
    guest short of CPU)."""

    def __init__(self, lab):
        super().__init__(daemon=True)
        self.lab, self.samples, self.stop_ev, self.lock = lab, [], threading.Event(), threading.Lock()
        self.cpu = []   # [(t, the host's /proc/stat cpu line)]: what the host had for the guest
        self.bstats = []  # [(t, {drive: (reads, bytes read and written, writes)})]
        self.errors = 0
        self.inst = {"main": f"127.0.0.1:{lab.vm.host_port(iopsdlab.GUEST_PORT)}",
                     "declared": f"127.0.0.1:{lab.vm.host_port(DECLARED_PORT)}"}

    def run(self):
        while not self.stop_ev.is_set():
            t = time.time()
            try:
                st = {b["device"]: b["stats"] for b in self.lab.vm.qmp.execute("query-blockstats", timeout=10)
                      if b.get("device")}
                with open("/proc/stat") as f:
                    cpu = [int(x) for x in f.readline().split()[1:9]]
                with self.lock:
                    self.samples.append((t, {d: s["rd_operations"] + s["wr_operations"] for d, s in st.items()}))
                    self.bstats.append((t, {d: (s["rd_operations"], s["rd_bytes"] + s["wr_bytes"], s["wr_operations"])
                                            for d, s in st.items()}))
                    self.cpu.append((t, cpu))
            except Exception:  # noqa: BLE001 - a volume being hot-plugged
                self.errors += 1
            self.stop_ev.wait(max(0.05, 0.5 - (time.time() - t)))

    def ops(self, drive, t0, t1):
        """The I/Os QEMU let through to drive between t0 and t1 (the
        samples nearest to them)."""
        with self.lock:
            pts = [(t, ops[drive]) for t, ops in self.samples if drive in ops]
        a = min(pts, key=lambda p: abs(p[0] - t0))
        b = min(pts, key=lambda p: abs(p[0] - t1))
        return b[1] - a[1]

    def host_cpu(self, t0, t1):
        """The host's CPUs between t0 and t1: (busy %, stolen % (a host that
        is itself a VM loses that to its hypervisor; not in busy), the worst
        1-s steal %), or None."""
        with self.lock:
            pts = [(t, c) for t, c in self.cpu if t0 <= t <= t1]
        if len(pts) < 2:
            return None

        def share(a, b, fields):
            d = [y - x for x, y in zip(a, b)]
            return 100 * sum(d[i] for i in fields) / max(1, sum(d))
        busy = share(pts[0][1], pts[-1][1], (0, 1, 2, 5, 6))
        worst, j = 0.0, 0
        for i in range(len(pts)):
            while pts[i][0] - pts[j][0] > 1.05:
                j += 1
            if pts[i][0] - pts[j][0] >= 0.95:
                worst = max(worst, share(pts[j][1], pts[i][1], (7,)))
        return busy, share(pts[0][1], pts[-1][1], (7,)), worst

    COUNTS = {"reads": 0, "bytes": 1, "writes": 2}   # bstats' fields

    def counts(self, what="ops"):
        """[(t, {drive: count})] of QEMU's count `what`: ops (reads and
        writes), reads, writes or bytes (read and written)."""
        with self.lock:
            if what == "ops":
                return list(self.samples)
            i = self.COUNTS[what]
            return [(t, {d: v[i] for d, v in st.items()}) for t, st in self.bstats]

    def rate(self, drive, t0=0, window=1.0, what="ops"):
        """[(t, per second)] of QEMU's count `what` (counts()) for drive
        d-NAME (or a tuple of drives together), over `window` s."""
        drives = drive if isinstance(drive, tuple) else (drive,)
        pts = [(t, sum(ops[d] for d in drives)) for t, ops in self.counts(what)
               if t >= t0 and all(d in ops for d in drives)]
        out, j = [], 0
        for i, (t, n) in enumerate(pts):
            while j + 1 < i and t - pts[j + 1][0] >= window:
                j += 1
            if i > j and t - pts[j][0] >= 0.9 * window:
                out.append(((t + pts[j][0]) / 2, (n - pts[j][1]) / (t - pts[j][0])))
        return out

    def _sel(self, src, name, labels):
        sel = dict(labels, instance=self.inst[src])
        return name + "{" + ",".join(f'{k}="{v}"' for k, v in sel.items()) + "}"

    def _raw(self, q, t0):
        now = time.time()
        rng = max(2, int(now - t0) + 2) if t0 else 3600
        return self.lab.prom.api("query", query=f"{q}[{rng}s]", time=now)["result"]

    def series(self, src, name, t0=0, **labels):
        """[(t, value)] of the first series of `name` matching labels, as
        Prometheus scraped it since t0."""
        res = self._raw(self._sel(src, name, labels), t0)
        return [(float(t), float(v)) for t, v in res[0]["values"] if float(t) >= t0] if res else []

    def labels_of(self, src, name, t0=0):
        drop = {"__name__", "job", "instance", "lab"}
        return [({k: v for k, v in r["metric"].items() if k not in drop},
                 [(float(t), float(v)) for t, v in r["values"]])
                for r in self._raw(self._sel(src, name, {}), t0)]

    def wait(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.5)
        return None


def load_start(rec, drive, level, t0, what="ops"):
    p = first(rec.rate(drive, t0, what=what), lambda v: v >= level)
    return p[0] if p else None


# --- the guest's fio -----------------------------------------------------------------

class Fio:
    """fio jobs started in the guest as transient units (their output goes
    to a JSON file there), stopped with SIGINT and read back."""

    def __init__(self, lab):
        self.lab = lab

    def start(self, name, args, runtime=120):
        self.lab.run(f"systemd-run --quiet --unit=fio-{name} --collect fio --output-format=json "
                     f"--output=/root/fio-{name}.json --runtime={runtime} {args}")

    def randread(self, name, devices, qd=16, runtime=300, extra=""):
        """Random 4k reads at queue depth qd on each of devices (random())."""
        self.random(name, [(d, "randread") for d in devices], qd=qd, runtime=runtime, extra=extra)

    def random(self, name, jobs, qd=16, bs="4k", runtime=300, extra=""):
        """A job per (device, randread or randwrite) in jobs, bs-sized
        I/Os at queue depth qd each. From QD 8 up, submitted qd/2
        and reaped at least qd/4 a call: the guest's CPU per I/O is what
        starves a TCG guest (fio ran at ~90% system CPU), and batching got
        1.8x the IOPS from it (this guest, an uncapped virtio volume, QD16,
        10 s each: 5,556 IOPS one I/O per call, 9,919 batched; the burst
        needs 3,000). QEMU's throttle, not fio, still sets the rate: qd/2
        or more requests wait in the guest's queue."""
        args = " ".join(f"--name={name}{i} --filename={d} --rw={rw}" for i, (d, rw) in enumerate(jobs))
        batch = f"--iodepth_batch_submit={qd // 2} --iodepth_batch_complete_min={qd // 4} " if qd >= 8 else ""
        self.start(name, f"--direct=1 --bs={bs} --iodepth={qd} --ioengine=libaio --time_based "
                         f"{batch}{extra} {args}", runtime)

    def stop(self, name):
        """SIGTERM to fio's main process (it ends its jobs and writes its
        report), SIGKILL when it is not gone in 20 s; its report, or None.
        (Under load a job process signalled along with the main one once
        went on until killed.)"""
        self.lab.run(f"systemctl kill --kill-whom=main --signal=SIGTERM fio-{name}.service 2>/dev/null || true")
        try:
            return self.wait(name, timeout=20)
        except iopsdlab.VMError:
            log(f"fio {name} did not stop on SIGTERM within 20 s: killed")
            self.lab.run(f"systemctl kill --signal=SIGKILL fio-{name}.service; systemctl stop fio-{name}.service",
                         check=False)
            return None

    def wait(self, name, timeout=180):
        # its process gone (a unit kept after exit stays active)
        self.lab.vm.wait_until(f"test \"$(systemctl show -p MainPID --value fio-{name}.service)\" = 0",
                               timeout=timeout, what=f"fio {name} to finish")
        text = self.lab.run(f"cat /root/fio-{name}.json").stdout
        return json.loads(text[text.index("{"):])


# --- user files ----------------------------------------------------------------------

USER_TREES = ("/mnt/ctl/user", "/mnt/mirror/user", "/data/user")
RAW_VOLUMES = ("hot", "flt")


def write_user_data(lab):
    """Files a user owns on the volumes (and a pattern on the raw ones);
    their checksums, read back later from the devices, not the cache."""
    sh = []
    for d in USER_TREES:
        sh.append(f"mkdir -p {d}/sub && for i in $(seq 1 12); do head -c $((4096 * (i * 7 % 23 + 1))) "
                  f"/dev/urandom > {d}/file$i; done && head -c 1000000 /dev/urandom > {d}/sub/big")
    for v in RAW_VOLUMES:
        sh.append(f"head -c 4194304 /dev/urandom | dd of={lab.cfg.volumes[v].top} bs=1M oflag=direct status=none")
    lab.run(" && ".join(sh) + " && sync", timeout=300)
    return checksums(lab)


def checksums(lab):
    sh = ["sync", "echo 3 > /proc/sys/vm/drop_caches"]
    for d in USER_TREES:
        sh.append(f"echo '== {d}'; (cd {d} && find . -type f | sort | xargs sha256sum) 2>&1")
    for v in RAW_VOLUMES:
        sh.append(f"echo '== {v}'; dd if={lab.cfg.volumes[v].top} bs=1M count=4 iflag=direct status=none "
                  f"2>&1 | sha256sum")
    out = lab.run("; ".join(sh), timeout=300, check=False).stdout
    return {m.group(1): m.group(2) for m in re.finditer(r"^== (\S+)\n(.*?)(?=^== |\Z)", out, re.M | re.S)}


# --- the scenarios ---------------------------------------------------------------------------

class Scenarios:
    def __init__(self, lab, rec):
        self.lab, self.rec, self.fio = lab, rec, Fio(lab)
        self.disk = {n: v.disk for n, v in lab.cfg.volumes.items()}
        self.md = lab.cfg.arrays["data"].disk
        self.mirror = lab.cfg.arrays["mirror"].disk
        self.windows = {}
        self.shots = []
        self.clock_offset = 0.0
        self.instance_supported = False
        self.rerun_seconds = 0.0   # spent on a load the guest did not deliver, and its rerun
        self.lab_limits = {}       # scenario -> why the lab did not present it (its alert's check too)
        self.t_short = None

    def cli(self, *args):
        """The lab's command line, against this lab's control socket."""
        r = subprocess.run([LAB_CLI, "vm", "--name", self.lab.name, "--dir", os.path.dirname(self.lab.state_dir)]
                           + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        log(f"$ iopsd-lab vm {' '.join(args)}: {r.stdout.strip()}")
        if r.returncode != 0:
            raise AssertionError(f"iopsd-lab vm {' '.join(args)} exited {r.returncode}: {r.stdout}")
        return r.stdout

    # what log_seconds() reads for QEMU's count `what`: iopsd's rate, its
    # estimate (a family and its labels), the unit
    SECONDS_OF = {
        "ops": ("iopsd_device_iops", "read", ("iopsd_device_iops_ceiling_estimate", {}), "IOPS"),
        "reads": ("iopsd_device_iops", "read", ("iopsd_device_op_iops_ceiling_estimate", {"op": "read"}), "IOPS"),
        "writes": ("iopsd_device_iops", "write", ("iopsd_device_op_iops_ceiling_estimate", {"op": "write"}),
                   "IOPS"),
        "bytes": ("iopsd_device_throughput_bytes_per_second", "read",
                  ("iopsd_device_throughput_ceiling_estimate_bytes_per_second", {}), "B/s"),
    }

    def log_seconds(self, disk, t0, drive=None, what="ops"):
        """What iopsd's detectors saw of disk since t0, second by second:
        the rate that QEMU's count `what` caps (IOPS or bytes/s), queue,
        util, its estimate; and QEMU's rate to drive (a failed figure's
        evidence)."""
        rec = self.rec
        name, op, (est, est_labels), unit = self.SECONDS_OF[what]
        q = dict(rec.series("main", "iopsd_device_queue_depth", t0, device=disk))
        u = dict(rec.series("main", "iopsd_device_utilization_ratio", t0, device=disk))
        e = dict(rec.series("main", est, t0, device=disk, **est_labels))
        i = rec.series("main", name, t0, device=disk, op=op)
        log(f"{disk} as iopsd saw it (s since: {op} {unit}/queue/util/estimate): " + " ".join(
            f"{t - t0:.0f}:{v:.0f}/{q.get(t, float('nan')):.1f}/{u.get(t, float('nan')):.2f}/"
            f"{e.get(t, float('nan')):.0f}" for t, v in i))
        if drive:
            log(f"{drive} as QEMU let it through (s since: {what}/s): " + " ".join(
                f"{t - t0:.0f}:{v:.0f}" for t, v in rec.rate(drive, t0, what=what)[::2]))

    def counted(self, disk, t0, t1):
        """What QEMU and the declared iopsd counted on disk between t0 and
        t1 (their difference is the drift of a declared bucket)."""
        with self.rec.lock:
            q = [(t, ops.get("d-burst")) for t, ops in self.rec.samples if t0 - 2 <= t <= t1 + 1]
        c = self.rec.series("declared", "iopsd_device_reads_completed_total", t0 - 2, device=disk)
        c = [(t, v) for t, v in c if t <= t1 + 1]
        if len(q) < 2 or len(c) < 2:
            return "counts unknown"
        return (f"QEMU {q[-1][1] - q[0][1]:.0f} I/Os in {q[-1][0] - q[0][0]:.1f} s, iopsd {c[-1][1] - c[0][1]:.0f} "
                f"in {c[-1][0] - c[0][0]:.1f} s")

    def qemu_seconds(self, drive, t_from, within, what="ops"):
        """QEMU's non-overlapping 1-s rates (of its count `what`,
        Recorder.counts()) to drive in the `within` s from t_from."""
        secs, last = [], None
        for t, v in self.rec.rate(drive, t_from, what=what) if t_from else []:
            if t > t_from + within:
                break
            if last is None or t - last >= 0.95:
                secs.append((t, v))
                last = t
        return secs

    def guest_seconds(self, disk, t_from, within):
        """iopsd's own input: its 1-s rates of disk (reads and writes), one
        per sample (a scrape that saw the same sample again, its completion
        counters unchanged, is dropped)."""
        def by_t(name, **labels):
            return dict(self.rec.series("main", name, t_from, device=disk, **labels))

        r, w = by_t("iopsd_device_iops", op="read"), by_t("iopsd_device_iops", op="write")
        rc, wc = by_t("iopsd_device_reads_completed_total"), by_t("iopsd_device_writes_completed_total")
        secs, seen = [], None
        for t in sorted(r):
            n = (rc.get(t), wc.get(t))
            if t <= t_from + within and n != seen:
                secs.append((t, r[t] + w.get(t, 0.0)))
            seen = n
        return secs

    def qemu_plateau(self, drive, t_from, within, cap):
        """QEMU's 1-s rates to drive (or a tuple of drives together) in the
        `within` s from t_from, against cap: (the share within 1.5% of it,
        s from t_from to the end of its first plateau by iopsd's rule, or
        None)."""
        q = self.qemu_seconds(drive, t_from, within)
        share = sum(abs(v - cap) <= 0.015 * cap for _, v in q) / len(q) if q else 0
        at = plateau_at(q, cap)
        return share, at - t_from if at else None

    def unflat(self, drive, disk, t_from, cap, goal):
        """Why iopsd could not find the plateau within `goal` s of t_from:
        its own input, the guest's 1-s rates of disk, held no plateau by
        iopsd's rule (plateau_at()) in time, 2 s before the goal (a sample
        is published and scraped in that). QEMU's seconds to drive say
        whether the unevenness was already in what the hypervisor let
        through (a TCG guest short of CPU leaves QEMU's bucket some credit
        in one second and spends it in the next) or came after it, in the
        guest. Returns (share of QEMU's seconds within 1.5% of cap, when the
        guest's first plateau ended, the reason or None)."""
        if not t_from:
            return 0, None, None
        share, at_q = self.qemu_plateau(drive, t_from, goal + 2, cap)
        # from a little before: the detector's window may hold the first
        # seconds of the load, as outliers
        at_g = plateau_at(self.guest_seconds(disk, t_from - 5, goal + 7), cap)
        at_g = at_g - t_from if at_g else None
        why = None
        if at_g is None or at_g > goal - 2:
            why = (f"iopsd's input (the guest's 1-s rates) held no 20-s plateau at {cap} by iopsd's rule (all but 3 "
                   f"within 1.5%, or a short second made up by the next) until {fmt(at_g)} s of the {goal}; QEMU's "
                   f"seconds were {share:.0%} within 1.5% and held one from {fmt(at_q)} s: the TCG guest, short of "
                   "CPU, submitted and completed unevenly")
        return share, at_g, why

    def undriven_array(self, drives, t0, t1, runtime, level=0.95):
        """Why a load on an array of QEMU drives did not test its cap: the
        I/Os QEMU itself let through to them between t0 and t1, over the
        jobs' runtime, fell short of `level` of the members' caps together
        (C), so the TCG guest, short of CPU, never drove the array to its
        limit. None when it did."""
        if not runtime > 0:
            return None
        got = sum(self.rec.ops(d, t0, t1) for d in drives) / runtime
        if got >= level * C:
            return None
        return (f"QEMU let {got:.0f} IOPS through to the members over the load, below {level:.0%} of their caps "
                f"together ({C}): the TCG guest, short of CPU, did not drive the array to its limit")

    def spent_over_base(self, started, t):
        """What the burst volume's load, from `started` to t, drew from
        QEMU's bucket: its I/Os over the base rate C."""
        return self.rec.ops("d-burst", started, t) - C * (t - started)

    def bucket_dry(self, after, started, bucket):
        """When QEMU's burst bucket ran dry after `after`: the burst volume's
        rate fell to the base and stayed there, with most of the bucket
        spent over the base since the load `started`. A TCG guest short of
        CPU for 5 s falls as low with the bucket still full (a CI run: 10784
        of 60000 I/Os spent at such a dip); that dip is passed over. None
        while neither has come."""
        series = self.rec.rate("d-burst", after, window=2)
        while True:
            dip = settled(series, 1.5 * C, 5)
            if dip is None:
                return None
            if self.spent_over_base(started, dip[0]) >= 0.8 * bucket:
                return dip
            series = [p for p in series if p[0] > dip[0]]

    def flagged(self, src, device, t0):
        return first(self.rec.series(src, "iopsd_device_throttled", t0, device=device), lambda v: v == 1)

    def flagged_at(self, src, device, t0, level, tol):
        """(t, estimate) of the first scrape since t0 that is throttled with
        the estimate within tol of level, or None."""
        est = dict(self.rec.series(src, "iopsd_device_iops_ceiling_estimate", t0, device=device))
        for t, v in self.rec.series(src, "iopsd_device_throttled", t0, device=device):
            if v == 1 and t in est and abs(est[t] - level) <= tol * level:
                return t, est[t]
        return None

    # flat at the limit; then the cap moves under load

    @scenario("flat")
    def flat(self):
        rec, fd = self.rec, self.disk["flat"]
        t0 = time.time()
        self.fio.randread("flat", [f"/dev/{fd}"])
        rec.wait(lambda: self.flagged("main", fd, t0), 60)
        start = load_start(rec, "d-flat", 0.9 * C, t0)
        flag = self.flagged("main", fd, t0)
        took = flag[0] - start if flag and start else None
        share, qat, unflat = self.unflat("d-flat", fd, start, C, 20)
        check("flat", "throttled after the load began (no declared limit)", took is not None and took <= 20,
              f"{fmt(took)} s; QEMU's 1-s rates in the band {share:.0%}, "
              f"{plateau_when(qat)}", "<= 20 s", lab_limit=unflat, detection=True)
        time.sleep(3)
        est = rec.series("main", "iopsd_device_iops_ceiling_estimate", t0, device=fd)
        est = est[-1][1] if est else None
        qemu = [v for _, v in rec.rate("d-flat", (start or t0) + 3)]
        # with no plateau found, no estimate; one found must be right
        check("flat", "ceiling estimate", est is not None and abs(est - C) <= 0.02 * C,
              f"{fmt(est)} IOPS (QEMU let {fmt(statistics.median(qemu) if qemu else None)} through)",
              f"{C} +- 2%", lab_limit=unflat if not flag else None, detection=True)
        # IopsdDeviceThrottled: throttled most of 5 s, for 1 s
        time.sleep(max(0, (flag[0] if flag else t0) + 12 - time.time()))
        if flag:
            share, _ = self.qemu_plateau("d-flat", flag[0], 12, C)
            if share < 0.8:
                self.lab_limits["flat"] = (f"QEMU let {C} through (within 1.5%) in only {share:.0%} of the 12 s "
                                           "after iopsd flagged the volume: the TCG guest, short of CPU, fell "
                                           "below the cap, so the plateau did not hold")
        # live modification: C -> 2C under load, through the lab's command line
        tc = time.time()
        self.cli("cap", "flat", "--iops", str(2 * C))
        got = rec.wait(lambda: first(rec.series("main", "iopsd_device_iops_ceiling_estimate", tc, device=fd),
                                     lambda v: abs(v - 2 * C) <= 0.02 * 2 * C), 45)
        took = got[0] - tc if got else None
        last = rec.series("main", "iopsd_device_iops_ceiling_estimate", tc, device=fd)[-1:]
        # the estimate can follow only what the volume delivers: when QEMU's
        # rate first reached the new cap (a TCG guest short of CPU may
        # take a while to submit 2C)
        deliv = first(rec.rate("d-flat", tc, window=2), lambda v: v >= 0.97 * 2 * C)
        lag = deliv[0] - tc if deliv else None
        after = got[0] - deliv[0] if got and deliv else None
        # iopsd finds a cap that holds most seconds within 1.5% (iopsd(8)):
        # a TCG guest short of CPU leaves QEMU's bucket some credit in one
        # second and spends it in the next, and then no plateau holds
        # (the issue's figure is then one the lab's device misses)
        in_band, qat, unflat = self.unflat("d-flat", fd, deliv[0] if deliv else None, 2 * C, 30)
        ok = check("live", f"estimate follows the cap {C} -> {2 * C} once QEMU delivers it",
                   after is not None and after <= 30,
                   f"{got[1]:.1f} IOPS {after:.1f} s after QEMU's rate reached {2 * C} (+{lag:.1f} s); QEMU's "
                   f"1-s rates in the band {in_band:.0%}, {plateau_when(qat)}"
                   if after is not None else f"last {last}, QEMU at {2 * C} after {fmt(lag)} s; its 1-s rates in "
                   f"the band {in_band:.0%}, {plateau_when(qat)}",
                   f"{2 * C} +- 2% within 30 s", lab_limit=unflat, detection=True)
        lag_why = (f"the guest reached the new cap {lag:.1f} s after the modification; iopsd followed "
                   f"{after:.1f} s after that" if ok and lag is not None and lag > 2 else None)
        ok = check("live", f"estimate follows the cap {C} -> {2 * C} under load, from the modification",
                   took is not None and took <= 30,
                   f"{got[1]:.1f} IOPS after {took:.1f} s" if got else f"last {last}", f"{2 * C} +- 2% within 30 s",
                   lab_limit=unflat or lag_why, detection=True) and ok
        if not ok:
            self.log_seconds(fd, tc, "d-flat")
        # the lab's own figure: QEMU let 2C through after the modification
        # (the cap moved) and no more (a TCG guest short of CPU may submit
        # less, which the checks above answer for)
        q2 = [v for _, v in self.qemu_seconds("d-flat", tc + 3, 40)]
        top2 = max(q2) if q2 else None
        check("live", "QEMU's cap after the modification: its 1-s rates reach it, none above",
              top2 is not None and 0.97 * 2 * C <= top2 <= 1.05 * 2 * C,
              f"highest {fmt(top2, '.0f')}, median {fmt(statistics.median(q2) if q2 else None, '.0f')} IOPS",
              f"{2 * C} (-3% .. +5%)")
        time.sleep(2)
        self.windows["flat"] = (t0, time.time())
        self.fio.stop("flat")

    def before_rerun_flat(self):
        """The cap back at C, no load: as the scenario found the volume."""
        self.fio.stop("flat")
        self.lab.vm.qmp.execute("block_set_io_throttle", dict(iopsdlab.Caps(iops=C).qmp(), device="d-flat"))
        time.sleep(5)

    @scenario("declared")
    def declared(self):
        rec, dd = self.rec, self.disk["decl"]
        t0 = time.time()
        self.fio.randread("decl", [f"/dev/{dd}"])
        start = rec.wait(lambda: load_start(rec, "d-decl", 0.9 * C, t0), 30) or t0
        tr = start + 3
        time.sleep(max(0, tr + 14 - time.time()))
        ratio = [v for t, v in rec.series("main", "iopsd_device_limit_ratio", tr, device=dd, resource="iops")]
        atc = rec.series("main", "iopsd_device_at_ceiling_seconds_total", tr, device=dd, resource="iops")
        med = statistics.median(ratio) if ratio else None
        check("flat", f"declared iops_limit={C}: limit ratio (median of 14 s)", med is not None and med >= 0.98,
              f"median {fmt(med, '.4f')}, min {fmt(min(ratio) if ratio else None, '.4f')}", ">= 0.98")
        growth = (atc[-1][1] - atc[0][1]) / (atc[-1][0] - atc[0][0]) if len(atc) > 2 else None
        # a second counts when it delivered 95% of the limit (iopsd(8)):
        # what share of QEMU's own 1-s rates did over the same span (a TCG
        # guest short of CPU leaves some seconds short, and the next long)
        qr = [v for t, v in rec.rate("d-decl", atc[0][0]) if t <= atc[-1][0]] if len(atc) > 2 else []
        qshare = sum(v >= 0.95 * C for v in qr) / len(qr) if qr else None
        agrees = growth is not None and qshare is not None and abs(growth - qshare) <= 0.12
        check("flat", "declared: at_ceiling_seconds growth", growth is not None and 0.9 <= growth <= 1.1,
              (f"{fmt(growth, '.3f')} s/s over {atc[-1][0] - atc[0][0]:.0f} s; QEMU let 95% of {C} through in "
               f"{fmt(qshare, '.0%')} of its 1-s rates") if growth else "none",
              "~1 s/s (0.9-1.1)",
              lab_limit=(f"QEMU itself delivered 95% of the limit in only {qshare:.0%} of the seconds, and iopsd "
                         f"counted {growth:.0%} (within 12 points of it): the TCG guest, short of CPU, submitted "
                         f"unevenly" if agrees and qshare < 0.9 else None))
        if growth is not None and not 0.9 <= growth <= 1.1:
            self.log_seconds(dd, tr, "d-decl")
        time.sleep(6)  # IopsdDeviceAtLimit: rate over 5 s above 0.5, for 10 s
        self.windows["decl"] = (t0, time.time())
        j = self.fio.stop("decl")
        check("flat", "fio QD16 on the declared volume", True,
              f"{j['jobs'][0]['read']['iops']:.1f} IOPS" if j else "no report", "(reference)")

    # burst then settle, and the volume that does not deliver its declared limit

    def refill(self, started, t0):
        """After a burst the guest did not deliver: fio stopped, wait until
        QEMU's bucket is full again (it drains what was spent over the base
        at the base rate) before the burst runs again. With a margin: the
        declared iopsd's model refills alike, and both stop at full."""
        bucket = self.bucket_size()
        spent = min(bucket, max(0.0, self.spent_over_base(started or t0, time.time())))
        wait = min(bucket, 1.1 * spent + 2 * C) / C + 3
        log(f"the burst is run again: {spent:.0f} of the bucket's {bucket} I/Os were spent, {wait:.0f} s to refill")
        time.sleep(wait)

    def bucket_size(self):
        caps = self.lab.cfg.volumes["burst"].caps
        return caps.burst * caps.max_length(C)

    @scenario("burst", rerun=False)
    def burst(self, second=False):
        """A burst under QD16; once more, after the bucket refills, when the
        guest did not submit it as QEMU counted (a TCG guest short of CPU
        for some seconds leaves QEMU's bucket part spent, and iopsd is to
        be judged on a burst the lab delivered). The second try's checks
        stand, and fail, whatever it delivers. The first burst starts the
        short volume's load once QEMU's bucket ran dry."""
        t_call = time.time()
        start = len(RESULTS)
        rerun = self.burst_once(second, again=False)
        if rerun:
            log(f"== {'burst2' if second else 'burst'}: the burst runs once more; its first try's checks are replaced")
            supersede(start)
            self.refill(*rerun)
            self.rerun_seconds += time.time() - t_call
            self.burst_once(second, again=True)
        self.burst_ended = time.time()

    def burst_once(self, second, again):
        """The burst; (started, t0) when it should be run again."""
        rec, bd = self.rec, self.disk["burst"]
        tag = "burst2" if second else "burst"
        t0 = time.time()
        learned = bool(rec.series("main", "iopsd_device_burst_iops_estimate", t0 - 600, device=bd))
        self.fio.randread("burst", [f"/dev/{bd}"])
        bucket = self.bucket_size()
        top = rec.wait(lambda: first(rec.rate("d-burst", t0, window=2), lambda v: v >= 2.7 * C), 30)
        started = load_start(rec, "d-burst", 2 * C, t0) if top else None
        drop = rec.wait(lambda: self.bucket_dry(top[0] + 3, started, bucket), 150) if top else None
        if not (top and drop):
            rates = [round(v) for _, v in rec.rate("d-burst", t0)][::2]
            check(tag, "QEMU delivered the burst, then the base", False, f"rates {rates}", f"{3 * C} then {C}",
                  lab_limit=None if again else "the TCG guest did not submit the burst, then the base, as QEMU "
                  "counted: the burst runs again")
            self.fio.stop("burst")
            return None if again else (started, t0)
        # the burst's rate as QEMU delivered it: its mean from the top to the
        # drop, what iopsd's tracker averages too (a guest short of CPU
        # for a few seconds pulls both down alike; a median would not)
        inside = [v for t, v in rec.rate("d-burst", t0) if top[0] + 2 <= t <= drop[0] - 2]
        span = max(1.0, drop[0] - 2 - (top[0] + 1))
        burst_rate = rec.ops("d-burst", top[0] + 1, drop[0] - 2) / span if inside else 0
        burst_s = drop[0] - started
        # QEMU's bucket: what the burst spent over the base. Under a demand
        # above the burst rate it lasts 30 s; a TCG guest short of CPU now
        # and then submits less for a few seconds, spends less and bursts
        # longer, on the same bucket (iopsd's figures below are held to
        # QEMU's drop, wherever it falls). The ends are known to half a
        # second of the 2-s window, 1.7% of the bucket each.
        spent = self.spent_over_base(started, drop[0])
        # the lab's own figure: iopsd is held to what QEMU delivered, below
        # and from the load's first I/Os to the burst rate: a demand above
        # it from the start, so it reaches it at once (a guest short of CPU
        # that ramps up for many seconds looks like a cap that was raised,
        # iopsd(8), BURST BUCKETS, and nothing is learned from it)
        begun = first(rec.rate("d-burst", t0), lambda v: v >= 0.1 * C)
        ramp = top[0] - begun[0] if begun else None
        lab_ok = check(tag, "QEMU's burst (rate; its bucket, spent over the base; from the first I/Os to the rate)",
                       abs(burst_rate - 3 * C) <= 0.03 * 3 * C and abs(spent - bucket) <= 0.06 * bucket
                       and ramp is not None and ramp <= 5,
                       f"{burst_rate:.0f} IOPS (1-s rates {min(inside):.0f}-{max(inside):.0f}); {spent:.0f} I/Os "
                       f"over the base in {burst_s:.1f} s; {fmt(ramp)} s",
                       f"{3 * C}; {bucket} +- 6% (30 s at the burst rate); <= 5 s",
                       lab_limit="the TCG guest did not submit the burst rate all along (QEMU's own count); " +
                                 ("iopsd's figures are checked against what QEMU delivered" if again else
                                  "the burst runs again"))
        if not lab_ok:
            self.log_seconds(bd, t0, "d-burst")
            if not again:
                self.fio.stop("burst")
                return (started, t0)
        if not second:
            self.start_short()
        # the first burst iopsd sees, and the next, told apart by what it learned
        self.shot("burst-then-settle-learned" if second else "burst-then-settle", f"?window=60&devices={bd}",
                  delay=max(0, drop[0] + 20 - time.time()), height=780)
        rec.wait(lambda: self.flagged_at("main", bd, drop[0], C, 0.01) and
                 self.flagged_at("declared", bd, drop[0], C, 0.01), 30)
        time.sleep(8)  # IopsdBurstExhausted: for 1m -> 1 s; IopsdBurstBalanceLow: for 5m -> 5 s
        for src in ("main", "declared"):
            who = "no model declared" if src == "main" else "model declared"
            during = [v for t, v in rec.series(src, "iopsd_device_throttled", t0, device=bd) if t < drop[0] - 1]
            if src == "declared" or learned:
                check(tag, f"{who}: the burst is not flagged" + (" (one was learned before)" if learned else ""),
                      during and max(during) == 0,
                      f"throttled max {max(during) if during else None} over {len(during)} s of burst", "0")
            else:
                check(tag, f"{who}: the first burst ever seen is flagged like a plateau (iopsd(8))", True,
                      f"{sum(during):.0f} of {len(during)} s flagged", "(reported, not a threshold)")
            # issue 38: the base flagged within 10 s of the drop, the estimate within 1%
            flag = self.flagged_at(src, bd, drop[0], C, 0.01)
            est = rec.series(src, "iopsd_device_iops_ceiling_estimate", drop[0], device=bd)
            check(tag, f"{who}: the base flagged after the bucket ran dry, the estimate within 1%",
                  flag is not None and flag[0] - drop[0] <= 10,
                  f"{flag[0] - drop[0]:.1f} s, estimate {flag[1]:.1f}" if flag else
                  f"never (last estimate {est[-1][1] if est else None})", f"<= 10 s, {C} +- 1%")
        bal = rec.series("declared", "iopsd_device_burst_balance_ratio", t0, device=bd)
        zero = first(bal, lambda v: v <= 0.005)
        at_drop = [v for t, v in bal if t <= drop[0]][-1:]
        check(tag, "model declared: burst balance reaches 0 when QEMU's bucket empties",
              zero is not None and abs(zero[0] - drop[0]) <= 5,
              (f"{zero[0] - drop[0]:+.1f} s (balance {zero[1]:.4f}" if zero else
               f"never (last {bal[-1][1] if bal else None}") +
              f"; {fmt(at_drop[0] if at_drop else None, '.4f')} at the drop; {self.counted(bd, t0, drop[0])})",
              "within 5 s")
        got = {n: (lambda s: s[-1][1] if s else None)(rec.series("main", f"iopsd_device_burst_{n}", t0, device=bd))
               for n in ("iops_estimate", "base_iops_estimate", "duration_seconds", "exhausted_timestamp_seconds")}
        b, base = got["iops_estimate"], got["base_iops_estimate"]
        if lab_ok:
            check(tag, "no model: the learned burst rate", b is not None and abs(b - burst_rate) <= 0.03 * burst_rate,
                  f"{fmt(b)} (QEMU {burst_rate:.0f})", "QEMU's +- 3%")
        else:
            # seconds the guest fell short: the tracker leaves out the ones
            # 20% below its mean, QEMU's mean keeps them
            check(tag, "no model: the learned burst rate, between what QEMU delivered and its cap",
                  b is not None and 0.97 * burst_rate <= b <= 1.03 * 3 * C,
                  f"{fmt(b)} (QEMU's mean {burst_rate:.0f}, its cap {3 * C})", "QEMU's mean - 3% .. the cap + 3%")
        check(tag, "no model: the learned base rate", base is not None and abs(base - C) <= 0.02 * C, fmt(base),
              f"{C} +- 2%")
        ex = got["exhausted_timestamp_seconds"]
        ex_host = ex - self.clock_offset if ex else None
        ok = check(tag, "no model: when the burst ran out (iopsd's clock vs QEMU's drop)",
                   ex_host is not None and abs(ex_host - drop[0]) <= 3,
                   f"{ex_host - drop[0]:+.1f} s, lasted {fmt(got['duration_seconds'])} s" if ex else "none",
                   "within 3 s")
        if not ok:
            self.log_seconds(bd, t0, "d-burst")
        time.sleep(max(0, drop[0] + 30 - time.time()))  # the screenshot, with the plateau on
        self.windows[tag] = (t0, time.time())
        self.fio.stop("burst")
        return None

    def start_short(self):
        self.t_short = time.time()
        self.fio.randread("short", [f"/dev/{self.disk['short']}"])

    @scenario("short")
    def short(self):
        """Its load began with the first burst's drop, or begins now (the
        burst failed)."""
        rec, sd = self.rec, self.disk["short"]
        if self.t_short is None:
            self.start_short()
        rec.wait(lambda: first(rec.series("main", "iopsd_device_ceiling_limit_ratio", self.t_short, device=sd,
                                          resource="iops"), lambda v: v > 0), 30)
        time.sleep(4)  # IopsdDeviceLimitNotDelivered: for 2m -> 2 s
        r = rec.series("main", "iopsd_device_ceiling_limit_ratio", self.t_short, device=sd, resource="iops")
        lr = [v for _, v in rec.series("main", "iopsd_device_limit_ratio", self.t_short, device=sd, resource="iops")]
        check("short", f"declared {3 * C}, held at {C}: ceiling over the declared limit",
              r and abs(r[-1][1] - 1 / 3) <= 0.02, f"{r[-1][1]:.4f}" if r else "none", "0.333 +- 0.02")
        check("short", "... while its limit ratio stays below the threshold", lr and max(lr) < 0.95,
              f"max {max(lr):.3f}" if lr else "none", "< 0.95")
        self.windows["short"] = (self.t_short, time.time())
        self.fio.stop("short")

    # RAID0 of two volumes, the field notes' job file

    @scenario("raid0")
    def raid0(self):
        rec, md = self.rec, self.md
        members = sorted(m.disk for m in self.lab.cfg.arrays["data"].members)
        self.lab.vm.write_file("/var/tmp/randread4k.fio", FIELD_NOTES_JOB)
        t0 = time.time()
        # kept after it exits: its start and exit times are wanted afterwards
        self.lab.run("systemd-run --quiet --unit=fio-raid --property=RemainAfterExit=yes fio --output-format=json "
                     "--output=/root/fio-raid.json /var/tmp/randread4k.fio")
        self.shot("raid0", f"?window=60&devices={md},{','.join(members)}", delay=40, height=1660)
        j = self.fio.wait("raid")
        fio_iops = sum(job["read"]["iops"] for job in j["jobs"])
        du = {d["name"]: d for d in j.get("disk_util", [])}
        aggr = du.get(md, {}).get("aggr_util")
        # fio's aggrutil is the busiest member's busy time over fio's
        # disk-statistics window: from the jobs' setup to their end, about
        # their runtime (fio reports no more; its process lives about a
        # second longer under TCG). iopsd's the same: each member's busy
        # time from iopsd's counters (iopsd_device_io_time_seconds_total,
        # the scrapes around the run: the members do nothing else) over the
        # jobs' runtime. The hour-long job is held to a minute for this.
        out = self.lab.sh("systemctl show fio-raid.service -p ExecMainStartTimestampMonotonic "
                          "-p ExecMainExitTimestampMonotonic --value; cut -d' ' -f1 /proc/uptime; date +%s.%N; "
                          "systemctl stop fio-raid.service; true").split()
        mono0, mono1, up, real = int(out[0]) / 1e6, int(out[1]) / 1e6, float(out[2]), float(out[3])
        start = real - (up - mono0) - self.clock_offset   # host clock
        end = real - (up - mono1) - self.clock_offset
        runtime = max(job["job_runtime"] for job in j["jobs"]) / 1000.0
        per_member = {}
        for m in members:
            pts = rec.series("main", "iopsd_device_io_time_seconds_total", start - 5, device=m)
            before = [v for t, v in pts if t <= start]
            after = [v for t, v in pts if t >= end]
            if before and after:
                per_member[m] = 100 * (after[0] - before[-1]) / runtime
        mean_mu = max(per_member.values()) if per_member else None
        fio_members = {m: du.get(m, {}).get("util") for m in members}
        drives = [f"d-{m.name}" for m in self.lab.cfg.arrays["data"].members]
        starved = self.undriven_array(drives, start, end, runtime)
        # fio's own run short of the cap by more than the 3% that iopsd's
        # figure is held to against it (QEMU's count: fio's 16 processes
        # cost the guest more than iopsd's 16 threads)
        fio_short = self.undriven_array(drives, start, end, runtime, level=0.97)
        check("raid0", "fio (the job file): IOPS", 0.95 * C <= fio_iops <= 1.01 * C, f"{fio_iops:.1f}", f"near {C}",
              lab_limit=starved)
        check("raid0", "member utilization = fio's aggrutil",
              aggr is not None and mean_mu is not None and abs(mean_mu - aggr) <= 1,
              f"iopsd {fmt(mean_mu, '.2f')}% (members {pcts(per_member)}: busy over the jobs' {runtime:.1f} s; "
              f"fio's process ran {end - start:.1f} s) vs fio "
              f"{fmt(aggr, '.2f')}% (members {pcts(fio_members)})", "within 1 point")
        held = {lab["member"] for lab, pts in rec.labels_of("main", "iopsd_device_held_by", t0)
                if lab.get("device") == md and any(v == 1 for _, v in pts)}
        thr = {m for m in members if self.flagged("main", m, t0)}
        arr = self.flagged("main", md, t0)
        check("raid0", "a throttled member is flagged", bool(thr), sorted(thr), f"one of {members}",
              lab_limit=starved, detection=True)
        check("raid0", "the array is flagged, held by its member, named", arr is not None and held and
              held <= set(members), f"{md} throttled {'yes' if arr else 'no'}, held_by {sorted(held)}",
              f"yes, by members of {md}", lab_limit=starved, detection=True)
        p = next((x for x in self.lab.get_json("/api/v1/probes").get("probes", []) if x.get("name") == "data"), {})
        info = [lab for lab, _ in rec.labels_of("main", "iopsd_probe_info", t0) if lab.get("probe") == "data"]
        check("raid0", "the /data probe reports the array and its members",
              info and info[0].get("device") == md and p.get("device") == md and sorted(p.get("members") or [])
              == members, f"probe_info device={info[0].get('device') if info else None}, api {p.get('device')} "
              f"{p.get('members')}", f"{md} with {members}")
        # as the service's user: iopsd uses only a probe directory of its own
        r = self.lab.run("runuser -u iopsd -- iopsd --once --output-format=json --config /var/tmp/randread4k.fio", timeout=300,
                         check=False)
        once, why, o = None, r.stderr.strip()[-400:], {}
        try:
            o = json.loads(r.stdout[r.stdout.index("{"):])
            once = sum(job["read"]["iops"] for job in o["jobs"]) if r.ok else None
            why += " " + "; ".join(f"{j.get('error_name')}: {j.get('message')}" for j in o["jobs"])
        except ValueError:
            why += r.stdout[-300:]
        # iopsd's own figure is held to the cap even when fio's is not one;
        # when fio fell more than 3% short of the cap, iopsd's figure is held
        # to the cap itself, within 3%
        near = once is not None and 0.95 * C <= once <= 1.03 * C
        at_cap = once is not None and 0.97 * C <= once <= 1.03 * C
        check("raid0", "iopsd --once (the job file): IOPS, vs fio",
              near and abs(once - fio_iops) <= 0.03 * fio_iops,
              f"{once:.1f} vs fio {fio_iops:.1f}" if once else f"exit {r.returncode}: {why}",
              f"within 3%, near {C}",
              lab_limit=(starved if near else None) or (f"{fio_short}; iopsd's {once:.1f} is within 3% of the cap"
                                                        if at_cap and fio_short else None))
        # --once's disk stats next to fio's (its own run of the same job).
        # Reported, not judged: the two members have the same cap, so which
        # one is busier differs from run to run (a run: --once nvme1n1 84.9%,
        # fio vdf 89.1%), and two runs' aggrutil differ by more than 1 point
        du_i = {d["name"]: d for d in o.get("disk_util", [])}
        ai = du_i.get(md, {}).get("aggr_util")
        busy_f = max(members, key=lambda m: fio_members.get(m) or -1.0)
        busy_i = max(members, key=lambda m: du_i.get(m, {}).get("util") or -1.0) if du_i else None
        check("raid0", "iopsd --once's aggrutil and busier member, beside fio's", ai is not None,
              f"iopsd {fmt(ai, '.2f')}% ({busy_i} busier; members "
              f"{pcts({m: du_i.get(m, {}).get('util') for m in members})}) vs fio {fmt(aggr, '.2f')}% "
              f"({busy_f})", "(reported) --once prints an aggrutil for the array")
        self.windows["raid0"] = (t0, time.time())

    # three volumes under an instance-wide limit

    @scenario("shared")
    def shared(self):
        rec = self.rec
        disks = sorted(self.disk[g] for g in ("g1", "g2", "g3"))
        t0 = time.time()
        self.fio.randread("inst", [f"/dev/{d}" for d in disks])

        def found():
            return [lab for lab, pts in rec.labels_of("main", "iopsd_shared_ceiling_throttled", t0)
                    if any(v == 1 for _, v in pts)]
        got = rec.wait(found, 50)
        t_found = time.time()
        # not found: when the group's total as QEMU let it through first held
        # a plateau at 1.5C by iopsd's rule (a TCG guest short of CPU submits
        # unevenly, and the total then holds none)
        starved = None
        if not got:
            share, at_q = self.qemu_plateau(tuple(f"d-{g}" for g in ("g1", "g2", "g3")), t0, 50, 1.5 * C)
            log(f"the group's total as QEMU let it through held a plateau after {fmt(at_q)} s")
            if at_q is None or at_q > 48:
                starved = (f"QEMU's own 1-s totals of the group held no 20-s plateau at {3 * C // 2} by iopsd's rule "
                           f"in the 50 s ({share:.0%} of them within 1.5%): the TCG guest, short of CPU, submitted "
                           "unevenly")
                self.lab_limits["shared"] = starved
        time.sleep(4)
        each = {g: statistics.median(v for _, v in rec.rate(f"d-{g}", t0 + 5)) for g in ("g1", "g2", "g3")}
        total = sum(each.values())
        check("shared", "QEMU: each below its own cap, the sum at the group's",
              all(v < 0.9 * C for v in each.values()) and abs(total - 1.5 * C) <= 0.03 * 1.5 * C,
              f"{', '.join(f'{k} {v:.0f}' for k, v in each.items())}; sum {total:.0f}",
              f"each < {C}, sum {3 * C // 2}")
        if not got:
            check("shared", "a shared ceiling is found and named", False, "none", "within 50 s of load",
                  lab_limit=starved, detection=True)
        else:
            devices = got[0]["devices"]
            est = rec.series("main", "iopsd_shared_ceiling_iops_estimate", t0, devices=devices)
            check("shared", "a shared ceiling is found and named", sorted(devices.split(",")) == disks,
                  f"{devices} after {t_found - t0:.0f} s", ",".join(disks))
            check("shared", "its estimate", est and abs(est[-1][1] - 1.5 * C) <= 0.05 * 1.5 * C,
                  f"{est[-1][1]:.1f}" if est else "none", f"{3 * C // 2} +- 5%")
        if self.instance_supported:
            lr = [v for _, v in rec.series("main", "iopsd_instance_limit_ratio", t0 + 5, resource="iops")]
            check("shared", f"[instance] iops_limit={3 * C // 2}: limit ratio (median)",
                  lr and statistics.median(lr) >= 0.97, fmt(statistics.median(lr) if lr else None, ".3f"), ">= 0.97")
        else:
            check("shared", "[instance] iops_limit= declared", False, "this iopsd refuses [instance]",
                  "accepted")
        time.sleep(3)  # IopsdSharedCeiling: avg over 2 s, for 2 s
        self.windows["shared"] = (t0, time.time())
        self.fio.stop("inst")

    # faults on real devices

    def errors(self, probe, t0):
        return {lab["reason"]: pts[-1][1] - pts[0][1] for lab, pts in
                self.rec.labels_of("main", "iopsd_probe_errors_total", t0) if lab.get("probe") == probe and pts}

    @scenario("detach")
    def detach(self):
        rec = self.rec
        t0 = time.time()
        self.cli("detach", "hot")
        failing = rec.wait(lambda: first(rec.series("main", "iopsd_probe_success", t0, probe="hot"),
                                         lambda v: v == 0), 30)
        time.sleep(7)  # IopsdProbeFailing: for 5m -> 5 s
        grew = sorted(r for r, n in self.errors("hot", t0 - 2).items() if n > 0)
        check("faults", "detached: the probe fails with a reason", failing and grew, f"reasons {grew}",
              "probe_success 0, errors{reason} grow")
        up = [v for _, v in rec.series("main", "up", t0)]
        check("faults", "detached: the daemon keeps serving", up and min(up) == 1 and len(up) >= 0.8 * (time.time() - t0),
              f"{len(up)} scrapes in {time.time() - t0:.0f} s, all up" if up and min(up) == 1 else f"up {up}",
              "every second")
        t1 = time.time()
        self.cli("attach", "hot")
        ok = rec.wait(lambda: first(rec.series("main", "iopsd_probe_success", t1, probe="hot"), lambda v: v == 1), 40)
        check("faults", "reattached: the probe recovers", ok, f"after {ok[0] - t1:.1f} s" if ok else "not in 40 s",
              "success again")
        self.windows["hot"] = (t0, time.time())

    @scenario("flakey-delay")
    def flakey_delay(self):
        rec = self.rec
        t0 = time.time()
        self.cli("fault", "flt", "eio")
        got = rec.wait(lambda: self.errors("flt", t0 - 2).get("eio", 0) > 0, 30)
        time.sleep(7)  # IopsdProbeFailing: for 5m -> 5 s
        n = self.errors("flt", t0 - 2)
        check("faults", "dm-flakey: errors{reason=\"eio\"}", got, f"{n}", "eio > 0")
        self.cli("fault", "flt", "none")
        t1 = time.time()
        ok = rec.wait(lambda: first(rec.series("main", "iopsd_probe_success", t1, probe="flt"), lambda v: v == 1), 30)
        check("faults", "dm-flakey removed: the probe recovers", ok, f"after {ok[0] - t1:.1f} s" if ok else "no",
              "success again")
        before = rec.series("main", "iopsd_probe_latency_quantile_seconds", t1, probe="flt", quantile="0.5")
        self.cli("fault", "flt", "delay=50ms")
        t2 = time.time()
        # fio reads the same device the same way, at the same time as the
        # probe's runs: what the delay really is then (dm-delay's timer
        # works in jiffies, and a TCG guest's timers are late by what the
        # host leaves it, which changes from one second to the next)
        time.sleep(3)
        self.fio.start("dly", f"--name=ref --filename={self.lab.cfg.volumes['flt'].top} --direct=1 --rw=randread "
                              "--bs=4k --iodepth=1 --ioengine=libaio --time_based", runtime=9)
        t3 = time.time()
        j = self.fio.wait("dly", timeout=120)
        t4 = time.time()
        time.sleep(max(0, t2 + 14 - time.time()))  # IopsdProbeLatencyHigh: p99 over 5 s, for 10 s
        # the runs (every 2 s, 1 s long) that began once fio had: a scrape
        # shows the last run that ended
        p50 = [v for t, v in rec.series("main", "iopsd_probe_latency_quantile_seconds", t3 + 2.5, probe="flt",
                                        quantile="0.5") if t <= t4 + 0.5]
        last = statistics.median(p50) if p50 else None
        clat = j["jobs"][0]["read"]["clat_ns"]
        ref, ref_min = clat["percentile"]["50.000000"] / 1e9, clat["min"] / 1e9
        check("faults", "dm-delay 50 ms: probe p50 vs fio's p50 through the same device, at the same time",
              last is not None and abs(last - ref) <= 0.05 * ref,
              f"iopsd {fmt(last * 1000 if last else None, '.2f')} ms (median of {len(p50)} scrapes: "
              f"{', '.join(f'{1000 * v:.1f}' for v in p50)}), fio {ref * 1000:.2f} ms over {t4 - t3:.0f} s (min "
              f"{ref_min * 1000:.2f}; before the delay {before[-1][1] * 1000 if before else float('nan'):.2f} ms)",
              "within 5%")
        # The issue's figure, 50 ms +- 10%. dm-delay counts in ticks (the
        # lab sets it so that an I/O is held 48-52 ms at 250 Hz, see
        # Lab._dm_delay_ms()). When fio through the same device is outside
        # the band as well, the device's delay missed it (a TCG guest's
        # timers fire late by what the host leaves it), not iopsd's
        # measurement: the check above holds iopsd to fio's.
        ok = last is not None and 0.045 <= last <= 0.055
        lab_limit = None
        if last is not None and not (0.045 <= ref <= 0.055) and abs(last - ref) <= 0.05 * ref:
            lab_limit = (f"the device's own delay: fio's p50 through it is {ref * 1000:.2f} ms (min "
                         f"{ref_min * 1000:.2f} ms): the TCG guest's timers fired late")
        check("faults", "dm-delay 50 ms: probe p50 against the delay", ok,
              f"{fmt(last * 1000 if last else None, '.2f')} ms", "50 ms +- 10%", lab_limit=lab_limit)
        self.windows["flt"] = (t0, time.time())
        self.cli("fault", "flt", "none")

    @scenario("md-member", rerun=False)
    def md_member(self):
        """A RAID1 member starts failing its I/O (dm-flakey under it): md
        fails it at the next write, the array runs degraded."""
        rec, mir = self.rec, self.mirror
        t0 = time.time()
        self.cli("fault", "m1", "eio")
        self.lab.run("dd if=/dev/urandom of=/mnt/mirror/after-fault bs=64k count=4 oflag=direct status=none")
        r = self.lab.vm.wait_until(f"grep -A1 '^{mir} ' /proc/mdstat | grep -q '_'", timeout=30)
        mdstat = self.lab.sh(f"grep -A1 '^{mir} ' /proc/mdstat")
        check("faults", "md failed the member (the kernel's view)", r.ok, " ".join(mdstat.split()), "[U_] or [_U]")
        member = os.path.basename(self.lab.sh(f"readlink -f {self.lab.cfg.volumes['m1'].top}"))
        rec.wait(lambda: first(rec.series("main", "iopsd_device_md_degraded", t0, device=mir), lambda v: v == 1), 15)
        time.sleep(3)  # IopsdArrayMemberFailed: for 1m -> 1 s
        deg = rec.series("main", "iopsd_device_md_degraded", t0, device=mir)
        bad = rec.series("main", "iopsd_device_member_failed", t0, device=mir, member=member)
        dev = next(d for d in self.lab.get_json("/api/v1/devices")["devices"] if d["name"] == mir)
        check("faults", "iopsd shows the md member's failure", deg and deg[-1][1] == 1 and bad and bad[-1][1] == 1
              and (dev.get("md") or {}).get("failed_members") == [member],
              f"md_degraded {deg[-1][1] if deg else 'absent'}, member_failed{{member={member}}} "
              f"{bad[-1][1] if bad else 'absent'}, api md {dev.get('md')}", "1, 1, [member]")
        self.windows["mirror"] = (t0, time.time())
        self.cli("fault", "m1", "none")

    @scenario("naming")
    def naming(self):
        by = {lab["device"]: lab for lab, _ in self.rec.labels_of("main", "iopsd_device_info", time.time() - 30)}
        for vol, want in (("decl", "vol-0123456789abcdef0"), ("flat", "vol-0f1a7000000000001")):
            got = by.get(self.disk[vol], {}).get("volume_id")
            bus = self.lab.cfg.volumes[vol].bus
            check("naming", f"{bus} serial {want.replace('-', '')} -> volume_id", got == want, got, want)
        j = self.lab.run("journalctl -u iopsd --no-pager -o cat | grep -ci 'log page\\|ebs' || true").stdout.strip()
        check("naming", "no EBS log page on QEMU's NVMe: nothing logged", j == "0", f"{j} lines", "0")

    # screenshots, on the host, while a phase runs

    def shot(self, name, query, delay, height):
        """The live page `delay` s from now, the top `height` px (the
        devices chosen in `query`; the probes below are left out)."""
        def take():
            time.sleep(delay)
            try:
                from chromium import Chromium
                out = os.path.join(BUILDDIR, "lab-screenshots")
                os.makedirs(out, exist_ok=True)
                b = Chromium(width=1280, height=height)
                try:
                    s = b.open_page(self.lab.url("/" + query), width=1280, height=height)
                    b.wait_for(s, """(() => [...document.querySelectorAll('canvas')].some((x) => {
                        const ch = Chart.getChart(x);
                        return ch && ch.data.datasets.some((d) => (d.data || []).length > 20); }))()""",
                               timeout=60, what="charts drawn")
                    time.sleep(2)
                    b.screenshot(s, os.path.join(out, f"{name}.png"), full_page=False)
                    log(f"screenshot {out}/{name}.png")
                finally:
                    b.close()
            except Exception as e:  # noqa: BLE001
                check("screenshots", name, False, f"{type(e).__name__}: {e}", "a screenshot")
        t = threading.Thread(target=take, daemon=True)
        t.start()
        self.shots.append(t)


# --- alerts ---------------------------------------------------------------------------------

def compress_rules(src_dir, dst_dir):
    """The shipped rules with every minute read as a second (for: 5m ->
    5s, keep_firing_for: 6m -> 6s, [5m] -> [5s]) and seconds of for: and
    keep_firing_for: as a sixtieth, at least 1 s (15s -> 1s): the same
    expressions, in a test's time. A window is at least 5 s ([1m] -> [5s]):
    rate() needs two of the 1-s scrapes in it."""
    out = []
    for n in sorted(os.listdir(src_dir)):
        if n.endswith(".yml"):
            with open(os.path.join(src_dir, n)) as f:
                text = f.read()
            text = re.sub(r"(for:\s*)(\d+)s\b", lambda m: f"{m.group(1)}{max(1, round(int(m.group(2)) / 60))}s", text)
            text = re.sub(r"(for:\s*)(\d+)m\b", r"\1\2s", text)
            text = re.sub(r"\[(\d+)m\]", lambda m: f"[{max(5, int(m.group(1)))}s]", text)
            with open(os.path.join(dst_dir, n), "w") as f:
                f.write(text)
            out.append(os.path.join(dst_dir, n))
    return out


def rule_for(paths):
    rules = {}
    for p in paths:
        for m in re.finditer(r"- alert: (\w+)\n(?:.*\n)*?\s+for: (\d+)s", open(p).read()):
            rules[m.group(1)] = int(m.group(2))
    return rules


def ctl_latency(lab, clock_offset):
    """fio's completion latencies on the control volume, second by second
    (host clock): {second: (I/Os, the slowest in s)}."""
    out = lab.run("cat /root/fio-ctl_clat.*.log 2>/dev/null | awk -F, '{ s = int($1 / 1000); n[s]++; "
                  "if ($2 > m[s]) m[s] = $2 } END { for (s in n) print s, n[s], m[s] }'", check=False).stdout
    per = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[0].isdigit():
            per[int(f[0]) - clock_offset] = (int(f[1]), float(f[2]) / 1e9)
    return per


def slow_on_ctl(sc, times, slo=0.05, span=5):
    """Of the evaluations `times` at which the probe's p99 over `span` s was
    above slo on the control volume: how many of their windows fio also saw
    an I/O slower than slo in, and fio's slowest there. (The guest stalls
    every I/O in flight when the host starves it: fio's QD1 reads at 50/s
    then see it too.)"""
    per = getattr(sc, "ctl_latency", {})
    if not per:
        return 0, len(times), None
    hits, worst = 0, 0.0
    for t in times:
        lat = [m for s, (_, m) in per.items() if t - span - 1 <= s <= t + 1]
        worst = max([worst] + lat)
        hits += any(m > slo for m in lat)
    return hits, len(times), worst


# alerts whose scenario can record that the lab did not present it
# (Scenarios.lab_limits)
ALERT_SCENARIO = {"IopsdSharedCeiling": "shared", "IopsdDeviceThrottled": "flat"}


def check_alerts(lab, sc, rules, t_begin):
    rec = sc.rec
    alerts = {}   # (name, frozenset labels) -> {"pending": [t], "firing": [t]}
    for r in rec._raw("ALERTS", t_begin):
        m = r["metric"]
        key = (m["alertname"], frozenset((k, v) for k, v in m.items() if k not in ("__name__", "alertstate")))
        alerts.setdefault(key, {"pending": [], "firing": []})[m["alertstate"]] += [float(t) for t, _ in r["values"]]
    expected = [
        ("IopsdDeviceThrottled", {"device": sc.disk["flat"]}),
        ("IopsdDeviceAtLimit", {"device": sc.disk["decl"]}),
        ("IopsdDeviceLimitNotDelivered", {"device": sc.disk["short"]}),
        ("IopsdBurstExhausted", {"device": sc.disk["burst"], "instance": rec.inst["declared"]}),
        ("IopsdBurstExhausted", {"device": sc.disk["burst"], "instance": rec.inst["main"]}),
        ("IopsdBurstBalanceLow", {"device": sc.disk["burst"], "instance": rec.inst["declared"]}),
        ("IopsdArrayHeldByMember", {"device": sc.md}),
        ("IopsdSharedCeiling", {}),
        ("IopsdProbeFailing", {"probe": "hot"}),
        ("IopsdProbeFailing", {"probe": "flt"}),
        ("IopsdProbeLatencyHigh", {"probe": "flt"}),
        ("IopsdArrayMemberFailed", {"device": sc.mirror}),
    ]
    for name, match in expected:
        hits = [st for (n, labels), st in alerts.items() if n == name and all((k, v) in labels for k, v in match.items())]
        pend = sorted(t for st in hits for t in st["pending"])
        what = f"{name}{{{','.join(f'{k}={v}' for k, v in match.items() if k != 'instance')}}}"
        if name not in rules or not any(st["firing"] for st in hits):
            # a scenario the lab did not present (its check says why) has
            # nothing for the alert to fire on
            why = sc.lab_limits.get(ALERT_SCENARIO.get(name)) if name in rules else None
            check("alerts", f"{what} fires", False, "never fired" if name in rules else "no such rule",
                  f"fires (pending seen: {len(pend)} evaluations)", lab_limit=why)
            continue
        # the instance that fired first (an array held by two members has
        # one per member, each pending on its own), and the pending run
        # that led to it: its consecutive evaluations before it
        first_hit = min((st for st in hits if st["firing"]), key=lambda st: min(st["firing"]))
        t_fire = min(first_hit["firing"])
        run = sorted(t for t in first_hit["pending"] if t < t_fire)
        t_pend = t_fire
        for t in reversed(run):
            if t_pend - t > 1.5 * EVAL:
                break
            t_pend = t
        lag = t_fire - t_pend
        check("alerts", f"{what} fires within for ({rules[name]} s) + one evaluation ({EVAL:g} s)",
              lag <= rules[name] + EVAL + 0.05, f"{lag:.1f} s after it turned pending", f"<= {rules[name] + EVAL:g} s")
    ctl = sc.disk["ctl"]
    on_ctl = sorted({n for (n, labels), st in alerts.items() if st["firing"] and
                     (("device", ctl) in labels or ("probe", "ctl") in labels)})
    pend_ctl = {}
    for (n, labels), st in alerts.items():
        if st["pending"] and (("device", ctl) in labels or ("probe", "ctl") in labels):
            runs, t_prev, start = [], None, None
            for t in sorted(st["pending"]):
                if t_prev is None or t - t_prev > 1.5 * EVAL:
                    start = t
                runs.append(t - start + EVAL)
                t_prev = t
            pend_ctl[n] = max(pend_ctl.get(n, 0), max(runs))
    # a latency alert on the control volume is right when the volume was
    # slow as the guest saw it: fio's reads on it the reference
    slow_why = None
    if on_ctl == ["IopsdProbeLatencyHigh"]:
        times = sorted(t for (n, labels), st in alerts.items() if n == "IopsdProbeLatencyHigh" and
                       ("probe", "ctl") in labels for t in st["pending"] + st["firing"])
        hits, n, worst = slow_on_ctl(sc, times)
        log(f"fio on the control volume: an I/O over 50 ms in {hits} of the {n} windows of the alert's "
            f"evaluations (slowest {fmt(worst and 1000 * worst, '.0f')} ms)")
        if n and hits >= 0.8 * n:
            slow_why = (f"the volume was slow as the guest saw it: fio's QD1 reads on it had an I/O over 50 ms in "
                        f"{hits} of the {n} 5-s windows the alert evaluated (slowest {1000 * worst:.0f} ms); the "
                        f"TCG guest, short of CPU, stalled")
    check("alerts", "nothing fires on the unthrottled control volume", not on_ctl,
          f"firing {on_ctl} (pending at times, longest run: "
          f"{', '.join(f'{n} {v:.0f} s of its {rules.get(n, 0)} s' for n, v in sorted(pend_ctl.items())) or 'none'})",
          "none", lab_limit=slow_why)
    w = sc.windows.get("burst")
    if w:
        thr = [t for (n, labels), st in alerts.items() if n == "IopsdDeviceThrottled" and
               ("device", sc.disk["burst"]) in labels and ("instance", rec.inst["declared"]) in labels
               for t in st["firing"]]
        check("alerts", "IopsdDeviceThrottled does not fire on the declared burst while it bursts",
              not [t for t in thr if t < w[0] + 28], f"first firing {min(thr) - w[0]:+.0f} s" if thr else "never",
              "not within the burst's 30 s")
    log("alerts that fired: " + ", ".join(sorted(
        f"{n}{{{dict(labels).get('device') or dict(labels).get('probe') or dict(labels).get('devices', '')}}}"
        for (n, labels), st in alerts.items() if st["firing"])))


# --- the cgroup lab's io.max path, in the guest's cgroup v2 ---------------------------------

@scenario("cgroup-v2")
def cgroup_v2(lab):
    lab.vm.copy_in(os.path.join(SRCDIR, "contrib", "lab", "iopsd-lab"), "/usr/local/sbin/iopsd-lab", 0o755)
    cap = 300
    r = lab.run(f"iopsd-lab up --name v2 --iops {cap} --size 64M >/dev/null && iopsd-lab env --name v2 && "
                "iopsd-lab check --name v2 && eval \"$(iopsd-lab env --name v2)\" && cat $IOPSD_LAB_CGROUP/io.max && "
                "iopsd-lab run --name v2 -- fio --name=t --directory=$IOPSD_LAB_MOUNT --rw=randread --bs=4k "
                "--size=16m --iodepth=16 --ioengine=libaio --direct=1 --time_based --runtime=5 --output-format=json",
                timeout=300, check=False)
    out = r.stdout + r.stderr
    kind = re.search(r"IOPSD_LAB_CGROUP_KIND=(\S+)", out)
    iomax = re.search(r"^\d+:\d+ .*riops=(\d+) wiops=(\d+)", out, re.M)
    holds = "throttle holds" in out
    iops = json.loads(r.stdout[r.stdout.index("{\n"):])["jobs"][0]["read"]["iops"] if r.ok else None
    check("cgroup-v2", "iopsd-lab on the guest's cgroup v2: io.max written, the check passes",
          r.ok and kind and kind.group(1) == "v2" and iomax and iomax.groups() == (str(cap), str(cap)) and holds,
          f"{kind.group(1) if kind else '?'}; io.max {iomax.group(0) if iomax else '?'}; "
          f"{'check: throttle holds' if holds else out.strip()[-300:]}", f"v2, riops={cap} wiops={cap}")
    check("cgroup-v2", "fio QD16 inside the io.max cgroup", iops is not None and abs(iops - cap) <= 0.05 * cap,
          fmt(iops), f"{cap} +- 5%")
    cg = re.search(r"IOPSD_LAB_CGROUP=(\S+)", out)
    d = lab.run("iopsd-lab down --name v2" + (f"; test -e {cg.group(1)} && echo left || echo gone" if cg else ""),
                check=False)
    check("cgroup-v2", "iopsd-lab down removes its cgroup, loops and mounts", d.ok and "gone" in d.stdout,
          d.stdout.strip()[-200:], "gone")


# --- the run ----------------------------------------------------------------------------------

def uncapped(lab, names, cmd, timeout=900):
    """Run cmd in the guest with the QEMU caps of the volumes `names`
    lifted meanwhile: setup, not a scenario."""
    for m in names:
        lab.vm.qmp.execute("block_set_io_throttle", dict(iopsdlab.Caps().qmp(), device=f"d-{m}"))
    try:
        lab.run(cmd, timeout=timeout)
    finally:
        for m in names:
            lab.vm.qmp.execute("block_set_io_throttle", dict(lab.cfg.volumes[m].caps.qmp(), device=f"d-{m}"))


def lab_main(prefix, run):
    """run(tmp) in a temporary directory; the guest's console log kept as
    BUILDDIR/PREFIX-console.log."""
    tmp = tempfile.mkdtemp(prefix=prefix + "-")
    try:
        return run(tmp)
    finally:
        console = os.path.join(tmp, "console.log")
        if os.path.exists(console):
            shutil.copy(console, os.path.join(BUILDDIR, prefix + "-console.log"))
        shutil.rmtree(tmp, ignore_errors=True)


def package():
    """IOPSD_DEB, or the package built from this tree (as the other VM
    tests do): the scenarios run iopsd as it ships."""
    deb = os.environ.get("IOPSD_DEB")
    if deb:
        return deb
    out = os.path.join(BUILDDIR, "deb")
    log(f"IOPSD_DEB not set: building the package into {out}")
    return subprocess.run([os.path.join(HERE, "build-deb"), out], check=True, stdout=subprocess.PIPE,
                          text=True).stdout.split()[-1]


def main():
    return lab_main("lab-scenarios", run)


def run(tmp):
    cfg = LabConfig.parse(LAB)
    deb = package()
    rules = compress_rules(os.path.join(SRCDIR, "contrib", "prometheus", "rules"), tmp)
    name = f"scen{os.getpid()}"
    lab = Lab(cfg, name=name, state_dir=os.path.join(tmp, name), deb=deb,
              extra_ports=[DECLARED_PORT], prometheus_rules=rules, prometheus_interval=f"{EVAL:g}s",
              console_copy=os.path.join(tmp, "console.log"), log=log)
    log(f"scale {SCALE}: C = {C} IOPS")
    sc = None
    with lab:
        lab.serve()
        v = cfg.volumes
        # does this iopsd take [instance]? (iopsd.conf(5), INSTANCE KEYS)
        inst = INSTANCE_SECTION.format(limit=3 * C // 2, devices="|".join(v[n].disk for n in ("g1", "g2", "g3")))
        lab.vm.write_file("/root/instance-check.conf", inst)
        instance_ok = lab.run("iopsd --check-config --config /root/instance-check.conf", check=False).ok
        lab.configure_iopsd(IOPSD_CONF.format(instance=inst if instance_ok else ""))
        b = v["burst"]
        lab.vm.write_file("/etc/iopsd/declared.conf", DECLARED_CONF.format(
            burst=b.disk, burst_iops=b.caps.burst, base=C, credits=b.caps.burst * b.caps.max_length(C)))
        lab.run(f"systemd-run --quiet --unit=iopsd-declared --property=Type=notify /usr/sbin/iopsd "
                f"--config /etc/iopsd/declared.conf --web.listen-address={iopsdlab.iopsdvm.GUEST_ADDR}:{DECLARED_PORT}")
        lab.start_prometheus()
        t_begin = time.time()
        t = time.time()
        guest = float(lab.sh("date +%s.%N"))
        rec = Recorder(lab)
        rec.start()
        sc = Scenarios(lab, rec)
        sc.clock_offset = guest - (t + time.time()) / 2
        sc.instance_supported = instance_ok
        log(f"lab up in {lab.t_up:.0f} s (guest boot {lab.vm.boot_seconds:.0f} s); guest clock "
            f"{sc.clock_offset:+.2f} s; writing the users' files")
        # the job file's 16 files, written once at full size (fio would lay
        # them out 4k at a time)
        uncapped(lab, ("r1", "r2"), "for i in $(seq 0 15); do dd if=/dev/zero of=/data/randread4k.$i.0 bs=1M "
                 "count=100 oflag=direct status=none; done")
        sums = write_user_data(lab)
        # its latency log, I/O by I/O (wall-clock ms): the reference for
        # any latency alert on the control volume
        sc.fio.randread("ctl", [f"/dev/{v['ctl'].disk}"], qd=1, runtime=3600,
                        extra="--rate_iops=50 --write_lat_log=/root/fio-ctl --log_unix_epoch=1")
        stat0 = (time.time(), lab.sh("head -1 /proc/stat").split()[1:])
        log("users' files written")

        sc.flat()
        sc.declared()
        sc.burst()
        sc.short()
        sc.raid0()
        sc.shared()
        # light phases side by side: the cgroup lab on a loop device, and
        # the faults one after the other on their own volumes
        side = threading.Thread(target=cgroup_v2, args=(lab,))
        side.start()
        sc.detach()
        sc.naming()
        sc.flakey_delay()
        sc.md_member()
        side.join()
        # QEMU's bucket and the learned one refill at the base rate: 60 s
        # idle before the next burst
        wait = 62 - (time.time() - sc.__dict__.get("burst_ended", 0))
        if wait > 0:
            log(f"waiting {wait:.0f} s for the burst bucket to refill")
            time.sleep(wait)
        sc.burst(second=True)
        sc.fio.stop("ctl")
        sc.ctl_latency = ctl_latency(lab, sc.clock_offset)
        stat1 = (time.time(), lab.sh("head -1 /proc/stat").split()[1:])
        ticks = [int(b) - int(a) for a, b in zip(stat0[1], stat1[1])]
        cpu = rec.series("main", "process_cpu_seconds_total", stat0[0])
        check("suite", "the guest's CPU over the scenarios (2 vCPUs under TCG)", True,
              f"busy {100 * (1 - (ticks[3] + ticks[4]) / max(1, sum(ticks))):.0f}%, iopsd "
              f"{(cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0]):.2f} CPU" if len(cpu) > 1 else "?",
              "(reported)")
        after = checksums(lab)
        for k in sums:
            check("data", f"user files on {k} byte-identical", sums[k] == after.get(k),
                  "identical" if sums[k] == after.get(k) else f"differ: {str(after.get(k))[:200]}", "identical")
        time.sleep(2)
        try:
            check_alerts(lab, sc, rule_for(rules), t_begin)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            check("alerts", "evaluated", False, str(e)[:300], "no error")
        for th in sc.shots:
            th.join(120)
        rec.stop_ev.set()
        rec.join(10)
        log(f"recorder: {len(rec.samples)} QMP samples, {rec.errors} errors")
    wall = time.monotonic() - T_START
    rerun = sc.rerun_seconds if sc else 0.0
    check("suite", "wall time of the whole scenario run", wall <= 720,
          f"{wall:.0f} s" + (f", {rerun:.0f} s of it a burst the guest did not deliver, and the wait to run it again"
                             if rerun else ""), "<= 12 min",
          lab_limit="the rerun of a burst the TCG guest did not deliver" if wall - rerun <= 720 else None)
    with open(os.path.join(BUILDDIR, "lab-scenarios.json"), "w") as f:
        json.dump({"wall_seconds": wall, "scale": SCALE, "results": RESULTS, "superseded": SUPERSEDED}, f, indent=1)
    return verdict(wall, SCALE)


if __name__ == "__main__":
    sys.exit(main())
