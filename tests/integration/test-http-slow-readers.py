#!/usr/bin/env python3
"""Slow readers cannot exhaust memory. iopsd on a fixture tree of 1,000
devices (bench/scrape/make-tree.py) with 35 s of history; then 64 clients
(16 from each of 127.0.0.2-5) ask for /api/v1/history without gzip and
read 1 KiB a second, while a scraper from 127.0.0.1 asks for /metrics
every 200 ms. Half of the readers ask for a 9 s window (about 9,000
points, fits any sane max_history_points), half for 30 s (30,000).

  - the daemon's RSS stays within its RSS before + 32 MiB (the answers in
    flight, being built or queued, have one cap of 24 MiB; beyond it the
    answer is 503; the default max_history_points keeps the 30 s window
    out: 400);
  - every scrape answers within 1 s;
  - every slow connection is closed at its deadline (connection_timeout
    after the server read its headers, plus the 1 s sweep), not kept while
    it trickles: all are closed within connection_timeout + 2 s of the
    last first byte of an answer (the server reads a request's headers
    before it builds the answer, so an answer's first byte comes after
    its deadline was set; under load a server thread busy with other
    answers reads the headers late, and the deadline moves with it)."""
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

N_DEVICES = 1000
HISTORY_FILL_S = 35
N_READERS = 64
SOURCES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
TIMEOUT_S = 5
RSS_BOUND_MIB = 32  # the 24 MiB cap on answers in flight, and slack
WATCH_S = TIMEOUT_S + 10

# room for the scraper beside the 64 readers: with the default 64 the
# connection limit itself would refuse it, whatever memory is left
CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
history=2m
connection_timeout={timeout}s
max_connections=80
"""


def slow_reader(port, src, window):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET /api/v1/history?window={window}s HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    s.setblocking(False)
    return s


def daemon_sockets(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def main():
    t.require_root()  # 127.0.0.2-5 as sources, the fixture tree's size
    d = t.Daemon(CONFIG.format(timeout=TIMEOUT_S))
    asan = d.limit_asan_quarantine()
    tree = os.path.join(d.tmp, "tree")
    subprocess.run([sys.executable, os.path.join(t.SRCDIR, "bench", "scrape", "make-tree.py"), tree,
                    str(N_DEVICES)], check=True, stdout=subprocess.DEVNULL)
    d.args += ["--path.procfs", f"{tree}/proc", "--path.sysfs", f"{tree}/sys"]
    scraper = None
    readers = []
    try:
        d.start()
        print(f"filling {HISTORY_FILL_S} s of history of {N_DEVICES} devices")
        time.sleep(HISTORY_FILL_S)
        s0 = time.monotonic()
        status, _, body = d.get("/api/v1/history?window=9s", timeout=30)
        print(f"  one 9 s answer: {status}, {len(body)} bytes in {(time.monotonic() - s0) * 1000:.0f} ms")
        base_rss = t.proc_status(d.proc.pid, "VmRSS")
        base_socks = daemon_sockets(d.proc.pid)
        scraper = t.Scraper(d)
        scraper.start()
        time.sleep(1)
        t0 = time.monotonic()
        for i in range(N_READERS):
            try:
                readers.append(slow_reader(d.port, SOURCES[i % len(SOURCES)], 9 if i % 2 else 30))
            except OSError as e:
                print(f"  reader {i}: {e!r}")
        print(f"  {len(readers)} slow readers connected")
        peak, closed_at, held = base_rss, None, []
        first_byte = [None] * len(readers)
        while time.monotonic() - t0 < WATCH_S:
            for i, s in enumerate(readers):
                try:
                    if s.recv(1024) and first_byte[i] is None:
                        first_byte[i] = time.monotonic() - t0
                except (BlockingIOError, ConnectionError):
                    pass
            time.sleep(1)
            rss = t.proc_status(d.proc.pid, "VmRSS")
            peak = max(peak, rss)
            open_socks = daemon_sockets(d.proc.pid) - base_socks
            held.append(open_socks)
            print(f"  {time.monotonic() - t0:4.1f}s: RSS {rss // 1024} MiB, {open_socks} connection(s) held")
            if open_socks <= 1 and closed_at is None:
                closed_at = time.monotonic() - t0
        scraper.stop.set()
        scraper.join()
        worst = max(scraper.latencies)
        print(f"RSS {base_rss // 1024} MiB before, peak {peak // 1024} MiB (bound +{RSS_BOUND_MIB} MiB); "
              f"{len(scraper.latencies)} scrapes, slowest {worst * 1000:.0f} ms, {len(scraper.failures)} failed; "
              f"slow connections closed after {closed_at} s")
        assert not scraper.failures, f"scrapes failed: {scraper.failures[:5]}"
        assert worst < 1.0, f"a scrape took {worst:.2f} s while slow readers held answers"
        # ASan's allocator adds its own tens of MiB (as in test-http-abuse)
        bound = RSS_BOUND_MIB * (2 if asan else 1)
        assert peak - base_rss < bound * 1024, \
            f"RSS grew by {(peak - base_rss) // 1024} MiB with {N_READERS} slow readers"
        last_first = max((b for b in first_byte if b is not None), default=0.0)
        print(f"  the last answer's first byte came {last_first:.1f} s after the readers connected; "
              f"{first_byte.count(None)} reader(s) got none")
        assert closed_at is not None, f"slow connections still held {WATCH_S} s after their requests: {held}"
        assert closed_at <= last_first + TIMEOUT_S + 2, \
            f"slow connections held {closed_at:.1f} s, past the last first byte ({last_first:.1f} s) + " \
            f"connection_timeout {TIMEOUT_S} s + 2 s: {held}"
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    finally:
        if scraper:
            scraper.stop.set()
        for s in readers:
            s.close()
        d.cleanup()
    print("PASS")


if __name__ == "__main__":
    main()
