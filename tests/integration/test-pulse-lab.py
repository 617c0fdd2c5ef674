#!/usr/bin/env python3
"""The pulse test end to end: contrib/lab/iopsd-lab caps a volume at 20000
IOPS (a cgroup's throttle, which deals each 100-ms slice's budget at once);
fio QD16 random reads at 30000 start on it after a quiet spell, RUNS times,
and then run flat out on it uncapped, twice. One iopsd, no declared limit,
watches the volume and reads its counters every 50 ms in each demand's
first seconds.

  capped:    every demand flagged (iopsd_device_throttled=1, the estimate
             within 1% of 20000) within 10 s of fio's start, and at least
             RUNS - 1 of them by the pulse test (/api/v1/devices
             ceiling.found_by "pulse"): its seconds may wander by 1 to 2%,
             which the onset test turns down
  uncapped:  never throttled

A host too loaded to read every 50 ms to within 10 ms (load average above
1.5 at a run's start) makes the run inconclusive; it is run again once, and
the test fails if it stays so."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import SRCDIR, Daemon, require_root, require_tool, run  # noqa: E402

LAB = os.path.join(SRCDIR, "contrib", "lab", "iopsd-lab")
CAP = 20000
RUNS = int(os.environ.get("IOPSD_PULSE_RUNS", "4"))
LOAD_SEC = 12
QUIET_SEC = 6
MAX_LOAD = 1.5


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def device_state(d, dev):
    """(throttled, estimate, found_by) of dev, from /api/v1/devices."""
    devs = d.get_json("/api/v1/devices")["devices"]
    c = next(((x.get("ceiling") or {}) for x in devs if x.get("name") == dev), {})
    return bool(c.get("throttled")), float(c.get("iops_estimate") or 0.0), c.get("found_by")


def demand(lab_opts, mnt, rate):
    extra = [f"--rate_iops={rate}"] if rate else []
    return subprocess.Popen([LAB, "run", *lab_opts, "--", "fio", "--name=pulse", f"--directory={mnt}",
                             "--rw=randread", "--bs=4k", "--size=192m", "--ioengine=libaio", "--direct=1",
                             "--iodepth=16", "--time_based", f"--runtime={LOAD_SEC}", "--output=/dev/null",
                             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


def one_run(d, dev, lab_opts, mnt, capped):
    """Time to the flag (None: not flagged right), its stage, and whether
    the device was ever throttled."""
    time.sleep(QUIET_SEC)
    fio = demand(lab_opts, mnt, CAP * 3 // 2 if capped else 0)
    t0 = time.monotonic()
    flagged = stage = None
    ever = False
    while fio.poll() is None:
        try:
            throttled, est, found_by = device_state(d, dev)
        except (OSError, ValueError, KeyError, AssertionError):
            throttled, est, found_by = False, 0.0, None
        ever = ever or throttled
        if flagged is None and throttled and abs(est - CAP) <= 0.01 * CAP:
            flagged, stage = time.monotonic() - t0, found_by
        time.sleep(0.1)
    return flagged, stage, ever


def main():
    require_root()
    require_tool("fio")
    base = tempfile.mkdtemp(prefix="iopsd-pulse-lab-", dir="/var/tmp")
    opts = ["--name", f"pulse-{os.getpid()}", "--dir", base]
    failures = []
    d = None
    try:
        run(LAB, "up", "--iops", str(CAP), "--size", "384M", *opts)
        env = dict(line.split("=", 1) for line in run(LAB, "env", *opts).stdout.decode().split())
        dev, mnt = env["IOPSD_LAB_INNER_NAME"], env["IOPSD_LAB_MOUNT"]
        run(LAB, "run", *opts, "--", "fio", "--name=pulse", f"--directory={mnt}", "--size=192m", "--rw=read",
            "--bs=1m", "--create_only=1", "--output=/dev/null")
        d = Daemon(f"[global]\nstate_directory=@TMP@\ndevice_include=^{dev}$\n").start()
        times, stages = [], []
        for i in range(RUNS):
            for attempt in range(2):
                load = os.getloadavg()[0]
                t, stage, _ = one_run(d, dev, opts, mnt, True)
                log(f"capped run {i + 1}{'r' if attempt else ''}: host load {load:.2f}, flagged "
                    f"{'-' if t is None else f'{t:.1f} s'} after fio's start, by {stage}")
                if load <= MAX_LOAD or (t is not None and t <= 10 and stage == "pulse"):
                    break
                log("  inconclusive: the host was too loaded to read every 50 ms; again")
            else:
                failures.append(f"capped run {i + 1} inconclusive twice (host load {load:.2f})")
                continue
            times.append(t)
            stages.append(stage)
            if t is None or t > 10:
                failures.append(f"capped run {i + 1}: not flagged at {CAP} within 10 s")
        by_pulse = sum(s == "pulse" for s in stages)
        log(f"flagged by the pulse test in {by_pulse} of {len(stages)} runs")
        if by_pulse < RUNS - 1:
            failures.append(f"only {by_pulse} of {RUNS} runs flagged by the pulse test")
        run(LAB, "cap", "0", *opts)
        for i in range(2):
            _, _, ever = one_run(d, dev, opts, mnt, False)
            log(f"uncapped run {i + 1}: {'THROTTLED' if ever else 'never throttled'}")
            if ever:
                failures.append(f"uncapped run {i + 1}: called throttled")
        good = sorted(t for t in times if t is not None)
        if good:
            log(f"figure: ttf_p50={good[len(good) // 2]:.1f}s; ttf_max={good[-1]:.1f}s")
        log(f"figure: pulse_runs={by_pulse}/{RUNS}")
    finally:
        if d:
            d.stop()
        run(LAB, "down", "--force", *opts, check=False)
        shutil.rmtree(base, ignore_errors=True)
    for f in failures:
        log(f"FAIL {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
