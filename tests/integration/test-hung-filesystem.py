#!/usr/bin/env python3
"""A probe directory on a filesystem that stops answering (a FUSE
passthrough, tests/integration/hangfs.py, whose calls block on command,
like an NFS server gone away). The case that stopped the daemon: the
target resolved at start, then its attributes expire from the kernel's
cache (FUSE's attr_timeout, 1 s) and every stat() of the path waits for the
server. While the filesystem hangs:
  - device samples keep coming every second;
  - /metrics answers within 1 s;
  - the watchdog (WATCHDOG_USEC, NOTIFY_SOCKET read by the test) is fed;
  - the hung probe reports a timeout within the open's own bound (10 s),
    not the layout's budget (30 s and more), saying that opening hung: a
    probe on another filesystem keeps running and succeeding;
  - a second probe on the hung filesystem, due after the first is stuck,
    does not start a run that would hang behind it (and keep showing its
    last success meanwhile): it fails at once, a timeout naming the stuck
    probe, with no new call blocked in the filesystem.
When the filesystem answers again the hung probe recovers by itself.
(The figures are timing checks, asserted in the lab; the gate holds that
samples and pings keep coming, /metrics answers within 20 s and the
timeout comes within 28 s, before the layout's budget.)

Then a filesystem that already hangs when iopsd starts: the probe's
first run, which first removes stray probe files from its directory, hangs
there. A reload then must not wait for it (the main loop joins the probe
threads): the reload is logged within 5 s (the gate: 30 s), samples
stay fresh, the watchdog is fed, and the probe reports a timeout; once
the filesystem answers, the probe recovers."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
bs=4k
size=1m
runtime=100ms
interval=1s
rate_iops=200

[second]
rw=randread
interval={second_interval}s
directory={fuse}/q

[hung]
rw=randread
directory={fuse}/p

[healthy]
rw=randread
directory={ext4}
"""

# a run that hangs opening its file times out after the open's bound
# (10 s, then 1 s of grace) at its next run (interval 1 s); the layout's
# budget would be 31 s
OPEN_BOUND = 10
HANG_SECONDS = 30
# the second probe's next run must come after the first is stuck, however
# long that took within TIMEOUT_BOUND
SECOND_INTERVAL = 40
WATCHDOG_USEC = 3_000_000  # fed every 1.5 s
# what the gate holds while a filesystem hangs (the 1 s, 2.5 s, watchdog
# and OPEN_BOUND + 6 s figures are timing checks, asserted in the lab)
METRICS_BOUND = 20  # /metrics answers (blocking for good is the fault)
TIMEOUT_BOUND = 28  # the hung probe's timeout, before the layout's budget (31 s)


def sample(d):
    """The newest device sample's timestamp, and its age in seconds."""
    ts = t.metric_value(d.metrics(), "iopsd_sample_timestamp_seconds")
    return ts, (time.time() - ts if ts else None)


def get_metrics(d):
    """GET /metrics while a filesystem hangs; the seconds it took."""
    s = time.monotonic()
    status, _, _ = d.get("/metrics", timeout=30)
    took = time.monotonic() - s
    assert status == 200, status
    assert took < METRICS_BOUND, f"/metrics took {took:.2f} s while a filesystem hung"
    return took


def sample_rate(d, seconds=3):
    """New device samples per second, seen by reading /metrics once a
    second as the checks during a hang do: the rate before the hang, to
    hold the rate during it to (a loaded machine slows both)."""
    since = sample(d)[0] or 0
    t0 = time.monotonic()
    seen = set()
    while time.monotonic() - t0 < seconds:
        time.sleep(1)
        seen.add(sample(d)[0])
    return len({ts for ts in seen if ts and ts > since}) / (time.monotonic() - t0)


def pings_between(wd, t0, t1):
    return sum(1 for p in wd.pings if t0 <= p <= t1)


