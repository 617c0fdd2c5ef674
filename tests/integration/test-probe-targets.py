#!/usr/bin/env python3
"""iopsd --once on a real ext4 loop mount and on a raw loop device: every
mode runs and its reads reach the device (not the page cache); the probe
file is laid out on the device, without holes, before it is first read; a
file next to the probe file and the raw device's contents are never
modified, over many runs and a re-layout; bench/seed-like.conf runs."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402


def disk_stat(dev):
    """(reads completed, sectors read, writes completed, sectors written)."""
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        v = [int(x) for x in f.read().split()]
    return v[0], v[2], v[4], v[6]


def once(conf_path, text):
    with open(conf_path, "w") as f:
        f.write(text)
    p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", conf_path], capture_output=True, text=True, timeout=120)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"--once printed no JSON (exit {p.returncode}): {p.stdout[:500]} {p.stderr}")
    return p.returncode, {j["jobname"]: j for j in doc["jobs"]}, p.stderr


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4")
    # backing files in memory: timings stay the engine's, not a shared disk's
    fs = t.Ext4Mount("probe-targets", 256, in_memory=True)
    raw = t.LoopDevice("probe-targets-raw", 64, in_memory=True)
    try:
        # the raw device gets non-zero content, so that a write would show
        t.run("dd", "if=/dev/urandom", f"of={raw.path}", "bs=1M", "count=64", "oflag=direct", "status=none")
        raw_hash = t.sha256(raw.path)
        mnt = fs.mountpoint
        neighbour = os.path.join(mnt, "neighbour.bin")
        with open(neighbour, "wb") as f:
            f.write(os.urandom(1 << 20))
        os.utime(neighbour, (1000000000, 1000000000))
        neighbour_hash = t.sha256(neighbour)
        conf = os.path.join(fs.loop.dir, "targets.conf")

        # 1. a read probe on a fresh directory: laid out on the device first,
        #    then read from the device
        before = disk_stat(fs.loop.path)
        rc, jobs, err = once(conf, f"""[global]
directory={mnt}
size=16m
runtime=1s
[fresh-read]
rw=randread
bs=4k
iodepth=8
""")
        after = disk_stat(fs.loop.path)
        j = jobs["fresh-read"]
        assert rc == 0 and j["success"], (rc, j["message"], err)
        assert j["layout_usec"] > 0, "a fresh probe file must be laid out"
        probe_file = os.path.join(mnt, ".iopsd", "fresh-read.dat")
        st = os.stat(probe_file)
        assert st.st_size == 16 << 20, st
        assert st.st_blocks * 512 >= st.st_size, f"probe file is sparse: {st.st_blocks} blocks"
        with open(probe_file, "rb") as f:
            assert os.lseek(f.fileno(), 0, os.SEEK_HOLE) == st.st_size, "probe file has a hole"
            first = f.read(4096)
            f.seek(8 << 20)
            middle = f.read(4096)
        assert first != middle and first.count(0) < 512, "layout data must be non-repeating, not zeros"
        # the layout wrote the whole file to the device, and every read the
        # probe counted reached the device
        assert (after[3] - before[3]) * 512 >= 16 << 20, f"layout wrote {(after[3] - before[3]) * 512} bytes"
        reads = j["read"]["total_ios"]
        assert reads > 100, j["read"]
        # (bytes, not requests: the block layer merges adjacent reads)
        dev_bytes = (after[1] - before[1]) * 512
        assert dev_bytes >= j["read"]["io_bytes"], f"device read {dev_bytes} bytes, probe counted {j['read']['io_bytes']}"
        assert j["read"]["clat_ns"]["min"] > 0
        assert set(j["read"]["clat_ns"]["percentile"]) >= {"1.000000", "50.000000", "99.000000", "99.990000"}
        assert os.stat(os.path.join(mnt, ".iopsd")).st_mode & 0o777 == 0o700

        # 2. every mode, several times, with a re-layout in between
        modes = f"""[global]
