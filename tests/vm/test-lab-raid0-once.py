#!/usr/bin/env python3
"""The field notes' four job files (4k random and sequential reads and
writes, numjobs=16, group_reporting, direct=1) through fio and through
`iopsd --once` on an md RAID0 in a VM lab guest (contrib/lab/iopsdlab.py,
iopsd installed from its package), the way the field notes found their
bottleneck: fio's "Disk stats" line ended with `md0: … aggrutil=99.58%
xvdf: … util=97.23% xvdg: … util=99.58%`, one member holding the array.

The array is two volumes, r1 capped by QEMU at C/2 and r2 at C, with a
256 KiB chunk: r1 holds it (the 16 jobs wait on r1 most of the time), as
one slower volume held the field notes' array. For each job file, from
the normal (human-readable) output of both:

  - iopsd's md line has an aggrutil within 1 point of fio's;
  - iopsd's aggrutil is its busiest member's util (fio's definition);
  - the busier member iopsd names is fio's, and it is r1.

Each run is 30 s, time_based, on both sides (the field notes' jobs run
an hour). The files are 32 MiB: fio's written once at full size by dd
with the caps lifted (fio would lay them out 4k at a time), iopsd's by a
1-s run of the same job before the one compared, so that neither run
compared lays out a file. The job files add `thread`: iopsd's jobs are
always threads, and fio's 16 processes took 2 s to start in the TCG
guest, idle seconds in fio's disk-stats window that read 1-2 points below
iopsd's (a run: randread 98.12% vs 99.21%, read 94.99% vs 97.24%); with
`thread`, at 20 s, iopsd read 0.16-0.80 points above fio, the start and
end of each tool's window (30 s leaves a third less of that).

QEMU's own count (QMP query-blockstats) says whether the lab
delivered r1's cap during a run: when it did not, the check judged
nothing about iopsd and is inconclusive; the job file runs once more,
and the verdict is tests/vm/test-lab-scenarios.py's. Figures go to
BUILDDIR/lab-raid0-once.json.

While the four job files load the array, the shipped alerting chain runs
on the host against the guest's iopsd (the package's daemon, under
systemd, its port forwarded to the host's loopback), as in
tests/integration/test-alerting-e2e.py part B but with the real throttle:
a real Prometheus with the shipped rules (every minute of for: and of a
window read as 6 s, tests/integration/alertstack.py) scraping it every
2 s, a real Alertmanager with the shipped alertmanager.yml (group_wait
5 s, group_interval 10 s) and a webhook receiver on 127.0.0.1:

  - the RAID0 pages once: one firing notification for the array's volume,
    the member r1's IopsdDeviceThrottled (array, volume and mount point
    the array's), within for: + group_wait + one evaluation of its going
    pending; the array's IopsdArrayHeldByMember fires and is inhibited;
  - nothing for the guest's other volumes (the lab has no control volume
    of its own: the guest's system disk is the unloaded one);
  - "resolved" after the load stops, within keep_firing_for + iopsd's
    20 s + the window + group_interval.

When QEMU did not hold r1 at its cap long enough for the alert to fire
(its longest stretch at 90% of the cap, against iopsd's 20 s + half the
window + for:), those checks are inconclusive."""
import importlib.util
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import alertstack  # noqa: E402
_spec = importlib.util.spec_from_file_location("lab_scenarios", os.path.join(HERE, "test-lab-scenarios.py"))
ls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ls)
check, log, scenario = ls.check, ls.log, ls.scenario
iopsdlab = ls.iopsdlab
C = ls.C
RUNTIME = 30

LAB = f"""
volume r1 size=1280M bus=virtio iops={C // 2} array=data
volume r2 size=1280M bus=nvme   iops={C} array=data
array  data level=0 chunk=256k mount=/data
"""

JOB = """\
[global]
directory=/data
filename_format=fieldnotes.$jobnum.0
direct=1
blocksize=4k
size=32m
numjobs=16
group_reporting
thread
runtime={runtime}s
time_based

[{name}]
readwrite={rw}
"""

