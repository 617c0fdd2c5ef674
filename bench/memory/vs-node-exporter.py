#!/usr/bin/env python3
"""Resident memory of iopsd next to node_exporter's, and where iopsd's pages
go.

Runs iopsd with its built-in default probe (4k randread at 50 IOPS for 1 s
every 10 s on a 64 MiB file) in a state directory of its own, and
node_exporter with its default collectors (or those given), scrapes both
/metrics every second for SECONDS, then reports for each process VmRSS,
VmHWM, RssAnon, RssFile and Pss, and for iopsd a breakdown by mapping from
/proc/PID/smaps: anonymous pages (the heap, thread stacks, the relocated
and written data of each library) and file pages (the iopsd binary and each
shared library), and the split between what is iopsd's own (anonymous
pages, and its binary's file pages) and shared-library file pages.

With --floor (needs cc and readelf), also an empty program linked against
the same shared libraries as iopsd (its DT_NEEDED list), which only sleeps:
the pages that loading and initializing those libraries alone keep
resident; and the same program without libmicrohttpd and gnutls (which
Debian's libmicrohttpd loads, with its own dependencies, whether or not TLS
is configured), without libsystemd (sd-event, sd_notify), and without
both: the most that replacing each could save, since a replacement would
bring pages of its own.

usage: vs-node-exporter.py [--seconds 60] [--iopsd build/daemon/iopsd]
                           [--collectors diskstats,pressure] [--floor]
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sidebyside import free_port, memory_kib, scrape, stop_all, wait_http  # noqa: E402


def mappings(pid, binary):
    """{(kind, name): KiB} from smaps: kind 'anon' or 'file'. Anonymous
    pages inside a library's mappings (its relocated and written data) are
    counted as that library's anon; file pages as its file."""
    out = collections.Counter()
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                size = (int(m.group(2), 16) - int(m.group(1), 16)) >> 10
                path = m.group(3)
                if path == binary:
                    name = "iopsd (binary)"
                elif path.startswith("/"):
                    name = os.path.basename(path)
                elif path:
                    name = path
                else:
                    # glibc thread stacks: 8 MiB mappings (after a guard page)
                    name = "thread stacks" if size in (8192, 8188) else "other anonymous"
                continue
            key, _, value = line.partition(":")
            if key == "Rss":
                rss = int(value.split()[0])
                out[("file", name)] += rss
            elif key == "Anonymous":
                anon = int(value.split()[0])
                out[("anon", name)] += anon
                out[("file", name)] -= anon
    return out


# --floor's programs: (name, the libraries of iopsd's DT_NEEDED list left out)
FLOORS = [("libraries only", ()),
          ("  no mhd+gnutls", ("libmicrohttpd.so", "libgnutls.so")),
          ("  no libsystemd", ("libsystemd.so",)),
          ("  neither", ("libmicrohttpd.so", "libgnutls.so", "libsystemd.so"))]


