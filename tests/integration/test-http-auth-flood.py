#!/usr/bin/env python3
"""Bad credentials cannot starve the scrapes. With basic auth at bcrypt
cost 12 (the highest iopsd accepts), one client (127.0.0.2, eight
keep-alive connections) sends 200 requests a second with a wrong password
while a scraper with the right one (127.0.0.1) asks for /metrics every
200 ms: every scrape gets 200 within 1 s, and the flood gets only 401 or
429, never 200. The flood reaches its rate (at least 90 % of the planned
requests sent, at most 1 % transport errors), and every 401 closes its
connection (no bcrypt per request on one keep-alive connection)."""
import base64
import http.client
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
"""

FLOOD_RATE = 200
FLOOD_CONNECTIONS = 8
DURATION_S = 20


def auth(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


class Source(http.client.HTTPConnection):
    """An HTTP connection from a given local address."""

    def __init__(self, src, port, timeout):
        super().__init__("127.0.0.1", port, timeout=timeout, source_address=(src, 0))


class Flooder(threading.Thread):
    def __init__(self, port, rate):
        super().__init__(daemon=True)
        self.port, self.period = port, 1.0 / rate
        self.stop = threading.Event()
        self.statuses = {}
        self.closed_after_401 = 0
        self.kept_after_401 = 0
        self.sent = 0

    def run(self):
        c = None
        next_t = time.monotonic()
        while not self.stop.is_set():
            next_t += self.period
            try:
                if c is None:
                    c = Source("127.0.0.2", self.port, 2)
                c.request("GET", "/metrics", headers=auth("alice", "not the password"))
                self.sent += 1
                r = c.getresponse()
                r.read()
                self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
                if r.will_close or r.getheader("Connection", "").lower() == "close":
                    self.closed_after_401 += r.status == 401
                    c.close()
                    c = None
                elif r.status == 401:
                    self.kept_after_401 += 1  # the next bad request costs another bcrypt
            except (OSError, http.client.HTTPException):
                self.statuses["error"] = self.statuses.get("error", 0) + 1
                if c:
                    c.close()
                c = None
            delay = next_t - time.monotonic()
            if delay > 0:
                self.stop.wait(delay)
            else:
                next_t = time.monotonic()
        if c:
            c.close()


def main():
    t.require_tool("htpasswd")
    d = t.Daemon(CONFIG)
    hashed = subprocess.run(["htpasswd", "-nbB", "-C", "12", "alice", "wonder land"], check=True,
                            capture_output=True, text=True).stdout.strip().split(":", 1)[1]
    web = os.path.join(d.tmp, "web.yml")
    with open(web, "w") as f:
        f.write(f"basic_auth_users:\n  alice: {hashed}\n")
    d.args += ["--web.config.file", web]
    good = auth("alice", "wonder land")
    flooders = []
    try:
        d.start(wait_http=False)
        t.wait_until(lambda: _up(d, good), 15, what="iopsd")
        status, _, _ = d.get("/metrics", headers=good, timeout=5)  # the login is cached from here on
        assert status == 200, status
        flooders = [Flooder(d.port, FLOOD_RATE / FLOOD_CONNECTIONS) for _ in range(FLOOD_CONNECTIONS)]
        for f in flooders:
            f.start()
        latencies, failures = [], []
        t0 = time.monotonic()
        while time.monotonic() - t0 < DURATION_S:
            s = time.monotonic()
            try:
                status, _, body = d.get("/metrics", headers=good, timeout=5)
                if status != 200:
                    failures.append(status)
            except OSError as e:
                failures.append(repr(e))
            latencies.append(time.monotonic() - s)
            time.sleep(0.2)
        for f in flooders:
            f.stop.set()
        for f in flooders:
            f.join()
        statuses = {}
        for f in flooders:
            for k, v in f.statuses.items():
                statuses[k] = statuses.get(k, 0) + v
        sent = sum(f.sent for f in flooders)
        closed = sum(f.closed_after_401 for f in flooders)
        kept = sum(f.kept_after_401 for f in flooders)
        planned = FLOOD_RATE * DURATION_S
        latencies.sort()
        print(f"flood: {sent} bad requests in {DURATION_S} s ({sent / DURATION_S:.0f}/s), answers {statuses}, "
              f"{closed} connection(s) closed after a 401, {kept} kept open; planned {planned}")
        print(f"scraper: {len(latencies)} scrapes, p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
              f"slowest {latencies[-1] * 1000:.0f} ms, {len(failures)} failed")
        assert 200 not in statuses, f"a wrong password got 200: {statuses}"
        assert set(statuses) <= {401, 429, "error"}, statuses
        assert not failures, f"scrapes with the right password failed: {failures[:5]}"
        assert latencies[-1] < 1.0, f"a scrape took {latencies[-1]:.2f} s during a flood of bad credentials"
        assert sent >= 0.9 * planned, f"the flood did not reach its rate: {sent} of {planned} requests sent"
        assert statuses.get("error", 0) <= 0.01 * sent, f"too many transport errors in the flood: {statuses}"
        assert statuses.get(401, 0) > 0, f"no 401 at all: {statuses}"
        assert closed == statuses[401] and kept == 0, \
            f"{kept} of {statuses[401]} 401s left their keep-alive connection open ({closed} closed)"
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    finally:
        for f in flooders:
            f.stop.set()
        d.cleanup()
    print("PASS")


def _up(d, good):
    assert d.proc.poll() is None, d.read_log()
    try:
        return d.get("/healthz", headers=good, timeout=5)[0] in (200, 503)
    except (OSError, socket.timeout):
        time.sleep(0.1)
        return False


if __name__ == "__main__":
    main()
