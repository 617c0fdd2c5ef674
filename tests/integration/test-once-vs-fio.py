#!/usr/bin/env python3
"""`iopsd --once --config JOB.fio` runs a runbook job as fio runs it: the
field notes' randread4k (16 jobs, 4k, loops) on a real ext4 loop mount,
with its directory and size shrunk to fit, run by fio and by iopsd from the
same file. Each does the job's own amount of I/O (16 jobs x size/4k x loops:
no runtime, so the loops end it). On the loop device capped at 2500 read
IOPS (a cgroup, so that the device and not the CPU of this shared machine
is what both measure) their IOPS agree within 15%, compared on the median
of three interleaved runs each (within 35% in the gate: where the CPU is
scarce it, not the cap, can set the pace). ramp_time is left out of iopsd's
figures."""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

JOBS, SIZE_MB, BS = 16, 4, 4096
CAP = 2500
TOLERANCE = 0.15  # the lab's (a timing check)
GATE_TOLERANCE = 0.35


def runbook_job(mnt, loops):
    with open(os.path.join(t.SRCDIR, "tests", "fixtures", "config", "runbook", "randread4k.fio")) as f:
        text = f.read()
    text = re.sub(r"(?m)^directory=.*$", f"directory={mnt}", text)
    text = re.sub(r"(?m)^size=.*$", f"size={SIZE_MB}m", text)
    return re.sub(r"(?m)^loops=.*$", f"loops={loops}", text)


def run_iopsd(path, throttle=None):
    cmd = [t.IOPSD, "--once", "--output-format=json", "--config", path]
    p = subprocess.run(throttle.wrap(cmd) if throttle else cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (p.returncode, p.stderr)
    job = json.loads(p.stdout)["jobs"][0]
    assert job["success"], job["message"]
    return job["read"]["total_ios"], job["read"]["iops"], job


def run_fio(path, throttle=None):
    cmd = ["fio", "--output-format=json", path]
    p = subprocess.run(throttle.wrap(cmd) if throttle else cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (p.returncode, p.stderr)
    jobs = json.loads(p.stdout)["jobs"]
    assert len(jobs) == JOBS, len(jobs)
    ios = sum(j["read"]["total_ios"] for j in jobs)
    # the group's rate, as group_reporting gives it: all the I/O over the
    # longest job (a sum of per-job rates counts early finishers twice)
    return ios, ios / (max(j["read"]["runtime"] for j in jobs) / 1000.0)


def check_io_counts(mnt, path):
    """Without a runtime the loops end the job: 16 jobs x size/bs x loops,
    for both; a ramp is run but left out of iopsd's figures."""
    for loops in (1, 2):
        with open(path, "w") as f:
            f.write(runbook_job(mnt, loops))
        want = JOBS * (SIZE_MB << 20) // BS * loops
        ios, _ = run_fio(path)
        assert ios == want, f"fio did {ios} reads with loops={loops}, the job asks {want}"
        ios, _, job = run_iopsd(path)
        assert ios == want, f"iopsd --once did {ios} reads with loops={loops}, the job asks {want}"
    # a 5 s ramp: counted, it would make the 1 s run measure 6 s or more,
    # past the 5 s that a loaded machine's 1 s run stays under
    with open(path, "w") as f:
        f.write(runbook_job(mnt, 1).replace("loops=1", "loops=1\nruntime=1s\ntime_based\nramp_time=5s"))
    _, _, job = run_iopsd(path)
    assert job["job options"]["ramp_time_usec"] == 5000000
    assert 900000 <= job["runtime_usec"] < 5000000, f"the measured time excludes the ramp: {job['runtime_usec']}"
    t.timing_check(job["runtime_usec"] < 1500000,
                   f"a runtime=1s run after a 5 s ramp measured as {job['runtime_usec']} us (under 1500000)")


def compare_iops(mnt, path, throttle):
    with open(path, "w") as f:
        f.write(runbook_job(mnt, 1))
    fio_iops, iopsd_iops = [], []
    for _ in range(3):
        fio_iops.append(run_fio(path, throttle)[1])
        _, iops, job = run_iopsd(path, throttle)
        assert job["layout_usec"] == 0, "the probe file must be reused"
        iopsd_iops.append(iops)
    f_med, i_med = statistics.median(fio_iops), statistics.median(iopsd_iops)
    ratio = i_med / f_med
    print(f"randread4k x{JOBS} jobs, size={SIZE_MB}m, read IOPS capped at {CAP}: fio {[round(x) for x in fio_iops]} "
          f"iopsd {[round(x) for x in iopsd_iops]}; median ratio iopsd/fio {ratio:.3f}")
    off = f"iopsd {i_med:.0f} vs fio {f_med:.0f} IOPS: off by {abs(ratio - 1):.0%}"
    assert abs(ratio - 1) <= GATE_TOLERANCE, off
    t.timing_check(abs(ratio - 1) <= TOLERANCE, f"{off} (at most {TOLERANCE:.0%})")


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "fio")
    if not os.path.exists(os.path.join(t.BlkioThrottle.ROOT, "cgroup.procs")):
        raise AssertionError("no cgroup v1 blkio hierarchy to cap the device with")
    # fio lays out one file per job (16 x 4m), iopsd one shared probe file
    fs = t.Ext4Mount("once-vs-fio", 160, in_memory=True)
    throttle = None
    try:
        mnt = fs.mountpoint
        path = os.path.join(fs.loop.dir, "randread4k.fio")
        check_io_counts(mnt, path)
        throttle = t.BlkioThrottle(f"iopsd-once-vs-fio-{os.getpid()}", fs.loop.path)
        throttle.limit("read_iops", CAP)
        compare_iops(mnt, path, throttle)
        print("ok: --once runs the runbook job's own I/O as fio does, at the same IOPS")
    finally:
        if throttle:
            throttle.cleanup()
        fs.cleanup()


if __name__ == "__main__":
    main()
