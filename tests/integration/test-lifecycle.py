#!/usr/bin/env python3
"""The daemon under a systemd-like supervisor: READY=1 only once serving,
STATUS= and WATCHDOG=1, SIGHUP reload (bad config kept out, good config
applied), SIGTERM stops with status 0 in under 2 s."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import Daemon, NotifySocket, wait_until  # noqa: E402

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@

[first]
rw=randread
bs=4k
size=1m
directory=@TMP@
rate_iops=20
runtime=200ms
interval=1s
"""

BROKEN = CONFIG + "\n[second]\nrw=randread\nbs=4q\ndirectory=@TMP@\n"
GOOD = CONFIG + "\n[second]\nrw=randread\nbs=4k\nsize=1m\ndirectory=@TMP@\nruntime=200ms\ninterval=1s\n"


def write_config(d, text):
    with open(d.config, "w") as f:
        f.write(text.replace("@TMP@", d.tmp))


def main():
    d = Daemon(CONFIG)
    notify = NotifySocket(d.tmp)
    d.env["NOTIFY_SOCKET"] = notify.path
    d.env["WATCHDOG_USEC"] = "400000"
    d.env.pop("WATCHDOG_PID", None)
    try:
        d.start(wait_http=False)
        ready = notify.wait_for("READY=1", timeout=15)
        # READY=1 promises a bound socket and a first device sample.
        status, _, _ = d.get("/healthz")
        assert status in (200, 503), status
        m = d.metrics()
        assert "iopsd_device_reads_completed_total" in m, "READY=1 before the first device sample"
        assert any(l.startswith("STATUS=") for msg in notify.messages for l in msg.split("\n")), \
            f"no STATUS= line: {notify.messages} (ready: {ready!r})"
        notify.wait_for("WATCHDOG=1", timeout=2)
        t0 = time.monotonic()
        notify.messages.clear()
        notify.wait_for("WATCHDOG=1", timeout=1)
        assert time.monotonic() - t0 < 0.5, "WATCHDOG=1 not sent at half of WATCHDOG_USEC"

        wait_until(lambda: 'probe="first"' in d.metrics(), 10, what="first probe in /metrics")

        # A broken config is reported with FILE:LINE and the old one keeps running.
        write_config(d, BROKEN)
        notify.messages.clear()
        d.signal(signal.SIGHUP)
        reloading = notify.wait_for("RELOADING=1", timeout=5)
        # systemd matches the reload by its CLOCK_MONOTONIC timestamp
        mono = [int(l.split("=", 1)[1]) for l in reloading.split("\n") if l.startswith("MONOTONIC_USEC=")]
        assert mono and abs(mono[0] - time.monotonic() * 1e6) < 5e6, f"bad MONOTONIC_USEC: {reloading!r}"
        notify.wait_for("READY=1", timeout=5)
        wait_until(lambda: f"{d.config}:16:" in d.read_log(), 5, what="FILE:LINE in the log")
        status, _, _ = d.get("/metrics")
        assert status == 200
        m = d.metrics()
        assert 'probe="first"' in m and 'probe="second"' not in m, "broken config was applied"
        assert d.proc.poll() is None

        # A good config is applied.
        write_config(d, GOOD)
        notify.messages.clear()
        d.signal(signal.SIGHUP)
        notify.wait_for("RELOADING=1", timeout=5)
        notify.wait_for("READY=1", timeout=5)
        wait_until(lambda: 'probe="second"' in d.metrics(), 10, what="second probe after reload")

        rc, took = d.stop()
        assert rc == 0, f"exit status {rc}\n{d.read_log()}"
        assert took < 2.0, f"SIGTERM took {took:.2f}s"
        notify.drain()
        assert any("STOPPING=1" in m for m in notify.messages), notify.messages
        print(f"ok: ready, status, watchdog, reload (bad kept out, good applied), stop in {took:.2f}s")
    except Exception:
        print(d.read_log())
        raise
    finally:
        notify.close()
        d.cleanup()


if __name__ == "__main__":
    main()
