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

Then a filesystem that already hangs when iopsd starts: the probe's
first run, which first removes stray probe files from its directory, hangs
there. A reload then must not wait for it (the main loop joins the probe
threads): the reload is logged within 5 s, samples stay fresh, the
watchdog is fed, and the probe reports a timeout; once the filesystem
answers, the probe recovers."""
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
SECOND_INTERVAL = 20
WATCHDOG_USEC = 3_000_000  # fed every 1.5 s


def sample_age(d):
    m = d.metrics()
    ts = t.metric_value(m, "iopsd_sample_timestamp_seconds")
    return time.time() - ts if ts else None


def check_while_hung(d, wd, fs, hung, healthy):
    t0 = time.monotonic()
    healthy_before = healthy.state()
    timeouts_before = hung.errors("timeout")
    fs.hang("all")
    worst_metrics, worst_age = 0.0, 0.0
    while time.monotonic() - t0 < HANG_SECONDS and hung.errors("timeout") <= timeouts_before:
        time.sleep(1)
        s = time.monotonic()
        status, _, _ = d.get("/metrics", timeout=5)
        took = time.monotonic() - s
        assert status == 200, status
        age = sample_age(d)
        worst_metrics, worst_age = max(worst_metrics, took), max(worst_age, age)
        print(f"  hung {time.monotonic() - t0:4.1f}s: /metrics {took * 1000:.0f} ms, "
              f"sample {age:.2f} s old, {fs.blocked()} call(s) blocked in the filesystem")
    gap = wd.longest_gap(t0, time.monotonic())
    print(f"  longest watchdog gap {gap:.2f} s; slowest /metrics {worst_metrics * 1000:.0f} ms; "
          f"oldest sample {worst_age:.2f} s")
    assert fs.blocked() > 0, "nothing blocked in the filesystem: the test hung nothing"
    assert worst_metrics < 1.0, f"/metrics took {worst_metrics:.2f} s while a filesystem hung"
    assert worst_age < 2.5, f"device samples stopped while a filesystem hung ({worst_age:.1f} s old)"
    assert gap < WATCHDOG_USEC / 1e6, f"the watchdog went {gap:.1f} s without WATCHDOG=1"
    st = hung.state()
    took = time.monotonic() - t0
    assert hung.errors("timeout") > timeouts_before, f"the hung probe reports no timeout: {st}"
    assert st["success"] == 0, st
    print(f"  the hung probe timed out {took:.1f} s after the filesystem hung: {hung.last_failure()}")
    assert took < OPEN_BOUND + 6, \
        f"a run hanging in its open timed out after {took:.1f} s, not on the open's bound ({OPEN_BOUND} s)"
    assert f"opening {fs.mountpoint}/p/" in hung.last_failure() and \
        f"within {OPEN_BOUND} s" in hung.last_failure(), hung.last_failure()
    hs = healthy.state()
    assert hs["success"] == 1 and hs["last_run"] > healthy_before["last_run"], \
        f"the probe on another filesystem stopped: {hs}"
    assert sum(hs["errors"].values()) == sum(healthy_before["errors"].values()), \
        f"the probe on another filesystem reports errors: {hs}"
    return st["last_run"]


def check_second_probe(d, fs, hung, second, stuck_at):
    """`second` (interval 20 s) last ran before the filesystem hung; its
    next run is due after `hung` got stuck (realtime `stuck_at`)."""
    before = second.state()
    blocked = fs.blocked()
    assert before["success"] == 1 and before["last_run"] + SECOND_INTERVAL > stuck_at + 1, \
        f"inconclusive: the second probe was due before the first was stuck ({before}, stuck at {stuck_at:.1f})"
    t.wait_until(lambda: second.state()["last_run"] > before["last_run"], SECOND_INTERVAL + 10,
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
RELOAD_BOUND = 5


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
        t.wait_until(lambda: fs.blocked() > 0, 10, what="the probe's first run blocking in the filesystem")
        time.sleep(1)
        n = d.read_log().count("Reloaded")
        t0 = time.monotonic()
        d.signal(signal.SIGHUP)
        t.wait_until(lambda: d.read_log().count("Reloaded") > n, RELOAD_BOUND,
                     what="the reload (is the main loop joining a probe thread stuck in the filesystem?)")
        reloaded = time.monotonic() - t0
        worst_metrics, worst_age = 0.0, 0.0
        checks = 0
        while time.monotonic() - t0 < OPEN_BOUND + 6 and (checks < 10 or hung.errors("timeout") < 1):
            checks += 1
            s = time.monotonic()
            status, _, _ = d.get("/metrics", timeout=5)
            took = time.monotonic() - s
            assert status == 200, status
            age = sample_age(d)
            worst_metrics, worst_age = max(worst_metrics, took), max(worst_age, age)
            time.sleep(0.5)
        gap = wd.longest_gap(t0, time.monotonic())
        print(f"  {checks} checks over {time.monotonic() - t0:.1f} s: reload logged {reloaded:.2f} s after SIGHUP; longest watchdog gap {gap:.2f} s; "
              f"slowest /metrics {worst_metrics * 1000:.0f} ms; oldest sample {worst_age:.2f} s; "
              f"{fs.blocked()} call(s) blocked")
        assert fs.blocked() > 0, "nothing blocked in the filesystem: the test hung nothing"
        assert worst_metrics < 1.0, f"/metrics took {worst_metrics:.2f} s while a filesystem hung"
        assert worst_age < 2.5, f"device samples stopped while a filesystem hung ({worst_age:.1f} s old)"
        assert gap < WATCHDOG_USEC / 1e6, f"the watchdog went {gap:.1f} s without WATCHDOG=1"
        st = hung.state()
        assert hung.errors("timeout") >= 1 and st["success"] == 0, f"the hung probe reports no timeout: {st}"
        print(f"  the probe reports: {hung.last_failure()}")
        fs.release_and_recover(d, hung, 20)
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
        t.wait_until(lambda: all(p.state()["success"] == 1 for p in (hung, healthy, second)), 20,
                     what="the three probes succeeding")
        # hang just after the second probe ran: its next run is due well
        # after the first probe is stuck (OPEN_BOUND + 2 s), even when the
        # start took long on a loaded machine
        last = second.state()["last_run"]
        if time.time() - last > 3:
            t.wait_until(lambda: second.state()["last_run"] > last, SECOND_INTERVAL + 10,
                         what="the second probe's next run")
        print("attribute cache expiry: the target resolved, then the filesystem hangs")
        stuck_at = check_while_hung(d, wd, fs, hung, healthy)
        check_second_probe(d, fs, hung, second, stuck_at)
        fs.release_and_recover(d, hung, 20)
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
