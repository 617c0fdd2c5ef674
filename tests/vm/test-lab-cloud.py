#!/usr/bin/env python3
"""Cloud volumes as providers count them, in one boot of the VM lab (QEMU
7.2's own throttling options below the guest, iopsd installed from its
package), each figure of iopsd checked against QEMU's count (QMP
query-blockstats) or fio's:

  unit      throttling.iops-total=1000,iops-size=256k on virtio-blk (the
            guest's max_sectors_kb passes 1 MiB whole), fio 1 MiB random
            reads at QD4: QEMU delivers 250 I/O/s, 1000 of its units.
            Declared iops_unit=256k (one volume) or volume_type=io1,iops=1000
            (another): limit ratio 1.00 +- 0.02, provider IOPS within 2% of
            QEMU's units, LimitNotDelivered silent. Nothing declared: the
            plateau at 250 with the average I/O size next to it. 4 KiB reads:
            1000 I/O/s, unchanged
  rw        iops-read=600,iops-write=300, a read and a write job at QD16
            at once: both directions flagged with their own estimates
            (within 2%), no total of 900 claimed; declared read_iops_limit/
            write_iops_limit: their own ratios and seconds at the limit
  bps       iops-total=1000,bps-total=16 MiB/s: 64 KiB reads bind the
            throughput (resource=throughput, estimate within 2%, no IOPS
            ceiling at 256); 4 KiB reads bind the IOPS (estimate 1000)
  instburst a throttle group over three volumes, x-iops-total=1500,
            x-iops-total-max=3000, x-iops-total-max-length=40, all three
            under load: the shared ceiling's bucket learned as a volume's
            (burst rate, base, credits, when it ran out), the base flagged as the
            shared ceiling; a second burst after a refill is not flagged.
            QEMU's drop is the group held at 1500 (+- 4%, 5 s), never a
            starved guest submitting less; the burst rate is QEMU's median
            second of it; each run starts with the group's bucket full
  mpath     NVMe native multipath (nvme-subsys, two controllers, one shared
            namespace capped at 800): the mounted volume's IOPS within 1% of
            fio's whichever node the kernel counts on, nothing counted twice
            in [instance], probes on the head, the ceiling at 800 found on it,
            the hidden paths the head's members (and no devices of their own)
  dmi       -smbios type=1,manufacturer=Amazon EC2,product=m5.large: the
            instance type as a label of iopsd_instance_type_info and in
            /api/v1/status

IOPSD_LAB_CLOUD_ONLY=instburst,dmi (a comma-separated list of the names
above) runs those scenarios only, in the same boot. After each instance
burst the guest's per-second device history goes to
BUILDDIR/lab-cloud-history-TAG.json, for a replay through the detector.

The verdict is tests/vm/test-lab-scenarios.py's: a check the lab could not
deliver is inconclusive and its scenario runs once more; the run fails when
a detection check is still inconclusive, or more than two checks are.
Figures go to BUILDDIR/lab-cloud.json."""
import importlib.util
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
_spec = importlib.util.spec_from_file_location("lab_scenarios", os.path.join(HERE, "test-lab-scenarios.py"))
ls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ls)
check, fmt, log, scenario = ls.check, ls.fmt, ls.log, ls.scenario
iopsdlab = ls.iopsdlab
C = ls.C
UNIT = 256 * 1024
MIB = 1 << 20

LAB = f"""
volume ctl    size=256M bus=virtio mount=/mnt/ctl
volume unit   size=1G   bus=virtio iops={C} iops-size=256k iopsd.iops_limit={C} iopsd.iops_unit=256k
volume unitvt size=1G   bus=virtio iops={C} iops-size=256k iopsd.volume_type=io1 iopsd.iops={C}
volume unit0  size=1G   bus=virtio iops={C} iops-size=256k
volume rw     size=512M bus=virtio iops-read={6 * C // 10} iops-write={3 * C // 10}
volume rwd    size=512M bus=virtio iops-read={6 * C // 10} iops-write={3 * C // 10} iopsd.read_iops_limit={6 * C // 10} iopsd.write_iops_limit={3 * C // 10}
volume bps    size=512M bus=virtio iops={C} bps={16 * C // 1000}m
group  ib     iops={3 * C // 2} burst={3 * C} burst-length=80s
volume ib1    size=128M bus=virtio group=ib
volume ib2    size=128M bus=nvme   group=ib
volume ib3    size=128M bus=virtio group=ib
volume mp     size=512M bus=nvme   iops={8 * C // 10} paths=2 mount=/mnt/mp
"""

