#!/usr/bin/env python3
"""Device faults under a running daemon: a raw loop device detached while a
read probe uses it (and attached again), a loop device hot-added and one
removed (LOOP_CTL_ADD/REMOVE) while the sampler runs, and garbage lines in
a /proc/diskstats fixture rewritten under --path.procfs. The daemon keeps
serving, the error counters count it, one log line per fault, the probe
recovers by itself, devices appear and disappear without absurd rates, and
the raw device is never written."""
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

LOOP_CTL_ADD = 0x4C80
LOOP_CTL_REMOVE = 0x4C81

# A run stops after number_ios (40 I/Os at 400 IOPS, 100 ms) but its
# timeout is 2x runtime, 2 s: a run held up by a loaded machine does not
# time out (a second failure line, or no success at the end)
CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@

[raw]
rw=randread
bs=4k
filename={raw}
size=8m
rate_iops=400
runtime=1s
number_ios=40
interval=1s
"""

FIXTURE = os.path.join(t.SRCDIR, "tests", "fixtures", "sampler", "ec2-md-raid0")
GARBAGE = [
    "",
    "garbage",
    " 202 0",
    " 202 0 xvdz 1 2 3",
    " 202 0 xvdz a b c d e f g h i j k",
    " 202 0 xvdz -1 0 0 0 0 0 0 0 0 0 0",
    " 202 0 xvdz 99999999999999999999999 0 0 0 0 0 0 0 0 0 0",
    " 202 0 xvdz 1 2 3 4 5 6 7 8 9 10 11 12",
    "x" * 100000,
    "\x00\x01\x02 \xff\xfe",
    " 202 0 " + "n" * 300 + " 1 2 3 4 5 6 7 8 9 10 11",
    "4294967296 4294967296 big 1 2 3 4 5 6 7 8 9 10 11",
]


def devices(d):
    return {x["name"]: x for x in d.get_json("/api/v1/devices")["devices"]}


def assert_sane_rates(devs):
    for name, x in devs.items():
        r = x.get("rates") or {}
        for group in ("iops", "throughput_bytes_per_second"):
            for op, v in (r.get(group) or {}).items():
                assert v is None or 0 <= v < 1e7 * (4096 if group != "iops" else 1), \
                    f"absurd {group}.{op} of {name}: {v}"
        u = r.get("utilization")
        assert u is None or 0 <= u <= 1.0 + 1e-6, f"utilization of {name}: {u}"


def free_loop_index():
    for n in range(240, 1000):
        if not os.path.exists(f"/dev/loop{n}") and not os.path.exists(f"/sys/block/loop{n}"):
            return n
    t.skip("no free loop index")


def real_devices():
    """Raw detach and hot add/remove on the real /proc and /sys."""
    raw = t.LoopDevice("reliability-devices-raw", 8, private=True)
    extra = None
    d = None
    try:
        t.run("dd", "if=/dev/urandom", f"of={raw.path}", "bs=1M", "count=8", "oflag=direct")
        raw_sha = t.sha256(raw.path, 8 << 20)
        d = t.Daemon(CONFIG.format(raw=raw.path))
        d.start()
        p = t.ProbeWatch(d, "raw")
        p.expect_recovered(timeout=30)

        # the raw device detached while probed, then attached again
        m = p.mark()
        raw.detach()
        assert p.expect_failing("enoent", mark=m) == 1, d.read_log()
        assert "no medium" in p.last_failure() or "detached" in p.last_failure(), p.last_failure()
        raw.attach()
        p.expect_recovered()

        # a loop device hot-added: it shows up; removed: it is gone
        n = free_loop_index()
        ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(ctl, LOOP_CTL_ADD, n)
            name = f"loop{n}"
            extra = tempfile.mkdtemp(prefix="iopsd-reliability-devices-hot-", dir="/var/tmp")
            backing = os.path.join(extra, "backing.img")
            with open(backing, "wb") as f:
                f.truncate(16 << 20)
            t.run("losetup", "--direct-io=on", f"/dev/{name}", backing)
            t.run("dd", f"if=/dev/{name}", "of=/dev/null", "bs=4k", "count=2048", "iflag=direct")
            t.wait_until(lambda: name in devices(d), 30, what=f"{name} in /api/v1/devices")
            t.wait_until(lambda: (devices(d)[name]["rates"] or {}).get("interval_seconds"), 30,
                         what=f"rates of {name}")
            assert_sane_rates(devices(d))
            t.run("losetup", "-d", f"/dev/{name}")
            t.wait_until(lambda: _remove(ctl, n), 30, what=f"LOOP_CTL_REMOVE {n}")
            t.wait_until(lambda: name not in devices(d), 30, what=f"{name} gone from /api/v1/devices")
            assert name not in d.metrics(), f"{name} still in /metrics"
            for _ in range(3):
                assert_sane_rates(devices(d))
        finally:
            if os.path.exists(f"/sys/block/loop{n}"):
                t.run("losetup", "-d", f"/dev/loop{n}", check=False)
                _remove(ctl, n)
            os.close(ctl)
        assert p.state()["success"] == 1
        assert d.proc.poll() is None
        rc, _ = d.stop()
        assert rc == 0, rc
        assert t.sha256(raw.path, 8 << 20) == raw_sha, "the raw device was written"
    finally:
        if d:
            d.cleanup()
        raw.cleanup()
        if extra:
            shutil.rmtree(extra, ignore_errors=True)


def _remove(ctl, n):
    try:
        fcntl.ioctl(ctl, LOOP_CTL_REMOVE, n)
        return True
    except OSError:
        return False


def rewrite(path, text):
    """Rewrite in place: the sampler keeps the file open and re-reads it."""
    with open(path, "r+b") as f:
        data = text.encode("latin-1") if isinstance(text, str) else text
        f.write(data)
        f.truncate(len(data))


def garbage_diskstats():
    """Garbage lines in a diskstats fixture, under --path.procfs."""
    tree = tempfile.mkdtemp(prefix="iopsd-reliability-diskstats-")
    d = None
    try:
        shutil.copytree(FIXTURE, os.path.join(tree, "fx"), symlinks=True)
        proc = os.path.join(tree, "fx", "proc")
        stats = os.path.join(proc, "diskstats")
        with open(stats) as f:
            clean = f.read()
        lines = clean.splitlines()

        def advanced(k):
            # every counter of every line moved on by k*100
            out = []
            for line in lines:
                f = line.split()
                out.append(" ".join(f[:3] + [str(int(x) + k * 100) for x in f[3:]]))
            return "\n".join(out) + "\n"

        d = t.Daemon("[global]\nsample_interval=1s\nstate_directory=@TMP@\n",
                     args=["--path.procfs", proc, "--path.sysfs", os.path.join(tree, "fx", "sys")])
        d.start()
        before = devices(d)
        assert before, "no device from the fixture"
        errors0 = t.metric_value(d.metrics(), "iopsd_diskstats_parse_errors_total") or 0
        logged0 = d.read_log().count("malformed")

        # garbage between good lines, for a few samples
        for k in range(1, 5):
            good = advanced(k).splitlines()
            mixed = []
            for i, line in enumerate(good):
                mixed.append(GARBAGE[(i + k) % len(GARBAGE)])
                mixed.append(line)
            rewrite(stats, "\n".join(mixed) + "\n")
            t.wait_until(lambda: (t.metric_value(d.metrics(), "iopsd_diskstats_parse_errors_total") or 0)
                         > errors0 + k - 1, 30, what="malformed lines counted")
            now = devices(d)
            assert set(before) <= set(now), f"devices lost to garbage: {set(before) - set(now)}"
            assert_sane_rates(now)
        # a file of nothing but garbage, then binary junk
        rewrite(stats, "\n".join(GARBAGE) + "\n")
        n0 = t.metric_value(d.metrics(), "iopsd_diskstats_parse_errors_total")
        t.wait_until(lambda: t.metric_value(d.metrics(), "iopsd_diskstats_parse_errors_total") > n0, 30,
                     what="an all-garbage file counted")
        rewrite(stats, bytes(range(256)) * 64)
        status, _, _ = d.get("/metrics")
        assert status == 200
        assert d.read_log().count("malformed") - logged0 == 1, d.read_log()

        # clean again: every device back, rates sane, one recovery line
        rewrite(stats, advanced(10))
        t.wait_until(lambda: set(before) <= set(devices(d)), 30, what="devices back")
        t.wait_until(lambda: "parses cleanly again" in d.read_log(), 30, what="the recovery line")
        rewrite(stats, advanced(11))
        t.wait_until(lambda: all((x["rates"] or {}).get("interval_seconds") for x in devices(d).values()), 30,
                     what="valid rates after recovery")
        assert_sane_rates(devices(d))
        settled = t.metric_value(d.metrics(), "iopsd_diskstats_parse_errors_total")
        rewrite(stats, advanced(12))
        time.sleep(1.5)
        assert t.metric_value(d.metrics(), "iopsd_diskstats_parse_errors_total") == settled
        assert d.proc.poll() is None
        rc, _ = d.stop()
        assert rc == 0, rc
        print(json.dumps({"parse_errors": settled}))
    finally:
        if d:
            d.cleanup()
        shutil.rmtree(tree, ignore_errors=True)


def main():
    t.require_root()
    t.require_tool("losetup", "dd")
    garbage_diskstats()
    real_devices()
    print("ok")


if __name__ == "__main__":
    main()
