#!/usr/bin/env python3
"""The fleet, simulated with real parts: 50 iopsd on one machine, each on
its own --path.procfs/--path.sysfs tree of 16 NVMe volumes (fleetsim.py)
with a declared 1000 IOPS limit each, advanced once a second: most volumes
idle or busy below their limits (at most 47% of them); host07, host19 and host33 each with one
volume flat at its limit while its queue grows, from 0, 10 and 20 s;
host42 with md0, a RAID0 over nvme14n1 (flat at 2000 IOPS from 30 s,
nothing declared) and nvme15n1; host49 listed and never started; host11
with volume_type=gp2 on its nvme1n1 (101 GiB: a 303-IOPS baseline and
gp2's burst bucket, at about 50 IOPS, its bucket full) and a probe on an
ext4 loop device of its own (its backing file in memory).

One real Prometheus scrapes them through the shipped prometheus-fleet.yml
(its file_sd, its relabelling; the interval 1 s, the example hosts
dropped), with the shipped rules (10 times shorter) and the shipped
Alertmanager; it remote-writes into Debian's victoria-metrics, where
vmalert evaluates the shipped recording rules.

  - the alerts that reach the webhook are exactly: IopsdDeviceAtLimit on
    the three volumes, IopsdDeviceThrottled on host42's nvme14n1 (md0's
    own alerts inhibited), IopsdDown on host49; no other host or volume,
    up to past IopsdDeviceSaturated's for: on the volumes at their limit;
  - every query of the Grafana dashboard, its variables filled in, runs
    without error on Prometheus and on VictoriaMetrics, and has data:
    with host07's nvme3n1 selected, or, for the burst bucket and probe
    panels, host11's nvme1n1 and its probe; except the two panels of EBS's
    own counters (NO_FLEET_DATA: checked for errors only); host11's
    bucket reads full;
  - "Volumes at their ceiling across hosts" lists exactly host07, host19
    and host33's volumes and host42's md0 and nvme14n1; "Top 10 by time
    at limit" the three, in the order they reached the limit, each with
    more than 20 times any other's;
  - the recording rules vmalert evaluated on VictoriaMetrics give the same
    series as Prometheus's own, and every alert expression runs there.

IOPSD_FLEET, when set, is the binary for the 50 daemons (the normal
build's when the suite runs under ASan: 50 sanitized daemons take memory
and CPU a CI runner does not have; tests/run.sh sets it); IOPSD otherwise.
The test fails when it takes more than 5 minutes (WALL_LIMIT), CI's
budget for it."""
import os
import re
import shutil
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import SRCDIR, Ext4Mount, require_tool  # noqa: E402
from alertstack import (Alertmanager, Prometheus, VictoriaMetrics, VMAlert, Webhook,  # noqa: E402
                        alerts_of, log)
import fleetsim  # noqa: E402

IOPSD = os.environ.get("IOPSD_FLEET") or os.environ.get("IOPSD", "iopsd")
N_HOSTS, N_VOLUMES = 50, 16
AT_LIMIT = {7: (3, 0), 19: (11, 10), 33: (5, 20)}  # host: (volume, from s)
RAID, RAID_FROM, DOWN = 42, 30, 49
QUIET_UNTIL = 130  # s after the start: past IopsdDeviceSaturated's for: (60 s + its window) on host33
WALL_LIMIT = 300  # s: the whole test, in CI (issue 24)
# host11: nvme1n1 a gp2 volume (iopsd's burst model), a probe of its own
CLOUD, GP2 = 11, 1
PROBE = "fleet"
# the panels whose data is host11's: evaluated with host11, nvme1n1 and
# the probe selected
CLOUD_PANELS = {"Burst balance", "Probe latency", "Probe latency quantiles", "Probe IOPS (last run)"}
EBS_LOG_PAGE = ("EBS's own counters: the NVMe log page 0xD0 that only an Amazon EBS controller answers "
                "(an ioctl on /dev/nvmeN, not read from --path.sysfs); tests/unit/test-ebs-nvme.c parses one")
# the panels no part of the fleet can give data, and why: checked for errors only
NO_FLEET_DATA = {"Time over the provisioned limits": EBS_LOG_PAGE, "EBS latency p99": EBS_LOG_PAGE,
                 "Claims held at a ceiling": "Kubernetes: no kubelet mount paths and no kube-state-metrics "
                 "(contrib/prometheus/tests/iopsd-rules.test.yml tests the join)"}


