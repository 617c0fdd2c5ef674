#!/usr/bin/env python3
"""iopsd-lab vm without booting a guest: the declaration (file and command
line) and its refusals, the burst conversion to QEMU's bucket, and QEMU
itself taking the lab's drives, group and caps (started paused, asked over
QMP what it applied, quit). The guest side runs in tests/vm/
test-lab-scenarios.py."""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import SRCDIR, require_tool  # noqa: E402

sys.path.insert(0, os.path.join(SRCDIR, "contrib", "lab"))
import iopsdlab  # noqa: E402
from iopsdlab import Caps, LabConfig, LabDisk, SpecError  # noqa: E402

LAB = os.path.join(SRCDIR, "contrib", "lab", "iopsd-lab")

GOOD = """
# the field notes' volumes
group  inst  iops=1500
volume data1 size=1G bus=nvme serial=vol0123456789abcdef0 iops=500 array=data
volume data2 size=1G iops=500 array=data
array  data  level=0 chunk=256k mount=/data iopsd.iops_limit=1000
volume rds,iops=1000,burst=3000,burst-length=30s,bps-read=125m
volume i1 iops=1000 group=inst
volume i2 iops=1000 group=inst bus=nvme
volume slow size=128M faults=yes mount=/mnt/slow iopsd.iops_limit=1000
"""


def expect_refused(text, needle):
    try:
        LabConfig.parse(text)
    except SpecError as e:
        assert needle in str(e), f"{text!r}: refused as {e!s}, expected {needle!r}"
        print(f"ok: refused: {e}")
        return
    raise AssertionError(f"{text!r} was accepted")


def test_declaration():
    cfg = LabConfig.parse(GOOD, "lab.conf")
    assert sorted(cfg.volumes) == ["data1", "data2", "i1", "i2", "rds", "slow"], cfg.volumes
    assert [m.name for m in cfg.arrays["data"].members] == ["data1", "data2"]
    assert cfg.arrays["data"].chunk == 256 << 10 and cfg.arrays["data"].iopsd == {"iops_limit": "1000"}
    assert cfg.volumes["data1"].serial == "vol0123456789abcdef0"
    d2 = cfg.volumes["data2"].serial
    assert len(d2) == 20 and d2.startswith("vol0") and int(d2[3:], 16) >= 0, d2
    assert cfg.volumes["slow"].mount == "/mnt/slow" and cfg.volumes["slow"].faults
    assert cfg.volumes["i1"].fs == "none" and cfg.volumes["i1"].mount is None
    print("ok: a lab file with volumes, a group, an array, a burst, faults")

    expect_refused("volume a iops=10 colour=red", "unknown key(s) colour")
    expect_refused("volume a burst=3000", "needs an IOPS base")
    expect_refused("volume a iops=3000 burst=3000", "must be above the base")
    expect_refused("volume a iops=100 iops-read=50", "exclude each other")
    expect_refused("volume a iops=1x0", "not a whole number")
    expect_refused("volume a bps=fast", "not a size")
    expect_refused("volume a group=nope", "group=nope is not declared")
    expect_refused("volume a array=r\nvolume b\narray r level=0", "needs at least two member volumes")
    expect_refused("volume a array=r\nvolume b array=r\narray r level=1 chunk=64k", "has no chunk")
    expect_refused("volume a\nvolume a", "that name is taken")
    expect_refused("volume a mount=/x\nvolume b mount=/x", "mount point /x used twice")
    expect_refused("volume a serial=vol-has-a-dash-and-is-way-too-long", "at most 20 characters")
    expect_refused("volume A", "names are [a-z0-9]")
    expect_refused("volume a bus=ide", "virtio or nvme")
    expect_refused("disk a", "volume, group or array")
    expect_refused("group g iops=10", "has no volume")


