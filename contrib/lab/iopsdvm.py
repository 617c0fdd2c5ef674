"""A Debian 12 guest with real systemd under QEMU, for tests, benchmarks and
users: build (and cache) the image, boot it with extra volumes, run commands
in it, talk QMP to its hypervisor, and tear everything down.

    from iopsdvm import Image, VM, Disk
    image = Image.ensure()
    with VM(image, disks=[Disk("data", "256M", bus="nvme", serial="vol0aaaa",
                               throttle={"iops-total": 600})]) as vm:
        vm.install_deb("iopsd_0.1.0_amd64.deb")
        print(vm.run("systemctl is-active iopsd").stdout)
        vm.qmp.execute("block_set_io_throttle", {...})

The API is described in tests/vm/README.md. Commands run through the QEMU
guest agent on a virtio-serial port (guest-exec), which needs no network
and no login; the guest's port 9477 is forwarded to a free port on the
host's 127.0.0.1 only, and the guest has no other way out (restrict=on)."""
import base64
import contextlib
import ctypes
import fcntl
import hashlib
import http.client
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SUITE = "bookworm"
CACHE_DIR = os.environ.get("IOPSD_VM_CACHE", "/var/cache/iopsd-vm")
TMP_DIR = os.environ.get("IOPSD_VM_TMPDIR", "/var/tmp")
ROOT_SIZE = "2G"
GUEST_ADDR = "10.0.2.15"   # what QEMU's user networking hands the guest
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# What the guest has: systemd as PID 1, the kernel and its initramfs, the
# volume tools (md, dm, NVMe, fio), the agent the harness talks to, and
# iopsd's runtime libraries, so that its .deb installs without a network.
BASE_PACKAGES = [
    "systemd-sysv", "udev", "kmod", "linux-image-amd64", "initramfs-tools",
    "qemu-guest-agent", "procps", "iproute2", "curl", "e2fsprogs",
    "mdadm", "dmsetup", "nvme-cli", "fio",
    # iopsd's runtime libraries (meson.build's dependencies)
    "libmicrohttpd12", "libjansson4", "libsystemd0", "libinih1", "libaio1", "liburing2",
    "libcrypt1", "libgnutls30", "zlib1g", "libyaml-0-2",
]

# mmdebstrap's customize hook, run with the root directory as $1.
CUSTOMIZE_HOOK = r"""#!/bin/sh
set -eu
root=$1
echo iopsd-vm > "$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tiopsd-vm\n::1\tlocalhost ip6-localhost\n' > "$root/etc/hosts"
printf 'LABEL=root / ext4 rw,errors=remount-ro 0 1\n' > "$root/etc/fstab"
# Every boot starts from the same image: a fixed machine id keeps systemd
# from treating each one as a first boot (which applies presets).
echo 6c2f1b0e3f0a4c8d9a7e5b4c3d2e1f00 > "$root/etc/machine-id"
# The kernel console is on ttyS0; a getty opening it would hang up every
# other writer. Nobody logs in: the guest agent is the way in.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
chroot "$root" systemctl mask getty.target getty-static.service e2scrub_reap.service nvmf-autoconnect.service
# A small initramfs: only what mounts the root disk (virtio, ext4); every
# other module (nvme, md, dm-*, null_blk) loads from the root filesystem.
# Unpacking MODULES=most's 37 MB took several seconds of each TCG boot.
sed -i 's/^MODULES=.*/MODULES=list/' "$root/etc/initramfs-tools/initramfs.conf"
printf 'virtio_pci\nvirtio_blk\next4\n' >> "$root/etc/initramfs-tools/modules"
chroot "$root" update-initramfs -u -k all
# User networking: a static address (no DHCP wait), no IPv6 autoconf.
mkdir -p "$root/etc/systemd/network"
cat > "$root/etc/systemd/network/10-user.network" <<EOF
[Match]
Type=ether

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF
chroot "$root" systemctl enable systemd-networkd.service
# md arrays are assembled by the tests, not at boot
chroot "$root" systemctl mask mdmonitor.service mdcheck_start.timer mdcheck_continue.timer mdmonitor-oneshot.timer 2>/dev/null || true
"""
IMAGE_FORMAT = 1  # bump when the image's layout (not its contents) changes