def sanitized(binary):
    """Whether binary was built with AddressSanitizer (its runtime linked in)."""
    try:
        with open(shutil.which(binary) or binary, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def check(cond, msg, failures):
    log(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def profile(h, i):
    if h in AT_LIMIT and AT_LIMIT[h][0] == i:
        return fleetsim.flat(1000, AT_LIMIT[h][1], before=fleetsim.busy(300))
    if h == RAID and i == N_VOLUMES - 2:
        return fleetsim.flat(2000, RAID_FROM, before=fleetsim.busy(300))
    if h == CLOUD and i == GP2:
        # 35-65 IOPS: below its 303 baseline even read 3 times too high
        # by a daemon catching up (below), so that its bucket stays full
        return fleetsim.busy(50)
    # busy at 200..360 IOPS (util < 0.7): at most 47% of the limit, so that
    # even a short interval of a daemon catching up after a stall, reading
    # twice the time of a 250 ms step, stays below it
    r = (h * 31 + i * 17) % 10
    return fleetsim.idle if r < 5 else fleetsim.busy(40 * r)


def prometheus_config(tmp, vm):
    with open(os.path.join(SRCDIR, "contrib", "prometheus", "prometheus-fleet.yml")) as f:
        cfg = yaml.safe_load(f)
    cfg["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    job = cfg["scrape_configs"][0]
    job["scrape_interval"] = "1s"
    del job["static_configs"]  # the example hosts
    files = job["file_sd_configs"][0]["files"]
    job["file_sd_configs"][0]["files"] = [os.path.join(tmp, "targets", os.path.basename(p)) for p in files]
    cfg["remote_write"] = [{
        "url": vm.write_url, "queue_config": {"batch_send_deadline": "1s"},
        # what the recording rules record comes from vmalert, on VictoriaMetrics itself
        "write_relabel_configs": [{"source_labels": ["__name__"], "regex": "iopsd:.*", "action": "drop"}]}]
    return cfg


def expected(fleet):
    out = {("IopsdDeviceAtLimit", fleet.name(h), f"nvme{v}n1") for h, (v, _) in AT_LIMIT.items()}
    out.add(("IopsdDeviceThrottled", fleet.name(RAID), f"nvme{N_VOLUMES - 2}n1"))
    out.add(("IopsdDown", fleet.name(DOWN), None))
    return out


def grafana_queries(fill):
    import json
    with open(os.path.join(SRCDIR, "contrib", "grafana", "iopsd-dashboard.json")) as f:
        d = json.load(f)
    out = []
    for p in d["panels"]:
        exprs = []
        for t in p.get("targets", []):
            e = t["expr"]
            for var, value in fill.items():
                e = re.sub(re.escape(var) + r"\b" if var[-1].isalnum() else re.escape(var), value, e)
            exprs.append(e)
        if exprs:
            out.append((p["title"], exprs))
    return out


def run_queries(api, queries, cloud_queries, failures, where):
    """Every panel's queries with host07's nvme3n1 selected; the panels of
    CLOUD_PANELS with host11's gp2 volume and probe selected instead."""
    errors, empty = [], []
    cloud = dict(cloud_queries)
    for title, exprs in queries:
        has_data = False
        for e in cloud.get(title, exprs) if title in CLOUD_PANELS else exprs:
            doc = api("query", query=e)
            if doc.get("status") != "success":
                errors.append((title, e, doc.get("error")))
            else:
                has_data |= bool(doc["data"]["result"])
        if not has_data and title not in NO_FLEET_DATA:
            empty.append(title)
        elif not has_data:
            log(f"{where}: {title}: no data, not judged: {NO_FLEET_DATA[title]}")
    n = sum(len(cloud.get(t, x) if t in CLOUD_PANELS else x) for t, x in queries)
    check(not errors, f"{where}: {n} dashboard queries without error {errors}", failures)
    check(not empty, f"{where}: every panel has data but the {len(NO_FLEET_DATA)} no part of the fleet can give "
          f"(empty: {empty})", failures)
    check(CLOUD_PANELS <= set(cloud), f"{where}: the panels {sorted(CLOUD_PANELS)} are in the dashboard",
          failures)


def ranked(api, expr):
    doc = api("query", query=expr)
    assert doc["status"] == "success", doc
    return [(r["metric"].get("host"), r["metric"].get("device"), float(r["value"][1]))
            for r in doc["data"]["result"]]


def check_rankings(name, api, fleet, failures):
    top3 = [(fleet.name(h), f"nvme{v}n1") for h, (v, _) in sorted(AT_LIMIT.items(), key=lambda x: x[1][1])]
    ceiling = ranked(api, "sort_desc(max by (instance, host, device) (avg_over_time(iopsd_device_throttled[10m])) > 0)")
    raid = {(fleet.name(RAID), f"nvme{N_VOLUMES - 2}n1"), (fleet.name(RAID), "md0")}
    # the set, not its order: under a loaded CI runner the plateau of a
    # simulated volume can drop out for seconds (the generator's 10 ms
    # thread starved), which reorders shares a few seconds apart
    check({x[:2] for x in ceiling} == set(top3) | raid,
          f"{name}: volumes at their ceiling across hosts: {[(h, d, round(v, 2)) for h, d, v in ceiling]}",
          failures)
    top10 = ranked(api, "topk(10, sum by (instance, host, device) "
                        "(increase(iopsd_device_at_ceiling_seconds_total[10m])))")
    top10.sort(key=lambda x: -x[2])  # topk's order is not the API's
    # the others: idle or busy at most 47% of their limit, they may show a
    # second or two on this loaded machine: a daemon catching up after a
    # stall samples a fraction of a second after its previous sample and
    # reads a 250 ms step of a simulated counter as 2-3 times its rate (a
    # disk's counters move continuously); the three have minutes
    rest = max([x[2] for x in top10[3:]], default=0)
    check(len(top10) == 10 and [x[:2] for x in top10[:3]] == top3 and top10[2][2] > 20 * max(rest, 1) and
          top10[0][2] > top10[1][2] > top10[2][2],
          f"{name}: top 10 by time at limit: {[(h, d, round(v)) for h, d, v in top10[:4]]} ... "
          f"({len(top10)} entries, the rest at most {max([x[2] for x in top10[3:]], default=None)} s)", failures)


def check_victoria(prom, vm, failures):
    """The recording rules vmalert evaluated on VictoriaMetrics against
    Prometheus's; every alert expression runs there."""
    for rec in ("iopsd:device:info", "iopsd:device_member_of:info", "iopsd:device_iops:sum",
                "iopsd:device_at_ceiling:ratio_rate5m"):
        p = {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("__name__", "region")))
             for r in prom.query(rec)}
        doc = vm.api("query", query=rec)
        v = {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("__name__", "region")))
             for r in doc.get("data", {}).get("result", [])}
        check(doc.get("status") == "success" and p and p == v,
              f"{rec}: {len(v)} series recorded by vmalert on VictoriaMetrics, {len(p)} by Prometheus"
              + ("" if p == v else f" (only in Prometheus: {sorted(p - v)[:2]}, only in VM: {sorted(v - p)[:2]})"),
              failures)
    bad = []
    for g in prom.api("rules")["data"]["groups"]:
        for r in g["rules"]:
            doc = vm.api("query", query=r["query"])
            if doc.get("status") != "success":
                bad.append((r["name"], doc.get("error")))
    check(not bad, f"every rule expression runs on VictoriaMetrics ({bad})", failures)


