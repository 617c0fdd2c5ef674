#!/usr/bin/env python3
"""What iopsd refuses to do, each with a clear message and nothing changed:
a write probe on a block device (config error, exit 78; the device is never
opened for writing), a symlinked .iopsd, a filesystem without O_DIRECT
(ramfs: open(O_DIRECT) is EINVAL there; nothing left behind), and writes to
a read-only filesystem (reason erofs)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402


def once(conf_path, text):
    with open(conf_path, "w") as f:
        f.write(text)
    p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", conf_path], capture_output=True, text=True, timeout=60)
    doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    return p.returncode, doc, p.stderr


def disk_writes(name):
    with open(f"/sys/block/{name}/stat") as f:
        return int(f.read().split()[4])


def write_probe_on_block_device(workdir):
    dev = t.LoopDevice("probe-refusals", 16)
    try:
        t.run("dd", "if=/dev/urandom", f"of={dev.path}", "bs=1M", "count=8", "oflag=direct", "status=none")
        before = t.sha256(dev.path, 8 << 20)
        writes_before = disk_writes(dev.name)
        conf = os.path.join(workdir, "raw-write.conf")
        for mode in ("randwrite", "write", "rewrite", "randrw"):
            text = f"[raw-write]\nfilename={dev.path}\nrw={mode}\nruntime=1s\n"
            with open(conf, "w") as f:
                f.write(text)
            p = subprocess.run([t.IOPSD, "--check-config", "--config", conf], capture_output=True, text=True)
            assert p.returncode == 78, (mode, p.returncode, p.stderr)
            assert f"{conf}:1:" in p.stderr and "never writes a raw device" in p.stderr, p.stderr
            rc, doc, err = once(conf, text)
            assert rc == 78 and doc is None, (mode, rc, err)
        assert t.sha256(dev.path, 8 << 20) == before, "the block device was modified"
        assert disk_writes(dev.name) == writes_before, "a write reached the block device"
    finally:
        dev.cleanup()


def symlinked_state_dir(fs, workdir):
    mnt = fs.mountpoint
    elsewhere = os.path.join(mnt, "elsewhere")
    os.mkdir(elsewhere)
    os.symlink(elsewhere, os.path.join(mnt, ".iopsd"))
    try:
        rc, doc, err = once(os.path.join(workdir, "sym.conf"),
                            f"[sym]\ndirectory={mnt}\nrw=randwrite\nsize=1m\nruntime=200ms\n")
        assert rc == 1, (rc, err)
        job = doc["jobs"][0]
        assert not job["success"]
        assert job["message"] == f"{mnt}/.iopsd is a symlink: refusing to use it", job["message"]
        assert os.listdir(elsewhere) == [], "something was created through the symlink"
    finally:
        os.unlink(os.path.join(mnt, ".iopsd"))


def read_only_filesystem(fs, workdir):
    fs.remount("ro")
    try:
        rc, doc, err = once(os.path.join(workdir, "ro.conf"),
                            f"[ro-write]\ndirectory={fs.mountpoint}\nrw=randwrite\nsize=1m\nruntime=200ms\n")
        assert rc == 1, (rc, err)
        job = doc["jobs"][0]
        assert job["errors"]["erofs"] == 1 and job["error_name"] == "EROFS", job
        assert "Read-only file system (EROFS)" in job["message"], job["message"]
    finally:
        fs.remount("rw")


def no_direct_io(workdir):
    mnt = tempfile.mkdtemp(prefix="iopsd-probe-ramfs-", dir="/var/tmp")
    t.run("mount", "-t", "ramfs", "-o", "mode=0755", "iopsd-probe-ramfs", mnt)
    try:
        rc, doc, err = once(os.path.join(workdir, "ramfs.conf"),
                            f"[ramfs]\ndirectory={mnt}\nrw=randread\nsize=1m\nruntime=200ms\n")
        assert rc == 1, (rc, err)
        job = doc["jobs"][0]
        assert not job["success"]
        assert job["message"] == f"O_DIRECT not supported by the filesystem at {mnt} (EINVAL)", job["message"]
        assert job["errors"]["einval"] == 1 and job["read"]["total_ios"] == 0, job
        assert "[ramfs]: O_DIRECT not supported" in err, err
        assert os.listdir(mnt) == [], f"left behind: {os.listdir(mnt)}"
    finally:
        t.run("umount", mnt, check=False)
        os.rmdir(mnt)


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4")
    with open("/proc/filesystems") as f:
        if "ramfs" not in f.read():
            t.skip("ramfs not available")
    workdir = tempfile.mkdtemp(prefix="iopsd-probe-refusals-")
    fs = t.Ext4Mount("probe-refusals-fs", 64)
    try:
        write_probe_on_block_device(workdir)
        symlinked_state_dir(fs, workdir)
        read_only_filesystem(fs, workdir)
        no_direct_io(workdir)
        print("ok: raw writes, symlinked .iopsd, read-only fs and no-O_DIRECT targets refused")
    finally:
        fs.cleanup()
        subprocess.run(["rm", "-rf", workdir])


if __name__ == "__main__":
    main()
