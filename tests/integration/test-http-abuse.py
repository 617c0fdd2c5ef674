#!/usr/bin/env python3
"""HTTP abuse against the real daemon while a normal client scrapes: 512
concurrent connections, slowloris (headers trickled), 1 MiB headers,
invalid methods, path traversal, invalid UTF-8 in the path and the query,
a history request too large to answer.
Throughout, the normal client (its own address, 127.0.0.1; the abusers
come from 127.0.0.2-4, as separate hosts would) gets /metrics about as fast
as before the abuse (within a second: a timing check), a probe keeps running
on its schedule, and the daemon's memory stays bounded. Every malformed request gets an error answer (JSON where
iopsd writes the body), never a dropped connection or a file's contents."""
import json
import os
import select
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
connection_timeout=3s
max_history_points=1000

[raw]
rw=randread
bs=4k
filename={raw}
size=4m
rate_iops=200
runtime=100ms
interval=300ms
"""


def connect_from(src, port, timeout=30):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def raw_request(port, data, src="127.0.0.3", timeout=30):
    """Send raw bytes; returns (status or None, body bytes)."""
    s = connect_from(src, port, timeout)
    try:
        s.sendall(data)
        chunks = []
        while True:
            try:
                c = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not c:
                break
            chunks.append(c)
            if b"\r\n\r\n" in b"".join(chunks):
                head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
                clen = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                if clen and len(rest) >= clen[0]:
                    break
        resp = b"".join(chunks)
    finally:
        s.close()
    if not resp.startswith(b"HTTP/1."):
        return None, resp
    head, _, body = resp.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def probe_runs(d):
    return t.metric_value(d.metrics(), "iopsd_probe_runs_total", {"probe": "raw"}) or 0


def last_run(d):
    return t.metric_value(d.metrics(), "iopsd_probe_last_run_timestamp_seconds", {"probe": "raw"})


def main():
    t.require_root()
    t.require_tool("losetup")
    raw = t.LoopDevice("reliability-http-abuse", 8)
    d = t.Daemon(CONFIG.format(raw=raw.path))
    asan = d.limit_asan_quarantine()
    scraper = None
    held = []
    try:
        d.start()
        port = d.port
        pid = d.proc.pid
        t.wait_until(lambda: (last_run(d) or 0) > 0, 30, what="a first probe run")
        for _ in range(20):  # warm up the renderers and the allocator
            d.get("/metrics")
            d.get("/api/v1/devices")
        rss0 = t.proc_status(pid, "VmRSS")
        scraper = t.Scraper(d)
        scraper.start()
        # the baseline, on this machine as loaded as it is now: the normal
        # client's scrapes and the probe's runs for 4 s before the abuse
        runs_base = probe_runs(d)
        t_base = time.monotonic()
        time.sleep(4)
        runs_before = probe_runs(d)
        t_start = time.monotonic()
        base_rate = (runs_before - runs_base) / (t_start - t_base)
        n_base = len(scraper.latencies)
        base = sorted(scraper.latencies[:n_base])
        base_p90 = base[int(len(base) * 0.9)] if base else 0.0

        # 1. 512 concurrent connections from two other hosts, held open
        for i in range(512):
            try:
                s = connect_from("127.0.0.2" if i % 2 else "127.0.0.3", port, timeout=10)
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # headers never finished
                held.append(s)
            except OSError:
                pass
        assert len(held) >= 500, f"only {len(held)}/512 abusive connections opened: nothing was held"
        time.sleep(1.5)
        status, _, _ = d.get("/metrics", timeout=30)
        assert status == 200, status

        # 2. slowloris from a third host: a header byte every 0.3 s, until
        # the server drops each connection (30 s at most)
        slow = [connect_from("127.0.0.4", port) for _ in range(8)]
        waiting = list(slow)
        dropped = []  # seconds after the start at which each was dropped
        t0 = time.monotonic()
        while waiting and time.monotonic() - t0 < 30:
            for s in list(waiting):
                try:
                    s.sendall(b"X")
                except OSError:
                    pass  # dropped: the recv below tells
                if not select.select([s], [], [], 0)[0]:
                    continue
                try:
                    s.recv(1024)  # EOF or an error answer: either way not waiting for more
                except (ConnectionResetError, BrokenPipeError):
                    pass
                waiting.remove(s)
                dropped.append(time.monotonic() - t0)
            time.sleep(0.3)
        for s in slow:
            s.close()
        closed = len(slow) - len(waiting)
        assert closed == len(slow), f"only {closed}/{len(slow)} slowloris connections dropped after 30 s (timeout 3 s)"
        t.timing_check(max(dropped) <= 6, f"slowloris connections dropped {max(dropped):.1f}s after they started "
                       f"(timeout 3 s), within 6 s")
        # the held connections are past their header deadline too
        for s in held:
            s.close()
        held = []

        # 3. a 1 MiB header: refused, not buffered
        big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"
        try:
            status, _ = raw_request(port, big)
        except (ConnectionResetError, BrokenPipeError):
            status = None
        assert status in (None, 413, 431, 400), status

        # 4. invalid methods and request lines
        for req in (b"FOO /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd",
                    b"G\x00ET / HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
                    b"GET\r\n\r\n",
                    b"A" * 70000 + b" / HTTP/1.1\r\n\r\n"):
            try:
                status, _ = raw_request(port, req)
            except (ConnectionResetError, BrokenPipeError):
                status = None
            assert status is None or 400 <= status < 600, (req[:40], status)

        # 5. path traversal: a 404 with a JSON error, never a file
        for path in (b"/../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd", b"/..%2f..%2fetc%2fpasswd",
                     b"//etc/passwd", b"/api/v1/../../../etc/passwd", b"/static/%2e%2e%5c%2e%2e%5cetc%5cpasswd"):
            status, body = raw_request(port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status == 404, (path, status, body[:200])
            assert b"root:" not in body
            json.loads(body)

        # 6. invalid UTF-8 in the path and in the query: a 4xx with valid JSON
        for path in (b"/%ff", b"/\xff\xfe", b"/api/v1/devices?%ff=1", b"/api/v1/devices?device=%ff%fe",
                     b"/api/v1/history?window=%c3%28", b"/api/v1/probes?probe=\xc3",
                     b"/api/v1/devices?" + b"%c3%a9" * 40 + b"a=1", b"/api/v1/devices?a" + b"%c3%a9" * 40 + b"=1"):
            status, body = raw_request(port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status is not None and 400 <= status < 500, (path, status, body[:200])
            err = json.loads(body)["error"]
            assert isinstance(err, str) and err, body

        # 7. a history answer too large to build: refused, with a way out
        status, body = raw_request(port, b"GET /api/v1/history?window=1h HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 400 and b"max_history_points" in body and b"step=" in body, (status, body[:300])
        status, body = raw_request(port, b"GET /api/v1/history?window=1h&step=10s&device=" +
                                   raw.name.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 200, (status, body[:300])

        elapsed = time.monotonic() - t_start
        scraper.stop.set()
        scraper.join()
        # the normal client was answered throughout (its timeout: 30 s), in
        # the gate within 20 times its p90 before the abuse (0.5 s at least),
        # in the lab within a second
        assert not scraper.failures, scraper.failures[:5]
        worst = max(scraper.latencies[n_base:])
        limit = max(20 * base_p90, 0.5)
        assert worst < limit, (f"a normal scrape took {worst:.2f}s during the abuse, more than {limit:.2f}s "
                               f"(20 x its p90 before, {base_p90:.3f}s; 0.5 s at least)")
        t.timing_check(worst < 1.0, f"a normal scrape took {worst:.2f}s during the abuse, < 1 s")
        # the probe kept its schedule (a run started every 300 ms): in the
        # gate at least 0.3 of its rate before the abuse, in the lab at least
        # 2/3 of the completed runs it would have made undisturbed
        expected = elapsed / 0.3
        runs = probe_runs(d) - runs_before
        assert runs >= 0.3 * base_rate * elapsed, \
            (f"probe ran {runs:.0f} times in {elapsed:.1f}s of abuse, less than 0.3 x its "
             f"{base_rate:.2f} runs/s before")
        t.timing_check(runs >= expected * 0.66, f"probe ran {runs:.0f} times in {elapsed:.1f}s, "
                       f"expected ~{expected:.0f} (at least 2/3)")
        # memory stays bounded
        time.sleep(1)
        rss1 = t.proc_status(pid, "VmRSS")
        # (ASan's allocator and quarantine add their own tens of MiB)
        bound = (64 if asan else 32) * 1024
        assert rss1 - rss0 < bound, f"RSS grew from {rss0} to {rss1} kB"
        assert d.proc.poll() is None
        rc, _ = d.stop()
        assert rc == 0, rc
        print(f"ok: {len(scraper.latencies) - n_base} scrapes, slowest {worst * 1000:.0f} ms "
              f"(p90 before: {base_p90 * 1000:.0f} ms); "
              f"probe runs every {elapsed / max(runs, 1) * 1000:.0f} ms; RSS {rss0} -> {rss1} kB")
    except BaseException:
        print(d.read_log()[-3000:])
        raise
    finally:
        for s in held:
            s.close()
        if scraper:
            scraper.stop.set()
        d.cleanup()
        raw.cleanup()


if __name__ == "__main__":
    main()