directory={mnt}
runtime=500ms
bs=16k
[rr]
rw=randread
size=8m
iodepth=4
numjobs=2
[rw]
rw=randwrite
size=8m
iodepth=4
numjobs=2
fsync=4
end_fsync=1
[seqrd]
rw=read
size=8m
numjobs=4
[seqwr]
rw=write
size=8m
numjobs=4
fsync=1
[seqrewr]
rw=rewrite
size=8m
numjobs=2
[rndrw]
rw=randrw
rwmixread=60
size=8m
ioengine=psync
[raw]
filename={raw.path}
rw=randread
bs=4k
iodepth=8
[raw-seq]
filename={raw.path}
rw=read
bs=128k
size=32m
"""
        for round_ in range(4):
            text = modes if round_ != 2 else modes.replace("size=8m", "size=4m")
            if round_ == 1:
                # a user's file inside the probe directory, next to the probe files
                inner = os.path.join(mnt, ".iopsd", "neighbour.bin")
                with open(inner, "wb") as f:
                    f.write(os.urandom(1 << 20))
                inner_hash = t.sha256(inner)
            raw_before = disk_stat(raw.path)
            rc, jobs, err = once(conf, text)
            raw_after = disk_stat(raw.path)
            assert rc == 0, (rc, err, {k: v["message"] for k, v in jobs.items()})
            for name, j in jobs.items():
                assert j["success"], (name, j["message"])
                ops = j["read"]["total_ios"] + j["write"]["total_ios"]
                assert ops > 0, (name, j)
            assert jobs["rw"]["sync"]["total_ios"] > 0
            # fsync=1: one fsync per write (the last write of a job may miss
            # its fsync when the runtime ends between the two)
            writes, syncs = jobs["seqwr"]["write"]["total_ios"], jobs["seqwr"]["sync"]["total_ios"]
            assert writes - 4 <= syncs <= writes, (writes, syncs)
            mix = jobs["rndrw"]
            share = mix["read"]["total_ios"] / (mix["read"]["total_ios"] + mix["write"]["total_ios"])
            assert 0.45 < share < 0.75, f"rwmixread=60 gave {share:.2f} reads"
            assert jobs["seqrd"]["write"]["total_ios"] == 0 and jobs["seqwr"]["read"]["total_ios"] == 0
            # raw reads reach the raw device; nothing is ever written to it
            raw_bytes = jobs["raw"]["read"]["io_bytes"] + jobs["raw-seq"]["read"]["io_bytes"]
            assert (raw_after[1] - raw_before[1]) * 512 >= raw_bytes, (raw_after, raw_before, raw_bytes)
            assert raw_after[2] == raw_before[2], "a raw device probe wrote to the device"
            if round_ == 1:
                assert jobs["rr"]["layout_usec"] == 0, "a matching probe file must be reused"
            elif round_ >= 2:
                assert jobs["rw"]["layout_usec"] > 0, "a size change must lay the file out again"

        # 3. the field notes' jobs (bench/seed-like.conf), shrunk to fit
        with open(os.path.join(t.SRCDIR, "bench", "seed-like.conf")) as f:
            seed = f.read()
        seed = re.sub(r"(?m)^directory=.*$", f"directory={mnt}", seed)
        seed = re.sub(r"(?m)^size=.*$", "size=8m", re.sub(r"(?m)^runtime=.*$", "runtime=200ms", seed))
        rc, jobs, err = once(conf, seed)
        assert rc == 0, (rc, err)
        assert len(jobs) == 12 and all(j["success"] for j in jobs.values()), jobs.keys()
        assert jobs["rndwr-16k-fsync1"]["sync"]["total_ios"] > 0
        assert jobs["seqwr-16k-fsync-end"]["sync"]["total_ios"] == 1

        assert t.sha256(neighbour) == neighbour_hash, "a file next to the probe directory changed"
        assert os.stat(neighbour).st_mtime == 1000000000
        assert t.sha256(inner) == inner_hash, "a file next to the probe files changed"
        assert t.sha256(raw.path) == raw_hash, "the raw device's contents changed"
        print("ok: ext4 and raw targets, reads reach the device, neighbours untouched")
    finally:
        fs.cleanup()
        raw.cleanup()


if __name__ == "__main__":
    main()
