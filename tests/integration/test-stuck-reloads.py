#!/usr/bin/env python3
"""Stuck runs do not pile up across reloads. A probe (numjobs=2) on a FUSE
filesystem that stops answering (tests/integration/hangfs.py) gets stuck
in its run; then ten reloads (SIGHUP), each one waited for. Afterwards the
filesystem holds the calls of one stuck run, not eleven, and the daemon's
thread count and RSS are what they were after the first timeout (each
reload used to start another run on the hung device, with 1 + numjobs
threads and their buffers). When the filesystem answers again the probe
recovers, and its file is whole (the old run and the new do not share a
temporary file).

Then the same with reloads that come before the run's timeout: a probe
whose run takes 10 s of every 12 (timeout 20 s) hangs in its I/O, and a SIGHUP every
second from right after the hang begins cancels the run, which reports
-ECANCELED after its 1 s of grace with its threads still in the kernel.
That run is carried across the generation as a stuck one: ten reloads
leave one stuck run, the thread count and RSS flat, and the new
generations report a timeout rather than start another run on the hung
mount."""
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

[hung]
rw=randrw
numjobs=2
directory={fuse}/p
"""

CANCEL_CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
bs=4k
size=1m
runtime=10s
interval=12s
rate_iops=200

[hung]
rw=randrw
numjobs=2
directory={fuse}/p
"""

RELOADS = 10
CANCEL_TIMEOUT = 20  # 2 x runtime


def rss_bound(asan):
    # ASan's allocator and the shadow of each new thread's stack (every
    # reload starts the probe's and the HTTP server's threads anew) add
    # their own MiBs per reload; a plain build stays within 8 MiB
    return (24 if asan else 8) * 1024


def snapshot(d, fs):
    """(calls blocked in the filesystem, the daemon's threads, its RSS in kB)."""
    return fs.blocked(), t.proc_status(d.proc.pid, "Threads"), t.proc_status(d.proc.pid, "VmRSS")


def is_flat(before, after, asan):
    (blocked0, threads0, rss0), (blocked, threads, rss) = before, after
    return blocked <= blocked0 and threads <= threads0 + 1 and rss <= rss0 + rss_bound(asan)


def assert_flat(before, after, asan, what):
    """Nothing piled up over the reloads: no more blocked calls, at most one
    thread more, RSS within rss_bound."""
    (blocked0, threads0, rss0), (blocked, threads, rss) = before, after
    assert blocked <= blocked0, f"{what} piled up: {blocked0} blocked calls before, {blocked} after"
    assert threads <= threads0 + 1, f"threads grew from {threads0} to {threads} over {RELOADS} reloads"
    assert rss <= rss0 + rss_bound(asan), f"RSS grew from {rss0} to {rss} kB over {RELOADS} reloads"


def settled(d, fs, before, asan):
    """The snapshot once the old generations' threads have ended, which
    takes a while on a loaded machine: after 3 s, polled for up to 30 s,
    then the last one (assert_flat judges it)."""
    last = [None]

    def flat():
        last[0] = snapshot(d, fs)
        return is_flat(before, last[0], asan)

    time.sleep(3)
    try:
        t.wait_until(flat, 30, interval=0.5, what="the threads to settle")
    except AssertionError:
        pass
    return last[0]


def reload_and_wait(d, i):
    n = d.read_log().count("Reloaded")
    d.signal(signal.SIGHUP)
    t.wait_until(lambda: d.read_log().count("Reloaded") > n, 30,
                 what=f"reload {i + 1} (is the main loop stuck in the hung filesystem?)")


def timed_out_then_reloads():
    fs = t.HangFS("reliability-stuck")
    d = None
    try:
        os.mkdir(os.path.join(fs.backing, "p"))
        d = t.Daemon(CONFIG.format(fuse=fs.mountpoint))
        asan = d.limit_asan_quarantine()
        d.start()
        hung = t.ProbeWatch(d, "hung")
        t.wait_until(lambda: hung.state()["success"] == 1, 30, what="the probe succeeding")
        timeouts = hung.errors("timeout")  # a loaded machine may have timed out a run already
        fs.hang("read,write,fsync")
        t.wait_until(lambda: hung.errors("timeout") > timeouts, 30, what="the probe's first timeout")
        time.sleep(2)
        before = snapshot(d, fs)
        print("stuck: {} call(s) blocked in the filesystem, {} threads, RSS {} kB".format(*before))
        for i in range(RELOADS):
            reload_and_wait(d, i)
            time.sleep(1.5)  # the new generation's first run is due
        after = settled(d, fs, before, asan)
        print(f"after {RELOADS} reloads: " + "{} call(s) blocked, {} threads, RSS {} kB".format(*after))
        assert_flat(before, after, asan, "stuck runs")
        fs.release_and_recover(d, hung, 30)
    except BaseException:
        if d:
            print(d.read_log()[-3000:])
        raise
    finally:
        fs.release_quietly()
        if d:
            d.cleanup()
        fs.cleanup()


def reloads_before_timeout():
    fs = t.HangFS("reliability-cancel")
    d = None
    try:
        os.mkdir(os.path.join(fs.backing, "p"))
        d = t.Daemon(CANCEL_CONFIG.format(fuse=fs.mountpoint))
        asan = d.limit_asan_quarantine()
        d.start()
        hung = t.ProbeWatch(d, "hung")
        t.wait_until(lambda: hung.state()["success"] == 1, 60, what="the probe succeeding")
        # a run is in its I/O 10 s of every 12: this one, or the next within 2 s
        fs.hang("read,write,fsync")
        t.wait_until(lambda: fs.blocked() >= 1, 30, interval=0.05, what="the run's I/O blocking")
        hung_at = time.monotonic()
        time.sleep(0.5)
        before = snapshot(d, fs)
        print("hung run: {} call(s) blocked in the filesystem, {} threads, RSS {} kB".format(*before))
        for i in range(RELOADS):
            sent = time.monotonic()
            if i == 0:
                assert sent - hung_at < CANCEL_TIMEOUT - 2, \
                    f"inconclusive: the first reload came {sent - hung_at:.1f} s after the hang"
                assert "within the run's budget" not in d.read_log(), "inconclusive: the run timed out"
            reload_and_wait(d, i)
            time.sleep(max(0.0, 1.0 - (time.monotonic() - sent)))
        after = settled(d, fs, before, asan)
        print(f"after {RELOADS} reloads, the first {time.monotonic() - hung_at:.1f} s ago: " +
              "{} call(s) blocked, {} threads, RSS {} kB; ".format(*after) +
              f"{hung.errors('timeout'):.0f} timeout(s) reported")
        assert_flat(before, after, asan, "cancelled runs")
        assert hung.errors("timeout") >= 1 and hung.state()["success"] == 0, hung.state()
        assert "the I/O of an earlier run is still pending" in hung.last_failure(), hung.last_failure()
        fs.release_and_recover(d, hung, 60)
    except BaseException:
        if d:
            print(d.read_log()[-3000:])
        raise
    finally:
        fs.release_quietly()
        if d:
            d.cleanup()
        fs.cleanup()


def main():
    t.require_root()
    print("a run that timed out, then reloads")
    timed_out_then_reloads()
    print("reloads that cancel a hung run before its timeout")
    reloads_before_timeout()
    print("PASS")


if __name__ == "__main__":
    main()
