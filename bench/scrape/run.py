#!/usr/bin/env python3
"""bench/scrape: how fast iopsd serves /metrics next to node_exporter, and
whether scrape load moves iopsd's probe latency.

On one host, in one run:
  * a procfs/sysfs tree with 64 NVMe volumes (make-tree.py) that both
    iopsd and node_exporter (diskstats + pressure collectors only) read, so
    both serve the same 64 devices; iopsd declares an IOPS and throughput
    limit for each and runs 8 probes (4k randread, iodepth 1) on an ext4
    loop device (direct I/O) backed by a file on the host's /var/tmp disk;
  * wrk (-t2 -c16, then -t1 -c1 as a Prometheus server scrapes a target)
    against each server's /metrics, without and with Accept-Encoding: gzip
    (what Prometheus sends): requests/s, p50, p99;
  * iopsd's probe latency (the p50 of every probe run, from
    /api/v1/history) in three phases, interleaved over four cycles: idle;
    idle but with every CPU kept busy by nice-19 spinners (a VM's vCPU that
    never halts completes I/O faster than one woken from idle, which would
    otherwise pass for an effect of the load); and under wrk load on iopsd
    (gzip, 16 connections).

Needs root (loop device, mount), wrk, prometheus-node-exporter.
usage: run.py [--iopsd PATH] [--duration SECONDS] [--out FILE.json]"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
N_DEVICES = 64
N_PROBES = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout.strip()


def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def wait_http(url, proc, what):
    for _ in range(200):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            get(url)
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} does not answer {url}")


def to_ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url, seconds, gzip, connections=16, niced=False):
    threads = 2 if connections > 1 else 1
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if gzip:
        cmd[1:1] = ["-H", "Accept-Encoding: gzip"]
    if niced:
        # the client at nice 19, like the spinners: on a 2-CPU host the load
        # generator's own CPU would otherwise be counted as iopsd's doing
        cmd[0:0] = ["nice", "-n", "19"]
    out = run(*cmd)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {}
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        lat[pct] = to_ms(m.group(1), m.group(2))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": lat["50"], "p99_ms": lat["99"],
            "non_2xx": int(errors.group(1)) if errors else 0, "command": " ".join(cmd)}


def iopsd_config(tmp, port, mnt):
    text = f"[global]\nlisten_address=127.0.0.1:{port}\nstate_directory={tmp}/state\n\n"
    for i in range(N_DEVICES):
        text += f"[device nvme{i}n1]\niops_limit=3000\nthroughput_limit=125m\n\n"
    for i in range(N_PROBES):
        os.makedirs(f"{mnt}/p{i}", exist_ok=True)
        text += (f"[probe{i}]\nrw=randread\nbs=4k\nsize=8m\ndirectory={mnt}/p{i}\niodepth=1\n"
                 f"runtime=200ms\ninterval=2s\nrate_iops=500\n\n")
    return text


def phase_p50s(port, t0, t1):
    """Per-run p50 latencies (seconds) of every probe with a run starting in [t0, t1)."""
    window = int(time.time() - t0) + 10
    # one device keeps the answer small: only the probes' series matter here
    doc = json.loads(get(f"http://127.0.0.1:{port}/api/v1/history?window={window}s&device=nvme0n1"))
    out = []
    for p in doc["probes"]:
        s = p["series"]
        out += [v for t, v in zip(s["time"], s["p50_seconds"]) if t0 <= t < t1 and v is not None]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iopsd", default=os.path.join(HERE, "..", "..", "build", "daemon", "iopsd"))
    ap.add_argument("--duration", type=int, default=20, help="seconds of each wrk run and of each probe phase")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/scrape needs root (loop device and mount)")
    for tool in ("wrk", "prometheus-node-exporter", "losetup", "mkfs.ext4"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not installed (contrib/install-deps.sh --tests)")

    tmp = tempfile.mkdtemp(prefix="iopsd-bench-scrape-")
    backing = tempfile.NamedTemporaryFile(prefix="iopsd-bench-scrape-", dir="/var/tmp", delete=False).name
    mnt = f"{tmp}/mnt"
    os.makedirs(mnt)
    os.makedirs(f"{tmp}/state")
    loop = None
    procs = []
    try:
        run(sys.executable, os.path.join(HERE, "make-tree.py"), f"{tmp}/tree", str(N_DEVICES))
        with open(backing, "wb") as f:
            f.truncate(128 << 20)
        loop = run("losetup", "--direct-io=on", "--find", "--show", backing)
        run("mkfs.ext4", "-q", "-F", loop)
        run("mount", loop, mnt)

        iport, nport = free_port(), free_port()
        with open(f"{tmp}/iopsd.conf", "w") as f:
            f.write(iopsd_config(tmp, iport, mnt))
        tree = ["--path.procfs", f"{tmp}/tree/proc", "--path.sysfs", f"{tmp}/tree/sys"]
        ilog, nlog = open(f"{tmp}/iopsd.log", "wb"), open(f"{tmp}/node_exporter.log", "wb")
        iopsd = subprocess.Popen([a.iopsd, "--config", f"{tmp}/iopsd.conf", *tree], stdout=ilog, stderr=ilog)
        procs.append(iopsd)
        node = subprocess.Popen(["prometheus-node-exporter", "--collector.disable-defaults", "--collector.diskstats",
                                 "--collector.pressure", f"--path.procfs={tmp}/tree/proc",
                                 f"--path.sysfs={tmp}/tree/sys", f"--web.listen-address=127.0.0.1:{nport}"],
                                stdout=nlog, stderr=nlog)
        procs.append(node)
        iurl, nurl = f"http://127.0.0.1:{iport}/metrics", f"http://127.0.0.1:{nport}/metrics"
        wait_http(iurl, iopsd, "iopsd")
        wait_http(nurl, node, "node_exporter")
        time.sleep(3)  # rates need two samples; every probe runs once

        itext, ntext = get(iurl).decode(), get(nurl).decode()
        sizes = {
            "iopsd_bytes": len(itext),
            "iopsd_gzip_bytes": len(get(iurl, {"Accept-Encoding": "gzip"})),
            "node_exporter_bytes": len(ntext),
            "iopsd_devices": itext.count("iopsd_device_reads_completed_total{"),
            "node_exporter_devices": ntext.count("node_disk_reads_completed_total{"),
            "iopsd_probes": itext.count("iopsd_probe_runs_total{"),
            "iopsd_render_seconds": float(re.search(r"^iopsd_snapshot_render_seconds (\S+)$", itext, re.M).group(1)),
        }
        assert sizes["iopsd_devices"] == N_DEVICES and sizes["node_exporter_devices"] == N_DEVICES, sizes
        assert sizes["iopsd_probes"] == N_PROBES, sizes

        # wrk: requests/s and latency, 16 connections, then 1
        results = {"iopsd": wrk(iurl, a.duration // 2, False),
                   "iopsd_gzip": wrk(iurl, a.duration // 2, True),
                   "node_exporter": wrk(nurl, a.duration // 2, False),
                   "node_exporter_gzip": wrk(nurl, a.duration // 2, True),
                   "iopsd_c1": wrk(iurl, 5, False, 1),
                   "iopsd_gzip_c1": wrk(iurl, 5, True, 1),
                   "node_exporter_c1": wrk(nurl, 5, False, 1),
                   "node_exporter_gzip_c1": wrk(nurl, 5, True, 1)}

        # probe latency: cycles of idle, CPUs busy at nice 19, and wrk load
        # on iopsd (gzip, 16 connections), interleaved so that whatever
        # else the host does falls on every phase alike
        phases = {"idle": [], "busy": [], "load": [], "load_niced": []}
        block = max(2, a.duration // 4)
        for _ in range(4):
            t0 = time.time()
            time.sleep(block)
            phases["idle"].append((t0, time.time()))
            t0 = time.time()
            spinners = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"])
                        for _ in range(os.cpu_count() or 1)]
            time.sleep(block)
            for sp in spinners:
                sp.kill()
                sp.wait()
            phases["busy"].append((t0, time.time()))
            t0 = time.time()
            wrk(iurl, block, True)
            phases["load"].append((t0, time.time()))
            t0 = time.time()
            wrk(iurl, block, True, niced=True)
            phases["load_niced"].append((t0, time.time()))
        probe = {}
        for phase, spans in phases.items():
            p50s = [v for t0, t1 in spans for v in phase_p50s(iport, t0, t1)]
            probe[f"{phase}_runs"] = len(p50s)
            probe[f"{phase}_p50_us"] = statistics.median(p50s) * 1e6
        probe["change_vs_idle_percent"] = (probe["load_p50_us"] / probe["idle_p50_us"] - 1) * 100
        probe["change_vs_busy_percent"] = (probe["load_p50_us"] / probe["busy_p50_us"] - 1) * 100
        probe["niced_change_vs_busy_percent"] = (probe["load_niced_p50_us"] / probe["busy_p50_us"] - 1) * 100
        with open("/proc/loadavg") as f:
            loadavg = f.read().split()[:3]
        report = {"sizes": sizes, "wrk": results, "probe_latency": probe, "loadavg_after": loadavg,
                  "nproc": os.cpu_count()}
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["umount", mnt], capture_output=True)
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        os.unlink(backing)
        shutil.rmtree(tmp, ignore_errors=True)

    w = report["wrk"]
    print(f"/metrics of {N_DEVICES} devices and {N_PROBES} probes: iopsd {sizes['iopsd_bytes']} bytes "
          f"({sizes['iopsd_gzip_bytes']} gzip'd), node_exporter {sizes['node_exporter_bytes']} bytes; "
          f"iopsd pre-rendered what was scraped (text, gzip'd) in {sizes['iopsd_render_seconds'] * 1000:.1f} ms "
          f"in the publish before the figures were taken")
    print("| server | encoding | connections | requests/s | p50 | p99 |")
    print("|---|---|---:|---:|---:|---:|")
    for suffix, conns in [("", 16), ("_c1", 1)]:
        for key, name, enc in [("iopsd", "iopsd", "identity"), ("iopsd_gzip", "iopsd", "gzip"),
                               ("node_exporter", "node_exporter", "identity"),
                               ("node_exporter_gzip", "node_exporter", "gzip")]:
            r = w[key + suffix]
            print(f"| {name} | {enc} | {conns} | {r['rps']:.0f} | {r['p50_ms']:.3f} ms | {r['p99_ms']:.3f} ms |")
    print(f"iopsd / node_exporter requests/s: identity {w['iopsd']['rps'] / w['node_exporter']['rps']:.1f}x, "
          f"gzip {w['iopsd_gzip']['rps'] / w['node_exporter_gzip']['rps']:.1f}x")
    p = report["probe_latency"]
    print(f"probe p50 (median of per-run p50s): idle {p['idle_p50_us']:.1f} us ({p['idle_runs']} runs), "
          f"CPUs busy at nice 19 {p['busy_p50_us']:.1f} us ({p['busy_runs']} runs), "
          f"under wrk load {p['load_p50_us']:.1f} us ({p['load_runs']} runs): "
          f"{p['change_vs_idle_percent']:+.1f}% vs idle, {p['change_vs_busy_percent']:+.1f}% vs busy")
    print(f"with the wrk client itself at nice 19: {p['load_niced_p50_us']:.1f} us ({p['load_niced_runs']} runs): "
          f"{p['niced_change_vs_busy_percent']:+.1f}% vs busy")
    print(f"load average after: {' '.join(report['loadavg_after'])} on {report['nproc']} CPUs")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
