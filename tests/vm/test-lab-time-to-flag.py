#!/usr/bin/env python3
"""How long iopsd takes to flag a hypervisor's cap after it binds, in the
VM lab (contrib/lab/iopsdlab.py): one guest, a volume (or an array, or a
group) per scenario that QEMU caps (no burst), iopsd installed from its
package and started by systemd with no declared limit, as the flat
scenario of test-lab-scenarios.py has it. The scenarios
(IOPSD_TTF_SCENARIOS, comma-separated; default iops):

  iops    a volume capped at 1000 IOPS; fio QD16 4k random reads on it;
          flagged: iopsd_device_throttled 1 with
          iopsd_device_iops_ceiling_estimate within 1% of 1000
  bps     a volume capped at 16 MiB/s, no IOPS cap; 128 KiB random reads
          at QD16 (128 I/O/s; iopsd takes an average I/O of 32 to 256 KiB
          as throughput-bound, and from the providers' unit of 256 KiB up
          keeps the IOPS plateau as the estimate); flagged: throttled with
          iopsd_device_throughput_ceiling_estimate_bytes_per_second within
          1% of 16 MiB/s
  rw      a volume with iops-read=600 and iops-write=300; a read job and a
          write job at once, QD16 each (iopsd tells the directions' caps
          apart only while both queue, their waits apart: one direction
          alone is held as a total cap would hold it); bound when the later
          of QEMU's reads and writes reached 0.9 of its cap; flagged:
          throttled with iopsd_device_op_iops_ceiling_estimate{op=read}
          and {op=write} within 1% of 600 and 300
  raid0   md RAID0 (chunk 256k, no filesystem) over a volume capped at 600
          and an uncapped one, fio on the array; bound by QEMU's count for
          the capped member; flagged: that member throttled with its
          estimate within 1% of 600 and iopsd_device_held_by{device=the
          array, member=it} 1
  shared  three volumes of 1000 IOPS in a QEMU throttle group of 1500, fio
          on all three at once; bound by QEMU's count of the three
          together; flagged: iopsd_shared_ceiling_throttled 1 and
          iopsd_shared_ceiling_iops_estimate within 1% of 1500, both for
          devices= naming all three

IOPSD_TTF_RUNS runs per scenario (default 5 for iops alone, else 3),
taken in turns (a run of each scenario, then the next round), each a
demand rising from quiet: at least 22 s without I/O on the scenario's
volumes (iopsd's onset test looks at a demand that follows 3 s without a
queue; 22 s leave none of the run before in iopsd's 20-s window), then
fio for about 15 s (longer while the cap is not flagged, up
to 30 s after it bound). Per run:

  binding   when QEMU's own count (QMP query-blockstats) for the capped
            drive first reaches 0.9 of the cap per second (load_start() of
            test-lab-scenarios.py): the cap holds the demand from then on
  flag      the first of iopsd's samples, as the host's Prometheus scraped
            them every second, that flags the cap as the scenario says;
            its time is the sample's own (iopsd_sample_timestamp_seconds,
            the guest's clock less its offset from the host's, read before
            the run), not the scrape's, which comes up to a second later
  stage     ceiling.found_by (and .resource) of /api/v1/devices, read when
            the flag is seen (not for shared)

time_to_flag = flag - binding. A run in which QEMU itself did not hold the
cap in the 10 s after binding that the goal gives iopsd, its 1-s rates
within 1.5% of the cap in fewer than 80% of them (the share below which
test-lab-scenarios.py's flat scenario says the plateau did not hold), or
never reached 0.9 of it, judged the TCG guest, short of CPU, not iopsd: it
is inconclusive and runs once more. So is a run in which QEMU held the cap
but iopsd, in the guest, read one of those seconds off it by more than a
request and 10 ms of it (SKEW): the guest counted QEMU's completions in
the wrong second, beyond what iopsd allows a guest's clock (7.5 ms). (Over the whole load, the seconds
after a late flag made up for a start the guest did not deliver: a RAID0
member's QEMU count, 5 of its first 10 s within 1.5% on a busy host, 81%
over the load, flagged at 20.6 s.)

Asserted per scenario, over its conclusive runs (the cap was delivered, so
the time is iopsd's):

  - p95 of time_to_flag (nearest rank) <= 10 s (issue 38's goal; the onset
    test flags a cap 4 to 6 s after it binds, iopsd(8), CEILING DETECTION,
    and the 20-s window test alone would not make 10);
  - every run flagged within 30 s of binding (an unflagged run counts as
    infinitely slow in the p95 too);
  - at most one run still inconclusive after its rerun, and at least one
    conclusive run: otherwise the lab judged too little of iopsd.

A run slower than 10 s logs what iopsd saw second by second, the onset
test's view of its first seconds (the tightest 5 s in a row as iopsd saw
them and as QEMU let them through, against the test's band) and, for an
IOPS cap, whether its input held a plateau by the window test's rule. Prints a
table of the runs and the figures ttf_p50, ttf_p95, ttf_max and conclusive
(with one scenario) or ttf_p50_SCENARIO, ... (with several);
tests/labtable.py puts them in the lab's table. About 6 minutes for iops
alone (5 runs), the guest's boot included; about 11 for all five
scenarios, 3 runs each."""
import importlib.util
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
_spec = importlib.util.spec_from_file_location("lab_scenarios", os.path.join(HERE, "test-lab-scenarios.py"))
ls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ls)
iopsdlab, fmt, log = ls.iopsdlab, ls.fmt, ls.log
import iopsdtest  # noqa: E402 - on the path test-lab-scenarios.py set

