#!/usr/bin/env python3
"""ioengine=io_uring on a raw loop device: the probe counts exactly the
bytes the device read, at QD1 and QD32, and runs at the speed of fio's
io_uring engine on the same device (within a generous factor: the machine
is shared). A host that refuses io_uring (a seccomp filter like a unit's
SystemCallFilter=, kernel.io_uring_disabled=2) fails the probe at start with
the reason and without I/O: it never runs on another engine instead. The
same config with ioengine=libaio runs under the same filter, and
--check-config says whether the host allows io_uring."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

RUNTIME = 2


def once(conf, wrap=lambda c: c):
    p = subprocess.run(wrap([t.IOPSD, "--once", "--output-format=json", "--config", conf]), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    doc = json.loads(p.stdout)
    return p.returncode, doc["jobs"][0], p.stderr.decode()


def check_config(conf, wrap=lambda c: c):
    p = subprocess.run(wrap([t.IOPSD, "--check-config", "--config", conf]), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return p.stdout.decode(), p.stderr.decode()


def fio_iops(dev, qd):
    p = subprocess.run(["fio", "--name=ref", f"--filename={dev}", "--readonly", "--direct=1",
                        "--ioengine=io_uring", "--rw=randread", "--bs=4k", f"--iodepth={qd}",
                        "--time_based", f"--runtime={RUNTIME}", "--norandommap", "--randrepeat=0",
                        "--output-format=json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)["jobs"][0]["read"]["iops"]


def udev_settle():
    """Wait (30 s at most) for udev to finish with the devices' events: on a
    freshly attached loop device its probe (blkid) reads the first blocks,
    which must stay out of a run's count of the device's reads."""
    if not shutil.which("udevadm"):
        return
    try:
        subprocess.run(["udevadm", "settle", "--timeout=30"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
    except subprocess.TimeoutExpired:
        pass  # a busy udev: the reads below will say whether it mattered


def write_conf(workdir, name, dev, engine, qd):
    path = os.path.join(workdir, f"{name}.conf")
    with open(path, "w") as f:
        f.write(f"[{name}]\nfilename={dev}\nrw=randread\nbs=4k\niodepth={qd}\n"
                f"ioengine={engine}\nruntime={RUNTIME}s\ntime_based\n")
    return path


def measure(dev, conf, qd):
    """Alternating runs of iopsd and fio; every iopsd run must count what
    the device did. Returns (median iopsd IOPS, median fio IOPS)."""
    ours, theirs = [], []
    for r in range(3):
        for tool in (("iopsd", "fio") if r % 2 == 0 else ("fio", "iopsd")):
            if tool == "fio":
                theirs.append(fio_iops(dev.path, qd))
                continue
            before = t.disk_read_bytes(dev.path)
            rc, job, err = once(conf)
            done = t.disk_read_bytes(dev.path) - before
            assert rc == 0 and job["success"], (rc, job["message"], err)
            assert job["job options"]["ioengine"] == "io_uring", job["job options"]
            ops, nbytes = job["read"]["total_ios"], job["read"]["io_bytes"]
            # every read the probe counted reached the device, and it counted
            # every one it issued (the run drains before it reports)
            assert ops > 100 and nbytes == 4096 * ops, job["read"]
            assert 0 <= done - nbytes <= 8 * 4096, f"QD{qd}: probe read {nbytes} bytes, the device {done}"
            assert job["read"]["clat_ns"]["percentile"]["50.000000"] > 0, job["read"]["clat_ns"]
            ours.append(job["read"]["iops"])
    return statistics.median(ours), statistics.median(theirs)


def expect_refused(dev, conf, wrap, reason):
    before = t.disk_read_bytes(dev.path)
    rc, job, err = once(conf, wrap)
    assert rc == 1 and not job["success"], (rc, job)
    msg = job["message"]
    assert "io_uring is not available" in msg and reason in msg, msg
    assert job["read"]["total_ios"] == 0, job["read"]
    assert sum(job["read"]["errors"].values()) == 1, job["read"]["errors"]
    # no I/O at all: the probe did not quietly run on another engine
    assert t.disk_read_bytes(dev.path) == before, "a refused io_uring probe did I/O"
    out, err = check_config(conf, wrap)
    assert "io_uring: unavailable" in out and reason in out, out
    assert "ioengine=io_uring is not available" in err and "its runs will fail" in err, err
    print(f"refused ({reason}): {msg}")


def main():
    t.require_root()
    t.require_tool("fio", "losetup")
    dev = t.LoopDevice("probe-uring", 128, in_memory=True)
    workdir = tempfile.mkdtemp(prefix="iopsd-probe-uring-")
    try:
        udev_settle()  # before the first run's baseline of the device's reads
        for qd in (1, 32):
            conf = write_conf(workdir, f"uring{qd}", dev.path, "io_uring", qd)
            ours, theirs = measure(dev, conf, qd)
            print(f"QD{qd}: iopsd io_uring {ours:.0f} IOPS, fio io_uring {theirs:.0f} IOPS "
                  f"(ratio {ours / theirs:.2f}; medians of 3, alternating, on a shared machine)")
            # generous: under load, and in the sanitizer build, single runs of
            # either tool vary several-fold; an engine whose waits miss their
            # completions (a wait that only a timeout ends) is 100x slower
            assert ours >= 0.1 * theirs, f"QD{qd}: iopsd io_uring {ours:.0f} IOPS against fio's {theirs:.0f}"

        conf = write_conf(workdir, "u", dev.path, "io_uring", 16)
        out, _ = check_config(conf)
        assert "io_uring: available" in out, out

        deny = lambda c: t.seccomp_deny(c, ["io_uring_setup"])  # noqa: E731
        expect_refused(dev, conf, deny, "seccomp")
        # the filter refuses io_uring only: libaio runs under it
        rc, job, err = once(write_conf(workdir, "a", dev.path, "libaio", 16), deny)
        assert rc == 0 and job["success"], (rc, job["message"], err)

        knob = "/proc/sys/kernel/io_uring_disabled"
        if os.path.exists(knob):
            with open(knob) as f:
                saved = f.read().strip()
            try:
                with open(knob, "w") as f:
                    f.write("2")
                expect_refused(dev, conf, lambda c: c, "kernel.io_uring_disabled=2")
            finally:
                with open(knob, "w") as f:
                    f.write(saved)
        else:
            print("no kernel.io_uring_disabled on this kernel (before 6.6): not tried")
        print("ok")
    finally:
        dev.cleanup()
        subprocess.run(["rm", "-rf", workdir])


if __name__ == "__main__":
    main()
