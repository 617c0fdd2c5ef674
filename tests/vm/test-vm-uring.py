#!/usr/bin/env python3
"""io_uring under the shipped unit, under real systemd: in the unit's sandbox
(SystemCallFilter=@system-service minus its exclusions, NoNewPrivileges,
User=iopsd, DevicePolicy=closed ...) an io_uring probe and a libaio probe on
a raw volume both run and succeed, with a seccomp filter in force. With a
drop-in that also refuses io_uring's system calls, the io_uring probe fails
at every run with the seccomp reason while the libaio probe keeps running,
and iopsd --check-config in that sandbox says io_uring is unavailable (and
available in the shipped one)."""
import json
import os
import sys
import time

# the QEMU harness is the VM lab's (contrib/lab/iopsdvm.py), shared with it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "contrib", "lab"))
from iopsdvm import VM, Disk, Image  # noqa: E402

BUILD = os.environ.get("BUILDDIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SRC = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
IOPSD = os.environ.get("IOPSD", os.path.join(BUILD, "daemon", "iopsd"))
NO_URING = "SystemCallFilter=~io_uring_setup io_uring_enter io_uring_register\n"


def check(what, cond, detail=""):
    if not cond:
        raise AssertionError(f"{what}: {detail}")
    print(f"ok: {what}", flush=True)


def unit_text():
    """The unit as the Debian package installs it (/usr/sbin, /etc)."""
    with open(os.path.join(SRC, "systemd", "iopsd.service.in")) as f:
        return f.read().replace("@sbindir@", "/usr/sbin").replace("@sysconfdir@", "/etc")


def check_config_in(vm, text, extra=""):
    """iopsd --check-config in the unit's system call sandbox (its
    SystemCallFilter=, NoNewPrivileges=, User= ... lines, plus `extra`), as
    a oneshot unit (the guest has no D-Bus for systemd-run). Returns
    (stdout, stderr)."""
    keys = ("SystemCallFilter", "SystemCallErrorNumber", "SystemCallArchitectures", "NoNewPrivileges",
            "User", "Group", "SupplementaryGroups")
    lines = [line for line in text.splitlines() if line.partition("=")[0] in keys]
    unit = ("[Service]\nType=oneshot\nExecStart=/usr/sbin/iopsd --check-config --config /etc/iopsd/iopsd.conf\n"
            "StandardOutput=file:/run/iopsd-check.out\nStandardError=file:/run/iopsd-check.err\n"
            + "\n".join(lines) + "\n" + extra)
    vm.write_file("/etc/systemd/system/iopsd-check.service", unit.encode(), 0o644)
    vm.run("rm -f /run/iopsd-check.out /run/iopsd-check.err && systemctl daemon-reload && "
           "systemctl start iopsd-check.service")
    return vm.read_file("/run/iopsd-check.out").decode(), vm.read_file("/run/iopsd-check.err").decode()


def wait_runs(vm, timeout=180):
    """Until both probes have run at least twice; their states."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        r = vm.run("curl -sf http://127.0.0.1:9477/api/v1/probes", check=False)
        if r.returncode == 0:
            last = {p["name"]: p for p in json.loads(r.stdout)["probes"]}
            if all(last[n]["runs_total"] >= 2 for n in ("uring", "aio")):
                return last
        time.sleep(2)
    raise AssertionError(f"the probes did not run within {timeout} s: {last}")


def main():
    t0 = time.monotonic()
    text = unit_text()
    with VM(Image.ensure(), disks=[Disk("raw", "256M", bus="virtio", serial="vol0uring")]) as vm:
        dev = vm.find_disk("vol0uring")
        vm.copy_in(IOPSD, "/usr/sbin/iopsd")
        vm.run("chmod 755 /usr/sbin/iopsd && mkdir -p /etc/iopsd /usr/lib/sysusers.d")
        vm.write_file("/etc/systemd/system/iopsd.service", text.encode(), 0o644)
        vm.copy_in(os.path.join(SRC, "systemd", "iopsd.socket"), "/etc/systemd/system/iopsd.socket")
        vm.copy_in(os.path.join(SRC, "systemd", "iopsd.sysusers"), "/usr/lib/sysusers.d/iopsd.conf")
        conf = "".join(f"[{name}]\nfilename={dev}\nrw=randread\nbs=4k\niodepth=8\nioengine={engine}\n"
                       "runtime=500ms\ninterval=2s\n" for name, engine in (("uring", "io_uring"), ("aio", "libaio")))
        vm.write_file("/etc/iopsd/iopsd.conf", conf.encode(), 0o644)
        vm.run(f"dd if=/dev/urandom of={dev} bs=1M count=256 oflag=direct status=none")
        vm.run("systemd-sysusers && systemctl daemon-reload && systemctl start iopsd.socket iopsd.service")

        state = wait_runs(vm)
        for name in ("uring", "aio"):
            last = state[name]["last_run"]
            check(f"[{name}] runs under the shipped unit", last and last["success"], last)
        pid = vm.sh("systemctl show -p MainPID --value iopsd")
        seccomp = vm.sh(f"grep ^Seccomp: /proc/{pid}/status").split()[1]
        check("the daemon runs with a seccomp filter", seccomp == "2", seccomp)
        check("io_uring reads reached the volume", state["uring"]["totals"]["read"]["ops"] > 100, state["uring"])
        out, _ = check_config_in(vm, text)
        check("--check-config in the shipped sandbox: io_uring available", "io_uring: available" in out, out)

        # the same unit with io_uring refused, as a stricter site policy would
        vm.run("mkdir -p /etc/systemd/system/iopsd.service.d")
        vm.write_file("/etc/systemd/system/iopsd.service.d/no-uring.conf", ("[Service]\n" + NO_URING).encode(),
                      0o644)
        r = vm.run("systemctl daemon-reload && systemctl restart iopsd.service", check=False)
        check("iopsd starts with io_uring refused", r.returncode == 0,
              vm.run("journalctl -b -u iopsd.service --no-pager | tail -30", check=False).stdout)
        state = wait_runs(vm)
        uring, aio = state["uring"], state["aio"]
        check("io_uring refused: the io_uring probe fails at every run",
              uring["failures_total"] == uring["runs_total"] and not uring["last_run"]["success"], uring)
        msg = uring["last_run"]["error"]
        check("... with the reason", "io_uring is not available" in msg and "seccomp" in msg, msg)
        check("... and did no I/O (never another engine)", uring["totals"]["read"]["ops"] == 0, uring["totals"])
        check("the libaio probe keeps running", aio["last_run"]["success"] and aio["failures_total"] == 0, aio)
        out, err = check_config_in(vm, text, NO_URING)
        check("--check-config in that sandbox: io_uring unavailable, the probe warned about",
              "io_uring: unavailable" in out and "seccomp" in out and "[uring]" in err, (out, err))
    print(f"ok: vm-uring in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