def start_floor(binary, tmp, name, drop):
    """An empty, sleeping program with iopsd's DT_NEEDED libraries but
    those in `drop` (name prefixes)."""
    dyn = subprocess.run(["readelf", "-d", binary], stdout=subprocess.PIPE, check=True).stdout.decode()
    libs = [f"-l:{n}" for n in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dyn)
            if not n.startswith(("libc.so", "ld-linux") + drop)]
    exe = os.path.join(tmp, "floor-" + name.strip().replace(" ", "-"))
    subprocess.run(["cc", "-O2", "-x", "c", "-", "-o", exe, "-Wl,--no-as-needed"] + libs,
                   input=b"#include <unistd.h>\nint main(void) { pause(); return 0; }\n", check=True)
    return subprocess.Popen([exe])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--iopsd", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "daemon",
                                                    "iopsd"))
    ap.add_argument("--collectors", default="", help="node_exporter collectors only (default: its defaults)")
    ap.add_argument("--floor", action="store_true", 
                    help="also empty programs with iopsd's libraries: all, and without some")
    args = ap.parse_args()
    exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if not exporter:
        sys.exit("node_exporter not installed (Debian: prometheus-node-exporter)")
    binary = os.path.realpath(args.iopsd)

    tmp = tempfile.mkdtemp(prefix="iopsd-bench-memory-", dir="/var/tmp")
    iopsd_port, ne_port = free_port(), free_port()
    conf = os.path.join(tmp, "iopsd.conf")
    state = os.path.join(tmp, "state")
    os.mkdir(state)
    # the built-in default's probe, in a directory of its own
    with open(conf, "w") as f:
        f.write(f"[global]\nlisten_address=127.0.0.1:{iopsd_port}\nstate_directory={state}\nlog_level=warning\n"
                f"[default]\nrw=randread\nbs=4k\nsize=64m\ndirectory={state}\niodepth=1\nrate_iops=50\n"
                "runtime=1s\ninterval=10s\n")
    ne_args = [exporter, f"--web.listen-address=127.0.0.1:{ne_port}"]
    if args.collectors:
        ne_args.append("--collector.disable-defaults")
        ne_args += [f"--collector.{c}" for c in args.collectors.split(",")]
    procs = {}
    try:
        procs["iopsd"] = subprocess.Popen([binary, "--config", conf], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
        procs["node_exporter"] = subprocess.Popen(ne_args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ports = {"iopsd": iopsd_port, "node_exporter": ne_port}
        for name, p in procs.items():
            wait_http(ports[name], p)
        if args.floor:
            for name, drop in FLOORS:
                procs[name] = start_floor(binary, tmp, name, drop)
        t0 = time.monotonic()
        for i in range(args.seconds):
            for name in ports:
                scrape(ports[name])
            time.sleep(max(0.0, t0 + i + 1 - time.monotonic()))
        mem = {name: memory_kib(p.pid) for name, p in procs.items()}
        maps = mappings(procs["iopsd"].pid, binary)
    finally:
        stop_all(procs)
        shutil.rmtree(tmp, ignore_errors=True)

    ne = mem["node_exporter"]
    print(f"{args.seconds} s, both scraped every second; node_exporter collectors: "
          f"{args.collectors or 'defaults'}; memory at the end, KiB")
    print(f"{'':14} {'VmRSS':>7} {'VmHWM':>7} {'RssAnon':>8} {'RssFile':>8} {'Pss':>7} {'threads':>7} {'RSS/NE':>7}")
    for name, m in mem.items():
        print(f"{name:14} {m['VmRSS']:7} {m['VmHWM']:7} {m['RssAnon']:8} {m['RssFile']:8} {m['Pss']:7} "
              f"{m['Threads']:7} {100 * m['VmRSS'] / ne['VmRSS']:6.1f}%")
    own_names = ("iopsd (binary)", "[heap]", "[stack]", "thread stacks", "other anonymous")
    own = sum(v for (kind, n), v in maps.items() if n in own_names)
    lib_data = sum(v for (kind, n), v in maps.items() if kind == "anon" and n not in own_names)
    lib_file = sum(v for (kind, n), v in maps.items() if kind == "file" and n not in own_names)
    pct = lambda v: f"{100 * v / ne['VmRSS']:.1f}%"  # noqa: E731
    print(f"\niopsd's RSS by owner, KiB (and % of node_exporter's RSS):\n"
          f"  iopsd's own (heap, stacks, other anonymous, its binary) {own} ({pct(own)})\n"
          f"  shared libraries' relocated and written data (anonymous) {lib_data} ({pct(lib_data)})\n"
          f"  shared libraries' file pages {lib_file} ({pct(lib_file)})")
    for kind in ("anon", "file"):
        rows = sorted(((v, n) for (k, n), v in maps.items() if k == kind and v > 0), reverse=True)
        print(f"  {kind} by mapping: " + ", ".join(f"{n} {v}" for v, n in rows))
    if args.floor:
        # the pages a floor without some libraries saves, taken off iopsd's
        # VmRSS: a bound, as whatever replaced them would add its own
        full = mem[FLOORS[0][0]]["VmRSS"]
        print("\niopsd's VmRSS less what each floor without some libraries saves (a lower bound), KiB:")
        for name, _ in FLOORS[1:]:
            bound = mem["iopsd"]["VmRSS"] - (full - mem[name]["VmRSS"])
            print(f"  {name.strip():14} {bound:7} ({pct(bound)})")


if __name__ == "__main__":
    main()