def check_cloud_host(prom, fleet, failures):
    """host11's gp2 bucket: full, the volume below its baseline all along."""
    r = prom.query(f'iopsd_device_burst_balance_ratio{{host="{fleet.name(CLOUD)}",device="nvme{GP2}n1"}}')
    v = float(r[0]["value"][1]) if r else None
    check(v is not None and v >= 0.999, f"{fleet.name(CLOUD)} nvme{GP2}n1 (gp2, below its baseline): burst "
          f"balance {v} (full)", failures)


def main():
    t_start = time.monotonic()
    require_tool("prometheus", "prometheus-alertmanager", "victoria-metrics", "vmalert")
    tmp = tempfile.mkdtemp(prefix="iopsd-fleet-", dir="/var/tmp")
    failures = []
    fleet = prom = am = hook = vm = vma = mnt = None
    try:
        # host11's probe: real I/O on a filesystem of its own, its backing
        # file in memory (the shared disk's stalls are not its latency)
        mnt = Ext4Mount("fleet-probe", 64, in_memory=True)
        probe = (f"[{PROBE}]\ndirectory={mnt.mountpoint}\nrw=randread\nbs=4k\nsize=8m\nrate_iops=20\n"
                 "runtime=1s\ninterval=2s\n")
        fleet = fleetsim.Fleet(os.path.join(tmp, "hosts"), IOPSD, N_HOSTS, N_VOLUMES, profile,
                               md={RAID}, down={DOWN}, device_keys={(CLOUD, f"nvme{GP2}n1"): "volume_type=gp2\n"},
                               host_sections={CLOUD: probe})
        os.makedirs(os.path.join(tmp, "targets"))
        fleet.write_file_sd(os.path.join(tmp, "targets", "iopsd-fleet.yml"))
        # first: its ports were picked free, not bound yet; the profiles'
        # clock held until Prometheus has scraped every daemon, so that
        # increase() sees each volume reach its limit (a Prometheus slow
        # to start on a loaded runner once clipped host07's first 10 s
        # and host19's, and their order in "Top 10 by time at limit")
        fleet.start(hold=True)
        hook = Webhook()
        am = Alertmanager(tmp, hook)
        vm = VictoriaMetrics(tmp)
        prom = Prometheus(tmp, prometheus_config(tmp, vm), am=am)
        vma = VMAlert(tmp, vm, [p for p in prom.rule_files if "recording" in p])
        log(f"{N_HOSTS - 1} iopsd started ({IOPSD}); Prometheus, Alertmanager, VictoriaMetrics, vmalert up")
        prom.wait_up(N_HOSTS - 1, timeout=90)
        fleet.generator.begin()
        log("every daemon scraped once: the profiles' clock starts")
        want = expected(fleet)

        def got(ns):
            return {(a, lb.get("host"), lb.get("device")) for _, _, a, lb, _ in alerts_of(ns, "firing")}
        hook.wait(lambda ns: want <= got(ns), 150)
        t_all = fleet.generator.elapsed()
        log(f"the expected alerts arrived by {t_all:.0f} s; waiting until {QUIET_UNTIL} s for any other")
        time.sleep(max(0.0, QUIET_UNTIL - fleet.generator.elapsed()))
        g = got(hook.notifications)
        check(g == want, f"the webhook got exactly {sorted(want, key=str)}"
              + ("" if g == want else f"; missing {sorted(want - g, key=str)}, extra {sorted(g - want, key=str)}"),
              failures)
        raid_pages = [n for n in hook.notifications if n[2]["groupLabels"].get("volume") == "md0"]
        check(len(raid_pages) == 1, f"host42's RAID0 paged {len(raid_pages)} time(s)", failures)
        check(all(n[1] == "/page" for n in hook.notifications), "every notification went to the pager", failures)

        a = fleet.instance(7)
        # $__rate_interval: Grafana's 4 scrape intervals would be 4 s; 15 s
        # covers what remote_write has not delivered to VictoriaMetrics yet
        fill = {"$instance": a, "$device": "nvme3n1", "$probe": ".*", "$__rate_interval": "15s",
                "$__range": "10m", "$__interval": "1s"}
        queries = grafana_queries(fill)
        cloud = grafana_queries(dict(fill, **{"$instance": fleet.instance(CLOUD), "$device": f"nvme{GP2}n1",
                                              "$probe": PROBE}))
        run_queries(prom.api, queries, cloud, failures, "Prometheus")
        check_cloud_host(prom, fleet, failures)
        check_rankings("Prometheus", prom.api, fleet, failures)
        run_queries(vm.api, queries, cloud, failures, "VictoriaMetrics")
        check_rankings("VictoriaMetrics", vm.api, fleet, failures)
        check_victoria(prom, vm, failures)
        errs = prom.rule_errors()
        check(not errs, f"every rule evaluated without error on Prometheus ({errs})", failures)
        if failures:
            for h, (v, _) in sorted(AT_LIMIT.items()):
                sel = f'{{host="{fleet.name(h)}",device="nvme{v}n1"}}'
                for m in ("iopsd_device_throttled", "iopsd:device_iops:sum", "iopsd_device_queue_depth"):
                    r = prom.api("query", query=f"{m}{sel}[3m]")["data"]["result"]
                    vals = [round(float(x[1]), 1) for x in r[0]["values"]] if r else []
                    log(f"  {fleet.name(h)} nvme{v}n1 {m}: {vals}")
        log(f"the generator's writes: {fleet.generator.late} of {fleet.generator.writes} more than a period late")
        rcs = fleet.stop()
        bad = {h: rc for h, rc in rcs.items() if rc != 0}
        check(not bad, f"{len(rcs)} iopsd stopped cleanly ({bad})", failures)
    finally:
        if fleet:
            fleet.stop()
        for p in (vma, prom, am, vm):
            if p:
                p.stop()
        if hook:
            hook.stop()
        if mnt:
            mnt.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.monotonic() - t_start
    check(wall <= WALL_LIMIT, f"the fleet test took {wall:.0f} s, within CI's {WALL_LIMIT} s (issue 24)" + (
        "" if wall <= WALL_LIMIT or not sanitized(IOPSD) else
        f"; the 50 daemons ran {IOPSD}, a sanitizer build: set IOPSD_FLEET to the normal build's iopsd, "
        "as tests/run.sh does"), failures)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
