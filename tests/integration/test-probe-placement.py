#!/usr/bin/env python3
"""Where a probe's I/O comes from, on a raw loop device in memory:

- each job thread starts on one CPU and stays there while it has it, the
  jobs of a run on different CPUs (numjobs=2 on a machine with two or
  more), and the other threads keep the process's CPUs;
- a job whose CPU another process keeps busy is let go to all of the
  process's CPUs within the run;
- I/O goes to the kernel as fio sends it: one io_submit() per I/O by
  default (iodepth_batch=1), batches of N with iodepth_batch=N."""
import json
import os
import re
import subprocess
import sys
import tempfile
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
    """{tid: (its name, the CPUs it may run on)}"""
    got = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                st = f.read()
        except OSError:
            continue  # ended meanwhile
        name = re.search(r"^Name:\s*(.*)$", st, re.M).group(1)
        got[int(tid)] = (name, cpus(re.search(r"^Cpus_allowed_list:\s*(\S+)", st, re.M).group(1)))
    return got


def write_conf(path, dev, extra):
    with open(path, "w") as f:
        f.write(f"[p]\nfilename={dev}\nrw=randread\nbs=4k\ntime_based\n{extra}")


def watch_threads(dev, conf, seconds=60):
    """Run a 3-s probe [p] of two QD1 jobs; every thread's CPUs as seen
    every 0.1 s until the process exits (`seconds` at most): {tid: [set,
    ...]}, and which threads are the jobs (named p/0 and p/1 by iopsd)."""
    write_conf(conf, dev, "numjobs=2\niodepth=1\nruntime=3s\n")
    # the output in files: a full pipe would keep the process from exiting
    with tempfile.TemporaryFile() as outf, tempfile.TemporaryFile() as errf:
        p = subprocess.Popen([t.IOPSD, "--once", "--output-format=json", "--config", conf], stdout=outf, stderr=errf)
        try:
            seen, names = {}, {}
            deadline = time.monotonic() + seconds
            # until it is reaped, an exited process's /proc/PID/task is there
            while p.poll() is None and time.monotonic() < deadline:
                for tid, (name, c) in thread_cpus(p.pid).items():
                    seen.setdefault(tid, []).append(c)
                    names[tid] = name
                time.sleep(0.1)
            p.wait(30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        outf.seek(0)
        errf.seek(0)
        out, err = outf.read().decode(), errf.read().decode(errors="replace")
    assert p.returncode == 0, (p.returncode, err)
    job = json.loads(out)["jobs"][0]
    assert job["success"] and job["read"]["total_ios"] > 0, job
    jobs = sorted(tid for tid, n in names.items() if re.fullmatch(r"p/\d+", n))
    assert len(jobs) == 2, f"threads named as jobs: {names}"
    return seen, jobs, job


def test_jobs_stay_on_one_cpu(dev, conf):
    allowed = os.sched_getaffinity(0)
    seen, jobs, _ = watch_threads(dev, conf)
    others = [h for tid, h in seen.items() if tid not in jobs]
    if len(allowed) == 1:
        assert not [h for h in seen.values() if h[-1] != allowed], seen
        print("ok: one CPU only: every thread has it")
        return
    first = [seen[tid][0] for tid in jobs]
    # on a loaded machine a job may be let go (its CPU taken) before the
    # first look at it: the gate checks the CPUs it does see jobs pinned to
    t.timing_check(all(len(c) == 1 for c in first) and first[0] != first[1],
                   f"each job thread first seen on a CPU of its own: {[sorted(c) for c in first]}")
    pinned = [next((c for c in seen[tid] if len(c) == 1), None) for tid in jobs]
    assert None in pinned or pinned[0] != pinned[1], f"both job threads pinned to one CPU: {seen}"
    assert first[0] | first[1] <= allowed, (first, allowed)
    assert others and all(c == allowed for h in others for c in h), f"the other threads: {others}, process {allowed}"
    # a job is let go only when its CPU is taken (the next test); on a
    # busy machine that may happen here too, to all the process's CPUs
    for tid in jobs:
        h = seen[tid]
        k = next((i for i, c in enumerate(h) if len(c) > 1), len(h))
        assert all(c == h[0] for c in h[:k]) and all(c == allowed for c in h[k:]), f"job {tid}: {h}"
    gone = [tid for tid in jobs if len(seen[tid][-1]) > 1]
    print(f"ok: the two job threads started on CPUs {min(first[0])} and {min(first[1])}"
          f"{f', {len(gone)} let go later (the machine is busy)' if gone else ' and stayed there'}; "
          f"{len(others)} other threads on all of {sorted(allowed)}")


def test_busy_cpu_lets_the_job_go(dev, conf):
    """A CPU-bound process on a job's CPU: pinned, that job's every wakeup
    would wait behind it. iopsd lets the job go to all the process's CPUs
    within the run."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        print("skip: one CPU only")
        return
    busy = allowed[0]
    hog = subprocess.Popen(["taskset", "-c", str(busy), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        seen, jobs, job = watch_threads(dev, conf)
    finally:
        hog.kill()
        hog.wait()
    # the jobs of a run start on different CPUs, so one starts on the busy
    # one; seen pinned there, or let go before the first look
    h = [seen[tid] for tid in jobs]
    on_busy = [x for x in h if x[0] == {busy} or (len(x[0]) > 1 and x[0] == set(allowed))]
    assert on_busy, f"no job on the busy CPU {busy}: {h}"
    last = [x[-1] for x in h]
    assert set(allowed) in last, f"the job on busy CPU {busy} was not let go: {h}"
    print(f"ok: CPU {busy} busy: the job there was let go to CPUs {allowed} "
          f"(seen pinned {sum(c == {busy} for x in on_busy for c in x)} times of every 0.1 s); "
          f"{job['read']['iops']:.0f} IOPS in all")


def io_submits(dev, conf, extra):
    write_conf(conf, dev, "iodepth=8\nruntime=1s\n" + extra)
    trace = conf + ".strace"
    # LeakSanitizer cannot run under a tracer: the sanitizer build's leak
    # check stays with the other tests
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=io_submit", "-o", trace, t.IOPSD, "--once", "--output-format=json",
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
        test_busy_cpu_lets_the_job_go(raw.path, conf)
        test_submission_batches(raw.path, conf)
    finally:
        raw.cleanup()


if __name__ == "__main__":
    main()