def test_burst_is_qemus_bucket():
    # 1000 base, 3000 for 30 s: QEMU's bucket holds 3000 x max-length and
    # leaks at 1000/s, so max-length 20 lasts 20 x 3000 / 2000 = 30 s
    c = Caps(iops=1000, burst=3000, burst_seconds=30)
    assert c.qemu() == {"iops-total": 1000, "iops-total-max": 3000, "iops-total-max-length": 20}, c.qemu()
    q = c.qmp()
    assert (q["iops"], q["iops_max"], q["iops_max_length"], q["bps"], q["iops_rd"]) == (1000, 3000, 20, 0, 0), q
    assert c.effective_burst_seconds(1000) == 30
    c = Caps(iops=500, burst=2000, burst_seconds=5)   # VMLAB.md's: 2000 for 5 s over 500
    assert c.qemu()["iops-total-max-length"] == 4 and abs(c.effective_burst_seconds(500) - 5.333) < 0.01
    c = Caps.from_opts({"iops-read": "800", "iops-write": "400", "bps": "125m"}, "x")
    assert c.qemu() == {"iops-read": 800, "iops-write": 400, "bps-total": 125 << 20}, c.qemu()
    print("ok: caps and bursts in QEMU's terms")


def test_qemu_takes_the_drives(tmp):
    cfg = LabConfig.parse(GOOD)
    args = []
    for g in cfg.groups.values():
        args += ["-object", g.object_arg()]
    disks = [LabDisk(v) for v in cfg.volumes.values()]
    # a volume counting 256 KiB units: a virtqueue that takes a 1 MiB I/O
    # of scattered pages in one request (seg_max 1022), which QEMU accepts
    unit = LabDisk(LabConfig.parse("volume u size=16M bus=virtio iops=1000 iops-size=256k\n").volumes["u"])
    assert "queue-size=1024" in unit.device_arg() and \
        all("queue-size" not in d.device_arg() for d in disks), [d.device_arg() for d in disks + [unit]]
    disks.append(unit)
    for d in disks:
        d.size = "16M"
        d.prepare(tmp)
        args += d.args()
    script = [{"execute": "qmp_capabilities"}, {"execute": "query-block"},
              {"execute": "qom-get", "arguments": {"path": "/objects/g-inst", "property": "limits"}},
              {"execute": "block_set_io_throttle", "arguments": dict(Caps(iops=2000).qmp(), device="d-i1")},
              {"execute": "query-block"}, {"execute": "quit"}]
    p = subprocess.run(["qemu-system-x86_64", "-machine", "pc", "-accel", "tcg", "-nodefaults", "-display", "none",
                        "-S", "-qmp", "stdio"] + args, input="\n".join(json.dumps(c) for c in script) + "\n",
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    answers = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    returns = [a for a in answers if "return" in a or "error" in a]
    assert p.returncode == 0 and not any("error" in a for a in returns), p.stdout[-3000:]
    blocks = {b["device"]: b["inserted"] for b in returns[1]["return"]}
    assert blocks["d-rds"]["iops"] == 1000 and blocks["d-rds"]["iops_max"] == 3000 and \
        blocks["d-rds"]["iops_max_length"] == 20 and blocks["d-rds"]["bps_rd"] == 125 << 20, blocks["d-rds"]
    assert blocks["d-i1"]["iops"] == 1000 and blocks["d-i1"]["drv"] == "throttle", blocks["d-i1"]
    assert blocks["d-slow"]["iops"] == 0, blocks["d-slow"]
    assert returns[2]["return"]["iops-total"] == 1500, returns[2]
    after = {b["device"]: b["inserted"] for b in returns[4]["return"]}
    assert after["d-i1"]["iops"] == 2000 and after["d-i2"]["iops"] == 1000, after["d-i1"]
    print("ok: QEMU takes the lab's drives: caps, the burst bucket, the group (1500), a live cap change, "
          "a unit-counting volume's virtqueue of 1024")


def test_command_line():
    r = subprocess.run([LAB, "vm", "up", "--volume", "x,burst=10"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    assert r.returncode == 1 and "burst= needs an IOPS base" in r.stdout, r.stdout
    r = subprocess.run([LAB, "vm", "--dir", "/nonexistent-lab-dir", "--name", "none", "status"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 1 and "no lab running" in r.stdout, r.stdout
    r = subprocess.run([LAB, "vm", "--help"], stdout=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0 and "iopsd-lab vm fault NAME" in r.stdout, r.stdout
    print("ok: iopsd-lab vm refuses a bad declaration before booting, and needs a running lab for commands")


def test_iopsd_config_names():
    cfg = LabConfig.parse(GOOD)
    lab = iopsdlab.Lab.__new__(iopsdlab.Lab)
    lab.cfg = cfg
    for n, d in zip(cfg.volumes, ("nvme0n1", "vdb", "vdc", "vdd", "nvme1n1", "vde")):
        cfg.volumes[n].disk = d
    cfg.arrays["data"].disk = "md127"
    text = lab.render_iopsd_conf("[p]\nrw=randread\nfilename=${slow}\n[q]\ndirectory=${data.mount}\n"
                                 "[r]\nfilename=${data1.by-id}\n")
    assert "filename=/dev/mapper/lab-slow" in text and "directory=/data" in text, text
    assert "filename=/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_vol0123456789abcdef0" in text, text
    assert "[device md127]\niops_limit=1000" in text and "[device vde]\niops_limit=1000" in text, text
    try:
        lab.render_iopsd_conf("[p]\nfilename=${nope}\n")
        raise AssertionError("an unknown name was filled in")
    except SpecError as e:
        assert "${nope}: no such volume or array" in str(e), e
    print("ok: the iopsd.conf template gets the guest's names and the declared limits")


def test_dm_delay_in_ticks():
    # dm-delay holds an I/O (ceil(d / tick) + 1) ticks less the part of the
    # current one gone (measured in the guest: d=50 at 250 Hz held 55.8 ms,
    # d=48 52.2 ms): the lab's parameter is one tick below the delay
    # rounded up to ticks, so the hold ends within one tick of the delay
    lab = iopsdlab.Lab.__new__(iopsdlab.Lab)
    for hz, want in ((250, 50), (250, 40), (1000, 50), (300, 50), (100, 50), (250, 3)):
        lab._guest_tick_ms = 1000 / hz
        d = lab._dm_delay_ms(want)
        tick = 1000 / hz
        held = (math.ceil(d / tick - 1e-9) + 1) * tick  # at most; at least one tick less
        assert d >= 1 and held >= want, (hz, want, d, held)
        if want >= 2 * tick:
            assert held - tick < want + 1e-9 and held - want < tick, (hz, want, d, held)
        else:  # the shortest hold dm-delay has
            assert held == 2 * tick, (hz, want, d, held)
    lab._guest_tick_ms = 4.0
    assert lab._dm_delay_ms(50) == 48, lab._dm_delay_ms(50)
    lab._guest_tick_ms = 0  # no CONFIG_HZ in the guest: the delay as asked
    assert lab._dm_delay_ms(50) == 50
    print("ok: dm-delay's parameter holds an I/O within one tick of the delay asked for")


def test_lab_boots_the_shared_image():
    # iopsd's libraries are in the base image: the lab asks for nothing
    # more, or it would build (and prune) images other tests use
    lab = iopsdlab.Lab.__new__(iopsdlab.Lab)
    lab.deb, lab.iopsd_binary = None, os.environ.get("IOPSD", "iopsd")
    if os.path.sep not in lab.iopsd_binary:
        lab.iopsd_binary = subprocess.run(["sh", "-c", f"command -v {lab.iopsd_binary}"], stdout=subprocess.PIPE,
                                          text=True).stdout.strip()
    # a sanitizer build links its runtimes, which a release build does not
    sanitizers = {"libasan8", "libubsan1", "libtsan2", "liblsan0"}
    extra = [p for p in lab.extra_packages() if p not in sanitizers]
    assert extra == [], extra
    print(f"ok: {lab.iopsd_binary} needs nothing beyond the base image")


def main():
    require_tool("qemu-system-x86_64")
    test_lab_boots_the_shared_image()
    test_declaration()
    test_burst_is_qemus_bucket()
    test_command_line()
    test_iopsd_config_names()
    test_dm_delay_in_ticks()
    with tempfile.TemporaryDirectory(prefix="lab-vm-spec-", dir="/var/tmp") as tmp:
        test_qemu_takes_the_drives(tmp)


if __name__ == "__main__":
    main()
