#!/usr/bin/env python3
"""A fast device flat out is busy, not throttled: a loop device on a
tmpfs of its own (direct I/O, so every request is a copy in memory; no
cap anywhere under it) takes ONSETS demands of fio QD32 random 4k reads,
each DEMAND s after QUIET s without I/O: the demands iopsd's onset test
judges (a demand that rises after 3 s without a queue, its first 12 s).
iopsd watches it with no declared limit.

Asserted, from iopsd's own history of the device (every sample of the
run, not the scrapes): iopsd_device_throttled never 1 and no ceiling
estimate; the device queued (the demand was there: at least half of the
demand's samples with requests waiting), so the onset test had something
to judge. The test prints each demand's per-second IOPS and their spread
around the median, the figure the onset test looks at."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

ONSETS = 3
QUIET = 4      # s: more than the onset test's 3 s without a queue
DEMAND = 13    # s: past the onset test's 12-s horizon

CONFIG = """[global]
state_directory=@TMP@
sample_interval=1s
history=30m
"""


def device_history(d, name, since):
    """Each sample since `since` as a dict of the history's columns."""
    seconds = int(time.time() - since) + 2
    doc = d.get_json(f"/api/v1/history?device={name}&window={seconds}s&step=1s")
    series = doc["devices"][0]["series"]
    rows = [dict(zip(series, row)) for row in zip(*series.values())]
    return [r for r in rows if r["time"] >= since]


def main():
    t.require_root()
    t.require_tool("fio", "losetup")
    loop = d = None
    try:
        loop = t.LoopDevice("fast-device", 256, in_memory=True)
        d = t.Daemon(CONFIG)
        d.start()
        time.sleep(QUIET)
        t_start = time.time()
        for i in range(ONSETS):
            time.sleep(QUIET)
            subprocess.run(["fio", "--name=fast", f"--filename={loop.path}", "--rw=randread", "--bs=4k",
                            "--direct=1", "--ioengine=libaio", "--iodepth=32", f"--runtime={DEMAND}",
                            "--time_based", "--output=/dev/null"], check=True, timeout=DEMAND + 60)
        time.sleep(2)
        m = d.metrics()
        throttled = t.metric_value(m, "iopsd_device_throttled", {"device": loop.name})
        estimate = t.metric_value(m, "iopsd_device_iops_ceiling_estimate", {"device": loop.name})
        hist = device_history(d, loop.name, t_start)
        busy = [s for s in hist if (s.get("iops") or 0) > 100]
        flagged = [s for s in hist if s.get("throttled")]
        print(f"{loop.name}: {len(hist)} samples since the first demand, {len(busy)} busy, "
              f"{len(flagged)} throttled; /metrics throttled {throttled}, estimate {estimate}")
        if busy:
            iops = [s["iops"] for s in busy]
            med = statistics.median(iops)
            print(f"busy seconds: median {med:.0f} IOPS, spread {100 * (max(iops) - min(iops)) / med:.1f}% "
                  f"(the onset test wants 5 s within 0.3%)")
            t.figure("fast_device_median_iops", f"{med:.0f}")
            print("each second since the first demand (IOPS, queue, throttled): " + " ".join(
                f"{s.get('iops') or 0:.0f}/{s.get('queue_depth') or 0:.1f}/{s.get('throttled') or 0:.0f}"
                for s in hist))
        assert len(busy) >= ONSETS * DEMAND // 2, \
            f"only {len(busy)} busy samples: fio did not load {loop.name} ({hist[:3]})"
        queued = [s for s in busy if (s.get("queue_depth") or 0) >= 0.9]
        assert len(queued) >= len(busy) // 2, f"{len(queued)} of {len(busy)} busy samples queued"
        assert not flagged, f"throttled in {len(flagged)} samples: {flagged[:3]}"
        assert throttled == 0, f"iopsd_device_throttled {throttled}"
        assert not estimate, f"iopsd_device_iops_ceiling_estimate {estimate}"
        print(f"ok: {ONSETS} demands flat out on a tmpfs-backed loop device, never throttled")
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    finally:
        if d:
            d.cleanup()
        if loop:
            loop.cleanup()


if __name__ == "__main__":
    main()
