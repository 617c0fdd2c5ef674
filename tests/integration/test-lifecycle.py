#!/usr/bin/env python3
"""The daemon under a systemd-like supervisor: READY=1 only once serving,
STATUS= and WATCHDOG=1 (at half of WATCHDOG_USEC), SIGHUP reload (bad
config kept out, good config applied), SIGTERM stops with status 0 (in
under 2 s: a timing check)."""
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import Daemon, NotifySocket, timing_check, wait_until  # noqa: E402

WATCHDOG_USEC = 400000

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


def watchdog_pings(notify, seconds):
    """When each WATCHDOG=1 arrived (monotonic) over the next `seconds`."""
    return [at for at, data in notify.receive(seconds) if "WATCHDOG=1" in data.split("\n")]


def main():
    d = Daemon(CONFIG)
    notify = NotifySocket(d.tmp)
    d.env["NOTIFY_SOCKET"] = notify.path
    d.env["WATCHDOG_USEC"] = str(WATCHDOG_USEC)
    d.env.pop("WATCHDOG_PID", None)
    try:
        d.start(wait_http=False)
        ready = notify.wait_for("READY=1", timeout=30)
        # READY=1 promises a bound socket and a first device sample.
        status, _, _ = d.get("/healthz")
        assert status in (200, 503), status
        m = d.metrics()
        assert "iopsd_device_reads_completed_total" in m, "READY=1 before the first device sample"
        assert any(l.startswith("STATUS=") for msg in notify.messages for l in msg.split("\n")), \
            f"no STATUS= line: {notify.messages} (ready: {ready!r})"
        notify.wait_for("WATCHDOG=1", timeout=30)
        t0 = time.monotonic()
        notify.messages.clear()
        notify.wait_for("WATCHDOG=1", timeout=30)
        gap = time.monotonic() - t0
        timing_check(gap < 0.5, f"WATCHDOG=1 at half of WATCHDOG_USEC={WATCHDOG_USEC}: the next one "
                                f"{gap:.3f}s after one (under 0.5s)")
        # the gate's form: the daemon keeps its cadence from the planned
        # times (a late ping is followed by the ones it owes), so that over
        # 5 s the pings come, on average, at half of WATCHDOG_USEC whatever
        # the load; a daemon that pinged once a WATCHDOG_USEC comes at 1x
        notify.drain()
        pings = watchdog_pings(notify, 5.0)
        assert len(pings) >= 2, f"{len(pings)} WATCHDOG=1 in 5 s: {notify.messages[-5:]}"
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        mean_gap = (pings[-1] - pings[0]) / (len(pings) - 1)
        assert mean_gap <= 0.75 * WATCHDOG_USEC / 1e6, \
            f"WATCHDOG=1 every {mean_gap:.3f}s on average ({len(pings)} in 5 s), not at half of WATCHDOG_USEC"
        print(f"watchdog: {len(pings)} WATCHDOG=1 in 5 s, every {mean_gap:.3f}s on average, "
              f"median gap {statistics.median(gaps):.3f}s, longest {max(gaps):.3f}s")

        wait_until(lambda: 'probe="first"' in d.metrics(), 30, what="first probe in /metrics")

        # A broken config is reported with FILE:LINE and the old one keeps running.
        write_config(d, BROKEN)
        notify.messages.clear()
        d.signal(signal.SIGHUP)
        reloading = notify.wait_for("RELOADING=1", timeout=30)
        # systemd matches the reload by its CLOCK_MONOTONIC timestamp (60 s:
        # this checks the clock, which another would miss by far more)
        mono = [int(l.split("=", 1)[1]) for l in reloading.split("\n") if l.startswith("MONOTONIC_USEC=")]
        assert mono and abs(mono[0] - time.monotonic() * 1e6) < 60e6, f"bad MONOTONIC_USEC: {reloading!r}"
        notify.wait_for("READY=1", timeout=30)
        wait_until(lambda: f"{d.config}:16:" in d.read_log(), 30, what="FILE:LINE in the log")
        status, _, _ = d.get("/metrics")
        assert status == 200
        m = d.metrics()
        assert 'probe="first"' in m and 'probe="second"' not in m, "broken config was applied"
        assert d.proc.poll() is None

        # A good config is applied.
        write_config(d, GOOD)
        notify.messages.clear()
        d.signal(signal.SIGHUP)
        notify.wait_for("RELOADING=1", timeout=30)
        notify.wait_for("READY=1", timeout=30)
        wait_until(lambda: 'probe="second"' in d.metrics(), 30, what="second probe after reload")

        rc, took = d.stop()
        assert rc == 0, f"exit status {rc}\n{d.read_log()}"
        assert took < 30.0, f"SIGTERM took {took:.2f}s"
        timing_check(took < 2.0, f"SIGTERM took {took:.2f}s (under 2s)")
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
