#!/usr/bin/env python3
"""A host with more block devices than /proc/diskstats gives in one read():
procfs's seq files give a page per read() whatever the size asked for, so
the devices listed after the first 4 KiB (some 60 lines; on a host with
many snaps' loop devices, the NVMe and md devices, which diskstats lists
last) were lost, silently.

The test attaches 100 loop devices to sparse files (more if needed for
/proc/diskstats to pass two pages), starts iopsd, and asserts:

  - /proc/diskstats is longer than one read() of it gives (the
    precondition: otherwise the test proves nothing and says so);
  - every one of the loop devices, the last attached among them, has its
    iopsd_device_info series on /metrics, and the sampler reports the
    number of lines /proc/diskstats has, with no parse error."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

CONFIG = """[global]
state_directory=@TMP@
"""

PAGE = os.sysconf("SC_PAGE_SIZE")


def one_read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return len(os.pread(fd, 1 << 20, 0))
    finally:
        os.close(fd)


def whole(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    t.require_root()
    t.require_tool("losetup")
    tmp = tempfile.mkdtemp(prefix="iopsd-many-devices-", dir="/var/tmp")
    loops = []
    d = None
    try:
        for i in range(400):
            if i >= 100 and len(whole("/proc/diskstats")) > 2 * PAGE:
                break
            img = os.path.join(tmp, f"{i}.img")
            with open(img, "wb") as f:
                f.truncate(1 << 20)
            loops.append(t.run("losetup", "-f", "--show", img).stdout.decode().strip())
        text = whole("/proc/diskstats")
        lines = text.count(b"\n")
        first = one_read("/proc/diskstats")
        print(f"{len(loops)} loop devices attached; /proc/diskstats: {len(text)} bytes, {lines} lines; "
              f"one read() gives {first}")
        assert first < len(text), \
            f"one read() of /proc/diskstats gave all {len(text)} bytes: this kernel does not show what the test is for"
        d = t.Daemon(CONFIG)
        d.start()
        names = [os.path.basename(p) for p in loops]

        def listed():
            m = d.metrics()
            have = set(re.findall(r'^iopsd_device_info\{[^}]*device="([^"]+)"', m, re.M))
            return m if all(n in have for n in names) else None
        m = t.wait_until(listed, 30, 0.5, f"all {len(names)} loop devices on /metrics")
        have = set(re.findall(r'^iopsd_device_info\{[^}]*device="([^"]+)"', m, re.M))
        missing = [n for n in names if n not in have]
        assert not missing, f"{len(missing)} of {len(names)} loop devices missing, e.g. {missing[:5]}"
        errors = t.metric_value(m, "iopsd_diskstats_parse_errors_total")
        assert errors in (None, 0), f"iopsd_diskstats_parse_errors_total {errors}"
        print(f"ok: all {len(names)} loop devices, the last {names[-1]}, are on /metrics "
              f"({len(have)} devices in all)")
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    finally:
        if d:
            d.cleanup()
        for p in reversed(loops):
            t.run("losetup", "-d", p, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
