#!/usr/bin/env python3
"""Soak: the real daemon under a sanitizer build or valgrind memcheck for
a fixed time, with 0.2 s probe intervals, a scrape every 100 ms, SIGHUP
every 5 s and a fault toggled every 30 s on its targets; 16 slow readers
of /api/v1/history (1 KiB/s, from 127.0.0.2-5) every 20 s; and a probe on
a FUSE filesystem (tests/integration/hangfs.py) that stops answering for
20 s of every 60. Prints the RSS, fd and thread series, the /metrics
latency p99 and the error/leak summary; exits 1 when the run is not clean
(sanitizer or valgrind errors, leaks, RSS or fd growth after warm-up, the
daemon dying or stopping to answer).

Needs root (loop devices, mounts). Run from the source tree:

  bench/soak/soak.py --iopsd build-asan/daemon/iopsd --mode asan
  bench/soak/soak.py --iopsd build/daemon/iopsd --mode valgrind
"""
import argparse
import http.client
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import iopsdtest as t  # noqa: E402

CONFIG = """[global]
sample_interval=1s
history=10m
state_directory={state}
log_level=info

[soak-write]
rw=randrw
bs=4k
size=8m
directory={target}
rate_iops=100
runtime=50ms
interval=200ms
fsync=4

[soak-raw]
rw=randread
bs=4k
filename={raw}
size=16m
rate_iops=100
runtime=50ms
interval=200ms

[soak-fuse]
rw=randrw
bs=4k
size=1m
directory={fuse}
rate_iops=100
runtime=50ms
interval=1s
"""
# every other reload adds a probe, so reloads really rebuild the probes
EXTRA = """
[soak-seq]
rw=read
bs=64k
size=4m
directory={target}
runtime=50ms
interval=200ms
"""
PATHS = ["/metrics", "/metrics", "/api/v1/status", "/api/v1/devices", "/api/v1/probes",
         "/api/v1/history?window=1m", "/healthz", "/", "/nonexistent?x=%ff"]


class Faults:
    """One fault at a time on the write target's filesystem or the raw
    device: toggled on, then off 30 s later."""

    def __init__(self, fs, raw, target):
        self.fs, self.raw, self.target = fs, raw, target
        self.fill = os.path.join(fs.mountpoint, "user-fill.bin")
        self.names = ["read-only", "dir-removed", "fs-full", "lazy-umount", "raw-detached"]
        self.index = 0
        self.active = None

    def on(self):
        name = self.names[self.index % len(self.names)]
        self.index += 1
        if name == "read-only":
            self.fs.remount("ro")
        elif name == "dir-removed":
            # rename first: a probe may be laying out inside it meanwhile
            os.rename(self.target, self.target + ".removed")
            shutil.rmtree(self.target + ".removed")
        elif name == "fs-full":
            shutil.rmtree(os.path.join(self.target, ".iopsd"), ignore_errors=True)
            t.run("dd", "if=/dev/zero", f"of={self.fill}", "bs=1M", "count=1024", "oflag=direct", check=False)
        elif name == "lazy-umount":
            self.fs.umount(lazy=True)
        elif name == "raw-detached":
            self.raw.detach()
        self.active = name
        return name

    def off(self):
        name, self.active = self.active, None
        if name == "read-only":
            self.fs.remount("rw")
        elif name == "dir-removed":
            os.mkdir(self.target)
        elif name == "fs-full":
            os.unlink(self.fill)
        elif name == "lazy-umount":
            self.fs.mount()
        elif name == "raw-detached":
            self.raw.attach()
        return name


class SlowReaders:
    """16 connections asking for /api/v1/history without gzip and reading
    1 KiB a second, opened every 20 s and dropped 30 s later."""

    SOURCES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]

    def __init__(self, port):
        self.port = port
        self.open = []  # (opened at, socket)
        self.opened = 0

    def tick(self, now):
        import socket
        if not self.open or now - self.open[-1][0] >= 20:
            for i in range(16):
                try:
                    so = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    so.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    so.bind((self.SOURCES[i % 4], 0))
                    so.settimeout(2)
                    so.connect(("127.0.0.1", self.port))
                    so.sendall(b"GET /api/v1/history?window=10m HTTP/1.1\r\nHost: x\r\n\r\n")
                    so.setblocking(False)
                    self.open.append((now, so))
                    self.opened += 1
                except OSError:
                    so.close()
        keep = []
        for opened, so in self.open:
            if now - opened > 30:
                so.close()
                continue
            try:
                so.recv(1024)
            except (BlockingIOError, OSError):
                pass
            keep.append((opened, so))
        self.open = keep

    def close(self):
        for _, so in self.open:
            so.close()
        self.open = []


