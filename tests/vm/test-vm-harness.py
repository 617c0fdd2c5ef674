#!/usr/bin/env python3
"""The VM harness itself: the guest boots to a running systemd, commands
come back with their status, output (long, binary-safe) and timeouts, files
go in and out, volumes appear with their serials and their hypervisor caps,
QMP answers, the forwarded port is on the host's loopback only, and
teardown leaves no QEMU process and no file behind."""
import hashlib
import os
import socket
import sys
import time

# the QEMU harness is the VM lab's (contrib/lab/iopsdvm.py), shared with it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "contrib", "lab"))
from iopsdvm import VM, Disk, Image, VMError  # noqa: E402


def check(what, cond, detail=""):
    if not cond:
        raise AssertionError(f"{what}: {detail}")
    print(f"ok: {what}", flush=True)


def host_listeners(port):
    """Local addresses listening on `port` on the host (from /proc/net/tcp*)."""
    found = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(f) as fh:
            next(fh)
            for line in fh:
                local, state = line.split()[1], line.split()[3]
                addr, p = local.split(":")
                if state == "0A" and int(p, 16) == port:
                    found.append(addr)
    return found


def main():
    t0 = time.monotonic()
    image = Image.ensure()
    print(f"image: {image.dir} (kernel {image.info['kernel']}, built in {image.info['build_seconds']} s)")
    disks = [Disk("capped", "128M", bus="virtio", serial="vol0aaaa", throttle={"iops-total": 150}),
             Disk("nvme", "64M", bus="nvme", serial="vol0bbbb")]
    vm = VM(image, disks=disks)
    with vm:
        print(f"boot: agent after {vm.agent_seconds:.1f} s, systemd done after {vm.boot_seconds:.1f} s")
        check("systemd finished booting", vm.system_state == "running", vm.system_state)
        check("PID 1 is systemd", vm.sh("readlink /proc/1/exe") == "/usr/lib/systemd/systemd")
        uname = vm.sh("uname -r")
        check("the image's kernel runs", uname == image.info["kernel"], uname)

        r = vm.run("echo out; echo err >&2; exit 3", check=False)
        check("exit status, stdout and stderr apart", (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n"),
              repr(r.describe()))
        r = vm.run(["printf", "%s|", "a b", "$HOME", "'"])
        check("argv is passed unchanged", r.stdout == "a b|$HOME|'|", r.stdout)
        r = vm.run("cat", input="line one\nline two\n")
        check("stdin", r.stdout == "line one\nline two\n", r.stdout)

        r = vm.run("head -c 6000000 /dev/urandom | base64 -w 76 | tee /tmp/big | sha256sum; wc -c < /tmp/big")
        digest, size = r.stdout.split()[0], int(r.stdout.split()[-1])
        big = vm.run("cat /tmp/big").stdout
        check("8 MB of output, complete", len(big) == size and hashlib.sha256(big.encode()).hexdigest() == digest,
              f"{len(big)} of {size}")

        t = time.monotonic()
        r = vm.run("sleep 600", timeout=3, check=False)
        took = time.monotonic() - t
        check("a command past its timeout is killed in the guest", r.returncode == 124 and took < 30,
              f"rc {r.returncode} after {took:.1f}s")
        r = vm.run("trap '' TERM; sleep 600", timeout=2, check=False)
        check("... also one that ignores SIGTERM", r.returncode == 137, r.returncode)

        blob = os.urandom(3 << 20)
        vm.write_file("/root/blob", blob, 0o600)
        check("write_file", vm.sh("sha256sum /root/blob").split()[0] == hashlib.sha256(blob).hexdigest()
              and vm.sh("stat -c %a /root/blob") == "600")
        check("read_file", vm.read_file("/root/blob") == blob)

        capped, nvme = vm.find_disk("vol0aaaa"), vm.find_disk("vol0bbbb")
        check("volumes by serial", capped and capped.startswith("/dev/vd") and nvme == "/dev/nvme0n1",
              f"{capped} {nvme}")
        r = vm.run(f"fio --name=cap --filename={capped} --direct=1 --rw=randread --bs=4k --iodepth=8 "
                   "--ioengine=libaio --runtime=4 --time_based --output-format=terse --terse-version=3",
                   timeout=120)
        iops = float(r.stdout.split(";")[7])
        check("the hypervisor caps the volume (iops-total=150)", 100 < iops <= 165, f"{iops:.0f} IOPS")

        blocks = {b["device"]: b for b in vm.qmp.execute("query-block")}
        check("QMP query-block", "d-capped" in blocks and "d-nvme" in blocks, sorted(blocks))
        vm.set_throttle("capped")  # every cap 0: off
        r = vm.run(f"fio --name=cap --filename={capped} --direct=1 --rw=randread --bs=4k --iodepth=8 "
                   "--ioengine=libaio --runtime=3 --time_based --output-format=terse --terse-version=3",
                   timeout=120)
        lifted = float(r.stdout.split(";")[7])
        check("QMP block_set_io_throttle lifts the cap live", lifted > 2 * iops, f"{lifted:.0f} IOPS")

        vm.run("systemd-run --unit=echo9477 systemd-socket-activate -l 0.0.0.0:9477 -a --inetd "
               "/bin/echo from-the-guest")
        vm.wait_until("ss -Hltn 'sport = :9477' | grep -q LISTEN", timeout=30, what="the guest's listener")
        with socket.create_connection(("127.0.0.1", vm.host_port()), timeout=20) as s:
            s.settimeout(20)
            got = s.recv(100)
        check("the guest's 9477 through the host's forwarded port", got == b"from-the-guest\n", got)
        addrs = host_listeners(vm.host_port())
        check("the forwarded port listens on 127.0.0.1 only", addrs == ["0100007F"], addrs)

        pid, vmdir = vm.pid, vm.dir
    check("teardown: QEMU is gone", not os.path.exists(f"/proc/{pid}"), pid)
    check("teardown: its directory is gone", not os.path.exists(vmdir), vmdir)
    try:
        vm.run("true")
        raise AssertionError("a command ran after teardown")
    except VMError:
        pass
    print(f"ok: vm-harness in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
