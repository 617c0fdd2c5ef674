#!/usr/bin/env python3
"""Stuck runs do not pile up across reloads. A probe (numjobs=2) on a FUSE
filesystem that stops answering (tests/integration/hangfs.py) gets stuck
in its run; then ten reloads (SIGHUP), each one waited for. Afterwards the
filesystem holds the calls of one stuck run, not eleven, and the daemon's
thread count and RSS are what they were after the first timeout (each
reload used to start another run on the hung device, with 1 + numjobs
threads and their buffers). When the filesystem answers again the probe
recovers, and its file is whole (the old run and the new do not share a
temporary file)."""
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

RELOADS = 10


def main():
    t.require_root()
    fs = t.HangFS("reliability-stuck")
    d = None
    try:
        os.mkdir(os.path.join(fs.backing, "p"))
        d = t.Daemon(CONFIG.format(fuse=fs.mountpoint))
        asan = d.limit_asan_quarantine()
        d.start()
        hung = t.ProbeWatch(d, "hung")
        t.wait_until(lambda: hung.state()["success"] == 1, 20, what="the probe succeeding")
        fs.hang("read,write,fsync")
        t.wait_until(lambda: hung.errors("timeout") >= 1, 30, what=f"the probe's first timeout")
        time.sleep(2)
        blocked0 = fs.blocked()
        threads0 = t.proc_status(d.proc.pid, "Threads")
        rss0 = t.proc_status(d.proc.pid, "VmRSS")
        print(f"stuck: {blocked0} call(s) blocked in the filesystem, {threads0} threads, RSS {rss0} kB")
        for i in range(RELOADS):
            n = d.read_log().count("Reloaded")
            d.signal(signal.SIGHUP)
            t.wait_until(lambda: d.read_log().count("Reloaded") > n, 10,
                         what=f"reload {i + 1} (is the main loop stuck in the hung filesystem?)")
            time.sleep(1.5)  # the new generation's first run is due
        time.sleep(3)
        blocked = fs.blocked()
        threads = t.proc_status(d.proc.pid, "Threads")
        rss = t.proc_status(d.proc.pid, "VmRSS")
        print(f"after {RELOADS} reloads: {blocked} call(s) blocked, {threads} threads, RSS {rss} kB")
        assert blocked <= blocked0, f"stuck runs piled up: {blocked0} blocked calls before, {blocked} after"
        assert threads <= threads0 + 1, f"threads grew from {threads0} to {threads} over {RELOADS} reloads"
        # ASan's allocator and the shadow of each new thread's stack (every
        # reload starts the probe's and the HTTP server's threads anew) add
        # their own MiBs per reload; a plain build stays within 8 MiB
        bound = (24 if asan else 8) * 1024
        assert rss <= rss0 + bound, f"RSS grew from {rss0} to {rss} kB over {RELOADS} reloads"
        fs.release()
        hung.expect_recovered(timeout=30)
        print("ok: the probe recovers once the filesystem answers")
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    except BaseException:
        if d:
            print(d.read_log()[-3000:])
        raise
    finally:
        fs.release_quietly()
        if d:
            d.cleanup()
        fs.cleanup()
    print("PASS")


if __name__ == "__main__":
    main()
