#!/usr/bin/env python3
"""The HTTP server of the real daemon: every endpoint, content negotiation
and gzip, every error path (405, 404, 400, 413, 431), connection limits, the
header deadline against slowloris, IPv4/IPv6 listen addresses and bad ones."""
import gzip
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import IOPSD, SRCDIR, free_port, timing_check, wait_until  # noqa: E402

FIXTURE = os.path.join(SRCDIR, "tests", "fixtures", "sampler", "ec2-md-raid0")
PROM_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OM_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

CONFIG = """[global]
state_directory={tmp}
max_connections={max_conn}
max_connections_per_ip={per_ip}
connection_timeout={timeout}

[rr]
rw=randread
bs=4k
size=4m
directory={tmp}/probe
runtime=200ms
interval=1s
rate_iops=50
"""


class Server:
    def __init__(self, listen=None, max_conn=64, per_ip=16, timeout="10s", fixture=True, args=()):
        self.tmp = tempfile.mkdtemp(prefix="iopsd-http-")
        os.makedirs(os.path.join(self.tmp, "probe"))
        self.port = free_port()
        self.listen = listen or f"127.0.0.1:{self.port}"
        cfg = os.path.join(self.tmp, "iopsd.conf")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(tmp=self.tmp, max_conn=max_conn, per_ip=per_ip, timeout=timeout))
        cmd = [IOPSD, "--config", cfg, "--web.listen-address", self.listen]
        if fixture:
            cmd += ["--path.procfs", os.path.join(FIXTURE, "proc"), "--path.sysfs", os.path.join(FIXTURE, "sys")]
        cmd += list(args)
        self.log = open(os.path.join(self.tmp, "log"), "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def wait(self, host="127.0.0.1", port=None):
        def up():
            assert self.proc.poll() is None, f"iopsd exited {self.proc.returncode}: {self.read_log()}"
            try:
                return request("GET", "/healthz", host=host, port=port or self.port)[0] in (200, 503)
            except OSError:
                return False
        wait_until(up, 30, 0.05, "iopsd to answer HTTP")
        return self

    def read_log(self):
        with open(os.path.join(self.tmp, "log"), "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        subprocess.run(["rm", "-rf", self.tmp])
        return self.proc.returncode


def request(method, path, headers=None, body=None, host="127.0.0.1", port=None, timeout=30):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def expect_json_error(status, headers, body, want_status, what):
    assert status == want_status, f"{what}: status {status}, want {want_status}: {body[:200]!r}"
    assert headers.get("content-type") == "application/json", f"{what}: content-type {headers.get('content-type')}"
    doc = json.loads(body)
    assert isinstance(doc.get("error"), str) and doc["error"], f"{what}: no error message in {doc}"
    return doc["error"]


def check_endpoints(s):
    p = s.port
    status, h, body = request("GET", "/metrics", port=p)
    assert status == 200 and h["content-type"] == PROM_TYPE, (status, h)
    text = body.decode()
    assert "iopsd_build_info{" in text and "# EOF" not in text
    assert 'iopsd_device_info{device="md0",kind="md",members="xvdf,xvdg"' in text, "fixture md0 missing"
    assert "process_resident_memory_bytes " in text

    status, h, body = request("GET", "/metrics", {"Accept": "application/openmetrics-text;version=1.0.0,"
                                                           "text/plain;version=0.0.4;q=0.5"}, port=p)
    assert status == 200 and h["content-type"] == OM_TYPE, h
    assert body.decode().endswith("# EOF\n")
    assert "# TYPE iopsd_device_reads_completed counter\n" in body.decode()

    status, h, body = request("GET", "/metrics", {"Accept-Encoding": "gzip"}, port=p)
    assert status == 200 and h.get("content-encoding") == "gzip", h
    assert "iopsd_build_info{" in gzip.decompress(body).decode()
    status, h, body = request("GET", "/metrics", {"Accept-Encoding": "gzip;q=0, identity"}, port=p)
    assert "content-encoding" not in h and body.startswith(b"# HELP")

    status, h, body = request("HEAD", "/metrics", port=p)
    assert status == 200 and body == b"" and int(h["content-length"]) > 1000, (status, h)

    for path, key in [("/api/v1/status", "version"), ("/api/v1/devices", "devices"),
                      ("/api/v1/probes", "probes"), ("/api/v1/history?window=1m", "devices")]:
        status, h, body = request("GET", path, port=p)
        assert status == 200 and h["content-type"] == "application/json", (path, status, body[:200])
        assert key in json.loads(body), (path, body[:200])
    devices = json.loads(request("GET", "/api/v1/devices?device=md0", port=p)[2])["devices"]
    assert [d["name"] for d in devices] == ["md0"] and devices[0]["members"] == ["xvdf", "xvdg"], devices

    status, h, body = request("GET", "/", port=p)
    assert status == 200 and h["content-type"].startswith("text/html") and b"/metrics" in body

    def healthy():
        st, _, b = request("GET", "/healthz", port=p)
        return st == 200 and json.loads(b)["status"] == "ok"
    wait_until(healthy, 30, 0.2, "/healthz 200")
    for path, text in (("/-/healthy", b"iopsd is Healthy.\n"), ("/-/ready", b"iopsd is Ready.\n")):
        status, h, body = request("GET", path, port=p)
        assert status == 200 and h["content-type"].startswith("text/plain") and body == text, \
            (path, status, h, body)
    print("ok: endpoints, negotiation, gzip, HEAD, /-/healthy, /-/ready")


def check_errors(s):
    p = s.port
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]:
        st, h, b = request(method, "/metrics", port=p)
        expect_json_error(st, h, b, 405, method)
        assert h.get("allow") == "GET, HEAD", h
    expect_json_error(*request("GET", "/nope", port=p), 404, "unknown path")
    expect_json_error(*request("GET", "/metrics/", port=p), 404, "trailing slash")
    expect_json_error(*request("GET", "/api/v1/devices?device=sdzz", port=p), 404, "unknown device")
    expect_json_error(*request("GET", "/api/v1/probes?probe=nope", port=p), 404, "unknown probe")
    for q in ["window=abc", "window=2d", "window=0", "window=", "window=500ms", "step=0", "step=2h&window=1m",
              "device=", "foo=1", "window=5m&window=1m", "device=a%20b"]:
        msg = expect_json_error(*request("GET", f"/api/v1/history?{q}", port=p), 400, q)
        assert len(msg) < 200, msg
    expect_json_error(*request("GET", "/api/v1/status?x=1", port=p), 400, "status with a query")
    # a scraper may add parameters to /metrics: they are ignored
    assert request("GET", "/metrics?collect[]=x", port=p)[0] == 200
    expect_json_error(*request("GET", "/metrics", body=b"x" * 100, port=p), 413, "GET with a body")
    # headers larger than the connection's memory: refused by libmicrohttpd
    st, _, _ = request("GET", "/metrics", {"X-Big": "a" * 40000}, port=p)
    assert st in (413, 431), st
    st, _, _ = request("GET", "/metrics?" + "a" * 40000, port=p)
    assert st in (413, 414, 431), st
    assert request("GET", "/healthz", port=p)[0] in (200, 503), "server down after errors"
    print("ok: 405 with Allow, 404, 400, 413, 431, all errors JSON")


def open_idle(n, port, source="127.0.0.1"):
    socks = []
    for _ in range(n):
        so = socket.socket()
        so.bind((source, 0))
        so.connect(("127.0.0.1", port))
        socks.append(so)
    return socks


def tcp_sockets():
    """(local, remote, state, rx_queue, inode) of each IPv4 TCP socket
    (/proc/net/tcp); addresses as (ip, port)."""
    def addr(h):
        ip, port = h.split(":")
        return socket.inet_ntoa(struct.pack("=I", int(ip, 16))), int(port, 16)
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return [(addr(w[1]), addr(w[2]), w[3], int(w[4].split(":")[1], 16), int(w[9])) for w in rows]


def held(port):
    """The server's side of the connections to 127.0.0.1:port: how many it
    has accepted and holds open (a socket of its own: inode), how many wait
    in its listen backlog (the listening socket's queue)."""
    accepted = backlog = 0
    for local, _, state, rx_queue, inode in tcp_sockets():
        if local != ("127.0.0.1", port):
            continue
        if state == "0A":  # LISTEN
            backlog = rx_queue
        elif inode:
            accepted += 1
    return accepted, backlog


def wait_held(port, accepted, what):
    """Wait until the server holds `accepted` connections and none waits
    in its backlog (instead of sleeping for its accepts and closes)."""
    wait_until(lambda: held(port) == (accepted, 0), 30, 0.02, what)


def attempt(port, source="127.0.0.1", timeout=1.5, path="/healthz"):
    """What the server does with a new connection that sends a request:
    "served" (a reply), "closed" (closed or reset unanswered: the per-IP
    limit), "queued" (no reply within `timeout` while it still waits in the
    listen backlog: the global limit) or "silent" (accepted by the server,
    no reply within `timeout`). A refusal is "closed" or "queued"; silence
    after an accept is none (it used to count as one: a slow reply)."""
    so = socket.socket()
    so.settimeout(timeout)
    try:
        so.bind((source, 0))
        so.connect(("127.0.0.1", port))
        me = so.getsockname()
        so.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head = so.recv(100)
        return "closed" if head == b"" else "busy" if head.startswith(b"HTTP/1.1 503") else "served"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    except socket.timeout:
        taken = any(local == ("127.0.0.1", port) and remote == me and state != "0A" and inode
                    for local, remote, state, _, inode in tcp_sockets())
        return "silent" if taken else "queued"
    finally:
        so.close()


def check_limits():
    s = Server(max_conn=6, per_ip=3, timeout="30s").wait()
    try:
        wait_held(s.port, 0, "the server to close wait()'s connection")
        socks = open_idle(3, s.port)
        wait_held(s.port, 3, "the server to accept 3 connections")
        got = attempt(s.port)
        assert got in ("closed", "queued"), \
            f"a 4th connection from one address was not refused ({got}; max_connections_per_ip=3)"
        # a slow reply is no refusal: the address must be served
        got = attempt(s.port, "127.0.0.2", timeout=15)
        assert got == "served", f"another address was not served ({got})"
        wait_held(s.port, 3, "the server to close the served connection")
        more = open_idle(3, s.port, "127.0.0.3")
        wait_held(s.port, 6, "the server to hold 6 connections")
        got = attempt(s.port, "127.0.0.3")
        assert got in ("closed", "queued"), \
            f"a 7th connection from an address that holds 3 was not refused ({got}; max_connections=6)"
        # past max_connections, the scrape lane: an address that holds at
        # most one other gets in, for /metrics and the health checks only
        got = attempt(s.port, "127.0.0.4")
        assert got == "served", f"a scraper's /healthz past max_connections was not served ({got})"
        got = attempt(s.port, "127.0.0.4", path="/-/ready")
        assert got == "served", f"a scraper's /-/ready past max_connections was not served ({got})"
        got = attempt(s.port, "127.0.0.5", path="/api/v1/devices")
        assert got == "busy", f"/api/v1/devices on the scrape lane was not refused with 503 ({got})"
        for so in socks + more:
            so.close()
        wait_until(lambda: attempt(s.port, timeout=15) == "served", 30, 0.2,
                   "a connection served after the others closed")
        print("ok: per-IP and global connection limits")
    finally:
        assert s.stop() == 0


def check_slowloris():
    s = Server(timeout="2s").wait()
    try:
        so = socket.socket()
        so.connect(("127.0.0.1", s.port))
        so.settimeout(0.2)
        so.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        closed = None
        while time.monotonic() - t0 < 30:
            try:
                so.sendall(b"X-Slow: y\r\n")  # a header line every 0.4 s: never idle
                if so.recv(100) == b"":
                    closed = time.monotonic() - t0
                    break
            except socket.timeout:
                pass
            except (ConnectionResetError, BrokenPipeError):
                closed = time.monotonic() - t0
                break
            time.sleep(0.2)
        so.close()
        assert closed is not None, "a request trickling its headers was kept open for 30 s (timeout 2 s)"
        assert 1.5 < closed < 30, f"closed after {closed:.1f}s, want ~2-3 s"
        timing_check(closed < 4.5, f"slowloris connection closed after {closed:.1f}s (timeout 2 s), < 4.5 s")
        # an idle connection is closed too, a normal request still works
        so = socket.create_connection(("127.0.0.1", s.port))
        so.settimeout(40)
        t0 = time.monotonic()
        assert so.recv(100) == b"", "an idle connection got data"
        idle = time.monotonic() - t0
        assert idle < 30, f"an idle connection was closed after {idle:.1f}s (timeout 2 s)"
        timing_check(idle < 5, f"idle connection closed after {idle:.1f}s (timeout 2 s), < 5 s")
        so.close()
        assert request("GET", "/healthz", port=s.port)[0] in (200, 503)
        print(f"ok: header deadline closed a slowloris connection after {closed:.1f}s")
    finally:
        assert s.stop() == 0


def has_ipv6():
    try:
        with socket.socket(socket.AF_INET6) as so:
            so.bind(("::1", 0))
        return True
    except OSError:
        return False


def check_addresses():
    if has_ipv6():
        p = free_port()
        s = Server(listen=f"[::1]:{p}").wait(host="::1", port=p)
        try:
            assert request("GET", "/metrics", host="::1", port=p)[0] == 200
            assert refused_or_closed("127.0.0.1", p), "[::1] also served IPv4"
        finally:
            assert s.stop() == 0
        p = free_port()
        s = Server(listen=f":{p}").wait(port=p)
        try:
            assert request("GET", "/metrics", host="::1", port=p)[0] == 200
            assert request("GET", "/metrics", host="127.0.0.1", port=p)[0] == 200
        finally:
            assert s.stop() == 0
        p1, p2 = free_port(), free_port()
        s = Server(listen=f"127.0.0.1:{p1},[::1]:{p2}").wait(port=p1)
        try:
            assert request("GET", "/healthz", host="::1", port=p2)[0] in (200, 503)
        finally:
            assert s.stop() == 0
        print("ok: [::1]:PORT, :PORT (dual stack), a list of addresses")
    else:
        print("note: no IPv6 loopback here, IPv6 listen addresses not tested")

    # bad addresses and a taken port: a clear message, no server. A flag
    # value the server's parser refuses is a usage error (64), caught before
    # anything starts (in a config file it is a config error, 78:
    # test-check-config.sh)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    for listen, status, needle in [("127.0.0.1:99999", 64, "is not HOST:PORT"),
                                   ("[::1:80", 64, "is not HOST:PORT"),
                                   ("::1:80", 64, "is not HOST:PORT"),
                                   (f"127.0.0.1:{busy.getsockname()[1]}", 1, "Failed to bind")]:
        s = Server(listen=listen)
        rc = s.proc.wait(30)
        log = s.read_log()
        s.stop()
        assert rc == status and needle in log, f"{listen}: exit {rc}, log: {log}"
    busy.close()
    print("ok: bad listen addresses exit 64, a taken port exits 1, with messages")


def refused_or_closed(host, port):
    try:
        request("GET", "/healthz", host=host, port=port, timeout=2)
        return False
    except OSError:
        return True


def main():
    s = Server().wait()
    try:
        check_endpoints(s)
        check_errors(s)
    finally:
        rc = s.stop()
    assert rc == 0, f"exit {rc}"
    check_limits()
    check_slowloris()
    check_addresses()


if __name__ == "__main__":
    main()
