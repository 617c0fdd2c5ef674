#!/usr/bin/env python3
"""A procfs/sysfs tree of a host with N NVMe volumes (default 64), each
mounted, for bench/scrape: iopsd and node_exporter read the same tree with
--path.procfs/--path.sysfs, so both serve the same 64 devices.

usage: make-tree.py OUTDIR [N]"""
import importlib.util
import os
import sys

# write() and link() of the sampler's fixture generator
_spec = importlib.util.spec_from_file_location(
    "make_fixtures", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures",
                                  "sampler", "make-fixtures.py"))
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
write, link = _fixtures.write, _fixtures.link


def main():
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64
    proc, sys_ = os.path.join(out, "proc"), os.path.join(out, "sys")
    diskstats, mountinfo = [], ["21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/root rw\n"]
    for i in range(n):
        name, major, minor = f"nvme{i}n1", 259, i
        # 20 fields (kernel 5.5+), different counters per device
        c = [1000003 * (i + 1), 17 * i, 8000024 * (i + 1), 350001 + i, 500009 * (i + 1), 33 * i,
             9000072 * (i + 1), 720011 + i, i % 4, 3600007 + i, 4500013 + i,
             11 * i, i, 2048 * i, 5 + i, 777 + i, 99 + i]
        diskstats.append(f"{major:4d} {minor:7d} {name} " + " ".join(str(v) for v in c) + "\n")
        mountinfo.append(f"{30 + i} 21 {major}:{minor} / /mnt/vol{i} rw,relatime shared:{2 + i} - ext4 "
                         f"/dev/{name} rw\n")
        d = os.path.join(sys_, "devices", "pci0000:00", f"0000:00:{4 + i // 8:02x}.{i % 8}", "nvme",
                         f"nvme{i}", name)
        write(os.path.join(d, "dev"), f"{major}:{minor}\n")
        write(os.path.join(d, "size"), f"{(100 + i) * 2097152}\n")
        write(os.path.join(d, "queue", "logical_block_size"), "512\n")
        write(os.path.join(d, "queue", "rotational"), "0\n")
        write(os.path.join(d, "device", "model"), "iopsd bench NVMe\n")
        os.makedirs(os.path.join(d, "slaves"), exist_ok=True)
        os.makedirs(os.path.join(d, "holders"), exist_ok=True)
        rel = os.path.relpath(d, os.path.join(sys_, "block"))
        link(os.path.join(sys_, "block", name), rel)
        link(os.path.join(sys_, "class", "block", name), os.path.relpath(d, os.path.join(sys_, "class", "block")))
        link(os.path.join(sys_, "dev", "block", f"{major}:{minor}"),
             os.path.relpath(d, os.path.join(sys_, "dev", "block")))
    write(os.path.join(proc, "diskstats"), "".join(diskstats))
    write(os.path.join(proc, "self", "mountinfo"), "".join(mountinfo))
    for res in ("io", "memory"):
        write(os.path.join(proc, "pressure", res),
              "some avg10=0.12 avg60=0.08 avg300=0.02 total=12500123\n"
              "full avg10=0.05 avg60=0.03 avg300=0.01 total=3250456\n")
    write(os.path.join(proc, "pressure", "cpu"), "some avg10=1.00 avg60=0.50 avg300=0.20 total=99000123\n")


if __name__ == "__main__":
    main()
