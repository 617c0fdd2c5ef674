#!/usr/bin/env python3
"""Where a probe's I/O comes from, on a raw loop device in memory:

- each job thread stays on one CPU for its run, the jobs of a run on
  different CPUs (numjobs=2 on a machine with two or more), and the other
  threads keep the process's CPUs;
- I/O goes to the kernel as fio sends it: one io_submit() per I/O by
  default (iodepth_batch=1), batches of N with iodepth_batch=N."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402


def cpus(listing):
    """'0-2,5' -> {0, 1, 2, 5}"""
    out = set()
    for part in listing.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def thread_cpus(pid):
    got = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                m = re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.M)
        except OSError:
            continue  # ended meanwhile
        got[int(tid)] = cpus(m.group(1))
    return got


def write_conf(path, dev, extra):
    with open(path, "w") as f:
        f.write(f"[p]\nfilename={dev}\nrw=randread\nbs=4k\ntime_based\n{extra}")


def test_jobs_stay_on_one_cpu(dev, conf):
    allowed = os.sched_getaffinity(0)
    write_conf(conf, dev, "numjobs=2\niodepth=1\nruntime=3s\n")
    p = subprocess.Popen([t.IOPSD, "--once", "--config", conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = {}
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            seen.update(thread_cpus(p.pid))
            time.sleep(0.1)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (p.returncode, err)
    job = json.loads(out)["jobs"][0]
    assert job["success"] and job["read"]["total_ios"] > 0, job
    pinned = sorted(min(c) for c in seen.values() if len(c) == 1)
    others = [c for c in seen.values() if len(c) > 1]
    if len(allowed) == 1:
        assert not others, seen
        print("ok: one CPU only: every thread has it")
        return
    assert len(pinned) == 2 and pinned[0] != pinned[1], f"job threads' CPUs: {seen}"
    assert set(pinned) <= allowed, (pinned, allowed)
    assert others and all(c == allowed for c in others), f"the other threads: {others}, process {allowed}"
    print(f"ok: the two job threads ran on CPUs {pinned[0]} and {pinned[1]} only; "
          f"{len(others)} other threads on all of {sorted(allowed)}")


def io_submits(dev, conf, extra):
    write_conf(conf, dev, "iodepth=8\nruntime=1s\n" + extra)
    trace = conf + ".strace"
    # LeakSanitizer cannot run under a tracer: the sanitizer build's leak
    # check stays with the other tests
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=io_submit", "-o", trace, t.IOPSD, "--once",
                        "--config", conf], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    assert job["success"], job
    with open(trace) as f:
        calls = [int(m.group(1)) for m in re.finditer(r"io_submit\([^,]+, (\d+),", f.read())]
    os.unlink(trace)
    # one of them is the engine's own poll on the run's wake fd
    return job["read"]["total_ios"], calls


def test_submission_batches(dev, conf):
    ios, calls = io_submits(dev, conf, "")
    assert ios > 100, ios
    data = [n for n in calls[1:]]
    assert max(data) == 1 and len(data) >= ios, f"{ios} I/Os in {len(data)} calls, largest {max(data)}"
    print(f"ok: iodepth=8, default iodepth_batch: {ios} I/Os in {len(data)} io_submit calls of one")
    ios, calls = io_submits(dev, conf, "iodepth_batch=8\n")
    data = calls[1:]
    assert max(data) == 8 and len(data) <= ios / 4, f"{ios} I/Os in {len(data)} calls, largest {max(data)}"
    print(f"ok: iodepth_batch=8: {ios} I/Os in {len(data)} io_submit calls, {sum(data) / len(data):.1f} per call")


def main():
    t.require_root()
    t.require_tool("losetup", "strace")
    raw = t.LoopDevice("probe-placement", 64, in_memory=True)
    try:
        conf = os.path.join(raw.dir, "placement.conf")
        test_jobs_stay_on_one_cpu(raw.path, conf)
        test_submission_batches(raw.path, conf)
    finally:
        raw.cleanup()


if __name__ == "__main__":
    main()