class VMError(Exception):
    pass


def log(msg):
    print(f"[iopsd-vm] {msg}", file=sys.stderr, flush=True)


def deb_depends(path):
    """The package names a .deb depends on (first alternative of each),
    for Image.ensure(extra_packages=...)."""
    out = subprocess.run(["dpkg-deb", "-f", path, "Depends", "Pre-Depends"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    names = []
    for line in out.splitlines():
        line = line.split(":", 1)[-1] if line[:1].isupper() and ":" in line else line
        for dep in line.split(","):
            name = dep.split("|")[0].split("(")[0].split(":")[0].strip()
            if name:
                names.append(name)
    return names


# --- image -------------------------------------------------------------------

class Image:
    """A cached root filesystem image (ext4, LABEL=root) with its kernel and
    initrd. Never written to: each boot runs on a qcow2 overlay of it."""

    def __init__(self, directory):
        self.dir = directory
        self.root = os.path.join(directory, "root.img")
        self.kernel = os.path.join(directory, "vmlinuz")
        self.initrd = os.path.join(directory, "initrd.img")
        with open(os.path.join(directory, "image.json")) as f:
            self.info = json.load(f)

    @staticmethod
    def key(packages):
        h = hashlib.sha256()
        h.update(f"format {IMAGE_FORMAT}\nsuite {SUITE}\nsize {ROOT_SIZE}\n".encode())
        h.update("\n".join(packages).encode() + b"\n")
        h.update(CUSTOMIZE_HOOK.encode())
        return h.hexdigest()[:16]

    @classmethod
    def ensure(cls, extra_packages=(), cache_dir=None, rebuild=False):
        """The image for BASE_PACKAGES + extra_packages, built if the cache
        has none (about 70 s on a quiet machine). Concurrent callers wait for
        one build (flock on the cache directory)."""
        cache_dir = cache_dir or CACHE_DIR
        packages = sorted(set(BASE_PACKAGES) | set(extra_packages))
        key = cls.key(packages)
        target = os.path.join(cache_dir, key)
        os.makedirs(cache_dir, exist_ok=True)
        with open(os.path.join(cache_dir, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if rebuild and os.path.isdir(target):
                shutil.rmtree(target)
            if not os.path.exists(os.path.join(target, "image.json")):
                cls._build(target, packages)
                cls._prune(cache_dir, keep=key)
            os.utime(target)
        return cls(target)

    @staticmethod
    def _build(target, packages):
        for tool in ("mmdebstrap", "mkfs.ext4", "qemu-img", "qemu-system-x86_64"):
            if not shutil.which(tool):
                raise VMError(f"{tool} not found: run contrib/install-deps.sh --tests")
        work = tempfile.mkdtemp(prefix="build-", dir=os.path.dirname(target))
        try:
            rootdir = os.path.join(work, "root")
            hook = os.path.join(work, "customize.sh")
            with open(hook, "w") as f:
                f.write(CUSTOMIZE_HOOK)
            os.chmod(hook, 0o755)
            t0 = time.monotonic()
            log(f"building the {SUITE} image ({len(packages)} packages) in {target}")
            p = subprocess.run(["mmdebstrap", "--variant=minbase", "--mode=root",
                                "--include=" + ",".join(packages), f"--customize-hook={hook}",
                                SUITE, rootdir],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                raise VMError(f"mmdebstrap failed ({p.returncode}):\n{p.stdout[-4000:]}")
            t_debootstrap = time.monotonic() - t0
            boot = os.path.join(rootdir, "boot")
            kernels = sorted(n for n in os.listdir(boot) if n.startswith("vmlinuz-"))
            if not kernels:
                raise VMError("the image has no kernel in /boot")
            version = kernels[-1][len("vmlinuz-"):]
            shutil.copy(os.path.join(boot, f"vmlinuz-{version}"), os.path.join(work, "vmlinuz"))
            shutil.copy(os.path.join(boot, f"initrd.img-{version}"), os.path.join(work, "initrd.img"))
            subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", rootdir,
                            os.path.join(work, "root.img"), ROOT_SIZE], check=True)
            shutil.rmtree(rootdir)
            info = {"suite": SUITE, "kernel": version, "packages": packages,
                    "built": time.time(), "build_seconds": round(time.monotonic() - t0, 1),
                    "mmdebstrap_seconds": round(t_debootstrap, 1)}
            with open(os.path.join(work, "image.json"), "w") as f:
                json.dump(info, f, indent=1)
            os.chmod(work, 0o755)
            os.rename(work, target)
            log(f"image built in {info['build_seconds']} s (mmdebstrap {info['mmdebstrap_seconds']} s)")
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise

    @staticmethod
    def _prune(cache_dir, keep, n_keep=2):
        """Keep the newest n_keep images (each is about 1 GB)."""
        dirs = []
        for name in os.listdir(cache_dir):
            path = os.path.join(cache_dir, name)
            if name.startswith("build-"):
                continue  # another caller's build would hold the lock; stale ones are harmless
            if os.path.isfile(os.path.join(path, "image.json")):
                dirs.append((os.path.getmtime(path), name, path))
        dirs.sort(reverse=True)
        for _, name, path in dirs[n_keep:]:
            if name != keep:
                shutil.rmtree(path, ignore_errors=True)


# --- JSON channels (QMP, guest agent) ------------------------------------------

class _JsonChannel:
    """Newline-delimited JSON over a Unix socket, one request at a time:
    callers on several threads (a lab's control socket, a test's sampler)
    hold .lock around a request and its answer."""

    def __init__(self, path, timeout):
        self.lock = threading.RLock()
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise VMError(f"cannot connect to {path}")
                time.sleep(0.05)
        self.buf = b""

    def send(self, obj, timeout=30, prefix=b""):
        """False when the other end did not take it within timeout (a guest
        agent's port before the agent opened it: QEMU stops reading)."""
        # recv() leaves whatever timeout its deadline needed on the socket
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall(prefix + json.dumps(obj).encode() + b"\n")
        except socket.timeout:
            return False
        return True

    def recv(self, timeout):
        """The next JSON object, or None when nothing complete arrived in
        time. 0xFF bytes (guest-sync-delimited's marker) are dropped: they
        cannot occur in JSON text."""
        deadline = time.monotonic() + timeout
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                line = line.replace(b"\xff", b"").strip()
                if line:
                    return json.loads(line)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                return None
            if not data:
                raise VMError("channel closed by QEMU")
            self.buf += data

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()


class QMPError(VMError):
    def __init__(self, cmd, error):
        super().__init__(f"QMP {cmd}: {error.get('class')}: {error.get('desc')}")
        self.error = error


class QMP:
    """The hypervisor's monitor: execute(cmd, args) returns the "return"
    value or raises QMPError; asynchronous events are kept in .events."""

    def __init__(self, path, timeout=30):
        self.ch = _JsonChannel(path, timeout)
        self.events = []
        self.next_id = 1
        greeting = self.ch.recv(timeout)
        if not greeting or "QMP" not in greeting:
            raise VMError(f"no QMP greeting: {greeting!r}")
        self.execute("qmp_capabilities")

    def execute(self, cmd, args=None, timeout=60, **kwargs):
        args = dict(args or {}, **kwargs)
        with self.ch.lock:
            rid = self.next_id
            self.next_id += 1
            req = {"execute": cmd, "id": rid}
            if args:
                req["arguments"] = args
            if not self.ch.send(req, timeout):
                raise VMError(f"QMP {cmd}: not taken within {timeout}s")
            deadline = time.monotonic() + timeout
            while True:
                msg = self.ch.recv(max(0.0, deadline - time.monotonic()))
                if msg is None:
                    raise VMError(f"QMP {cmd}: no answer within {timeout}s")
                if "event" in msg:
                    self.events.append(msg)
                elif msg.get("id") == rid:
                    if "error" in msg:
                        raise QMPError(cmd, msg["error"])
                    return msg.get("return")

    def wait_event(self, name, timeout=30, match=None):
        """The first event `name` (whose "data" includes `match`), also one
        that arrived before this call; it is removed from .events."""
        deadline = time.monotonic() + timeout
        while True:
            with self.ch.lock:
                for i, ev in enumerate(self.events):
                    data = ev.get("data", {})
                    if ev["event"] == name and all(data.get(k) == v for k, v in (match or {}).items()):
                        return self.events.pop(i)
                # short reads, so that other threads' requests get their turn
                msg = self.ch.recv(min(0.2, max(0.0, deadline - time.monotonic())))
                if msg is not None and "event" in msg:
                    self.events.append(msg)
            if msg is None and time.monotonic() > deadline:
                raise VMError(f"no QMP event {name} within {timeout}s")

    def close(self):
        self.ch.close()


class Result:
    """What a guest command did: returncode, stdout and stderr (text)."""

    def __init__(self, cmd, returncode, stdout, stderr, seconds, truncated=False):
        self.cmd, self.returncode, self.stdout, self.stderr = cmd, returncode, stdout, stderr
        self.seconds, self.truncated = seconds, truncated

    @property
    def ok(self):
        return self.returncode == 0

    def __repr__(self):
        return f"Result(rc={self.returncode}, {self.seconds:.1f}s, cmd={self.cmd!r})"

    def describe(self):
        return (f"guest command {self.cmd!r} exited {self.returncode} after {self.seconds:.1f}s\n"
                f"--- stdout\n{self.stdout[-6000:]}--- stderr\n{self.stderr[-6000:]}")


class GuestCommandError(VMError):
    def __init__(self, result):
        super().__init__(result.describe())
        self.result = result


class GuestAgent:
    """The QEMU guest agent (qemu-ga) on the virtio-serial port
    org.qemu.guest_agent.0."""

    def __init__(self, path):
        self.ch = _JsonChannel(path, 30)

    def sync(self, timeout):
        """guest-sync-delimited until the agent answers with our id (it is not
        running until the guest has booted that far); stale answers of an
        earlier timed-out request are discarded."""
        sync_id = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
        with self.ch.lock:
            # 0xFF first: it resets the agent's JSON parser, in case an
            # earlier request went in only in part
            if not self.ch.send({"execute": "guest-sync-delimited", "arguments": {"id": sync_id}}, timeout,
                                prefix=b"\xff"):
                return False
            deadline = time.monotonic() + timeout
            while True:
                msg = self.ch.recv(max(0.0, deadline - time.monotonic()))
                if msg is None:
                    return False
                if msg.get("return") == sync_id:
                    return True

    def execute(self, cmd, args=None, timeout=60):
        req = {"execute": cmd}
        if args:
            req["arguments"] = args
        with self.ch.lock:
            if not self.ch.send(req, timeout):
                raise VMError(f"guest agent: {cmd} not taken within {timeout}s")
            msg = self.ch.recv(timeout)
            if msg is None:
                # a late answer would be taken for the next request's
                self.sync(10)
                raise VMError(f"guest agent: no answer to {cmd} within {timeout}s")
        if "error" in msg:
            raise VMError(f"guest agent {cmd}: {msg['error'].get('desc')}")
        return msg.get("return")

    def close(self):
        self.ch.close()


# --- volumes -------------------------------------------------------------------

class Disk:
    """A volume for the guest: a sparse raw file in the VM's directory (or
    `path`, an existing file or device, left alone at teardown) behind a
    virtio-blk, NVMe or SCSI device. `throttle` takes QEMU's throttling.*
    keys without the prefix, e.g. {"iops-total": 600, "group": "instance"};
    the cap is enforced by the hypervisor, below the guest.
    In the guest: /dev/disk/by-id/virtio-SERIAL (virtio, 20 characters at
    most), nvme-QEMU_NVMe_Ctrl_SERIAL (nvme), or vm.find_disk(serial)."""

    def __init__(self, name, size="64M", bus="virtio", serial=None, throttle=None,
                 cache="none", path=None, fmt="raw", readonly=False, device_opts=None):
        if bus not in ("virtio", "nvme", "scsi"):
            raise ValueError(f"bus {bus!r}: virtio, nvme or scsi")
        self.name, self.size, self.bus, self.cache = name, size, bus, cache
        self.serial = serial or f"iopsd{name}"[:20]
        self.throttle = dict(throttle or {})
        self.path, self.fmt, self.readonly = path, fmt, readonly
        self.device_opts = dict(device_opts or {})
        self.owned = path is None

    @property
    def drive_id(self):
        return f"d-{self.name}"

    def prepare(self, vmdir):
        if self.owned:
            self.path = os.path.join(vmdir, f"disk-{self.name}.img")
            subprocess.run(["qemu-img", "create", "-q", "-f", self.fmt, self.path, str(self.size)], check=True)

    def drive_arg(self):
        opts = [f"file={self.path}", "if=none", f"id={self.drive_id}", f"format={self.fmt}",
                f"cache={self.cache}", "aio=threads"]
        if self.readonly:
            opts.append("readonly=on")
        opts += [f"throttling.{k}={v}" for k, v in self.throttle.items()]
        return ",".join(opts)

    def device_arg(self):
        model = {"virtio": "virtio-blk-pci", "nvme": "nvme", "scsi": "scsi-hd"}[self.bus]
        opts = [model, f"drive={self.drive_id}", f"id=dev-{self.name}", f"serial={self.serial}"]
        if self.bus == "scsi":
            opts.append("bus=scsi0.0")
        opts += [f"{k}={v}" for k, v in self.device_opts.items()]
        return ",".join(opts)

    def args(self):
        return ["-drive", self.drive_arg(), "-device", self.device_arg()]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    # QEMU goes when the test that started it goes, even on SIGKILL
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# --- the guest -----------------------------------------------------------------

class VM:
    """One boot of the image. Use as a context manager: __enter__ boots and
    waits until the agent answers and systemd finished booting; __exit__
    quits QEMU (SIGKILL by PID if it does not go) and removes the overlay,
    the disks it created, the sockets and logs (the console log is copied
    to `console_copy` first when given).

    ports: guest TCP ports forwarded to free ports on the host's 127.0.0.1
    (vm.host_port(guest_port)), or to host_ports[guest_port]; extra_args: more QEMU arguments (devices,
    -object, ...), after the built-in ones."""

    def __init__(self, image, disks=(), extra_args=(), ports=(9477,), memory="1536M", smp=2,
                 accel=None, machine="pc", name="iopsd-vm", boot_timeout=None, console_copy=None,
                 kernel_args="", host_ports=None):
        self.image = image
        self.disks = list(disks)
        self.extra_args = list(extra_args)
        self.guest_ports = list(ports)
        self.fixed_ports = dict(host_ports or {})
        self.memory, self.smp, self.machine, self.name = memory, smp, machine, name
        self.accel = accel or os.environ.get("IOPSD_VM_ACCEL", "tcg")
        self.boot_timeout = boot_timeout or float(os.environ.get("IOPSD_VM_BOOT_TIMEOUT", "420"))
        self.console_copy = console_copy
        self.kernel_args = kernel_args
        self.dir = None
        self.proc = None
        self.qmp = None
        self.agent = None
        self.ports = {}
        self.boot_seconds = None
        self.agent_seconds = None
        self.system_state = None
        self._old_sigterm = None

    # lifecycle

    def __enter__(self):
        if threading_main():
            self._old_sigterm = signal.getsignal(signal.SIGTERM)
            if self._old_sigterm in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _sigterm_to_exit)
        try:
            self.start()
            self.wait_boot()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
        return False

    def path(self, name):
        """A path in this VM's private directory (removed at teardown), e.g.
        for a volume's backing file to hot-plug with blockdev-add."""
        return os.path.join(self.dir, name)

    def start(self):
        os.makedirs(TMP_DIR, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=f"{self.name}-", dir=TMP_DIR)
        overlay = self.path("root.qcow2")
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", self.image.root, overlay],
                       check=True)
        for d in self.disks:
            d.prepare(self.dir)
        for attempt in range(5):
            self.ports = {g: self.fixed_ports.get(g) or free_port() for g in self.guest_ports}
            self._spawn(overlay)
            try:
                self.qmp = QMP(self.path("qmp.sock"), timeout=30)
                break
            except VMError:
                if self.proc.poll() is None:
                    raise VMError(f"QEMU started but QMP does not answer:\n{self.qemu_log()}")
                # most likely a forwarded port taken between free_port() and bind
                if "hostfwd" not in self.qemu_log() or attempt == 4:
                    raise VMError(f"QEMU exited with {self.proc.returncode}:\n{self.qemu_log()}")
                self.proc = None
        self.agent = GuestAgent(self.path("qga.sock"))

    def _spawn(self, overlay):
        fwd = "".join(f",hostfwd=tcp:127.0.0.1:{h}-:{g}" for g, h in self.ports.items())
        append = ("root=LABEL=root rootwait rw console=ttyS0 panic=-1 "
                  "quiet systemd.show_status=0 " + self.kernel_args)
        cmd = ["qemu-system-x86_64", "-name", f"{self.name},process={self.name}",
               "-machine", self.machine, "-accel", self.accel, "-cpu", "max",
               "-m", str(self.memory), "-smp", str(self.smp),
               "-nodefaults", "-display", "none", "-no-reboot",
               "-kernel", self.image.kernel, "-initrd", self.image.initrd, "-append", append.strip(),
               "-serial", f"file:{self.path('console.log')}",
               "-qmp", f"unix:{self.path('qmp.sock')},server=on,wait=off",
               "-chardev", f"socket,id=qga0,path={self.path('qga.sock')},server=on,wait=off",
               "-device", "virtio-serial-pci,id=vser0",
               "-device", "virtserialport,bus=vser0.0,chardev=qga0,name=org.qemu.guest_agent.0,id=qga-port",
               "-object", "rng-random,id=rng0,filename=/dev/urandom",
               "-device", "virtio-rng-pci,rng=rng0",
               "-netdev", f"user,id=net0,restrict=on{fwd}",
               "-device", "virtio-net-pci,netdev=net0",
               "-drive", f"file={overlay},if=none,id=root,format=qcow2,cache=unsafe,discard=unmap",
               "-device", "virtio-blk-pci,drive=root,serial=root"]
        if any(d.bus == "scsi" for d in self.disks):
            cmd += ["-device", "virtio-scsi-pci,id=scsi0"]
        for d in self.disks:
            cmd += d.args()
        cmd += self.extra_args
        self.cmdline = cmd
        with open(self.path("qemu.log"), "ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent, start_new_session=True)
        self.pid = self.proc.pid

    def wait_boot(self):
        """Wait for the agent, then for `systemctl is-system-running --wait`;
        records agent_seconds, boot_seconds and system_state ("running",
        or "degraded" with the failed units in the console log)."""
        t0 = time.monotonic()
        deadline = t0 + self.boot_timeout
        # Until qemu-ga opens its port, QEMU does not read what is sent to
        # it: wait for the port to open (a QMP event), then sync. Sending
        # syncs blindly every few seconds filled the socket's buffer on a
        # slow boot.
        is_open = False
        while True:
            self._check_alive()
            if time.monotonic() > deadline:
                raise VMError(f"the guest agent did not answer within {self.boot_timeout:.0f}s\n"
                              f"--- console\n{self.console_log()[-4000:]}")
            if not is_open:
                try:
                    self.qmp.wait_event("VSERPORT_CHANGE", timeout=2, match={"id": "qga-port", "open": True})
                    is_open = True
                except VMError:
                    continue
            if self.agent.sync(10):
                break
        self.agent_seconds = time.monotonic() - t0
        left = max(30, deadline - time.monotonic())
        r = self.run("systemctl is-system-running --wait", timeout=left, check=False)
        self.system_state = r.stdout.strip()
        self.boot_seconds = time.monotonic() - t0
        if self.system_state == "degraded":
            failed = self.run("systemctl --failed --no-legend", check=False).stdout
            log(f"guest booted degraded: {failed.strip()}")
        elif self.system_state != "running":
            raise VMError(f"guest did not finish booting: {r.describe()}")

    def _check_alive(self):
        if self.proc.poll() is not None:
            raise VMError(f"QEMU exited with {self.proc.returncode} during boot\n"
                          f"{self.qemu_log()}\n--- console\n{self.console_log()[-4000:]}")

    def close(self):
        if self.agent:
            self.agent.close()
            self.agent = None
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.qmp.execute("quit", timeout=10)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait()
        if self.qmp:
            self.qmp.close()
            self.qmp = None
        if self.dir:
            if self.console_copy:
                with contextlib.suppress(OSError):
                    shutil.copy(self.path("console.log"), self.console_copy)
            for d in self.disks:
                if d.owned:
                    d.path = None
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    # logs

    def _read(self, name):
        try:
            with open(self.path(name), "rb") as f:
                return f.read().decode(errors="replace")
        except (OSError, TypeError):
            return ""

    def console_log(self):
        return self._read("console.log")

    def qemu_log(self):
        return self._read("qemu.log")

    # commands

    def run(self, cmd, timeout=120, check=True, input=None, env=None):
        """Run `cmd` in the guest as root: a string goes to /bin/sh -c, a list
        is exec'd. The guest kills it after `timeout` seconds (exit 124, or
        137 when it ignored SIGTERM for 5 s). Returns a Result; raises
        GuestCommandError when check and it exited non-zero. stdout/stderr
        are complete up to 16 MiB each (qemu-ga's limit; .truncated says).
        A command that leaves a background process holding its stdout or
        stderr open is not finished until that process closes them:
        redirect such processes' output (systemd-run, or >/dev/null 2>&1 &)."""
        if not self.agent:
            raise VMError("the VM is not running")
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        guest_env = {"PATH": GUEST_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb",
                     "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "DEBIAN_FRONTEND": "noninteractive"}
        guest_env.update(env or {})
        wrapped = ["timeout", "--kill-after=5", f"{max(1, int(timeout))}s"] + argv
        args = {"path": "/usr/bin/timeout", "arg": wrapped[1:], "capture-output": True,
                "env": [f"{k}={v}" for k, v in guest_env.items()]}
        if input is not None:
            data = input.encode() if isinstance(input, str) else input
            args["input-data"] = base64.b64encode(data).decode()
        t0 = time.monotonic()
        pid = self.agent.execute("guest-exec", args)["pid"]
        deadline = t0 + timeout + 30
        interval = 0.02
        while True:
            st = self.agent.execute("guest-exec-status", {"pid": pid})
            if st.get("exited"):
                break
            if time.monotonic() > deadline:
                raise VMError(f"guest command {cmd!r} still running {timeout + 30:.0f}s later")
            time.sleep(interval)
            interval = min(0.5, interval * 1.5)
        rc = st.get("exitcode")
        if rc is None:
            rc = 128 + st.get("signal", 0)
        res = Result(cmd, rc, base64.b64decode(st.get("out-data", "")).decode(errors="replace"),
                     base64.b64decode(st.get("err-data", "")).decode(errors="replace"),
                     time.monotonic() - t0, st.get("out-truncated", False) or st.get("err-truncated", False))
        if check and rc != 0:
            raise GuestCommandError(res)
        return res

    def sh(self, cmd, timeout=120):
        """run(cmd, check=True).stdout, stripped."""
        return self.run(cmd, timeout=timeout).stdout.strip()

    def write_file(self, guest_path, data, mode=0o644):
        """Write bytes or text to a guest file (created or truncated)."""
        data = data.encode() if isinstance(data, str) else data
        h = self.agent.execute("guest-file-open", {"path": guest_path, "mode": "w"})
        try:
            chunk = 1 << 20
            for off in range(0, max(1, len(data)), chunk):
                part = data[off:off + chunk]
                if part:
                    self.agent.execute("guest-file-write",
                                       {"handle": h, "buf-b64": base64.b64encode(part).decode()})
        finally:
            self.agent.execute("guest-file-close", {"handle": h})
        self.run(["chmod", f"{mode:o}", guest_path])

    def read_file(self, guest_path):
        """A guest file's bytes."""
        h = self.agent.execute("guest-file-open", {"path": guest_path, "mode": "r"})
        out = []
        try:
            while True:
                r = self.agent.execute("guest-file-read", {"handle": h, "count": 1 << 20})
                out.append(base64.b64decode(r.get("buf-b64", "")))
                if r.get("eof") or not r.get("count"):
                    break
        finally:
            self.agent.execute("guest-file-close", {"handle": h})
        return b"".join(out)

    def copy_in(self, host_path, guest_path, mode=None):
        with open(host_path, "rb") as f:
            data = f.read()
        self.write_file(guest_path, data, mode if mode is not None else os.stat(host_path).st_mode & 0o7777)

    def copy_out(self, guest_path, host_path):
        with open(host_path, "wb") as f:
            f.write(self.read_file(guest_path))

    def install_deb(self, deb, timeout=300, check=True):
        """Copy a .deb in and `apt-get install` it (offline: its dependencies
        must be in the image, see deb_depends())."""
        target = f"/var/tmp/{os.path.basename(deb)}"
        self.copy_in(deb, target, 0o644)
        return self.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", target],
                        timeout=timeout, check=check)

    def find_disk(self, serial):
        """/dev/NAME of the guest disk whose serial is `serial` (virtio-blk,
        NVMe or SCSI), or None."""
        for line in self.run(["lsblk", "-dn", "-o", "NAME,SERIAL"]).stdout.splitlines():
            name, _, s = line.strip().partition(" ")
            if s.strip() == serial:
                return f"/dev/{name}"
        return None

    def wait_until(self, cmd, timeout=60, interval=0.5, what=None):
        """Run cmd until it exits 0; returns its Result."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.run(cmd, timeout=max(10, timeout), check=False)
            if r.ok:
                return r
            if time.monotonic() > deadline:
                raise VMError(f"timed out after {timeout}s waiting for {what or cmd}: {r.describe()}")
            time.sleep(interval)

    def set_throttle(self, disk, **limits):
        """Change a volume's caps live (QMP block_set_io_throttle): disk is a
        Disk or its name; limits are the command's fields (iops, iops_rd,
        bps_wr, iops_max, group, ...); the six base caps not given are 0,
        i.e. off."""
        name = disk.name if isinstance(disk, Disk) else disk
        args = {k: 0 for k in ("bps", "bps_rd", "bps_wr", "iops", "iops_rd", "iops_wr")}
        args.update(limits)
        args["device"] = f"d-{name}"
        return self.qmp.execute("block_set_io_throttle", args)

    # the forwarded ports

    def host_port(self, guest_port=9477):
        return self.ports[guest_port]

    def http(self, path, guest_port=9477, method="GET", headers=None, timeout=10):
        """(status, headers, body) from the guest's port through the
        forwarding on the host's loopback."""
        c = http.client.HTTPConnection("127.0.0.1", self.ports[guest_port], timeout=timeout)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()


def threading_main():
    import threading
    return threading.current_thread() is threading.main_thread()


def _sigterm_to_exit(signum, frame):
    # meson's timeout and kill(1) unwind the with-blocks, so QEMU is quit
    # and the temporary files go
    raise SystemExit(128 + signum)


def shell_quote(args):
    return " ".join(shlex.quote(a) for a in args)


__all__ = ["Image", "VM", "Disk", "QMP", "QMPError", "GuestAgent", "Result", "GuestCommandError",
           "VMError", "deb_depends", "free_port", "GUEST_ADDR", "BASE_PACKAGES", "shell_quote"]