def check_while_hung(d, wd, fs, hung, healthy):
    rate_before = sample_rate(d)
    healthy_before = healthy.state()
    timeouts_before = hung.errors("timeout")
    since = sample(d)[0] or 0
    t0 = time.monotonic()
    fs.hang("all")
    worst_metrics, worst_age = 0.0, 0.0
    seen = set()
    while time.monotonic() - t0 < HANG_SECONDS and hung.errors("timeout") <= timeouts_before:
        time.sleep(1)
        took = get_metrics(d)
        ts, age = sample(d)
        seen.add(ts)
        worst_metrics, worst_age = max(worst_metrics, took), max(worst_age, age)
        print(f"  hung {time.monotonic() - t0:4.1f}s: /metrics {took * 1000:.0f} ms, "
              f"sample {age:.2f} s old, {fs.blocked()} call(s) blocked in the filesystem")
    t1 = time.monotonic()
    gap = wd.longest_gap(t0, t1)
    pings = pings_between(wd, t0, t1)
    new = len({ts for ts in seen if ts and ts > since})
    rate = new / (t1 - t0)
    print(f"  longest watchdog gap {gap:.2f} s ({pings} pings); slowest /metrics {worst_metrics * 1000:.0f} ms; "
          f"oldest sample {worst_age:.2f} s; {new} new samples ({rate:.2f}/s, {rate_before:.2f}/s before)")
    assert fs.blocked() > 0, "nothing blocked in the filesystem: the test hung nothing"
    t.timing_check(worst_metrics < 1.0, f"/metrics within 1 s while a filesystem hung: slowest {worst_metrics:.2f} s")
    t.timing_check(worst_age < 2.5, f"device samples under 2.5 s old while a filesystem hung: oldest {worst_age:.1f} s")
    t.timing_check(gap < WATCHDOG_USEC / 1e6,
                   f"WATCHDOG=1 at least every {WATCHDOG_USEC / 1e6:.0f} s while a filesystem hung: "
                   f"longest gap {gap:.1f} s")
    assert new >= 3 and rate >= 0.5 * rate_before, \
        f"device samples stopped while a filesystem hung: {new} new in {t1 - t0:.1f} s " \
        f"({rate:.2f}/s, {rate_before:.2f}/s before)"
    assert pings >= 2, f"the watchdog stopped while a filesystem hung: {pings} WATCHDOG=1 in {t1 - t0:.1f} s"
    st = hung.state()
    took = time.monotonic() - t0
    assert hung.errors("timeout") > timeouts_before, f"the hung probe reports no timeout: {st}"
    assert st["success"] == 0, st
    print(f"  the hung probe timed out {took:.1f} s after the filesystem hung: {hung.last_failure()}")
    t.timing_check(took < OPEN_BOUND + 6,
                   f"the hung probe timed out within {OPEN_BOUND + 6} s of the hang: {took:.1f} s")
    assert took < TIMEOUT_BOUND, \
        f"a run hanging in its open timed out after {took:.1f} s, not on the open's bound ({OPEN_BOUND} s)"
    assert f"opening {fs.mountpoint}/p/" in hung.last_failure() and \
        f"within {OPEN_BOUND} s" in hung.last_failure(), hung.last_failure()
    hs = healthy.state()
    assert hs["success"] == 1 and hs["last_run"] > healthy_before["last_run"], \
        f"the probe on another filesystem stopped: {hs} (before: {healthy_before}); log:\n{d.read_log()[-6000:]}"
    assert sum(hs["errors"].values()) == sum(healthy_before["errors"].values()), \
        f"the probe on another filesystem reports errors: {hs}"
    return st["last_run"]


def check_second_probe(d, fs, hung, second, stuck_at):
    """`second` (interval SECOND_INTERVAL) last ran before the filesystem
    hung; its next run is due after `hung` got stuck (realtime `stuck_at`)."""
    before = second.state()
    blocked = fs.blocked()
    assert before["success"] == 1 and before["last_run"] + SECOND_INTERVAL > stuck_at + 1, \
        f"inconclusive: the second probe was due before the first was stuck ({before}, stuck at {stuck_at:.1f})"
    t.wait_until(lambda: second.state()["last_run"] > before["last_run"], SECOND_INTERVAL + 30,
                 what="the second probe's next run")
    st = second.state()
    line = second.last_failure()
    print(f"  second probe on the hung filesystem: success {st['success']}, "
          f"{fs.blocked()} call(s) blocked (was {blocked}): {line}")
    assert st["success"] == 0, f"the second probe on the hung filesystem reports success: {st}"
    assert st["errors"]["timeout"] == before["errors"]["timeout"] + 1, st
    assert "the I/O of probe [hung] on the same filesystem" in line and "still pending" in line, line
    assert fs.blocked() == blocked, f"the second probe's run hangs too: {blocked} -> {fs.blocked()} blocked calls"


AT_START_CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
bs=4k
size=1m
runtime=100ms
interval=1s
rate_iops=200

