"""Helpers of the benchmarks that run iopsd and node_exporter side by side:
a free port, a scrape of /metrics, waiting for a server to answer, a
process's memory, stopping them all."""
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read()


def wait_http(port, proc, timeout=15):
    """Until /metrics on `port` answers; exits if `proc` dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"process exited with {proc.returncode}")
        try:
            scrape(port)
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"no HTTP on port {port}")


def stop_all(procs):
    """SIGTERM every process of the dict still running, SIGKILL after 5 s."""
    for p in procs.values():
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


def memory_kib(pid):
    """VmRSS, VmHWM, RssAnon, RssFile, Threads (/proc/PID/status) and Pss
    (smaps_rollup) of `pid`; KiB but Threads."""
    out = {}
    for path, keys in ((f"/proc/{pid}/status", ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads")),
                       (f"/proc/{pid}/smaps_rollup", ("Pss",))):
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in keys:
                    out[key] = int(value.split()[0])
    return out