# s without I/O on a scenario's volumes before each of its runs: more
# than iopsd's window (20 s), so that no second of the run before is in
# it (a member's window test needs only 30% of it queueing), and more
# than the 3 s the onset test wants
QUIET = 22.0
LOAD = 15.0                # s of fio per run once the cap is flagged
DEADLINE = 30.0            # s after binding: a run not flagged by then failed
GOAL_P95 = 10.0            # s, nearest-rank p95 over the conclusive runs
BOUND = 0.9                # QEMU's rate that marks the binding, a share of the cap
MATCH = 0.01               # the estimate's tolerance
BAND, HELD = 0.015, 0.8    # QEMU held the cap: its 1-s rates within BAND in HELD of the seconds
MIB = 1 << 20
# iopsd's own seconds in the GOAL_P95 s after binding, while QEMU held the
# cap: one off the cap by more than a request and SKEW s at the cap was the
# TCG guest's doing (short of CPU, it counted QEMU's even completions in
# the wrong second), more than the 7.5 ms iopsd allows for (iopsd(8), the
# sum test); a guest of a real hypervisor does not skew so
SKEW = 0.010
# iopsd's onset test (probes/detect/ceiling.c's defaults): ONSET_SEC
# seconds in a row within the first ONSET_HORIZON of a demand, each
# within ONSET_TOL of their median, widened to ONSET_SLACK I/Os, at most
# ONSET_MAX
ONSET_SEC, ONSET_HORIZON, ONSET_TOL, ONSET_SLACK, ONSET_MAX = 5, 12.0, 0.001, 3.0, 0.003

# 1-s samples; the volumes have no mount point, so no probe, and no
# [device] section: the caps are found, never declared
IOPSD_CONF = """\
[global]
sample_interval=1s
history=30m
"""


class Scenario:
    """A cap of one kind. LAB: its volumes. legs: [(QEMU drive or tuple of
    drives, QEMU's count (Recorder.counts()), cap)], the caps the demand
    binds. conds(): [(family, labels, value)], the series that flag it,
    each within MATCH of its value in the same sample; those after the
    first are the estimates shown. dev: the device whose stage is read and
    whose seconds are logged."""
    key = ""
    LAB = ""
    dev = None
    io_bytes = 4096

    def __init__(self, lab):
        self.lab = lab
        self.disk = {n: v.disk for n, v in lab.cfg.volumes.items()}

    def describe(self):
        return ", ".join(f"{c / MIB:g} MiB/s" if w == "bytes" else f"{c:g} {w}" for _, w, c in self.legs)

    def device_conds(self, dev, estimates):
        return [("iopsd_device_throttled", {"device": dev}, 1)] + [
            (f, dict(labels, device=dev), v) for f, labels, v in estimates]

    def log_seconds(self, ttf, t0):
        for drive, what, _ in self.legs:
            ttf.log_seconds(self.dev, t0, drive, what)


