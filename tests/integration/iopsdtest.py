"""Helpers shared by the Python integration tests: start the real daemon,
listen on a NOTIFY_SOCKET, find free ports, fetch over HTTP, skip cleanly."""
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
IOPSD = os.environ.get("IOPSD", "iopsd")
SRCDIR = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def require_root():
    if os.geteuid() != 0:
        skip("needs root")


def require_tool(*names):
    for n in names:
        if not shutil.which(n):
            skip(f"{n} not installed")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NotifySocket:
    """An AF_UNIX datagram socket that collects sd_notify messages."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def wait_for(self, needle, timeout=10.0):
        """Wait for a message containing the line `needle`; returns it."""
        deadline = time.monotonic() + timeout
        for m in self.messages:
            if needle in m.split("\n"):
                return m
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                break
            self.messages.append(data)
            if needle in data.split("\n"):
                return data
        raise AssertionError(f"no {needle!r} from sd_notify within {timeout}s; got {self.messages}")

    def drain(self):
        self.sock.setblocking(False)
        try:
            while True:
                self.messages.append(self.sock.recv(4096).decode())
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)

    def close(self):
        self.sock.close()


class Daemon:
    """The real iopsd, started with a config file, logging to a file."""

    def __init__(self, config_text=None, args=(), env=None, workdir=None, port=None):
        self.tmp = workdir or tempfile.mkdtemp(prefix="iopsd-test-")
        self.port = port or free_port()
        self.config = os.path.join(self.tmp, "iopsd.conf")
        if config_text is not None:
            with open(self.config, "w") as f:
                f.write(config_text.replace("@PORT@", str(self.port)).replace("@TMP@", self.tmp))
        self.log = os.path.join(self.tmp, "iopsd.log")
        self.args = list(args)
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.proc = None

    def start(self, wait_http=True, extra_args=()):
        cmd = [IOPSD]
        if os.path.exists(self.config):
            cmd += ["--config", self.config]
        cmd += ["--web.listen-address", f"127.0.0.1:{self.port}"] + self.args + list(extra_args)
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, env=self.env)
        if wait_http:
            self.wait_http()
        return self

    def wait_http(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"iopsd exited with {self.proc.returncode}:\n{self.read_log()}")
            try:
                status, _, _ = self.get("/healthz")
                return status
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"iopsd did not answer HTTP within {timeout}s:\n{self.read_log()}")

    def get(self, path, headers=None, method="GET", timeout=5.0):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            c.close()

    def get_json(self, path):
        status, _, body = self.get(path)
        assert status == 200, f"GET {path}: {status} {body[:300]!r}"
        return json.loads(body)

    def metrics(self):
        status, _, body = self.get("/metrics")
        assert status == 200, f"GET /metrics: {status}"
        return body.decode()

    def read_log(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=5.0):
        """SIGTERM; returns (exit status, seconds it took)."""
        if self.proc is None or self.proc.poll() is not None:
            return (self.proc.returncode if self.proc else None), 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        return rc, time.monotonic() - t0

    def cleanup(self):
        self.stop()
        with contextlib.suppress(Exception):
            self.logf.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def metric_value(text, name, labels=None):
    """Value of the first sample of `name` whose labels include `labels`."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        rest = line[len(name):]
        if rest and rest[0] not in "{ ":
            continue
        if labels:
            if not all(f'{k}="{v}"' in rest for k, v in labels.items()):
                continue
        return float(line.rsplit(" ", 1)[1])
    return None


def wait_until(pred, timeout, interval=0.2, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
