#!/usr/bin/env python3
"""Least privilege: the real daemon as an unprivileged user (nobody) with
the disk group and no capabilities, as the systemd unit runs it. A raw
read probe works through the disk group (and fails with eacces without
it); a write probe works in a directory the user owns; a write probe into
a directory it does not own fails with eacces and nothing is created, a
.iopsd that belongs to someone else is refused, and a directory that stays
root's works once its .iopsd is iopsd's (the documented setup). The unit
grants exactly
that: its own user, SupplementaryGroups=disk, read-only device access, no
capabilities."""
import os
import re
import stat
import sys

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

NOBODY = 65534
DISK_GID = None

# A run stops after number_ios (a few ms of I/O) but its timeout is 2x
# runtime, 2 s: a run held up by a loaded machine does not time out (the
# exact failure-line counts below would count its line)
CONFIG = """[global]
sample_interval=1s
state_directory={state}
bs=4k
size=4m
runtime=1s
number_ios=40
interval=1s

[raw]
rw=randread
filename={raw}

[own]
rw=randwrite
directory={mnt}/own

[notown]
rw=randwrite
directory={mnt}/notown

[planted]
rw=randread
directory={mnt}/shared

[prepared]
rw=randwrite
directory={mnt}/prepared
"""


def check_unit():
    """The unit runs iopsd with exactly these privileges."""
    with open(os.path.join(t.SRCDIR, "systemd", "iopsd.service.in")) as f:
        unit = f.read()
    keys = {}
    for line in unit.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line)
        if m:
            keys.setdefault(m.group(1), []).append(m.group(2).strip())
    assert keys.get("User") == ["iopsd"], keys.get("User")
    assert keys.get("SupplementaryGroups") == ["disk"], keys.get("SupplementaryGroups")
    assert keys.get("NoNewPrivileges") == ["yes"]
    assert keys.get("CapabilityBoundingSet") == [""], "the unit grants capabilities"
    assert keys.get("AmbientCapabilities") == [""], "the unit grants ambient capabilities"
    assert keys.get("ProtectSystem") == ["strict"], "probe directories must be listed in ReadWritePaths"
    assert keys.get("DevicePolicy") == ["closed"]
    allows = keys.get("DeviceAllow", [])
    assert allows and all(a.split()[-1] == "r" for a in allows), f"a device is writable: {allows}"
    with open(os.path.join(t.SRCDIR, "systemd", "iopsd.sysusers")) as f:
        assert re.search(r"^m iopsd disk$", f.read(), re.M), "sysusers does not put iopsd in the disk group"


def status_ids(pid):
    with open(f"/proc/{pid}/status") as f:
        text = f.read()

    def field(name):
        return re.search(rf"^{name}:\s*(.*)$", text, re.M).group(1).split()

    return field("Uid"), field("Gid"), field("Groups"), field("CapEff")[0], field("CapPrm")[0]


def start_as_nobody(conf_text, tmp, groups):
    d = t.Daemon(conf_text, workdir=tmp)
    os.chmod(d.config, 0o644)
    d.wrapper = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                 f"--groups={','.join(str(g) for g in groups)}" if groups else "--clear-groups",
                 "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    d.start()
    return d


