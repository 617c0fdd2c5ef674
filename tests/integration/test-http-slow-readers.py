#!/usr/bin/env python3
"""A scrape never fails because other clients are slow (issue: scrapes
under abuse). iopsd with its default connection limits (max_connections
64, max_connections_per_ip 16) on a fixture tree of 1,000 devices
(bench/scrape/make-tree.py) with 12 s of history. A scraper from 127.0.0.1
asks for /metrics once a second (and for /-/healthy and /-/ready): first
alone for 10 s, the baseline; then for 30 s beside 64 slow readers, and
again beside 512, spread over 127.0.0.2-5. Half of the readers ask for
/api/v1/history and read 1 KiB a second, half ask for /metrics (about 4 MB)
and never read a byte.

  - no scrape fails: past max_connections, the scrape lane (iopsd(8),
    HTTP SERVER) takes an address that holds no other connection, and an
    address holds at most max_connections_per_ip, over all server threads;
  - the daemon's RSS stays within 64 MiB of where it started (twice that
    under ASan, whose allocator adds its own);
  - every reader is answered 200, 400 (a window over max_history_points)
    or 503 with Retry-After (over the cap on answers in flight), or is
    refused at once (over max_connections_per_ip: closed without an
    answer); none is held past its deadline: the server lets go of every
    answer (/proc/net/tcp: its end gone, reset) before the phase ends,
    and within connection_timeout + 2 s of its first byte in the lab;
  - the scrapes' latency beside the readers is within 5x (median) and 20x
    (slowest) of the baseline's, measured in the same run; in the lab the
    slowest is under 1 s.
Prints the figures of each phase."""
import fcntl
import os
import socket
import statistics
import struct
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

