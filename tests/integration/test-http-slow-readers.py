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
    answers reads the headers late, and the deadline moves with it);
  - every reader is answered 200, 400 or 503; the load passes the cap, and
    each 503 carries Retry-After; a 200 is let go of by the server (its end
    of the connection closed, /proc/net/tcp) within connection_timeout +
    2 s of its first byte while its reader had read only part of it."""
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


def parse_head(data):
    """The status and headers (lower-case names) of an answer's first bytes,
    and how many bytes of its body came; (None, {}, 0) before the end of
    its headers."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None, {}, 0
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, len(body)


def check_answers(readers, got, first_byte, released):
    """What the slow readers were answered: 200, 400 (a window over
    max_history_points) or 503 (over the cap on answers in flight, with
    Retry-After); and a 200 whose reader trickled was cut off at its
    deadline: the server closed its end (and freed the answer) within
    connection_timeout + 2 s of its first byte, while its reader had read
    only part of it (the kernel may still hold the rest for the reader)."""
    statuses = {}
    retry_after, cut, whole = [], [], 0
    for i, data in enumerate(got):
        status, headers, _ = parse_head(data)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 503 and "retry-after" in headers:
            retry_after.append(headers["retry-after"])
        if status != 200 or released[i] is None or first_byte[i] is None:
            continue
        at, n_read = released[i]
        length = int(headers.get("content-length", 0))
        if n_read < length:
            cut.append(at - first_byte[i])
        else:
            whole += 1
    print(f"  answers: {statuses}; {len(retry_after)} 503(s) with Retry-After {sorted(set(retry_after))}; "
          f"{len(cut)} 200(s) let go of before their reader read them, "
          f"{min(cut, default=0):.1f}-{max(cut, default=0):.1f} s after their first byte; {whole} read whole")
    assert set(statuses) <= {200, 400, 503}, f"slow readers got other answers (None: no headers): {statuses}"
    assert retry_after and all(v.isdigit() and int(v) > 0 for v in retry_after), \
        f"no 503 with Retry-After: the cap on answers in flight was not reached or not said ({statuses})"
    assert statuses.get(503, 0) == len(retry_after), f"a 503 without Retry-After: {statuses}, {retry_after}"
    assert cut, f"no 200 was cut off at its deadline: {statuses}, {whole} read whole"
    assert max(cut) <= TIMEOUT_S + 2, \
        f"a 200 was held {max(cut):.1f} s after its first byte, past connection_timeout {TIMEOUT_S} s + 2 s"


def server_ends(port):
    """The server ends of the connections to `port` still open in the
    daemon: {(client address, client port)}; one it closed is orphaned
    (inode 0, FIN_WAIT with its unsent bytes) or gone."""
    ends = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if int(local.split(":")[1], 16) != port or state != "01" or inode == "0":
                continue
            ip, rport = remote.split(":")
            addr = ".".join(str(b) for b in reversed(bytes.fromhex(ip)))
            ends.add((addr, int(rport, 16)))
    return ends


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
        got = [b""] * len(readers)
        eof = [None] * len(readers)
        names = [r.getsockname() for r in readers]
        # when the server let go of each answer, and how much of it its reader had read then
        released = [None] * len(readers)
        while time.monotonic() - t0 < WATCH_S:
            ends = server_ends(d.port)
            for i, name in enumerate(names):
                if released[i] is None and name not in ends:
                    released[i] = (time.monotonic() - t0, len(got[i]))
            for i, s in enumerate(readers):
                if eof[i] is not None:
                    continue
                try:
                    data = s.recv(1024)
                except BlockingIOError:
                    continue
                except ConnectionError:
                    data = b""
                if not data:
                    eof[i] = time.monotonic() - t0
                    continue
                if first_byte[i] is None:
                    first_byte[i] = time.monotonic() - t0
                got[i] += data
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
        check_answers(readers, got, first_byte, released)
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
