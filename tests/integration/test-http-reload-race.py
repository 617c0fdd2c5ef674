#!/usr/bin/env python3
"""Reloads and a stop while clients keep the HTTP threads busy: the daemon
never aborts, and exits 0.

A reload puts the old libmicrohttpd daemon aside (MHD_quiesce_daemon()) and
a stop takes the listening socket back the same way. With its threads on
epoll, libmicrohttpd 0.9.75 (Debian 12's) aborts when a worker thread
takes the listening socket out of its epoll set at the moment the quiesce
does the same ("Fatal error in GNU libmicrohttpd daemon.c:5531: Failed to
remove listen FD from epoll set."): seen once in test-stuck-reloads, at
SIGTERM. The threads poll() instead, where a quiesce only wakes them.

Each round starts a daemon, keeps CLIENTS connections asking for /metrics
without a pause, sends RELOADS SIGHUPs, each once the one before is logged, and stops it with
SIGTERM while the clients still ask: every round must exit 0, with every
reload logged and no libmicrohttpd fatal error. The race is narrow (a few
instructions on each side), so the rounds alone pass by chance too; what
makes it impossible is checked directly: the daemon holds one epoll
instance, its event loop's (sd-event), and none for the HTTP threads
(three with them on epoll: one per worker)."""
import http.client
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

ROUNDS = 12
RELOADS = 50
CLIENTS = 6

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
"""


def client(port, stop, counts):
    while not stop.is_set():
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for _ in range(20):
                if stop.is_set():
                    break
                c.request("GET", "/metrics")
                r = c.getresponse()
                r.read()
                counts[r.status] = counts.get(r.status, 0) + 1
            c.close()
        except (OSError, http.client.HTTPException):
            counts["error"] = counts.get("error", 0) + 1  # a stop or a retired daemon closing it


def epolls(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[eventpoll]"
        except FileNotFoundError:
            pass
    return n


def one_round(i):
    d = t.Daemon(CONFIG)
    try:
        d.start()
        n = epolls(d.proc.pid)
        assert n == 1, f"iopsd holds {n} epoll instances: its HTTP threads are on epoll, not poll()"
        stop, counts = threading.Event(), {}
        threads = [threading.Thread(target=client, args=(d.port, stop, counts)) for _ in range(CLIENTS)]
        for th in threads:
            th.start()
        try:
            for k in range(RELOADS):
                # one at a time: SIGHUPs sent before the first is handled merge into one
                d.signal(signal.SIGHUP)
                t.wait_until(lambda: d.read_log().count("Reloaded") > k, 30, interval=0.005,
                             what=f"reload {k + 1} logged")
            rc, took = d.stop(timeout=30)
        finally:
            stop.set()
            for th in threads:
                th.join(30)
        log = d.read_log()
        assert "Fatal error" not in log and rc == 0, \
            f"round {i}: iopsd exited with {rc} after {RELOADS} reloads under load:\n{log[-1500:]}"
        assert counts.get(200, 0) > 0, f"round {i}: no request answered: {counts}"
        print(f"round {i}: {RELOADS} reloads, exit {rc} in {took:.2f} s; answers {counts}")
    finally:
        d.cleanup()


def main():
    for i in range(ROUNDS):
        one_round(i)
    print(f"ok: {ROUNDS} rounds of {RELOADS} reloads and a stop under {CLIENTS} clients, no abort")


if __name__ == "__main__":
    main()