N_DEVICES = 1000
HISTORY_FILL_S = 12
SOURCES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
TIMEOUT_S = 5
RSS_BOUND_MIB = 64
BASELINE_S = 10
PHASE_S = 30

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
history=2m
connection_timeout={timeout}s
"""


def scraper_of(d):
    """/metrics, /-/healthy and /-/ready once a second from 127.0.0.1, each
    on a connection of its own, as Prometheus and a kubelet would."""
    return t.Scraper(d, interval=1.0, also=(("/-/healthy", b"Healthy"), ("/-/ready", b"Ready")))


def slow_reader(port, src, path):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    except OSError:
        pass  # refused at once: the connection is already closed
    s.setblocking(False)
    return s


def unread(s):
    """Bytes waiting in a socket nobody reads (FIONREAD)."""
    try:
        return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return 0


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


def check_answers(conns):
    """What the slow readers were answered: 200, 400 (a window over
    max_history_points), 503 with Retry-After (over the cap on answers in
    flight), or nothing (refused at once); and a 200 not read whole was cut
    off at its deadline: the server let go of it (its end gone from
    /proc/net/tcp) within connection_timeout + 2 s of its first byte (in
    the lab), while its reader had read only part of it."""
    statuses = {}
    retry_after, cut, whole = [], [], 0
    for c in conns:
        status, headers, _ = parse_head(c.got)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 503 and "retry-after" in headers:
            retry_after.append(headers["retry-after"])
        if status != 200 or c.released is None or c.first_byte is None:
            continue
        if c.n_read_at_release < int(headers.get("content-length", 0)):
            cut.append(c.released - c.first_byte)
        else:
            whole += 1
    print(f"  answers: {statuses}; {len(retry_after)} 503(s) with Retry-After {sorted(set(retry_after))}; "
          f"{len(cut)} 200(s) let go of before their reader read them, "
          f"{min(cut, default=0):.1f}-{max(cut, default=0):.1f} s after their first byte; {whole} read whole")
    assert set(statuses) <= {200, 400, 503, None}, f"slow readers got other answers (None: refused): {statuses}"
    assert statuses.get(503, 0) == len(retry_after), f"a 503 without Retry-After: {statuses}, {retry_after}"
    assert cut, f"no 200 was cut off at its deadline: {statuses}, {whole} read whole"
    t.timing_check(max(cut) <= TIMEOUT_S + 2,
                   f"a 200 let go of {max(cut):.1f} s after its first byte (connection_timeout {TIMEOUT_S} s + 2 s)")
    return statuses


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


class Reader:
    """One slow connection: /metrics never read, or a history answer read
    1 KiB a second; when the server lets go of it, after a second, its
    slot connects again, so that the server is kept full for the phase."""

    def __init__(self, port, src, kind, t0):
        path = "/metrics" if kind == "metrics" else "/api/v1/history?window=9s"
        self.kind, self.src, self.opened = kind, src, time.monotonic() - t0
        self.sock = slow_reader(port, src, path)
        self.name = self.sock.getsockname()
        self.got, self.first_byte, self.released, self.n_read_at_release = b"", None, None, 0

    def poll(self, ends, now, read):
        if self.released is None and self.name not in ends:
            self.released, self.n_read_at_release = now, len(self.got)
        if self.first_byte is None and (self.got or unread(self.sock)):
            self.first_byte = now
        if read and self.kind == "history":
            try:
                self.got += self.sock.recv(1024)
            except (BlockingIOError, ConnectionError):
                pass

    def close(self):
        if self.kind == "metrics":
            try:  # the head of what it never read, for its status
                self.got = self.sock.recv(256, socket.MSG_PEEK)
            except (BlockingIOError, ConnectionError):
                pass
        self.sock.close()


def phase(d, n, base_rss, baseline):
    """n slow readers (the /metrics ones first, over 127.0.0.2-5) beside
    the scraper for PHASE_S seconds, each slot connecting again a second
    after the server let go of it; then the checks."""
    scraper = scraper_of(d)
    scraper.start()
    t0 = time.monotonic()
    slots = [("metrics" if i < n // 2 else "history", SOURCES[i % len(SOURCES)]) for i in range(n)]
    live = [Reader(d.port, src, kind, t0) for kind, src in slots]
    done, peak, last_read, held = [], base_rss, 0.0, []
    try:
        while time.monotonic() - t0 < PHASE_S:
            now = time.monotonic() - t0
            ends = server_ends(d.port)
            held.append(len(ends))
            read = now - last_read >= 1.0
            last_read = now if read else last_read
            for i, r in enumerate(live):
                r.poll(ends, now, read)
                if r.released is not None and now - r.released >= 1.0 and now < PHASE_S - TIMEOUT_S - 2:
                    r.close()
                    done.append(r)
                    live[i] = Reader(d.port, r.src, r.kind, t0)
            if read:
                peak = max(peak, t.proc_status(d.proc.pid, "VmRSS"))
            time.sleep(0.25)
        end = time.monotonic() - t0
        for r in live:
            r.poll(server_ends(d.port), end, False)
    finally:
        scraper.stop.set()
        scraper.join()
        for r in live:
            r.close()
    conns = done + live
    lat = scraper.latencies
    print(f"{n} slow readers, {len(conns)} connections in {PHASE_S} s, the server holding "
          f"{statistics.median(held):.0f} of them (median; max {max(held)}): RSS {base_rss // 1024} MiB before, "
          f"peak {peak // 1024} MiB; {len(lat)} scrapes, median {statistics.median(lat) * 1000:.1f} ms, slowest "
          f"{max(lat) * 1000:.1f} ms (baseline {statistics.median(baseline) * 1000:.1f} / "
          f"{max(baseline) * 1000:.1f} ms), {len(scraper.failures)} failed")
    t.figure(f"scrape_slowest_ms_{n}", round(max(lat) * 1000, 1))
    if n > 64:
        # the readers kept the server at max_connections: the scrapes took the lane
        assert statistics.median(held) >= 64, f"the readers held only {statistics.median(held)} connections"
    assert not scraper.failures, f"scrapes failed beside {n} slow readers: {scraper.failures[:5]}"
    assert len(lat) >= PHASE_S - 5, f"only {len(lat)} scrapes in {PHASE_S} s"
    assert statistics.median(lat) <= 5 * statistics.median(baseline), \
        f"median scrape {statistics.median(lat) * 1000:.1f} ms beside {n} slow readers, over 5x the baseline's"
    assert max(lat) <= 20 * max(baseline), \
        f"slowest scrape {max(lat) * 1000:.1f} ms beside {n} slow readers, over 20x the baseline's"
    t.timing_check(max(lat) < 1.0, f"slowest scrape {max(lat) * 1000:.0f} ms beside {n} slow readers (< 1 s)")
    bound = RSS_BOUND_MIB * (2 if t.is_asan_build() else 1)
    assert peak - base_rss < bound * 1024, f"RSS grew by {(peak - base_rss) // 1024} MiB with {n} slow readers"
    statuses = check_answers(conns)
    kept = [r for r in conns if r.released is None and r.opened < PHASE_S - TIMEOUT_S - 2]
    assert not kept, f"{len(kept)} slow connection(s) held past connection_timeout {TIMEOUT_S} s + 2 s: " \
        f"{[(r.kind, r.opened, r.first_byte) for r in kept[:5]]}"
    print(f"  {statuses.get(None, 0)} refused at once (over max_connections_per_ip or max_connections); "
          "every other one let go of by its deadline")


def main():
    t.require_root()  # 127.0.0.2-5 as sources, the fixture tree's size
    d = t.Daemon(CONFIG.format(timeout=TIMEOUT_S))
    d.limit_asan_quarantine()
    tree = os.path.join(d.tmp, "tree")
    subprocess.run([sys.executable, os.path.join(t.SRCDIR, "bench", "scrape", "make-tree.py"), tree,
                    str(N_DEVICES)], check=True, stdout=subprocess.DEVNULL)
    d.args += ["--path.procfs", f"{tree}/proc", "--path.sysfs", f"{tree}/sys"]
    try:
        d.start()
        print(f"filling {HISTORY_FILL_S} s of history of {N_DEVICES} devices")
        time.sleep(HISTORY_FILL_S)
        base_rss = t.proc_status(d.proc.pid, "VmRSS")
        scraper = scraper_of(d)
        scraper.start()
        time.sleep(BASELINE_S)
        scraper.stop.set()
        scraper.join()
        assert not scraper.failures, f"scrapes failed with no other client: {scraper.failures[:5]}"
        baseline = scraper.latencies
        print(f"baseline: {len(baseline)} scrapes alone, median {statistics.median(baseline) * 1000:.1f} ms, "
              f"slowest {max(baseline) * 1000:.1f} ms")
        for n in (64, 512):
            phase(d, n, base_rss, baseline)
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    finally:
        d.cleanup()
    print("PASS")


if __name__ == "__main__":
    main()
