#!/usr/bin/env python3
"""Filesystem faults under a running daemon, on a real ext4 loop mount full
of user files: probe directory removed, read-only remount (EROFS), a full
filesystem (ENOSPC before and during the layout's writes), lazy umount of
the mount the probe writes to (and a restart and a reload while it is gone), .iopsd swapped for a symlink, the probe file
deleted, truncated, replaced by a symlink to a block device, by a FIFO or
by a hard link to a user's file, and directory= naming a block device. Each fault:
the daemon keeps serving, iopsd_probe_errors_total{reason} counts it,
iopsd_probe_success is 0, one log line, and the probe recovers by itself
once the condition clears. Afterwards every user file is byte-identical
and nothing new exists outside .iopsd/."""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

# A run stops after number_ios (40 I/Os at 400 IOPS, 100 ms) but its
# timeout is 2x runtime, 2 s: a run held up by a loaded machine does not
# time out, which would add a failure line to the exact counts below
CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
bs=4k
size=4m
runtime=1s
number_ios=40
interval=1s
rate_iops=400

[root]
rw=randwrite
directory={mnt}

[victim]
rw=randrw
directory={mnt}/victim

[reader]
rw=randread
directory={mnt}/rdir

[blockdir]
rw=randwrite
directory={raw}
"""


def fill(path):
    """Fill the filesystem with a user's file (dd stops at ENOSPC)."""
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", "count=512", "oflag=direct"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "mount", "umount", "dd")
    if not os.path.isdir(t.BlkioThrottle.ROOT):
        t.skip("no cgroup v1 blkio controller")
    fs = t.Ext4Mount("reliability-faults-fs", 64, in_memory=True)
    try:
        raw = t.LoopDevice("reliability-faults-raw", 8)
    except BaseException:
        fs.cleanup()
        raise
    try:
        run_faults(fs, raw)
    finally:
        fs.cleanup()
        raw.cleanup()