def scraper(port, stop, stats):
    i = 0
    while not stop.is_set():
        path = PATHS[i % len(PATHS)]
        i += 1
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", path, headers={"Accept-Encoding": "gzip"} if i % 3 == 0 else {})
            r = c.getresponse()
            r.read()
            c.close()
            # /healthz answers 503 while a probe fails: that is its job
            if r.status < 500 or (path == "/healthz" and r.status == 503):
                stats["ok"] += 1
            else:
                stats["5xx"] += 1
                stats.setdefault("5xx_paths", set()).add(f"{path} {r.status}")
        except OSError as e:
            stats["failed"] += 1
            stats.setdefault("failed_paths", set()).add(f"{path} {e!r}")
        took = time.monotonic() - t0
        stats["max_sec"] = max(stats["max_sec"], took)
        if path == "/metrics":
            stats.setdefault("metrics_sec", []).append(took)
        if took > stats.setdefault("slow", {}).get(path, 0):
            stats["slow"][path] = took
        stop.wait(max(0.0, 0.1 - (time.monotonic() - t0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iopsd", required=True)
    ap.add_argument("--mode", choices=["asan", "valgrind", "plain"], required=True)
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--warmup", type=float, default=120)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("soak: needs root (loop devices, mounts)", file=sys.stderr)
        return 2

    work = tempfile.mkdtemp(prefix="iopsd-soak-", dir="/var/tmp")
    fs = t.Ext4Mount("soak-fs", 96)
    raw = t.LoopDevice("soak-raw", 32, private=True)
    target = os.path.join(fs.mountpoint, "data")
    os.mkdir(target)
    t.run("dd", "if=/dev/urandom", f"of={raw.path}", "bs=1M", "count=16", "oflag=direct")
    hang = t.HangFS("soak-fuse")
    fuse = os.path.join(hang.mountpoint, "p")
    os.mkdir(os.path.join(hang.backing, "p"))
    port = t.free_port()
    conf = os.path.join(work, "iopsd.conf")
    base = CONFIG.format(state=work, target=target, raw=raw.path, fuse=fuse)
    variants = [base, base + EXTRA.format(target=target)]
    with open(conf, "w") as f:
        f.write(variants[0])

    env = dict(os.environ)
    report = os.path.join(work, "report")
    cmd = [os.path.abspath(a.iopsd), "--config", conf, "--web.listen-address", f"127.0.0.1:{port}"]
    if a.mode == "asan":
        env["ASAN_OPTIONS"] = f"detect_leaks=1:log_path={report}:abort_on_error=0"
        env["UBSAN_OPTIONS"] = f"print_stacktrace=1:log_path={report}"
    elif a.mode == "valgrind":
        cmd = ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect,possible",
               "--errors-for-leak-kinds=definite,indirect,possible", "--track-fds=no",
               f"--log-file={report}.valgrind", "--error-exitcode=99"] + cmd
    log = open(os.path.join(work, "iopsd.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    pid = proc.pid
    stop = threading.Event()
    stats = {"ok": 0, "5xx": 0, "failed": 0, "max_sec": 0.0}
    faults = Faults(fs, raw, target)
    slow = SlowReaders(port)
    hung_at, hangs = None, 0
    series = []
    rc = None
    try:
        def listening():
            if proc.poll() is not None:
                raise SystemExit(f"iopsd exited early with {proc.returncode}")
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/healthz")
                return True
            except OSError:
                return False
        # (under valgrind the daemon starts slowly)
        t.wait_until(listening, 60, what="iopsd listening")
        th = threading.Thread(target=scraper, args=(port, stop, stats), daemon=True)
        th.start()
        t0 = time.monotonic()
        next_hup, next_fault, next_sample, reloads = t0 + 5, t0 + 30, t0, 0
        events = []
        while time.monotonic() - t0 < a.duration:
            now = time.monotonic()
            if proc.poll() is not None:
                raise SystemExit(f"iopsd died with {proc.returncode} at {now - t0:.0f}s")
            if now >= next_sample:
                series.append((now - t0, t.proc_status(pid, "VmRSS"), t.fd_count(pid),
                               t.proc_status(pid, "Threads")))
                next_sample += 10
            if now >= next_hup:
                reloads += 1
                with open(conf, "w") as f:
                    f.write(variants[reloads % 2])
                proc.send_signal(signal.SIGHUP)
                next_hup += 5
            slow.tick(now)
            if hung_at is None and (now - t0) % 60 >= 40:
                hang.hang("all")
                hung_at, hangs = now, hangs + 1
            elif hung_at is not None and now - hung_at >= 20:
                hang.release()
                hung_at = None
            if now >= next_fault:
                if faults.active:
                    events.append((now - t0, "off", faults.off()))
                else:
                    events.append((now - t0, "on", faults.on()))
                next_fault += 30
            time.sleep(0.05)
        if faults.active:
            events.append((time.monotonic() - t0, "off", faults.off()))
        hang.release()
        slow.close()
        time.sleep(2)
        stop.set()
        th.join()
        metrics = ""
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/metrics")
            metrics = c.getresponse().read().decode()
        except OSError:
            pass
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
    finally:
        stop.set()
        slow.close()
        hang.release_quietly()  # a process with I/O in it cannot exit before
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        if faults.active:
            try:
                faults.off()
            except Exception as e:  # noqa: BLE001
                print(f"soak: could not clear {faults.active}: {e}", file=sys.stderr)
        fs.cleanup()
        raw.cleanup()
        hang.cleanup()

    # the report --------------------------------------------------------
    print(f"soak mode={a.mode} duration={a.duration:.0f}s reloads={reloads} "
          f"requests ok={stats['ok']} 5xx={stats['5xx']} failed={stats['failed']} "
          f"slowest={stats['max_sec'] * 1000:.0f}ms exit={rc}")
    lat = sorted(stats.get("metrics_sec", [0.0]))
    print(f"/metrics: {len(lat)} scrapes, p50 {lat[len(lat) // 2] * 1000:.0f} ms, "
          f"p99 {lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms; "
          f"{slow.opened} slow readers; the FUSE probe hung {hangs} times")
    if series:
        print(f"start/end: VmRSS {series[0][1]}/{series[-1][1]} kB, fds {series[0][2]}/{series[-1][2]}, "
              f"threads {series[0][3]}/{series[-1][3]}")
    print("slowest by path: " + ", ".join(f"{p} {v * 1000:.0f}ms" for p, v in sorted(stats.get("slow", {}).items())))
    print("faults: " + ", ".join(f"{e[2]} {e[1]}@{e[0]:.0f}s" for e in events))
    print("series (seconds, VmRSS kB, fds, threads):")
    for s in series:
        print(f"  {s[0]:6.0f} {s[1]:8d} {s[2]:4d} {s[3]:4d}")
    for name in ("soak-write", "soak-raw", "soak-fuse"):
        runs = t.metric_sum(metrics, "iopsd_probe_ops_total", {"probe": name})
        errs = t.metric_sum(metrics, "iopsd_probe_errors_total", {"probe": name})
        print(f"probe {name}: ops={runs:.0f} errors={errs:.0f} "
              f"success={t.metric_value(metrics, 'iopsd_probe_success', {'probe': name})}")

    problems = []
    reports = [os.path.join(work, f) for f in os.listdir(work) if f.startswith("report")]
    for path in sorted(reports):
        with open(path, errors="replace") as f:
            text = f.read()
        if a.mode == "valgrind":
            m = re.search(r"ERROR SUMMARY: (\d+) errors", text)
            leaks = re.findall(r"(definitely|indirectly|possibly) lost: ([\d,]+) bytes", text)
            print(f"valgrind: {m.group(0) if m else 'no ERROR SUMMARY'}; " +
                  ", ".join(f"{k} lost {v} bytes" for k, v in leaks))
            if not m or int(m.group(1)) != 0:
                problems.append(f"valgrind errors (see {path})")
            if any(v.replace(",", "") != "0" for _, v in leaks):
                problems.append("valgrind leaks")
        elif text.strip():
            problems.append(f"sanitizer report {path}:\n{text[:4000]}")
    if a.mode == "asan" and not reports:
        print("asan/ubsan/lsan: no reports (0 errors, 0 leaks)")
    if rc != 0:
        problems.append(f"exit status {rc}")
    if stats["failed"] or stats["5xx"]:
        problems.append(f"{stats['failed']} failed and {stats['5xx']} 5xx requests "
                        f"({', '.join(sorted(stats.get('5xx_paths', set()) | stats.get('failed_paths', set())))})")
    warm = [s for s in series if s[0] >= a.warmup]
    if len(warm) >= 2:
        rss = [s[1] for s in warm]
        fds = [s[2] for s in warm]
        print(f"after warm-up ({a.warmup:.0f}s): VmRSS {min(rss)}..{max(rss)} kB "
              f"(first {rss[0]}, last {rss[-1]}), fds {min(fds)}..{max(fds)}")
        # flat: no upward trend from the first to the second half after
        # warm-up, median against median (fds and RSS move with the probe
        # runs and requests in flight at the moment of a sample)
        half = len(warm) // 2
        m1, m2 = statistics.median(rss[:half]), statistics.median(rss[half:])
        f1, f2 = statistics.median(fds[:half]), statistics.median(fds[half:])
        threads = [s[3] for s in warm]
        t1, t2 = statistics.median(threads[:half]), statistics.median(threads[half:])
        print(f"medians, first/second half after warm-up: VmRSS {m1:.0f}/{m2:.0f} kB, fds {f1:.0f}/{f2:.0f}, "
              f"threads {t1:.0f}/{t2:.0f} (max {max(threads)})")
        if m2 > m1 * 1.05 + 2048:
            problems.append(f"RSS grew after warm-up: median {m1:.0f} -> {m2:.0f} kB")
        if f2 > f1 + 1:
            problems.append(f"fd count grew after warm-up: median {f1} -> {f2}")
        # stuck runs on the hung mount are carried, never piled up by reloads
        if t2 > t1 + 1:
            problems.append(f"thread count grew after warm-up: median {t1} -> {t2}")
    print(f"logs and reports in {work}" if a.keep or problems else "")
    if not a.keep and not problems:
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print("PROBLEM: " + p)
    print("soak: " + ("FAILED" if problems else "clean"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