IOPSD_CONF = """\
[global]
sample_interval=1s
probe_interval=10s
history=30m

[instance]
iops_limit={inst}
devices=^({mp_disks})$

[mp]
readwrite=randread
blocksize=4k
size=8m
directory=/mnt/mp
iodepth=1
rate_iops=10
runtime=300ms
interval=5s
"""


def api_device(lab, disk):
    return next((d for d in lab.get_json("/api/v1/devices")["devices"] if d["name"] == disk), None)


def sampled(lab, disk, seconds, pick):
    """`pick(device JSON)` once a second for `seconds`: the values that were
    not None."""
    out = []
    for _ in range(int(seconds)):
        d = api_device(lab, disk)
        v = pick(d) if d else None
        if v is not None:
            out.append(v)
        time.sleep(1)
    return out


def dig(d, *path):
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def median(xs):
    return statistics.median(xs) if xs else None


def within(v, want, rel):
    return v is not None and abs(v - want) <= rel * want


class Cloud:
    def __init__(self, lab, rec):
        self.lab, self.rec, self.fio = lab, rec, ls.Fio(lab)
        self.disk = {n: v.disk for n, v in lab.cfg.volumes.items()}
        self.rerun_seconds = 0.0

    def qemu(self, drive, t0, t1):
        """QEMU's I/Os per second and bytes per second to drive over [t0, t1]."""
        with self.rec.lock:
            pts = [(t, s[drive]) for t, s in self.rec.bstats if drive in s and t0 <= t <= t1]
        if len(pts) < 2:
            return None, None
        (ta, a), (tb, b) = pts[0], pts[-1]
        return (b[0] - a[0]) / (tb - ta), (b[1] - a[1]) / (tb - ta)

    def load(self, name, jobs, runtime=300):
        args = " ".join(f"--name={name}{i} --filename={f} --rw={rw} --bs={bs} --iodepth={qd}" + (
            f" --offset={off}" if off else "") for i, (f, rw, bs, qd, off) in enumerate(jobs))
        self.fio.start(name, f"--direct=1 --ioengine=libaio --time_based {args}", runtime)

    # I/O-size units

    @scenario("unit")
    def unit(self):
        rec = self.rec
        for n in ("unit", "unitvt", "unit0"):
            d = self.disk[n]
            mskb, segs = (int(x) for x in self.lab.sh(f"cat /sys/block/{d}/queue/max_sectors_kb "
                                                      f"/sys/block/{d}/queue/max_segments").split())
            check("unit", f"{n}: the guest sends 1 MiB I/Os whole (max_sectors_kb, max_segments)",
                  mskb >= 1024 and segs >= 256, f"{mskb} KiB, {segs} segments", ">= 1024 KiB, >= 256 segments")
            t0 = time.time()
            self.load(n, [(f"/dev/{d}", "randread", "1M", 4, 0)])
            time.sleep(25)
            t1 = time.time()
            ios, bps = self.qemu(f"d-{n}", t1 - 15, t1)
            units = bps / UNIT if bps else None
            short = None if within(ios, C / 4, 0.02) else (
                f"QEMU let {fmt(ios)} I/O/s through, not {C // 4}: the TCG guest did not drive the volume to its cap")
            check("unit", f"{n}: QEMU counts 4 units per 1 MiB I/O and delivers {C // 4} I/O/s",
                  within(ios, C / 4, 0.02) and within(units, C, 0.02), f"{fmt(ios)} I/O/s, {fmt(units)} units/s",
                  f"{C // 4} +- 2%, {C} units", lab_limit=short and "the lab's own figure")
            if n == "unit0":
                est = [v for _, v in rec.series("main", "iopsd_device_iops_ceiling_estimate", t0, device=d)]
                size = sampled(self.lab, d, 3, lambda x: dig(x, "ceiling", "average_io_bytes"))
                check("unit", "nothing declared: the plateau at 250 I/O/s", within(est[-1] if est else None, C / 4,
                                                                                   0.02),
                      f"{fmt(est[-1] if est else None)} (QEMU {fmt(ios)})", f"{C // 4} +- 2%", lab_limit=short,
                      detection=True)
                check("unit", "nothing declared: the average I/O size next to it", within(median(size), MIB, 0.02),
                      f"{fmt(median(size), '.0f')} bytes", "1 MiB +- 2%", lab_limit=short)
            else:
                ratio = sampled(self.lab, d, 10, lambda x: dig(x, "limits", "iops_ratio"))
                clr = [v for _, v in rec.series("main", "iopsd_device_ceiling_limit_ratio", t1 - 10, device=d,
                                                resource="iops")]
                # iopsd's 1-s figures as Prometheus scraped them, and QEMU's
                # count, over the same seconds
                t2 = time.time()
                prov = [v for t, v in rec.series("main", "iopsd_device_provider_iops", t1, device=d)
                        if t1 + 1 <= t <= t2]
                prov = [statistics.mean(prov)] if prov else []
                ios2, bps2 = self.qemu(f"d-{n}", t1, t2)
                check("unit", f"{n}: limits.iops_ratio (median of 10 s)", within(median(ratio), 1.0, 0.02),
                      fmt(median(ratio), ".4f"), "1.00 +- 0.02", lab_limit=short)
                check("unit", f"{n}: iopsd_device_ceiling_limit_ratio", clr and within(clr[-1], 1.0, 0.02),
                      fmt(clr[-1] if clr else None, ".4f"), "1.00 +- 0.02", lab_limit=short, detection=True)
                q_units = bps2 / UNIT if bps2 else None
                # QEMU's count over these seconds is the reference: when it
                # is off the cap it held just before (a host-side reading
                # late, the TCG guest's clock behind the host's), the check
                # judges the lab, not iopsd (seen once: QEMU 942.8 units/s
                # over 11 s right after 999.9 over 15 s, iopsd 999.9)
                short2 = short or (None if within(ios2, C / 4, 0.02) else (
                    f"QEMU's count over these {t2 - t1:.0f} s is {fmt(ios2)} I/O/s, off the cap of {C // 4} it "
                    f"held just before"))
                check("unit", f"{n}: provider IOPS (mean over {t2 - t1:.0f} s) vs QEMU's units",
                      within(median(prov), q_units or 0, 0.02), f"iopsd {fmt(median(prov))}, QEMU {fmt(q_units)}",
                      "within 2%", lab_limit=short2)
                self.no_alert("unit", "IopsdDeviceLimitNotDelivered", d, t0)
            self.fio.stop(n)
        d = self.disk["unit"]
        t0 = time.time()
        self.load("unit4k", [(f"/dev/{d}", "randread", "4k", 16, 0)])
        time.sleep(25)
        ios, _ = self.qemu("d-unit", time.time() - 15, time.time())
        iops = sampled(self.lab, d, 5, lambda x: dig(x, "rates", "iops", "total"))
        ratio = sampled(self.lab, d, 5, lambda x: dig(x, "limits", "iops_ratio"))
        short = None if within(ios, C, 0.02) else f"QEMU let {fmt(ios)} I/O/s through, not {C}"
        check("unit", "4 KiB reads on the same volume: IOPS and ratio unchanged",
              within(median(iops), C, 0.02) and within(median(ratio), 1.0, 0.02),
              f"{fmt(median(iops))} IOPS (QEMU {fmt(ios)}), ratio {fmt(median(ratio), '.3f')}", f"{C} +- 2%, 1.00",
              lab_limit=short)
        self.fio.stop("unit4k")

    def no_alert(self, scen, alert, device, t0):
        fired = [r for r in self.rec._raw("ALERTS", t0) if r["metric"].get("alertname") == alert
                 and r["metric"].get("device") == device and r["metric"].get("alertstate") == "firing"]
        check(scen, f"{alert} does not fire on {device}", not fired, f"{len(fired)} firing series", "none")

    # separate read and write caps

    @scenario("rw")
    def rw(self):
        r, w = 6 * C // 10, 3 * C // 10
        for n in ("rw", "rwd"):
            d = self.disk[n]
            t0 = time.time()
            self.load(n, [(f"/dev/{d}", "randread", "4k", 16, 0), (f"/dev/{d}", "randwrite", "4k", 16, "256m")])
            time.sleep(40)
            t1 = time.time()
            with self.rec.lock:
                pts = [(t, s[f"d-{n}"]) for t, s in self.rec.bstats if f"d-{n}" in s and t1 - 15 <= t <= t1]
            qr = (pts[-1][1][0] - pts[0][1][0]) / (pts[-1][0] - pts[0][0]) if len(pts) > 1 else None
            qw = (pts[-1][1][2] - pts[0][1][2]) / (pts[-1][0] - pts[0][0]) if len(pts) > 1 else None
            short = None if within(qr, r, 0.02) and within(qw, w, 0.02) else (
                f"QEMU let {fmt(qr)} reads and {fmt(qw)} writes through: the TCG guest did not drive both caps")
            dev = api_device(self.lab, d) or {}
            ce = dev.get("ceiling") or {}
            if n == "rw":
                check("rw", "both directions flagged, each with its own estimate",
                      within(ce.get("read_iops_estimate"), r, 0.02) and within(ce.get("write_iops_estimate"), w, 0.02)
                      and ce.get("throttled") is True and ce.get("resource") in ("read_iops", "write_iops"),
                      f"read {fmt(ce.get('read_iops_estimate'))}, write {fmt(ce.get('write_iops_estimate'))}, "
                      f"resource {ce.get('resource')}, throttled {ce.get('throttled')} (QEMU {fmt(qr)}/{fmt(qw)})",
                      f"{r} and {w} +- 2%", lab_limit=short, detection=True)
                tot = ce.get("iops_estimate")
                check("rw", "no total ceiling of 900 claimed", tot is None or not within(tot, r + w, 0.05), fmt(tot),
                      f"none near {r + w}", lab_limit=short)
            else:
                # the median of 10 s: a TCG second short of the cap is made
                # up in the next, over it (QEMU's bucket)
                rr = sampled(self.lab, d, 10, lambda x: dig(x, "limits", "read_iops_ratio"))
                wr = sampled(self.lab, d, 10, lambda x: dig(x, "limits", "write_iops_ratio"))
                lim = {"read_iops_ratio": median(rr), "write_iops_ratio": median(wr)}
                atc = {k: rs for k in ("read_iops", "write_iops")
                       for rs in [self.rec.series("main", "iopsd_device_at_ceiling_seconds_total", t1 - 15,
                                                  device=d, resource=k)]}
                growth = {k: (v[-1][1] - v[0][1]) / (v[-1][0] - v[0][0]) if len(v) > 2 else None
                          for k, v in atc.items()}
                check("rw", "declared read/write limits: their own ratios",
                      within(lim.get("read_iops_ratio"), 1.0, 0.02) and within(lim.get("write_iops_ratio"), 1.0, 0.02),
                      f"read {fmt(lim.get('read_iops_ratio'), '.3f')}, write {fmt(lim.get('write_iops_ratio'), '.3f')}",
                      "1.00 +- 0.02 each", lab_limit=short)
                check("rw", "declared read/write limits: seconds at the limit grow ~1 s/s each",
                      all(g is not None and 0.9 <= g <= 1.1 for g in growth.values()),
                      ", ".join(f"{k} {fmt(g, '.2f')}" for k, g in growth.items()), "0.9-1.1", lab_limit=short)
            self.fio.stop(n)

    # a throughput cap beside the IOPS cap

    @scenario("bps")
    def bps(self):
        d, cap = self.disk["bps"], 16 * C // 1000 * MIB
        for bs, want in (("64k", "throughput"), ("4k", "iops")):
            t0 = time.time()
            self.load(f"bps{bs}", [(f"/dev/{d}", "randread", bs, 16, 0)])
            time.sleep(35)
            ios, bps = self.qemu("d-bps", time.time() - 15, time.time())
            ce = (api_device(self.lab, d) or {}).get("ceiling") or {}
            if want == "throughput":
                short = None if within(bps, cap, 0.02) else f"QEMU let {fmt(bps, '.0f')} B/s through, not {cap}"
                check("bps", "64 KiB reads: resource=throughput, its estimate",
                      ce.get("resource") == "throughput"
                      and within(ce.get("throughput_estimate_bytes_per_second"), cap, 0.02),
                      f"resource {ce.get('resource')}, {fmt(ce.get('throughput_estimate_bytes_per_second'), '.0f')} "
                      f"B/s (QEMU {fmt(bps, '.0f')})", f"throughput, {cap} +- 2%", lab_limit=short, detection=True)
                check("bps", "64 KiB reads: no IOPS ceiling at 256", ce.get("iops_estimate") is None,
                      fmt(ce.get("iops_estimate")), "none", lab_limit=short)
            else:
                short = None if within(ios, C, 0.02) else f"QEMU let {fmt(ios)} I/O/s through, not {C}"
                check("bps", "4 KiB reads: resource=iops, estimate",
                      ce.get("resource") == "iops" and within(ce.get("iops_estimate"), C, 0.02),
                      f"resource {ce.get('resource')}, {fmt(ce.get('iops_estimate'))} (QEMU {fmt(ios)})",
                      f"iops, {C} +- 2%", lab_limit=short, detection=True)
            self.fio.stop(f"bps{bs}")

    # an instance burst over three volumes

    def shared_series(self, name, t0):
        return [(lab, pts) for lab, pts in self.rec.labels_of("main", name, t0)]

    def refill(self):
        """Wait until QEMU's group bucket is full again after the last
        burst: 3000 x 40 I/Os come back at the base, 1500 a second."""
        wait = 3 * C * 40 / (1.5 * C) + 5 - (time.time() - getattr(self, "burst_ended", 0))
        if wait > 0:
            log(f"waiting {wait:.0f} s for the group's bucket to refill")
            time.sleep(wait)

    @scenario("instburst")
    def instburst(self, second=False):
        tag = "instburst2" if second else "instburst"
        drives = tuple(f"d-{n}" for n in ("ib1", "ib2", "ib3"))
        # a rerun too: a burst cut short by a part-empty bucket is no burst
        self.refill()
        t0 = time.time()
        self.load(tag, [(f"/dev/{self.disk[n]}", "randread", "4k", 16, 0) for n in ("ib1", "ib2", "ib3")])
        rates = lambda: self.rec.rate(drives, t0, window=2)  # noqa: E731
        top = self.rec.wait(lambda: ls.first(rates(), lambda v: v >= 2.7 * C), 40)
        # QEMU's drop is the group held at its base (1500 +- 4% for 5 s), not
        # a starved guest submitting less for a while (a run: 10 s at 1000,
        # the guest's queues at 1 or 2, before the bucket ran dry); each
        # starved second refills the bucket and makes the burst longer
        drop = self.rec.wait(lambda: top and ls.settled_at([p for p in rates() if p[0] > top[0] + 3], 1.5 * C,
                                                           0.04, 5), 200)
        if not (top and drop):
            # it stands for the first burst's four detection checks, not
            # recorded: still inconclusive after the rerun, it fails the
            # suite; the second burst's stands for a check of no detection
            check(tag, "QEMU delivered the group's burst, then its base", False,
                  f"rates {[round(v) for _, v in rates()][::4]}", f"{3 * C} then {3 * C // 2}",
                  lab_limit="the TCG guest did not submit the burst over the three volumes", detection=not second)
            self.fio.stop(tag)
            self.burst_ended = time.time()
            return
        # the shared detector's window (20 s) after the drop, and a scrape
        time.sleep(max(0, drop[0] + 30 - time.time()))
        # the bucket's burst rate is what QEMU let through while the guest
        # kept it busy: the median second, not the mean of the starved ones
        inside = [v for t, v in rates() if top[0] + 2 <= t <= drop[0] - 2]
        burst_rate = statistics.median(inside) if inside else None
        short = None if within(burst_rate, 3 * C, 0.03) else (
            f"QEMU let {fmt(burst_rate, '.0f')} I/O/s through to the group during its burst, not {3 * C}: the TCG "
            "guest did not submit the burst over the three volumes")
        flag = [(lab, pts) for lab, pts in self.shared_series("iopsd_shared_ceiling_throttled", t0)
                if any(v == 1 for _, v in pts)]
        during = [v for _, pts in flag for t, v in pts if t < drop[0] - 1]
        after = [t for _, pts in flag for t, v in pts if v == 1 and t >= drop[0]]
        got = {}
        for n in ("burst_iops_estimate", "burst_base_iops_estimate", "burst_credits_estimate",
                  "burst_exhausted_timestamp_seconds"):
            s = self.shared_series(f"iopsd_shared_ceiling_{n}", t0)
            got[n] = s[0][1][-1][1] if s and s[0][1] else None
        if not second:
            check(tag, "the group's base flagged as the shared ceiling after the burst",
                  bool(after) and min(after) - drop[0] <= 25, f"{fmt(min(after) - drop[0] if after else None)} s",
                  "<= 25 s after QEMU's drop (a 20-s window)", lab_limit=short, detection=True)
            check(tag, "the shared bucket's burst rate, learned", within(got["burst_iops_estimate"], burst_rate or 0,
                                                                          0.03),
                  f"{fmt(got['burst_iops_estimate'])} (QEMU {fmt(burst_rate)})", "QEMU's +- 3%", lab_limit=short,
                  detection=True)
            check(tag, "the shared bucket's base, learned", within(got["burst_base_iops_estimate"], 1.5 * C, 0.02),
                  fmt(got["burst_base_iops_estimate"]), f"{3 * C // 2} +- 2%", lab_limit=short, detection=True)
            self.check_credits(tag, drives, t0, drop[0], burst_rate, got["burst_credits_estimate"], short)
            ex = got["burst_exhausted_timestamp_seconds"]
            ex = ex - self.clock_offset if ex else None
            # QEMU's bucket ran dry where the low stretch that settled began
            dry = ls.ran_dry_at(rates(), drop, burst_rate or 3 * C, 1.5 * C, 0.04)
            check(tag, "when the shared burst ran out (vs QEMU's bucket running dry)",
                  ex is not None and abs(ex - dry) <= 3,
                  f"{fmt(ex - dry if ex else None, '+.1f')} s (QEMU's base held from {dry - drop[0]:+.0f} s)",
                  "within 3 s", lab_limit=short, detection=True)
        else:
            # told apart by the bucket learned from the first: without one
            # there is nothing to judge
            learned = got["burst_iops_estimate"] is not None
            check(tag, "the second burst, after a refill, is not flagged (the shared bucket learned)",
                  learned and not any(during), f"{sum(1 for v in during if v)} of {len(during)} s flagged; "
                  f"learned burst {fmt(got['burst_iops_estimate'])}", "0, with a learned bucket", lab_limit=short)
        self.fio.stop(tag)
        self.burst_ended = time.time()
        self.save_history(tag, t0)

    def qemu_spent(self, drives, t0, t_drop, burst_rate):
        """What QEMU's own per-second counts show the group's burst spent:
        (start, I/Os let through from its first I/O after t0 to the drop).
        The first I/O falls between two samples; at the burst rate it came
        that many I/Os before the later one."""
        with self.rec.lock:
            pts = [(t, sum(ops[d] for d in drives)) for t, ops in self.rec.samples
                   if t0 <= t <= t_drop and all(d in ops for d in drives)]
        i = next((k for k in range(1, len(pts)) if pts[k][1] > pts[0][1]), None)
        if i is None:
            return None, None
        (ta, _), (tb, nb) = pts[i - 1], pts[i]
        start = max(ta, tb - (nb - pts[0][1]) / burst_rate) if burst_rate else (ta + tb) / 2
        return start, pts[-1][1] - pts[0][1]

    def check_credits(self, tag, drives, t0, t_drop, burst_rate, est, short):
        """iopsd_shared_ceiling_burst_credits_estimate against QEMU's: the
        I/Os over the base from the burst's start to the drop, which is
        (QEMU's burst rate - base) x the burst's length with the mean rate
        of its seconds. Not the median's: a starved second refills QEMU's
        bucket and makes the burst longer (one run: median x length
        151,349, QEMU's I/Os over the base 120,246, its bucket 120,000).
        10%: the start is placed to +-1 s at the burst rate less the base,
        1.25% of the 120,000; past the drop QEMU holds the group at its
        base, so the end adds little (+-4% of the base for 1-2 s, 0.1%);
        iopsd subtracts its own learned base (within 2%: 2% of the credits
        over the 80 s) and may place the end a second off (1.25%); the
        guest's completions against QEMU's counts, 48 I/Os in flight,
        below 0.1%. About 5% in all, and margin for a TCG second."""
        base = 1.5 * C
        start, n = self.qemu_spent(drives, t0, t_drop, burst_rate)
        length = t_drop - start if start else None
        qemu = n - base * length if length else None
        product = (burst_rate - base) * length if length and burst_rate else None
        bucket = self.lab.cfg.groups["ib"].caps
        bucket = bucket.burst * bucket.max_length(base)
        check(tag, "the shared bucket's credits, learned (vs QEMU's I/Os over the base to the drop)",
              within(est, qemu or 0, 0.10),
              f"iopsd {fmt(est, '.0f')}, QEMU {fmt(qemu, '.0f')} ({fmt(n, '.0f')} I/Os in {fmt(length, '.1f')} s; "
              f"(median rate - base) x length {fmt(product, '.0f')}; QEMU's bucket {bucket})",
              "QEMU's +- 10%", lab_limit=short, detection=True)

    def save_history(self, tag, t0):
        """The three volumes' per-second history since t0, as iopsd kept it."""
        window = int(time.time() - t0) + 30
        try:
            h = self.lab.get_json(f"/api/v1/history?window={window}s")
        except Exception as e:  # noqa: BLE001 - a figure for the replay, not a check
            log(f"{tag}: no history ({e})")
            return
        keep = {self.disk[n] for n in ("ib1", "ib2", "ib3")}
        h["devices"] = [d for d in h.get("devices", []) if d.get("name") in keep]
        with open(os.path.join(ls.BUILDDIR, f"lab-cloud-history-{tag}.json"), "w") as f:
            json.dump(h, f)

    # NVMe native multipath

    @scenario("mpath")
    def mpath(self):
        head = self.disk["mp"]
        paths = sorted(self.lab.sh(f"ls /sys/block | grep -E '^{head[:-2]}c[0-9]+{head[-2:]}$' || true").split())
        check("mpath", "the guest has a head and hidden paths", len(paths) == 2, f"{head}: {paths}", "2 paths")
        t0 = time.time()
        self.load("mp", [(f"/dev/{head}", "randread", "4k", 16, 0)], runtime=50)
        time.sleep(40)
        dev = api_device(self.lab, head) or {}
        iops = sampled(self.lab, head, 5, lambda x: dig(x, "rates", "iops", "total"))
        inst = [v for _, v in self.rec.series("main", "iopsd_instance_iops", time.time() - 5)]
        counted = self.lab.sh("grep -E ' nvme' /proc/diskstats")
        j = self.fio.wait("mp", timeout=60)
        fio_iops = j["jobs"][0]["read"]["iops"] if j else None
        log(f"diskstats: {' | '.join(' '.join(line.split()[2:4]) for line in counted.splitlines())}")
        check("mpath", "the head's IOPS vs fio's", within(median(iops), fio_iops or 0, 0.01),
              f"iopsd {fmt(median(iops))}, fio {fmt(fio_iops)}", "within 1%")
        check("mpath", "[instance] counts the namespace once", inst and within(median(inst), fio_iops or 0, 0.02),
              f"{fmt(median(inst))} (fio {fmt(fio_iops)})", "within 2% of fio, not twice")
        ce = dev.get("ceiling") or {}
        check("mpath", "the ceiling at 800 on the head", within(ce.get("iops_estimate"), 8 * C // 10, 0.02),
              fmt(ce.get("iops_estimate")), f"{8 * C // 10} +- 2%", detection=True)
        others = [d["name"] for d in self.lab.get_json("/api/v1/devices")["devices"] if d["name"] in paths]
        check("mpath", "hidden paths only as the head's members, all of them",
              not others and sorted(dev.get("members") or []) == paths,
              f"listed {others}, members {dev.get('members')}", f"not listed on their own, members {paths}")
        probe = [lab for lab, _ in self.rec.labels_of("main", "iopsd_probe_info", t0) if lab.get("probe") == "mp"]
        check("mpath", "the probe on /mnt/mp targets the head", probe and probe[0].get("device") == head,
              probe[0].get("device") if probe else "no probe_info", head)

    @scenario("dmi")
    def dmi(self):
        # Prometheus scrapes every second: the first scrapes after it started
        info = self.rec.wait(lambda: [lab for lab, _ in self.rec.labels_of("main", "iopsd_instance_type_info",
                                                                           time.time() - 30)], 30) or []
        st = self.lab.get_json("/api/v1/status").get("instance") or {}
        check("dmi", "the instance type in iopsd_instance_type_info and /api/v1/status",
              info and info[0].get("instance_type") == "m5.large" and info[0].get("vendor") == "Amazon EC2"
              and st.get("type") == "m5.large" and st.get("vendor") == "Amazon EC2",
              f"metric {info[0] if info else None}, status {st}", "m5.large, Amazon EC2")


def run(tmp):
    cfg = iopsdlab.LabConfig.parse(LAB)
    deb = ls.package()
    rules = ls.compress_rules(os.path.join(ls.SRCDIR, "contrib", "prometheus", "rules"), tmp)
    name = f"cloud{os.getpid()}"
    lab = iopsdlab.Lab(cfg, name=name, state_dir=os.path.join(tmp, name), deb=deb, extra_ports=[ls.DECLARED_PORT],
                       prometheus_rules=rules, prometheus_interval=f"{ls.EVAL:g}s",
                       console_copy=os.path.join(tmp, "console.log"), log=log, instance_type="m5.large")
    with lab:
        lab.serve()
        mp = cfg.volumes["mp"].disk
        paths = lab.sh(f"ls /sys/block | grep -E '^{mp[:-2]}(c[0-9]+)?{mp[-2:]}$'").split()
        lab.configure_iopsd(IOPSD_CONF.format(inst=10 * C, mp_disks="|".join(paths)))
        lab.start_prometheus()
        t = time.time()
        guest = float(lab.sh("date +%s.%N"))
        rec = ls.Recorder(lab)
        rec.start()
        sc = Cloud(lab, rec)
        sc.clock_offset = guest - (t + time.time()) / 2
        log(f"lab up in {lab.t_up:.0f} s; {', '.join(f'{n}={d}' for n, d in sc.disk.items())}; "
            f"the host's load {open('/proc/loadavg').read().split()[:3]}")
        only = {n for n in os.environ.get("IOPSD_LAB_CLOUD_ONLY", "").split(",") if n}
        want = lambda n: not only or n in only  # noqa: E731
        if want("unit"):
            r = lab.run("iopsd --check-config --config /etc/iopsd/iopsd.conf", check=False)
            out = r.stdout + r.stderr
            check("unit", "--check-config prints the limits io1 iops=1000 derives", "io1" in out
                  and "256k" in out.lower() and str(C) in out, out.strip()[-600:], "io1, 1000 IOPS, 256k units")
        for n in ("dmi", "unit", "rw", "bps", "mpath", "instburst"):
            if want(n):
                getattr(sc, n)()
        if want("instburst"):
            sc.instburst(second=True)
        rec.stop_ev.set()
        rec.join(10)
    wall = time.monotonic() - ls.T_START
    with open(os.path.join(ls.BUILDDIR, "lab-cloud.json"), "w") as f:
        json.dump({"wall_seconds": wall, "scale": ls.SCALE, "results": ls.RESULTS, "superseded": ls.SUPERSEDED}, f,
                  indent=1)
    return ls.verdict(wall, ls.SCALE)


def main():
    return ls.lab_main("lab-cloud", run)


if __name__ == "__main__":
    sys.exit(main())