class Iops(Scenario):
    key = "iops"
    CAP = 1000                 # the field notes' volume
    LAB = f"volume ttf size=256M bus=virtio iops={CAP}\n"

    def __init__(self, lab):
        super().__init__(lab)
        self.dev = self.disk["ttf"]
        self.legs = [("d-ttf", "ops", self.CAP)]

    def start(self, fio, name, runtime):
        fio.randread(name, [f"/dev/{self.dev}"], runtime=runtime)

    def conds(self, rec, t0):
        return self.device_conds(self.dev, [("iopsd_device_iops_ceiling_estimate", {}, self.CAP)])


class Bps(Scenario):
    key = "bps"
    CAP = 16 * MIB
    io_bytes = 128 * 1024
    LAB = "volume bps size=512M bus=virtio bps=16m\n"

    def __init__(self, lab):
        super().__init__(lab)
        self.dev = self.disk["bps"]
        self.legs = [("d-bps", "bytes", self.CAP)]

    def start(self, fio, name, runtime):
        fio.random(name, [(f"/dev/{self.dev}", "randread")], bs=self.io_bytes, runtime=runtime)

    def conds(self, rec, t0):
        return self.device_conds(self.dev, [("iopsd_device_throughput_ceiling_estimate_bytes_per_second", {},
                                             self.CAP)])


class ReadWrite(Scenario):
    key = "rw"
    READ, WRITE = 600, 300
    LAB = f"volume rw size=512M bus=virtio iops-read={READ} iops-write={WRITE}\n"

    def __init__(self, lab):
        super().__init__(lab)
        self.dev = self.disk["rw"]
        self.legs = [("d-rw", "reads", self.READ), ("d-rw", "writes", self.WRITE)]

    def start(self, fio, name, runtime):
        # a raw test volume of the lab's: writing it harms nothing
        fio.random(name, [(f"/dev/{self.dev}", "randread"), (f"/dev/{self.dev}", "randwrite")], runtime=runtime)

    def conds(self, rec, t0):
        return self.device_conds(self.dev, [("iopsd_device_op_iops_ceiling_estimate", {"op": op}, cap)
                                            for op, cap in (("read", self.READ), ("write", self.WRITE))])


class Raid0(Scenario):
    key = "raid0"
    CAP = 600
    LAB = (f"volume r0cap size=256M bus=virtio iops={CAP} array=r0\n"
           "volume r0free size=256M bus=virtio array=r0\n"
           "array r0 level=0 chunk=256k fs=none\n")

    def __init__(self, lab):
        super().__init__(lab)
        self.dev, self.md = self.disk["r0cap"], lab.cfg.arrays["r0"].disk
        self.legs = [("d-r0cap", "ops", self.CAP)]

    def describe(self):
        return f"{self.CAP} ops on {self.dev} of {self.md} (with {self.disk['r0free']}, uncapped)"

    def start(self, fio, name, runtime):
        fio.randread(name, [f"/dev/{self.md}"], runtime=runtime)

    def conds(self, rec, t0):
        return self.device_conds(self.dev, [("iopsd_device_iops_ceiling_estimate", {}, self.CAP)]) + [
            ("iopsd_device_held_by", {"device": self.md, "member": self.dev}, 1)]

    def log_seconds(self, ttf, t0):
        super().log_seconds(ttf, t0)
        ttf.log_seconds(self.md, t0)


class Shared(Scenario):
    key = "shared"
    CAP = 1500
    LAB = (f"group sh iops={CAP}\n" +
           "".join(f"volume sh{i} size=128M bus=virtio iops=1000 group=sh\n" for i in (1, 2, 3)))

    def __init__(self, lab):
        super().__init__(lab)
        self.devs = sorted(self.disk[f"sh{i}"] for i in (1, 2, 3))
        self.legs = [(("d-sh1", "d-sh2", "d-sh3"), "ops", self.CAP)]

    def start(self, fio, name, runtime):
        fio.randread(name, [f"/dev/{d}" for d in self.devs], runtime=runtime)

    def conds(self, rec, t0):
        # the label as iopsd orders the names; [] while no group names all three
        whole = next((lab["devices"] for lab, _ in rec.labels_of("main", "iopsd_shared_ceiling_iops_estimate", t0)
                      if sorted(lab["devices"].split(",")) == self.devs), None)
        return [("iopsd_shared_ceiling_throttled", {"devices": whole}, 1),
                ("iopsd_shared_ceiling_iops_estimate", {"devices": whole}, self.CAP)] if whole else []

    def log_seconds(self, ttf, t0):
        rec = ttf.rec
        est, thr = ({lab["devices"]: dict(pts) for lab, pts in rec.labels_of("main", f"iopsd_shared_ceiling_{n}", t0)}
                    for n in ("iops_estimate", "throttled"))
        for lab, pts in rec.labels_of("main", "iopsd_shared_ceiling_iops", t0):
            g = lab["devices"]
            log(f"shared ceiling {{devices={g}}} as iopsd saw it (s since: IOPS/throttled/estimate): " + " ".join(
                f"{t - t0:.0f}:{v:.0f}/{thr.get(g, {}).get(t, float('nan')):.0f}/"
                f"{est.get(g, {}).get(t, float('nan')):.0f}" for t, v in pts if t >= t0))
        for d in self.devs:
            ttf.log_seconds(d, t0)
        drives, what, _ = self.legs[0]
        log(f"{'+'.join(drives)} as QEMU let them through (s since: IOPS): " + " ".join(
            f"{t - t0:.0f}:{v:.0f}" for t, v in rec.rate(drives, t0, what=what)[::2]))