def main():
    global DISK_GID
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "setpriv")
    import grp
    try:
        DISK_GID = grp.getgrnam("disk").gr_gid
    except KeyError:
        t.skip("no disk group")
    check_unit()

    fs = t.Ext4Mount("reliability-privilege-fs", 64)
    raw = t.LoopDevice("reliability-privilege-raw", 8)
    d = None
    try:
        t.run("dd", "if=/dev/urandom", f"of={raw.path}", "bs=1M", "count=4", "oflag=direct")
        mnt = fs.mountpoint
        os.chmod(fs.loop.dir, 0o755)
        os.chmod(raw.dir, 0o755)
        tree = t.UserTree(mnt, seed=11, n_files=10)
        # the device node as udev makes it: root:disk 0660 (here /dev has
        # no udev, so a node of our own in a directory of the test)
        node = os.path.join(raw.dir, "raw-node")
        os.mknod(node, 0o660 | stat.S_IFBLK, os.stat(raw.path).st_rdev)
        os.chown(node, 0, DISK_GID)
        os.mkdir(os.path.join(mnt, "own"), 0o755)
        os.chown(os.path.join(mnt, "own"), NOBODY, NOBODY)
        os.mkdir(os.path.join(mnt, "notown"), 0o755)
        os.mkdir(os.path.join(mnt, "shared"), 0o1777)
        # root's .iopsd, planted before iopsd ran: readable, not iopsd's
        os.mkdir(os.path.join(mnt, "shared", ".iopsd"), 0o755)
        # the documented setup: DIR stays root's, DIR/.iopsd is iopsd's
        os.mkdir(os.path.join(mnt, "prepared"), 0o755)
        os.mkdir(os.path.join(mnt, "prepared", ".iopsd"), 0o700)
        os.chown(os.path.join(mnt, "prepared", ".iopsd"), NOBODY, NOBODY)
        tree.snapshot = tree._scan()
        tmp = os.path.join(fs.loop.dir, "daemon")
        os.mkdir(tmp, 0o755)
        state = os.path.join(tmp, "state")
        os.mkdir(state, 0o750)
        os.chown(state, NOBODY, NOBODY)
        conf = CONFIG.format(state=state, raw=node, mnt=mnt)

        d = start_as_nobody(conf, tmp, [DISK_GID])
        uid, gid, groups, capeff, capprm = status_ids(d.proc.pid)
        assert set(uid) == {str(NOBODY)} and set(gid) == {str(NOBODY)}, (uid, gid)
        assert groups == [str(DISK_GID)], groups
        assert int(capeff, 16) == 0 and int(capprm, 16) == 0, (capeff, capprm)

        raw_p, own, notown, planted = (t.ProbeWatch(d, n) for n in ("raw", "own", "notown", "planted"))
        raw_p.expect_recovered(timeout=60)      # the disk group reads the raw device
        own.expect_recovered(timeout=60)        # its own directory
        t.ProbeWatch(d, "prepared").expect_recovered(timeout=60)  # only .iopsd is its own
        assert notown.expect_failing("eacces", mark=0) == 1, d.read_log()
        assert "Permission denied" in notown.last_failure(), notown.last_failure()
        assert planted.expect_failing("eacces", mark=0) == 1, d.read_log()
        assert "belongs to uid 0" in planted.last_failure(), planted.last_failure()
        # what it wrote is its own, where it may write
        st = os.stat(os.path.join(mnt, "own", ".iopsd", "own.dat"))
        assert st.st_uid == NOBODY and stat.S_IMODE(st.st_mode) == 0o600, st
        assert os.listdir(os.path.join(mnt, "notown")) == [], "something was created in notown"
        assert os.listdir(os.path.join(mnt, "shared", ".iopsd")) == [], "root's .iopsd was written"
        # the condition clears (the directory is handed over): it recovers
        os.chown(os.path.join(mnt, "notown"), NOBODY, NOBODY)
        notown.expect_recovered()
        assert "succeeds again" in d.read_log()
        assert d.proc.poll() is None
        rc, _ = d.stop()
        assert rc == 0, rc
        d.logf.close()

        # without the disk group the raw device is out of reach
        d = start_as_nobody(conf, tmp, [])
        raw_p = t.ProbeWatch(d, "raw")
        assert raw_p.expect_failing("eacces", mark=0) == 1, d.read_log()
        rc, _ = d.stop()
        assert rc == 0, rc
        d = None
        n = tree.verify({"own/.iopsd", "prepared/.iopsd", "notown/.iopsd"})
        print(f"ok: runs as uid {NOBODY} with groups {groups} and no capabilities; {n} user entries unchanged")
    except BaseException:
        if d:
            print(d.read_log()[-3000:])
        raise
    finally:
        if d:
            d.stop()
            d.logf.close()
        fs.cleanup()
        raw.cleanup()


if __name__ == "__main__":
    main()
