#!/usr/bin/env python3
"""The daemon's cost of watching the disks, next to node_exporter's.

Runs iopsd (no probes: only the 1 s device sampler, the registry and the
HTTP server) and node_exporter with only its diskstats and pressure
collectors, scrapes both /metrics every second for SECONDS, and reports each
process's CPU time over that window (the sum of its threads'
/proc/PID/task/TID/schedstat, in ns) and
its memory at the end: VmRSS (and VmHWM, the peak), split into anonymous
and file-backed pages, and PSS (shared library pages divided among the
processes that map them).

usage: vs-node-exporter.py [--seconds 60] [--iopsd build/daemon/iopsd]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sidebyside import free_port, memory_kib, scrape, stop_all, wait_http  # noqa: E402


def cpu_seconds(pid):
    """On-CPU time of every thread (schedstat: nanoseconds, where
    /proc/PID/stat counts 10 ms ticks), plus what exited threads used."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # exited meanwhile
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    dead = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime + cstime
    return total / 1e9 + dead


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--iopsd", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "daemon",
                                                    "iopsd"))
    args = ap.parse_args()
    exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if not exporter:
        sys.exit("node_exporter not installed (Debian: prometheus-node-exporter)")

    tmp = tempfile.mkdtemp(prefix="iopsd-bench-sampler-")
    iopsd_port, ne_port = free_port(), free_port()
    conf = os.path.join(tmp, "iopsd.conf")
    with open(conf, "w") as f:
        f.write(f"[global]\nlisten_address=127.0.0.1:{iopsd_port}\nstate_directory={tmp}/state\n"
                "sample_interval=1s\nlog_level=warning\n")
    procs = {}
    try:
        procs["iopsd"] = subprocess.Popen([args.iopsd, "--config", conf], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
        procs["node_exporter"] = subprocess.Popen(
            [exporter, f"--web.listen-address=127.0.0.1:{ne_port}", "--collector.disable-defaults",
             "--collector.diskstats", "--collector.pressure"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ports = {"iopsd": iopsd_port, "node_exporter": ne_port}
        for name, p in procs.items():
            wait_http(ports[name], p)
        # warm up: both have served a few scrapes and reached steady state
        for _ in range(5):
            for name in procs:
                scrape(ports[name])
            time.sleep(1)
        cpu0 = {name: cpu_seconds(p.pid) for name, p in procs.items()}
        sizes = {}
        t0 = time.monotonic()
        for i in range(args.seconds):
            for name in procs:
                sizes[name] = len(scrape(ports[name]))
            time.sleep(max(0.0, t0 + i + 1 - time.monotonic()))
        wall = time.monotonic() - t0
        print(f"{args.seconds} s, both scraped every second; CPU over the window, memory at its end")
        print(f"{'':14} {'CPU s':>7} {'CPU %':>7} {'VmRSS KiB':>10} {'VmHWM KiB':>10} {'RssAnon':>8} "
              f"{'RssFile':>8} {'Pss KiB':>8} {'/metrics bytes':>15}")
        for name, p in procs.items():
            cpu = cpu_seconds(p.pid) - cpu0[name]
            m = memory_kib(p.pid)
            print(f"{name:14} {cpu:7.3f} {100 * cpu / wall:6.3f}% {m['VmRSS']:10} {m['VmHWM']:10} "
                  f"{m['RssAnon']:8} {m['RssFile']:8} {m['Pss']:8} {sizes[name]:15}")
    finally:
        stop_all(procs)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