SCENARIOS = {s.key: s for s in (Iops, Bps, ReadWrite, Raid0, Shared)}
CHOSEN = [k for k in os.environ.get("IOPSD_TTF_SCENARIOS", "iops").split(",") if k]
RUNS = int(os.environ.get("IOPSD_TTF_RUNS", "5" if CHOSEN == ["iops"] else "3"))


class TimeToFlag(ls.Scenarios):
    """The runs, with the readings of QEMU's and iopsd's series that the
    scenarios use (qemu_seconds(), log_seconds(), unflat()).
    Scenarios.__init__ is not called: it looks up the scenarios' own
    volumes and arrays."""

    def __init__(self, lab, rec):
        self.lab, self.rec, self.fio = lab, rec, ls.Fio(lab)
        self.clock_offset = 0.0
        self.idle_since = {}

    def guest_clock(self):
        """(the guest's clock less the host's, the round trip it was read
        in): the quickest of three readings, its error at most half of
        that."""
        best = None
        for _ in range(3):
            t = time.time()
            guest = float(self.lab.sh("date +%s.%N"))
            rtt = time.time() - t
            if best is None or rtt < best[1]:
                best = (guest - (t + rtt / 2), rtt)
        return best

    def flag_at(self, sc, t0):
        """(when, estimates) of the first sample since t0 that flags sc's
        cap: every series of sc.conds() within MATCH of its value. `when`
        is the sample's time on the host's clock (the scrape's when the
        sample time was not scraped), or None."""
        rec, conds = self.rec, sc.conds(self.rec, t0)
        if not conds:
            return None
        series = [dict(rec.series("main", f, t0, **labels)) for f, labels, _ in conds]
        taken = dict(rec.series("main", "iopsd_sample_timestamp_seconds", t0))
        for t in sorted(series[0]):
            got = [s.get(t) for s in series]
            if all(v is not None and abs(v - want) <= MATCH * want for v, (_, _, want) in zip(got, conds)):
                return (taken[t] - self.clock_offset if t in taken else t), got[1:]
        return None

    def stage(self, dev):
        """ceiling.found_by and .resource of dev in /api/v1/devices; None
        when it did not answer (reported, not judged)."""
        if dev is None:
            return None
        try:
            devs = self.lab.get_json("/api/v1/devices")["devices"]
        except (OSError, iopsdlab.VMError) as e:
            log(f"/api/v1/devices: {e}")
            return None
        c = next((d.get("ceiling") or {} for d in devs if d["name"] == dev), {})
        return f"{c.get('found_by')}/{c.get('resource')}"

    def wait_flag(self, sc, t0, bound):
        """Wait for the flag while the load runs: until LOAD s of load with
        the flag seen, or DEADLINE s (and 2 to scrape the sample) after
        binding. (flag_at()'s answer, the stage then)."""
        flag = found_by = None
        while time.time() < bound + DEADLINE + 2:
            if flag is None:
                flag = self.flag_at(sc, t0)
                found_by = self.stage(sc.dev) if flag else None
            if flag and time.time() >= t0 + LOAD:
                break
            time.sleep(0.5)
        return flag, found_by

    def bound_at(self, sc, t0):
        """When every leg of sc's load reached BOUND of its cap in QEMU's
        count (the last of them), or None."""
        starts = [ls.load_start(self.rec, d, BOUND * cap, t0, what) for d, what, cap in sc.legs]
        return max(starts) if all(starts) else None

    def held(self, sc, bound, t_stop):
        """The share of QEMU's 1-s rates within BAND of the cap in the
        GOAL_P95 s from bound (to t_stop at the most), the least of sc's
        legs."""
        shares = []
        for d, what, cap in sc.legs:
            q = self.qemu_seconds(d, bound, min(GOAL_P95, t_stop - bound - 0.5), what)
            shares.append(sum(abs(v - cap) <= BAND * cap for _, v in q) / len(q) if q else 0.0)
        return min(shares)

    def skewed(self, sc, bound):
        """iopsd's second furthest off sc's cap in the GOAL_P95 s after
        binding when it is off by more than a request and SKEW s at the
        cap: (its rate, the cap, QEMU's count), else None. Not for a
        scenario without one device (shared)."""
        worst = None
        for drive, what, cap in sc.legs if sc.dev else ():
            request = sc.io_bytes if what == "bytes" else 1
            for _, v in self.guest_rates(sc.dev, what, bound + 1, GOAL_P95 - 1):
                off = abs(v - cap) - request - SKEW * cap
                if off > 0 and (worst is None or off > worst[0]):
                    worst = (off, v, cap, what)
        return worst[1:] if worst else None

    def run_once(self, sc, label):
        """One demand rising from quiet; its row of the table."""
        rec, name = self.rec, f"ttf{sc.key}{label}"
        time.sleep(max(0.0, self.idle_since.get(sc.key, 0.0) + QUIET - time.time()))
        quiet_ios = sum(rec.ops(d, time.time() - QUIET, time.time()) for d in self.drives(sc))
        self.clock_offset, rtt = self.guest_clock()
        t0 = time.time()
        sc.start(self.fio, name, int(LOAD + DEADLINE + 30))
        bound = rec.wait(lambda: self.bound_at(sc, t0), 20)
        flag, found_by = self.wait_flag(sc, t0, bound) if bound else (None, None)
        t_stop = time.time()
        report = self.fio.stop(name)
        self.idle_since[sc.key] = time.time()
        share = self.held(sc, bound, t_stop) if bound else 0.0
        row = {"scenario": sc.key, "run": label, "t0": t0, "bound": bound, "flag": flag, "stage": found_by,
               "share": share, "ttf": flag[0] - bound if bound and flag else None,
               "estimate": "/".join(f"{v:.1f}" for v in flag[1]) if flag else None}
        if not bound:
            row["why"] = f"QEMU never let {BOUND:.0%} of {sc.describe()} through in 20 s"
        elif share < HELD:
            row["why"] = (f"QEMU's 1-s rates within {BAND:.1%} of {sc.describe()} in {share:.0%} of the "
                          f"{GOAL_P95:.0f} s after binding (< {HELD:.0%}): the TCG guest, short of CPU, did not "
                          "hold the cap")
        elif (skew := self.skewed(sc, bound)):
            v, cap, what = skew
            row["why"] = (f"iopsd read a second of {v:.0f} {what} where QEMU held {cap:.0f}, off by more than a "
                          f"request and {SKEW * 1000:.0f} ms of the cap: the TCG guest, short of CPU, counted "
                          "QEMU's completions in the wrong second")
        log(f"{sc.key} run {label}: {quiet_ios} I/Os in the {QUIET:.0f} s before; guest clock "
            f"{self.clock_offset:+.3f} s (read in {rtt * 1000:.0f} ms); bound {fmt(bound - t0 if bound else None)} s "
            f"after fio started, flagged {fmt(row['ttf'])} s after that, estimate {row['estimate']}, stage "
            f"{found_by}; QEMU in band {share:.0%} of the {GOAL_P95:.0f} s after binding; fio {fio_rates(report)}"
            + (f"; INCONCLUSIVE: {row['why']}" if "why" in row else ""))
        if "why" not in row and (row["ttf"] is None or row["ttf"] > GOAL_P95):
            self.explain(sc, label, t0, bound)
        return row

    def drives(self, sc):
        return [x for d, _, _ in sc.legs for x in (d if isinstance(d, tuple) else (d,))]

    def explain(self, sc, label, t0, bound):
        """A slow or unflagged run's evidence: iopsd's seconds; whether its
        input and QEMU's count held the onset test's band; for an IOPS cap
        whether its input held a plateau by the window test's rule."""
        sc.log_seconds(self, t0 - 3)
        for drive, what, cap in sc.legs if sc.dev else ():
            log(f"{sc.key} run {label}: {self.onset_view(sc.dev, drive, what, bound, sc.io_bytes)}")
        drive, what, cap = sc.legs[0]
        if what == "ops" and sc.dev:
            why = self.unflat(drive, sc.dev, bound, cap, DEADLINE)[2]
            if why:
                log(f"{sc.key} run {label}: {why}")

    def guest_rates(self, dev, what, t_from, within):
        """iopsd's own 1-s rates of dev that QEMU's count `what` caps, one
        per sample (a sample scraped twice is taken once), in the `within`
        s from t_from."""
        name, op, _, _ = self.SECONDS_OF[what]
        taken = dict(self.rec.series("main", "iopsd_sample_timestamp_seconds", t_from))
        by_sample = {}
        for t, v in self.rec.series("main", name, t_from, device=dev, op=op):
            if t <= t_from + within:
                by_sample.setdefault(taken.get(t, t), (t, v))
        return sorted(by_sample.values())

    def onset_view(self, dev, drive, what, bound, io_bytes):
        """The onset test's view of the first ONSET_HORIZON s after
        binding: the tightest ONSET_SEC seconds in a row, as iopsd saw them
        and as QEMU let them through, against the test's band (its slack
        in bytes for a throughput cap: I/Os of io_bytes)."""
        def tightest(secs):
            best = None
            for i in range(len(secs) - ONSET_SEC + 1):
                w = [v for _, v in secs[i:i + ONSET_SEC]]
                med = sorted(w)[ONSET_SEC // 2]
                if med <= 0:
                    continue
                ios = med / io_bytes if what == "bytes" else med
                band = med * min(max(ONSET_TOL, ONSET_SLACK / ios), ONSET_MAX)
                dev_max = max(abs(v - med) for v in w)
                if best is None or dev_max / band < best[0] / best[1]:
                    best = (dev_max, band, med, w)
            if best is None:
                return "no 5 s"
            dev_max, band, med, w = best
            return (f"{'held' if dev_max <= band else 'NOT held'}: the tightest 5 s {' '.join(f'{v:.0f}' for v in w)} "
                    f"lie within {dev_max:.0f} ({dev_max / med:.2%}) of their median, the band {band:.1f} "
                    f"({band / med:.2%})")
        guest = self.guest_rates(dev, what, bound - 1, ONSET_HORIZON + 1)
        qemu = self.qemu_seconds(drive, bound - 1, ONSET_HORIZON + 1, what)
        return (f"the onset test on {what} ({ONSET_SEC} s within {ONSET_TOL:.1%}, {ONSET_SLACK:g} I/Os, at most "
                f"{ONSET_MAX:.1%}, in the {ONSET_HORIZON:.0f} s after binding): iopsd's input {tightest(guest)}; "
                f"QEMU's count {tightest(qemu)}")


def fio_rates(report):
    if not report:
        return "no report"
    r = sum(j["read"]["iops"] for j in report["jobs"])
    w = sum(j["write"]["iops"] for j in report["jobs"])
    bw = sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"] for j in report["jobs"])
    return f"{r:.1f} r/s, {w:.1f} w/s, {bw / MIB:.2f} MiB/s"


def nearest_rank(values, pct):
    s = sorted(values)
    return s[max(1, math.ceil(pct / 100 * len(s))) - 1]


def table(rows):
    print(f"\n{'scenario':<8} {'run':<5} {'bound at (after fio start)':<27} {'time to flag':>12} "
          f"{'estimate':>20} {'QEMU in band':>12}  {'stage':<17} verdict")
    for r in rows:
        at = (time.strftime("%H:%M:%S", time.localtime(r["bound"])) + f".{int(r['bound'] % 1 * 10)} "
              f"(+{r['bound'] - r['t0']:.1f} s)") if r["bound"] else "never"
        ttf = f"{r['ttf']:.1f} s" if r["ttf"] is not None else "-" if "why" in r else f"> {DEADLINE:.0f} s"
        verdict = ("INCONCLUSIVE" + (", rerun" if r.get("rerun_follows") else "") if "why" in r
                   else "ok" if r["ttf"] is not None and r["ttf"] <= GOAL_P95
                   else "slow" if r["ttf"] is not None and r["ttf"] <= DEADLINE else "UNFLAGGED")
        print(f"{r['scenario']:<8} {r['run']:<5} {at:<27} {ttf:>12} {r['estimate'] or 'none':>20} "
              f"{r['share']:>12.0%}  {r['stage'] or '-':<17} {verdict}")


def secs(v):
    return "none" if v is None else "unflagged" if v == math.inf else f"{v:.1f}s"


def verdict(key, rows, suffix):
    """One scenario's figures and failures (see the module's docstring)."""
    final = [r for r in rows if not r.get("rerun_follows")]
    conclusive = [r for r in final if "why" not in r]
    undecided = len(final) - len(conclusive)
    ttfs = [r["ttf"] if r["ttf"] is not None and r["ttf"] <= DEADLINE else math.inf for r in conclusive]
    p50, p95, top = (nearest_rank(ttfs, p) if ttfs else None for p in (50, 95, 100))
    iopsdtest.figure(f"ttf_p50{suffix}", secs(p50))
    iopsdtest.figure(f"ttf_p95{suffix}", secs(p95))
    iopsdtest.figure(f"ttf_max{suffix}", secs(top))
    iopsdtest.figure(f"conclusive{suffix}", f"{len(conclusive)}/{len(final)}")
    failures = []
    if not conclusive:
        failures.append("no conclusive run: the lab judged nothing of iopsd")
    if undecided > 1:
        failures.append(f"{undecided} runs inconclusive after their rerun (at most 1)")
    if p95 is not None and p95 > GOAL_P95:
        failures.append(f"p95 time to flag {secs(p95)} (want <= {GOAL_P95:.0f} s)")
    late = [r["run"] for r, v in zip(conclusive, ttfs) if v == math.inf]
    if late:
        failures.append(f"run(s) {', '.join(late)} not flagged within {DEADLINE:.0f} s of binding")
    for f in failures:
        print(f"FAILED: {key}: {f}")
    print(f"{key}: {len(final)} runs, {len(conclusive)} conclusive: time to flag p50 {secs(p50)}, p95 {secs(p95)} "
          f"(want <= {GOAL_P95:.0f} s), max {secs(top)}; {'FAILED' if failures else 'ok'}")
    return failures


def run(tmp):
    unknown = [k for k in CHOSEN if k not in SCENARIOS]
    if unknown or not CHOSEN:
        raise SystemExit(f"IOPSD_TTF_SCENARIOS: {', '.join(unknown) or 'empty'}: choose from {', '.join(SCENARIOS)}")
    cfg = iopsdlab.LabConfig.parse("".join(SCENARIOS[k].LAB for k in CHOSEN))
    cfg.iopsd_template = IOPSD_CONF
    deb = ls.package()
    name = f"ttf{os.getpid()}"
    # the Recorder reads the scenarios' second iopsd's port too
    lab = iopsdlab.Lab(cfg, name=name, state_dir=os.path.join(tmp, name), deb=deb, extra_ports=[ls.DECLARED_PORT],
                       prometheus_interval=f"{ls.EVAL:g}s", console_copy=os.path.join(tmp, "console.log"), log=log)
    rows = []
    with lab:
        lab.start_prometheus()
        rec = ls.Recorder(lab)
        rec.start()
        t = TimeToFlag(lab, rec)
        scs = [SCENARIOS[k](lab) for k in CHOSEN]
        if not rec.wait(lambda: rec.series("main", "iopsd_sample_timestamp_seconds", time.time() - 5), 60):
            raise AssertionError("Prometheus scraped no sample of iopsd in 60 s")
        log(f"lab up in {lab.t_up:.0f} s (guest boot {lab.vm.boot_seconds:.0f} s); "
            + "; ".join(f"{sc.key}: {sc.describe()}" for sc in scs)
            + f"; {RUNS} runs each; the host's load {open('/proc/loadavg').read().split()[:3]}")
        for i in range(1, RUNS + 1):
            for sc in scs:
                row = t.run_once(sc, str(i))
                rows.append(row)
                if "why" in row:
                    row["rerun_follows"] = True
                    rows.append(t.run_once(sc, f"{i}r"))
        rec.stop_ev.set()
        rec.join(10)
    table(rows)
    log(f"wall time {time.monotonic() - ls.T_START:.0f} s")
    print()
    failures = [verdict(k, [r for r in rows if r["scenario"] == k], "" if len(CHOSEN) == 1 else f"_{k}")
                for k in CHOSEN]
    return 1 if any(failures) else 0


def main():
    return ls.lab_main("lab-time-to-flag", run)


if __name__ == "__main__":
    sys.exit(main())
