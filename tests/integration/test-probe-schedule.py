#!/usr/bin/env python3
"""The daemon's probe scheduler: probes run every interval and their results
reach /metrics; probes on one disk never run at the same time; SIGHUP
replaces the probes and keeps the counters of a probe that survives; SIGTERM
in the middle of a long run stops the daemon at once (in under 1 s in the
lab; the gate's run is 60 s long, and the daemon must not wait for it)."""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402


def runs(text, probe):
    return t.metric_value(text, "iopsd_probe_runs_total", {"probe": probe}) or 0


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4")
    fs = t.Ext4Mount("probe-schedule", 128, in_memory=True)
    d = None
    try:
        mnt = fs.mountpoint
        common = f"[global]\nlisten_address=127.0.0.1:@PORT@\nstate_directory=@TMP@\ndirectory={mnt}\nsize=8m\n"
        d = t.Daemon(common + "[a]\nrw=randread\nruntime=400ms\ninterval=1s\n"
                              "[b]\nrw=randwrite\nruntime=400ms\ninterval=1s\nfsync=8\n"
                              f"[raw]\nfilename={fs.loop.path}\nrw=randread\nruntime=400ms\ninterval=1s\n")
        d.start()
        t.wait_until(lambda: all(runs(d.metrics(), p) >= 3 for p in ("a", "b", "raw")), 60,
                     what="three runs of each probe")
        text = d.metrics()
        for p, op in (("a", "read"), ("b", "write"), ("raw", "read")):
            assert t.metric_value(text, "iopsd_probe_success", {"probe": p}) == 1, p
            ops = t.metric_value(text, "iopsd_probe_ops_total", {"probe": p, "op": op})
            count = t.metric_value(text, "iopsd_probe_latency_seconds_count", {"probe": p, "op": op})
            assert ops > 0 and ops == count, (p, ops, count)
        assert t.metric_value(text, "iopsd_probe_ops_total", {"probe": "b", "op": "fsync"}) > 0

        # three probes of 400 ms on one disk, serialised: their last runs
        # (start, duration) never overlap
        spans = []
        for p in ("a", "b", "raw"):
            start = t.metric_value(text, "iopsd_probe_last_run_timestamp_seconds", {"probe": p})
            took = t.metric_value(text, "iopsd_probe_last_run_duration_seconds", {"probe": p})
            spans.append((start, start + took, p))
        spans.sort()
        for x, y in zip(spans, spans[1:]):
            assert x[1] <= y[0] + 0.001, f"runs overlap on one disk: {x} and {y}"

        # reload: [a] survives with its counters, [b] goes, [c] comes
        before = runs(d.metrics(), "a")
        with open(d.config, "w") as f:
            f.write((common + "[a]\nrw=randread\nruntime=200ms\ninterval=1s\n"
                              "[c]\nrw=read\nruntime=200ms\ninterval=1s\n").replace("@PORT@", str(d.port))
                    .replace("@TMP@", d.tmp))
        d.signal(signal.SIGHUP)
        t.wait_until(lambda: runs(d.metrics(), "c") >= 1, 30, what="the new probe's first run")
        text = d.metrics()
        assert runs(text, "a") >= before, "a surviving probe lost its counters"
        assert t.metric_value(text, "iopsd_probe_runs_total", {"probe": "b"}) is None
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}:\n{d.read_log()[-4000:]}"

        # SIGTERM while a 60 s run is in progress (its reads seen on the
        # device): a daemon that waited for the run would be killed at 30 s
        base = t.disk_read_bytes(fs.loop.path)
        d2 = t.Daemon(common + "[long]\nrw=randread\nruntime=60s\ninterval=120s\nrate_iops=200\n")
        try:
            d2.start()
            t.wait_until(lambda: t.disk_read_bytes(fs.loop.path) >= base + (256 << 10), 30,
                         what="the long run's reads on the device")
            rc, took = d2.stop(timeout=30)
            log = d2.read_log()
        finally:
            d2.cleanup()
        assert rc == 0, f"iopsd exited with {rc} (killed after 30 s?):\n{log[-4000:]}"
        assert took < 30, f"stopping during a probe run took {took:.2f} s"
        t.timing_check(took < 1.0, f"stopping during a probe run took {took:.3f} s (under 1 s)")
        print(f"ok: runs reported and serialised, reload kept counters, stopped mid-run in {took:.3f} s")
    finally:
        if d:
            d.cleanup()
        fs.cleanup()


if __name__ == "__main__":
    main()
