#!/usr/bin/env python3
"""Bad credentials cannot starve the scrapes. With basic auth at bcrypt
cost 12 (the highest iopsd accepts), one client (127.0.0.2, eight
keep-alive connections) sends 200 requests a second with a wrong password
while a scraper with the right one (127.0.0.1) asks for /metrics every
200 ms: every scrape gets 200, as fast as before the flood give or take
a bcrypt (within 1 s: a timing check), and the flood gets only 401 or
429, never 200. The flood reaches its rate (at least 25 % of the planned
requests sent; 90 %: a timing check; at most 1 % transport errors), and
every 401 closes its connection (no bcrypt per request on one keep-alive
connection)."""
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
                    c = Source("127.0.0.2", self.port, 30)
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


def scrapes(d, good, seconds):
    """GET /metrics with the right password every 200 ms for `seconds`:
    (latencies, failures)."""
    latencies, failures = [], []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        s = time.monotonic()
        try:
            status, _, body = d.get("/metrics", headers=good, timeout=30)
            if status != 200:
                failures.append(status)
        except OSError as e:
            failures.append(repr(e))
        latencies.append(time.monotonic() - s)
        time.sleep(0.2)
    return latencies, failures


def bad_login_time(port):
    """Seconds that one request with a wrong password takes (one bcrypt),
    from 127.0.0.3 (not the flood's address nor the scraper's)."""
    c = Source("127.0.0.3", port, 30)
    try:
        s = time.monotonic()
        c.request("GET", "/metrics", headers=auth("alice", "not the password"))
        r = c.getresponse()
        r.read()
        assert r.status == 401, f"a wrong password before the flood: {r.status}"
        return time.monotonic() - s
    finally:
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
        t.wait_until(lambda: _up(d, good), 30, what="iopsd")
        status, _, _ = d.get("/metrics", headers=good, timeout=30)  # the login is cached from here on
        assert status == 200, status
        # the baseline, on this machine as loaded as it is now: the scrapes
        # for 4 s, and a bad login (a bcrypt, which a scrape may wait for)
        base, base_failures = scrapes(d, good, 4)
        assert not base_failures, f"scrapes with the right password failed before the flood: {base_failures[:5]}"
        base.sort()
        base_p90 = base[int(len(base) * 0.9)]
        bcrypt = max(bad_login_time(d.port) for _ in range(3))
        flooders = [Flooder(d.port, FLOOD_RATE / FLOOD_CONNECTIONS) for _ in range(FLOOD_CONNECTIONS)]
        for f in flooders:
            f.start()
        latencies, failures = scrapes(d, good, DURATION_S)
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
              f"slowest {latencies[-1] * 1000:.0f} ms, {len(failures)} failed; before the flood: "
              f"p90 {base_p90 * 1000:.0f} ms, a bad login {bcrypt * 1000:.0f} ms")
        assert 200 not in statuses, f"a wrong password got 200: {statuses}"
        assert set(statuses) <= {401, 429, "error"}, statuses
        assert not failures, f"scrapes with the right password failed: {failures[:5]}"
        # a scrape may wait for a bcrypt under way: in the gate, within 20
        # times its p90 before the flood or 4 bad logins (0.5 s at least)
        bound = max(20 * base_p90, 4 * bcrypt, 0.5)
        assert latencies[-1] < bound, \
            (f"a scrape took {latencies[-1]:.2f} s during a flood of bad credentials, more than "
             f"{bound:.2f} s (p90 before: {base_p90:.3f} s, a bad login: {bcrypt:.3f} s)")
        t.timing_check(latencies[-1] < 1.0, f"a scrape took {latencies[-1]:.2f} s during a flood of bad "
                       f"credentials, < 1 s")
        assert sent >= 0.25 * planned, f"the flood fell far short of its rate: {sent} of {planned} requests sent"
        t.timing_check(sent >= 0.9 * planned, f"the flood sent {sent} of {planned} planned requests, >= 90 %")
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
        return d.get("/healthz", headers=good, timeout=30)[0] in (200, 503)
    except (OSError, socket.timeout):
        time.sleep(0.1)
        return False


if __name__ == "__main__":
    main()