JOBS = (("randread4k", "randread"), ("read4k", "read"), ("randwrite4k", "randwrite"), ("write4k", "write"))

MD_LINE = re.compile(r"^\s*(md\d+): ios=.*?, util=([\d.]+)%, aggrios=.*aggrutil=([\d.]+)%", re.M)
MEMBER_LINE = re.compile(r"^\s+(\S+): ios=[\d/]+, merge=.*, util=([\d.]+)%$", re.M)


def disk_stats(text):
    """(array, aggrutil, {member: util}) from a normal report's "Disk
    stats" section, or None."""
    at = text.find("Disk stats (read/write):")
    if at < 0:
        return None
    section = text[at:]
    m = MD_LINE.search(section)
    if not m:
        return None
    members = {d: float(u) for d, u in MEMBER_LINE.findall(section) if d != m.group(1)}
    return m.group(1), float(m.group(3)), members


class Raid0Once:
    def __init__(self, lab, rec):
        self.lab, self.rec = lab, rec
        arr = lab.cfg.arrays["data"]
        self.md = arr.disk
        self.members = {m.name: m.disk for m in arr.members}
        self.cap = {"r1": C // 2, "r2": C}

    def delivered(self, t0, t1):
        """None when QEMU let r1's cap through over [t0, t1] (95% of it,
        over the run's seconds), else why not."""
        got = self.rec.ops("d-r1", t0, t1) / RUNTIME
        if got >= 0.95 * self.cap["r1"]:
            return None
        return f"QEMU let {got:.0f} IOPS through to r1 over the run's {RUNTIME} s, short of its cap {self.cap['r1']}"

    def timed(self, cmd):
        t0 = time.time()
        r = self.lab.run(cmd, timeout=RUNTIME + 240, check=False)
        return r, t0, time.time()

    def job(self, name, rw):
        path = f"/var/tmp/{name}.fio"
        self.lab.vm.write_file(path, JOB.format(runtime=RUNTIME, name=name, rw=rw))
        f, f0, f1 = self.timed(f"fio --output-format=normal {path}")
        # as the service's user: iopsd uses only a probe directory of its
        # own. Its files laid out first by a 1-s run of the same job, as
        # fio's were by dd: the runs compared do I/O, not layouts
        warm = path.replace(".fio", "-layout.fio")
        self.lab.vm.write_file(warm, JOB.format(runtime=1, name=name, rw=rw))
        w = self.lab.run(f"runuser -u iopsd -- iopsd --once --config {warm}", timeout=300, check=False)
        if w.returncode != 0:
            log(f"{name}: the layout run exited {w.returncode}: {(w.stderr or w.stdout).strip()[-300:]}")
        i, i0, i1 = self.timed(f"runuser -u iopsd -- iopsd --once --config {path}")
        runs = [re.findall(r"run=(\d+-\d+msec)", x.stdout) for x in (f, i)]
        log(f"{name}: fio ran {f1 - f0:.1f} s ({runs[0]}), iopsd {i1 - i0:.1f} s ({runs[1]}); iopsd's "
            f"layout lines {len(re.findall('Laying out', i.stdout))}")
        fd, idd = disk_stats(f.stdout), disk_stats(i.stdout)
        log(f"{name}: fio exit {f.returncode}, disk stats {fd}; iopsd exit {i.returncode}, disk stats {idd}")
        short = self.delivered(f0, f1) or self.delivered(i0, i1)
        r1 = self.members["r1"]
        check(name, "iopsd --once and fio exit 0, each with a Disk stats line for the array",
              f.returncode == 0 and i.returncode == 0 and fd is not None and idd is not None
              and fd[0] == idd[0] == self.md,
              f"fio exit {f.returncode} {fd and fd[0]}, iopsd exit {i.returncode} {idd and idd[0]}"
              + ("" if i.returncode == 0 else f": {(i.stderr or i.stdout).strip()[-300:]}"),
              f"both 0, {self.md}")
        if fd is None or idd is None:
            return
        check(name, "iopsd's aggrutil = fio's", abs(idd[1] - fd[1]) <= 1.0,
              f"iopsd {idd[1]:.2f}% {idd[2]} vs fio {fd[1]:.2f}% {fd[2]}", "within 1 point", lab_limit=short)
        check(name, "iopsd's aggrutil is its busiest member's util", bool(idd[2]) and
              abs(idd[1] - max(idd[2].values())) < 0.01, f"aggrutil {idd[1]:.2f}%, members {idd[2]}",
              "fio's definition")
        busy_i = max(idd[2], key=idd[2].get) if idd[2] else None
        busy_f = max(fd[2], key=fd[2].get) if fd[2] else None
        check(name, "the busier member iopsd names is fio's, the one capped lower", busy_i == busy_f == r1,
              f"iopsd {busy_i}, fio {busy_f}", f"{r1} (r1, capped at {self.cap['r1']})", lab_limit=short)


# the alerting chain on the host: times in seconds
MINUTE = 6          # a minute of the shipped rules' for: and windows
SCRAPE = 2          # Prometheus's scrape interval (one scrape of the guest's iopsd costs its CPU)
EVAL = 1            # Prometheus's evaluation interval
GROUP_WAIT, GROUP_INTERVAL = 5, 10
HOPS = 1.0          # Prometheus -> Alertmanager -> webhook, and the poll that sees activeAt
FLAG_LAG = 20       # iopsd's throttled flag: set after 20 s at a ceiling, dropped up to 20 s after it
PROM_CONFIG = """\
global:
  scrape_interval: {scrape}s
  scrape_timeout: {scrape}s
  evaluation_interval: {eval}s
rule_files: @RULES@
scrape_configs:
  - job_name: iopsd
    static_configs:
      - targets: ['{target}']
"""


def held_stretch(series, level, bridge=10.0):
    """The longest stretch (s) of [(t, v)] at or above level, dips of less
    than `bridge` s (from one job's run to the next) bridged."""
    best, start, last = 0.0, None, None
    for t, v in series:
        if v < level:
            continue
        if start is None or t - last > bridge:
            start = t
        last = t
        best = max(best, last - start)
    return best


class Paging:
    """The shipped alerting chain (alertstack) against the guest's iopsd,
    polling what Prometheus has pending and what Alertmanager holds back
    while the jobs run."""

    def __init__(self, tmp, lab, rec, sc):
        self.lab, self.rec, self.sc = lab, rec, sc
        self.inst = f"127.0.0.1:{lab.vm.host_port(iopsdlab.GUEST_PORT)}"
        self.hook = self.am = self.prom = None
        self.seen_inhibited = {}
        self.stop_ev = threading.Event()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.t_load = self.t_stop = None
        self.tmp = tmp

    def __enter__(self):
        try:
            self.hook = alertstack.Webhook()
            self.am = alertstack.Alertmanager(self.tmp, self.hook, group_wait=f"{GROUP_WAIT}s",
                                              group_interval=f"{GROUP_INTERVAL}s")
            self.prom = alertstack.Prometheus(self.tmp, PROM_CONFIG.format(scrape=SCRAPE, eval=EVAL, target=self.inst),
                                              am=self.am, minute=MINUTE)
            self.prom.wait_up(1)
        except BaseException:
            self.__exit__()
            raise
        self.active = alertstack.ActiveAt(self.prom)
        self.poller.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        if self.poller.is_alive():
            self.poller.join(10)
        for p in (self.prom, self.am):
            if p:
                p.stop()
        if self.hook:
            self.hook.stop()
        return False

    def _poll(self):
        while not self.stop_ev.wait(1.0):
            try:
                self.active.poll()
                for k, v in alertstack.inhibited(self.am, self.inst).items():
                    self.seen_inhibited.setdefault(k, v)
            except (OSError, ValueError, KeyError) as e:
                log(f"alerting: a poll failed: {type(e).__name__}: {e}")

    def load_started(self):
        self.t_load = time.time()

    def _for_md(self, status=None):
        return [n for n in self.hook.notifications if n[2]["groupLabels"].get("instance") == self.inst
                and n[2]["groupLabels"].get("volume") == self.sc.md and (status is None or n[2]["status"] == status)]

    def load_stopped(self):
        """Wait for the array's page to resolve; returns the bound it is held to."""
        self.t_stop = time.time()
        keep = self.rule_seconds("keep_firing_for", "IopsdDeviceThrottled")
        bound = keep + FLAG_LAG + 5 * MINUTE + GROUP_INTERVAL + EVAL + HOPS
        if self._for_md("firing"):
            self.hook.wait(lambda ns: self._for_md("resolved"), bound + 30)
        log(f"alerting: load stopped after {self.t_stop - self.t_load:.0f} s; {len(self.hook.notifications)} "
            f"notification(s) in {time.time() - self.t_stop:.0f} s more")
        for n in self.hook.notifications:
            log(f"  notification {n[1]} {n[2]['status']}: " + ", ".join(
                f"{x['labels']['alertname']}{{{x['labels'].get('device', '')}}}={x['status']}"
                for x in n[2]["alerts"]))
        log(f"  inhibited: {self.seen_inhibited}")
        return bound

    def rule_seconds(self, key, alert):
        """keep_firing_for (or for) of an alert in the compressed rule files."""
        if key == "for":
            return self.prom.for_s[alert]
        for path in self.prom.rule_files:
            with open(path) as f:
                m = re.search(rf"- alert: {alert}\n(?:(?!- alert:).*\n)*?\s+{key}: (\d+)s", f.read())
            if m:
                return int(m.group(1))
        raise KeyError(f"{alert}: no {key}")

    def lab_limit(self):
        """Why the lab could not make the member's alert fire, or None."""
        cap = self.sc.cap["r1"]
        stretch = held_stretch(self.rec.rate("d-r1", self.t_load), 0.9 * cap)
        need = FLAG_LAG + 5 * MINUTE / 2 + self.prom.for_s["IopsdDeviceThrottled"]
        log(f"alerting: QEMU held r1 at 90% of its cap {cap} for {stretch:.0f} s at a stretch "
            f"(the alert needs {need:g})")
        if stretch >= need:
            return None
        return (f"QEMU held r1 at its cap ({cap} IOPS, 90% of it) {stretch:.0f} s at a stretch, short of the "
                f"{need:g} s the alert needs (iopsd's {FLAG_LAG} s + half the {5 * MINUTE} s window + for:)")


def check_paging(pg, bound):
    """The RAID0 pages once, names the array, holds its echoes back and
    resolves; nothing pages for the guest's other volumes."""
    md, r1, inst = pg.sc.md, pg.sc.members["r1"], pg.inst
    short = pg.lab_limit()

    def wall(n):  # when a notification arrived, on the wall clock
        return time.time() - (time.monotonic() - n[0])
    firing = pg._for_md("firing")
    got = sorted({(x["labels"]["alertname"], x["labels"].get("device")) for n in firing for x in n[2]["alerts"]})
    check("alerting", "the RAID0 pages once: one firing notification, its member's alert",
          len(firing) == 1 and got == [("IopsdDeviceThrottled", r1)], f"{len(firing)} notification(s) with {got}",
          f"1, IopsdDeviceThrottled on r1 ({r1})", lab_limit=short)
    if firing:
        a = firing[0][2]["alerts"][0]
        lbl, desc = a["labels"], a["annotations"].get("description", "")
        info = pg.prom.query(f'iopsd_device_info{{instance="{inst}",device="{r1}"}}')
        vol_id = info[0]["metric"].get("volume_id") if info else None
        check("alerting", "the page names the array: its labels and text",
              lbl.get("array") == md and lbl.get("volume") == md and "/data" in lbl.get("mountpoint", "").split(",")
              and lbl.get("kind") not in ("md", "dm") and lbl.get("severity") == "warning"
              and lbl.get("volume_id") == vol_id and firing[0][1] == "/page"
              and f"member of {md}" in desc and "mounted on /data" in desc,
              f"{lbl} to {firing[0][1]}; {desc[:160]!r}",
              f"array={md}, volume={md}, /data among the mount points, volume_id={vol_id} (iopsd_device_info's), "
              f"'member of {md}' in the text, to /page")
        t_act = pg.active.seen.get(("IopsdDeviceThrottled", inst, r1))
        lim = pg.prom.for_s["IopsdDeviceThrottled"] + GROUP_WAIT + EVAL + HOPS
        lag = wall(firing[0]) - t_act if t_act else None
        check("alerting", "notified within for: + group_wait + one evaluation of going pending",
              lag is not None and lag <= lim, f"{lag and round(lag, 1)} s; "
              f"{round(wall(firing[0]) - pg.t_load, 1)} s after the load started", f"<= {lim:g} s")
    by = pg.seen_inhibited.get(("IopsdArrayHeldByMember", md))
    check("alerting", "the array's IopsdArrayHeldByMember fired and was inhibited", by is not None,
          f"inhibited by {by}; all inhibited: {sorted(pg.seen_inhibited)}", "inhibited", lab_limit=short)
    others = [(x[2], x[3].get("device")) for x in alertstack.alerts_of(pg.hook.notifications)
              if x[3].get("instance") != inst or x[3].get("volume") != md]
    check("alerting", "nothing for the guest's other volumes", not others, f"{others}", "none")
    res = [wall(n) - pg.t_stop for n in pg._for_md("resolved")]
    check("alerting", "the page resolved after the load stopped", bool(res) and min(res) <= bound,
          f"{min(res):.1f} s after" if res else "never", f"<= {bound:g} s (keep_firing_for + iopsd's {FLAG_LAG} s "
          f"+ the window + group_interval)", lab_limit=short if not firing else None)
    errs = pg.prom.rule_errors()
    check("alerting", "every rule evaluated without error", not errs, f"{errs}", "none")


def run(tmp):
    cfg = iopsdlab.LabConfig.parse(LAB)
    deb = ls.package()
    name = f"r0once{os.getpid()}"
    lab = iopsdlab.Lab(cfg, name=name, state_dir=os.path.join(tmp, name), deb=deb, extra_ports=[ls.DECLARED_PORT],
                       console_copy=os.path.join(tmp, "console.log"), log=log)
    with lab:
        rec = ls.Recorder(lab)
        rec.start()
        sc = Raid0Once(lab, rec)
        log(f"lab up in {lab.t_up:.0f} s; {sc.md} over {sc.members}; the host's load "
            f"{open('/proc/loadavg').read().split()[:3]}")
        # fio's 16 files at full size, once
        ls.uncapped(lab, ("r1", "r2"), "for i in $(seq 0 15); do dd if=/dev/zero of=/data/fieldnotes.$i.0 "
                    "bs=1M count=32 oflag=direct status=none; done; chmod 755 /data", timeout=600)
        with Paging(tmp, lab, rec, sc) as pg:
            log(f"alerting: Prometheus scrapes the guest's iopsd at {pg.inst}; Alertmanager {pg.am.url}, "
                f"webhook {pg.hook.url}")
            pg.load_started()
            for job_name, rw in JOBS:
                scenario(job_name)(Raid0Once.job)(sc, job_name, rw)
            bound = pg.load_stopped()
            scenario("alerting", rerun=False)(check_paging)(pg, bound)
        rec.stop_ev.set()
        rec.join(10)
    wall = time.monotonic() - ls.T_START
    with open(os.path.join(ls.BUILDDIR, "lab-raid0-once.json"), "w") as f:
        json.dump({"wall_seconds": wall, "scale": ls.SCALE, "results": ls.RESULTS, "superseded": ls.SUPERSEDED}, f,
                  indent=1)
    return ls.verdict(wall, ls.SCALE)


def main():
    return ls.lab_main("lab-raid0-once", run)


if __name__ == "__main__":
    sys.exit(main())