def run_faults(fs, raw):
    mnt = fs.mountpoint
    throttle = None
    d = None
    try:
        t.run("dd", "if=/dev/urandom", f"of={raw.path}", "bs=1M", "count=8", "oflag=direct")
        raw_sha = t.sha256(raw.path, 8 << 20)
        tree = t.UserTree(mnt, seed=7, probe_files=("root.dat", "victim.dat", "reader.dat", ".root.dat.tmp"))
        # a user's file of exactly the probe file's size, for the hard-link case
        with open(os.path.join(mnt, "dir1", "same-size.bin"), "wb") as f:
            f.write(os.urandom(4 << 20))
        tree.snapshot = tree._scan()
        for sub in ("victim", "rdir"):
            os.mkdir(os.path.join(mnt, sub))
        allowed = {".iopsd", "victim", "rdir"}

        fs_dev = os.stat(mnt).st_dev
        d = t.Daemon(CONFIG.format(mnt=mnt, raw=raw.path))
        d.start()
        root, victim, reader, blockdir = (t.ProbeWatch(d, n) for n in ("root", "victim", "reader", "blockdir"))
        for p in (root, victim, reader):
            p.expect_recovered(timeout=60)

        # directory= naming a block device: refused every run, never written
        blockdir.expect_failing("other", runs=3)

        # 1. probe directory removed, then recreated
        m = victim.mark()
        # renamed away first: the probe may be laying out inside it
        os.rename(os.path.join(mnt, "victim"), os.path.join(mnt, "victim.removed"))
        shutil.rmtree(os.path.join(mnt, "victim.removed"))
        assert victim.expect_failing("enoent", mark=m) == 1, d.read_log()
        assert root.state()["success"] == 1, "a fault on one probe's directory failed another"
        os.mkdir(os.path.join(mnt, "victim"))
        victim.expect_recovered()

        # 2. read-only remount: writers fail with EROFS, the reader keeps working
        m = root.mark()
        fs.remount("ro")
        assert root.expect_failing("erofs", mark=m) == 1, d.read_log()
        assert reader.state()["success"] == 1, "a read probe failed on a read-only filesystem"
        fs.remount("rw")
        root.expect_recovered()

        # 3. full filesystem when the probe file must be laid out: refused
        #    before writing, however the free space varies meanwhile
        fillfile = os.path.join(mnt, "user-fill.bin")
        logged = root.failures_logged()
        fill(fillfile)
        os.unlink(os.path.join(mnt, ".iopsd", "root.dat"))
        assert root.expect_failing("enospc", mark=logged) == 1, d.read_log()
        with open(fillfile, "r+b") as f:  # the free space changes under the fault
            f.truncate(os.path.getsize(fillfile) - (64 << 10))
        root.expect_failing("enospc", runs=3)
        assert root.failures_logged() - logged == 1, "a second line for the same ENOSPC fault:\n" + d.read_log()
        assert not [n for n in os.listdir(os.path.join(mnt, ".iopsd")) if n.startswith(".root")], \
            "a partial probe file was left behind"
        os.unlink(fillfile)
        root.expect_recovered()

        # 4. ENOSPC during the layout's writes: the layout is slowed to 1 MiB/s
        #    by a blkio throttle and the filesystem fills up while it runs
        throttle = t.BlkioThrottle(f"iopsd-reliability-{os.getpid()}", fs.loop.path)
        throttle.add(d.proc.pid)
        throttle.limit("write_bps", 1 << 20)
        logged = root.failures_logged()
        before = root.errors("enospc")
        os.unlink(os.path.join(mnt, ".iopsd", "root.dat"))
        def layouts():
            return [f for f in os.listdir(os.path.join(mnt, ".iopsd")) if f.startswith(".root.dat.")
                    and f.endswith(".tmp")]
        t.wait_until(layouts, 30, interval=0.02, what="the layout to start")
        fill(fillfile)
        t.wait_until(lambda: root.errors("enospc") > before, 30, what="ENOSPC from the layout's writes")
        t.wait_until(lambda: "laying out" in d.read_log(), 30, what="the layout failure in the log")
        assert root.state()["success"] == 0
        assert not layouts(), "the partial probe file was left behind on a full filesystem"
        throttle.limit("write_bps", 0)
        os.unlink(fillfile)
        root.expect_recovered(timeout=60)
        assert root.failures_logged() - logged <= 2, d.read_log()

        # 5. the mount under the probe directory goes away (lazy umount):
        #    never a write into the filesystem underneath, also after a
        #    restart (the pin is kept in the state directory) and a reload
        m = root.mark()
        fs.umount(lazy=True)
        assert root.expect_failing("enoent", mark=m) == 1, d.read_log()
        assert os.listdir(mnt) == [], f"iopsd wrote under the unmounted mount point: {os.listdir(mnt)}"
        with open(os.path.join(d.tmp, "pins")) as f:
            pins = f.read()
        assert f"pin {os.major(fs_dev)}:{os.minor(fs_dev)} root {mnt}\n" in pins, pins
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
        m = root.mark()
        d.start()
        assert root.expect_failing("enoent", mark=m) == 1, d.read_log()
        assert os.listdir(mnt) == [], \
            f"a restarted iopsd wrote under the unmounted mount point: {os.listdir(mnt)}"
        # ... and after a reload, whose new generation of probes takes the
        # pin over from the last one
        n = d.read_log().count("Reloaded")
        d.signal(signal.SIGHUP)
        t.wait_until(lambda: d.read_log().count("Reloaded") > n, 30, what="the reload")
        root.expect_failing("enoent")
        assert os.listdir(mnt) == [], \
            f"a reloaded iopsd wrote under the unmounted mount point: {os.listdir(mnt)}"
        fs.mount()
        root.expect_recovered()
        reader.expect_recovered()

        # 6. .iopsd swapped for a symlink to a user's directory
        m = root.mark()
        os.rename(os.path.join(mnt, ".iopsd"), os.path.join(mnt, ".iopsd.real"))
        os.symlink(os.path.join(mnt, "dir1"), os.path.join(mnt, ".iopsd"))
        assert root.expect_failing("other", mark=m) == 1, d.read_log()
        assert "symlink" in root.last_failure(), root.last_failure()
        os.unlink(os.path.join(mnt, ".iopsd"))
        os.rename(os.path.join(mnt, ".iopsd.real"), os.path.join(mnt, ".iopsd"))
        root.expect_recovered()

        # 7. the probe file replaced by a symlink to a block device
        probe_file = os.path.join(mnt, ".iopsd", "root.dat")
        m = root.mark()
        # replaced atomically: between an unlink and a symlink a run could lay
        # out a fresh file and rename it over the new symlink
        os.symlink(raw.path, probe_file + ".swap")
        os.rename(probe_file + ".swap", probe_file)
        assert root.expect_failing("other", mark=m) == 1, d.read_log()
        os.unlink(probe_file)
        root.expect_recovered()

        # 7b. a read probe's file replaced by a FIFO: opening it must not
        #     block the run for good
        rfile = os.path.join(mnt, "rdir", ".iopsd", "reader.dat")
        m = reader.mark()
        os.unlink(rfile)
        os.mkfifo(rfile, 0o600)
        assert reader.expect_failing("eacces", mark=m) == 1, d.read_log()
        assert "not a regular file" in reader.last_failure(), reader.last_failure()
        os.unlink(rfile)
        reader.expect_recovered()

        # 8. the probe file replaced by a hard link to a user's file of the
        #    same size: not reused, the link dropped, a fresh file laid out
        #    (the link is unlinked before the fresh file is renamed in, so
        #    the probe file may be absent for a moment: watch the user's file)
        user_file = os.path.join(mnt, "dir1", "same-size.bin")
        os.unlink(probe_file)
        os.link(user_file, probe_file)
        t.wait_until(lambda: os.stat(user_file).st_nlink == 1, 30, what="the hard link to be dropped")
        root.expect_recovered()
        st, ust = os.stat(probe_file), os.stat(user_file)
        assert st.st_ino != ust.st_ino and st.st_nlink == 1, "the user's file is still the probe file"

        # 9. the probe file deleted, or truncated while probes run
        logged = reader.failures_logged()
        rfile = os.path.join(mnt, "rdir", ".iopsd", "reader.dat")
        for _ in range(20):
            try:
                os.truncate(rfile, 0)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        os.unlink(probe_file)
        reader.expect_recovered()
        root.expect_recovered()
        st = os.stat(rfile)
        assert st.st_size == 4 << 20 and st.st_blocks * 512 >= 4 << 20, "probe file not laid out again"
        assert reader.failures_logged() - logged <= 1, d.read_log()

        # reloads do not log a fault that goes on again
        for _ in range(2):
            n = d.read_log().count("Reloaded")
            d.signal(signal.SIGHUP)
            t.wait_until(lambda: d.read_log().count("Reloaded") > n, 30, what="a reload")
        blockdir.expect_failing("other", runs=3)

        # the daemon kept running through everything, the block device named
        # by directory= failed with one log line in total for each of the
        # two processes (the restart in 5.)
        assert d.proc.poll() is None
        assert blockdir.failures_logged() == 2, d.read_log()
        assert blockdir.state()["success"] == 0
        rc, _ = d.stop()
        assert rc == 0, rc
    except BaseException:
        if d:
            print("daemon log:\n" + d.read_log())
            print("metrics:\n" + "\n".join(l for l in d.metrics().splitlines() if "probe_errors" in l and not l.endswith(" 0")))
        raise
    finally:
        if throttle:
            throttle.cleanup(d.proc.pid if d and d.proc and d.proc.poll() is None else None)
        if d:
            d.cleanup()

    if not fs.mounted:
        fs.mount()
    n = tree.verify(allowed)
    assert t.sha256(raw.path, 8 << 20) == raw_sha, "the block device was written"
    print(f"ok: {n} user entries unchanged, block device unchanged")


if __name__ == "__main__":
    main()
