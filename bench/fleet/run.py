#!/usr/bin/env python3
"""What a fleet of iopsd costs Prometheus: HOSTS simulated hosts (each an
iopsd on a fixture tree of VOLUMES volumes, tests/integration/fleetsim.py,
most idle or busy, three at their limit, one RAID0 held by a member)
scraped by one real Prometheus through contrib/prometheus/prometheus-fleet.yml
as shipped (10 s scrapes, 15 s rule evaluations, the shipped rules), once
with everything iopsd serves ("default": the fleet file's
metric_relabel_configs removed) and once with the fleet profile (the file
as shipped). node_exporter, side by side: its default collectors on this
host, and on the same fixture tree.

Figures: series per host and per volume, samples ingested per second,
Prometheus's head series and memory (Go heap in use and RSS, against an
empty Prometheus with the same rules), rule evaluation time per group;
then the same extrapolated to 1,000 and 10,000 hosts. The load average
and CPU steal before and after are printed: figures taken with a load
average above 0.5 or steal above 2% are not figures.

usage: bench/fleet/run.py [--hosts 50] [--volumes 16] [--seconds 180] [--iopsd build/daemon/iopsd]"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
os.environ.setdefault("SRCDIR", SRCDIR)
import fleetsim  # noqa: E402
from alertstack import Prometheus  # noqa: E402
from iopsdtest import free_port  # noqa: E402


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[7]  # total, steal


def machine(label, t0):
    total, steal = cpu_times()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    st = 100.0 * (steal - t0[1]) / max(1, total - t0[0])
    print(f"# {label}: load average {' '.join(load)}, CPU steal {st:.1f}% since the previous line", flush=True)
    return (total, steal), float(load[0]), st


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def samples(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def metric(text, name, **labels):
    total = None
    for line in samples(text):
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def profile(h, i):
    at_limit = {7: 3, 19: 11, 33: 5}
    if at_limit.get(h) == i:
        return fleetsim.flat(1000, 0)
    if h == 42 and i == 14:
        return fleetsim.flat(2000, 0)
    r = (h * 31 + i * 17) % 10
    return fleetsim.idle if r < 5 else fleetsim.busy(60 * r)


def fleet_config(tmp, profile_on):
    with open(os.path.join(SRCDIR, "contrib", "prometheus", "prometheus-fleet.yml")) as f:
        cfg = yaml.safe_load(f)
    job = cfg["scrape_configs"][0]
    del job["static_configs"]
    job["file_sd_configs"][0]["files"] = [os.path.join(tmp, "targets", "iopsd-fleet.yml")]
    if not profile_on:
        job.pop("metric_relabel_configs", None)
    return cfg


def prom_figures(prom, seconds):
    """Prometheus's own figures after `seconds` of scraping."""
    m1 = scrape(f"{prom.url}/metrics")
    t1 = time.monotonic()
    time.sleep(seconds)
    m2 = scrape(f"{prom.url}/metrics")
    dt = time.monotonic() - t1
    # the counter appears with the first sample appended
    appended = ((metric(m2, "prometheus_tsdb_head_samples_appended_total") or 0) -
                (metric(m1, "prometheus_tsdb_head_samples_appended_total") or 0)) / dt
    groups = {}
    for line in samples(m2):
        m = re.match(r'prometheus_rule_group_last_duration_seconds\{rule_group="[^"]*;([^"]+)"\} (\S+)', line)
        if m:
            groups[m.group(1)] = float(m.group(2))
    return {"head_series": metric(m2, "prometheus_tsdb_head_series"),
            "heap": metric(m2, "go_memstats_heap_inuse_bytes"), "rss": metric(m2, "process_resident_memory_bytes"),
            "appended_per_s": appended, "groups": groups}


def run_prometheus(tmp, name, cfg, warmup):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    prom = Prometheus(d, cfg, minute=60)
    time.sleep(warmup)
    return prom


def node_exporter_series(args, root):
    out = {}
    for name, extra in (("this host", []),
                        ("the fixture tree", [f"--path.procfs={root}/proc", f"--path.sysfs={root}/sys"])):
        port = free_port()
        p = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{port}", *extra],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    text = scrape(f"http://127.0.0.1:{port}/metrics")
                    break
                except OSError:
                    time.sleep(0.1)
            s = samples(text)
            out[name] = (len(s), len([x for x in s if x.startswith("node_disk_")]),
                         len([x for x in s if x.startswith("node_filesystem_")]))
        finally:
            p.terminate()
            p.wait()
    return out