[hung]
rw=randread
directory={fuse}/p
"""
RELOAD_BOUND = 5  # a timing check; the gate waits RELOAD_WAIT for it
RELOAD_WAIT = 30


def hung_at_start():
    fs = t.HangFS("reliability-hungstart")
    d = None
    wd = None
    try:
        os.mkdir(os.path.join(fs.backing, "p"))
        d = t.Daemon(AT_START_CONFIG.format(fuse=fs.mountpoint))
        wd = t.WatchdogSocket(d.tmp, WATCHDOG_USEC)
        d.env.update(wd.env())
        fs.hang("all")
        d.start()
        hung = t.ProbeWatch(d, "hung")
        t.wait_until(lambda: fs.blocked() > 0, 30, what="the probe's first run blocking in the filesystem")
        time.sleep(1)
        n = d.read_log().count("Reloaded")
        since = sample(d)[0] or 0
        t0 = time.monotonic()
        d.signal(signal.SIGHUP)
        t.wait_until(lambda: d.read_log().count("Reloaded") > n, RELOAD_WAIT,
                     what="the reload (is the main loop joining a probe thread stuck in the filesystem?)")
        reloaded = time.monotonic() - t0
        t.timing_check(reloaded < RELOAD_BOUND, f"the reload logged within {RELOAD_BOUND} s of SIGHUP: {reloaded:.2f} s")
        worst_metrics, worst_age = 0.0, 0.0
        checks = 0
        timed_out = None  # when the timeout was first seen, after SIGHUP
        seen = set()
        while time.monotonic() - t0 < HANG_SECONDS and (checks < 10 or hung.errors("timeout") < 1):
            checks += 1
            took = get_metrics(d)
            ts, age = sample(d)
            seen.add(ts)
            worst_metrics, worst_age = max(worst_metrics, took), max(worst_age, age)
            if timed_out is None and hung.errors("timeout") >= 1:
                timed_out = time.monotonic() - t0
            time.sleep(0.5)
        t1 = time.monotonic()
        gap = wd.longest_gap(t0, t1)
        pings = pings_between(wd, t0, t1)
        new = len({ts for ts in seen if ts and ts > since})
        print(f"  {checks} checks over {t1 - t0:.1f} s: reload logged {reloaded:.2f} s after SIGHUP; longest watchdog gap {gap:.2f} s ({pings} pings); "
              f"slowest /metrics {worst_metrics * 1000:.0f} ms; oldest sample {worst_age:.2f} s ({new} new); "
              f"{fs.blocked()} call(s) blocked")
        assert fs.blocked() > 0, "nothing blocked in the filesystem: the test hung nothing"
        t.timing_check(worst_metrics < 1.0, f"/metrics within 1 s while a filesystem hung: slowest {worst_metrics:.2f} s")
        t.timing_check(worst_age < 2.5, f"device samples under 2.5 s old while a filesystem hung: oldest {worst_age:.1f} s")
        t.timing_check(gap < WATCHDOG_USEC / 1e6,
                       f"WATCHDOG=1 at least every {WATCHDOG_USEC / 1e6:.0f} s while a filesystem hung: "
                       f"longest gap {gap:.1f} s")
        assert new >= 3, f"device samples stopped while a filesystem hung: {new} new in {t1 - t0:.1f} s"
        assert pings >= 2, f"the watchdog stopped while a filesystem hung: {pings} WATCHDOG=1 in {t1 - t0:.1f} s"
        st = hung.state()
        assert hung.errors("timeout") >= 1 and st["success"] == 0, f"the hung probe reports no timeout: {st}"
        t.timing_check(timed_out is not None and timed_out < OPEN_BOUND + 6,
                       f"the hung probe's timeout reported within {OPEN_BOUND + 6} s of SIGHUP: "
                       + (f"{timed_out:.1f} s" if timed_out is not None else "not seen"))
        print(f"  the probe reports: {hung.last_failure()}")
        fs.release_and_recover(d, hung, 60)
    except BaseException:
        if d:
            print(d.read_log()[-3000:])
        raise
    finally:
        fs.release_quietly()
        if d:
            d.cleanup()
        if wd:
            wd.close()
        fs.cleanup()


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "mount")
    fs = t.HangFS("reliability-hungfs")
    ext4 = None
    d = None
    wd = None
    try:
        ext4 = t.Ext4Mount("reliability-hungfs-ok", 32, in_memory=True)
        os.mkdir(os.path.join(fs.backing, "p"))
        os.mkdir(os.path.join(fs.backing, "q"))
        d = t.Daemon(CONFIG.format(fuse=fs.mountpoint, ext4=ext4.mountpoint, second_interval=SECOND_INTERVAL))
        wd = t.WatchdogSocket(d.tmp, WATCHDOG_USEC)
        d.env.update(wd.env())
        d.start()
        hung, healthy = t.ProbeWatch(d, "hung"), t.ProbeWatch(d, "healthy")
        second = t.ProbeWatch(d, "second")
        t.wait_until(lambda: all(p.state()["success"] == 1 for p in (hung, healthy, second)), 60,
                     what="the three probes succeeding")
        # hang just after the second probe ran: its next run is due well
        # after the first probe is stuck (OPEN_BOUND + 2 s, TIMEOUT_BOUND at
        # most), even when the start took long on a loaded machine
        last = second.state()["last_run"]
        if time.time() - last > 3:
            t.wait_until(lambda: second.state()["last_run"] > last, SECOND_INTERVAL + 30,
                         what="the second probe's next run")
        print("attribute cache expiry: the target resolved, then the filesystem hangs")
        stuck_at = check_while_hung(d, wd, fs, hung, healthy)
        check_second_probe(d, fs, hung, second, stuck_at)
        fs.release_and_recover(d, hung, 60)
    finally:
        # a process with I/O in a hung FUSE filesystem cannot exit, even
        # with SIGKILL: let the filesystem answer before stopping iopsd
        fs.release_quietly()
        if d:
            d.cleanup()
        if wd:
            wd.close()
        fs.cleanup()
        if ext4:
            ext4.cleanup()
    print("a filesystem that hangs before iopsd starts, then a reload")
    hung_at_start()
    print("PASS")


if __name__ == "__main__":
    main()