def per_host(text, volumes):
    s = samples(text)
    dev = [x for x in s if 'device="' in x.split(" ")[0]]
    return len(s), len(dev) / volumes, len(s) - len(dev)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--volumes", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=180, help="of scraping per configuration, after a warm-up")
    ap.add_argument("--iopsd", default=os.path.join(SRCDIR, "build", "daemon", "iopsd"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="iopsd-bench-fleet-", dir="/var/tmp")
    t0 = cpu_times()
    t0, load0, _ = machine("before", t0)
    fleet = prom = None
    results = {}
    try:
        fleet = fleetsim.Fleet(os.path.join(tmp, "hosts"), os.path.abspath(args.iopsd), args.hosts, args.volumes,
                               profile, md={42} if args.hosts > 42 else set())
        os.makedirs(os.path.join(tmp, "targets"))
        fleet.write_file_sd(os.path.join(tmp, "targets", "iopsd-fleet.yml"))
        empty_cfg = fleet_config(tmp, True)
        empty_cfg["scrape_configs"] = []
        prom = run_prometheus(tmp, "empty", empty_cfg, 30)
        results["empty"] = prom_figures(prom, 30)
        prom.stop()
        fleet.start()
        time.sleep(3)
        text = scrape(f"http://{fleet.instance(0)}/metrics")
        results["host"] = per_host(text, args.volumes)
        for name, on in (("default", False), ("fleet profile", True)):
            prom = run_prometheus(tmp, name.replace(" ", "-"), fleet_config(tmp, on), 60)
            results[name] = prom_figures(prom, args.seconds)
            results[name]["post"] = prom.query("avg(scrape_samples_post_metric_relabeling)")[0]["value"][1]
            results[name]["up"] = prom.query("count(up == 1)")[0]["value"][1]
            prom.stop()
        t0, load1, steal = machine("after", t0)
        results["node_exporter"] = node_exporter_series(args, fleet.hosts[0].root)
    finally:
        if prom:
            prom.stop()  # again, if a figure failed: stop() is idempotent
        if fleet:
            fleet.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    report(args, results)


def report(args, r):
    total, per_vol, host_only = r["host"]
    print(f"\niopsd on one fixture host of {args.volumes} volumes, everything it serves: {total} series "
          f"({per_vol:.1f} per volume, {host_only} for the host itself)")
    for name, (n, disk, fs) in r["node_exporter"].items():
        print(f"node_exporter, default collectors, on {name}: {n} series ({disk} node_disk_*, {fs} node_filesystem_*)")
    e = r["empty"]
    print(f"\nPrometheus with the rules and no targets: head {e['head_series']:.0f} series, heap in use "
          f"{e['heap'] / 2**20:.1f} MiB, RSS {e['rss'] / 2**20:.1f} MiB\n")
    print("| | default | fleet profile |\n|---|---|---|")
    d, f = r["default"], r["fleet profile"]
    rows = [("hosts up", d["up"], f["up"]),
            ("series per host (scraped, after relabelling)", f"{float(d['post']):.0f}", f"{float(f['post']):.0f}"),
            ("head series", f"{d['head_series']:.0f}", f"{f['head_series']:.0f}"),
            ("samples appended/s", f"{d['appended_per_s']:.0f}", f"{f['appended_per_s']:.0f}"),
            ("Go heap in use, MiB (minus the empty Prometheus)", f"{(d['heap'] - e['heap']) / 2**20:.1f}",
             f"{(f['heap'] - e['heap']) / 2**20:.1f}"),
            ("RSS, MiB", f"{d['rss'] / 2**20:.1f}", f"{f['rss'] / 2**20:.1f}")]
    for g in sorted(d["groups"]):
        rows.append((f"rule group {g}, last evaluation ms", f"{d['groups'][g] * 1000:.1f}",
                     f"{f['groups'].get(g, 0) * 1000:.1f}"))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    print("\nExtrapolated, linear in series: series = per-host series x hosts; samples/s = series / 10 s "
          "(+ the rules' output); memory at the measured RSS over the empty Prometheus per head series "
          "(Go's heap in use moves with its GC cycles, RSS less); rule time at the measured time per head "
          "series, both groups:\n")
    print("| hosts | profile | series | samples/s | RSS per head series | memory GiB | rule evaluation s |\n"
          "|---|---|---|---|---|---|---|")
    for hosts in (1000, 10000):
        for name, x in (("default", d), ("fleet profile", f)):
            per = float(x["post"])
            bytes_per_series = (x["rss"] - e["rss"]) / x["head_series"]
            rule_s = sum(x["groups"].values())
            print(f"| {hosts} | {name} | {per * hosts:,.0f} | {x['appended_per_s'] * hosts / args.hosts:,.0f} | "
                  f"{bytes_per_series / 1024:.1f} KiB | {bytes_per_series * x['head_series'] * hosts / args.hosts / 2**30:.1f} | "
                  f"{rule_s * hosts / args.hosts:.1f} |")


if __name__ == "__main__":
    main()
