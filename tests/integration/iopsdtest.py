"""Helpers shared by the Python integration tests: start the real daemon,
listen on a NOTIFY_SOCKET, find free ports, fetch over HTTP, skip cleanly."""
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77

# meson ends a test that runs past its timeout with SIGTERM: make that an
# exit, so that the tests' finally blocks unmount and detach what they made
signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
IOPSD = os.environ.get("IOPSD", "iopsd")
SRCDIR = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def is_asan_build():
    """Whether $IOPSD was built with AddressSanitizer (its runtime is linked in)."""
    path = shutil.which(IOPSD) or IOPSD
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


# The gate (tests/run.sh) judges no absolute time: a check that does (a
# latency under 1 s, a rate held within 2 %) is a timing check, asserted
# only in the lab (IOPSD_TIMING=1: the lab's *-timing tests run the same
# script) and only reported in the gate. Deadlines that only stop a hung
# test are no timing checks: they are generous, and asserted everywhere.
TIMING = os.environ.get("IOPSD_TIMING") == "1"


def timing_check(ok, what):
    """Assert `what` in the lab; in the gate, print how it went."""
    if TIMING:
        assert ok, f"timing check failed: {what}"
    print(f"timing check ({'asserted' if TIMING else 'lab only, not asserted'}): "
          f"{'ok' if ok else 'MISSED'}: {what}", flush=True)


def figure(name, value):
    """A key figure of a lab test: tests/run.sh --lab puts it in its table."""
    print(f"figure: {name}={value}", flush=True)


def require_root():
    if os.geteuid() != 0:
        skip("needs root")


def require_tool(*names):
    for n in names:
        if not shutil.which(n):
            skip(f"{n} not installed")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NotifySocket:
    """An AF_UNIX datagram socket that collects sd_notify messages."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def receive(self, seconds):
        """Each message that arrives over the next `seconds`, as
        (monotonic time, message), also kept in self.messages."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                return
            self.messages.append(data)
            yield time.monotonic(), data

    def wait_for(self, needle, timeout=30.0):
        """Wait for a message containing the line `needle`; returns it."""
        for m in self.messages:
            if needle in m.split("\n"):
                return m
        for _, data in self.receive(timeout):
            if needle in data.split("\n"):
                return data
        raise AssertionError(f"no {needle!r} from sd_notify within {timeout}s; got {self.messages}")

    def drain(self):
        self.sock.setblocking(False)
        try:
            while True:
                self.messages.append(self.sock.recv(4096).decode())
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)

    def close(self):
        self.sock.close()


class HttpClient:
    """iopsd's HTTP API on 127.0.0.1:port, as the tests read it."""

    def __init__(self, port):
        self.port = port

    def get(self, path, headers=None, method="GET", timeout=30.0):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            c.close()

    def get_json(self, path):
        status, _, body = self.get(path)
        assert status == 200, f"GET {path}: {status} {body[:300]!r}"
        return json.loads(body)

    def metrics(self):
        status, _, body = self.get("/metrics")
        assert status == 200, f"GET /metrics: {status}"
        return body.decode()


class Daemon(HttpClient):
    """The real iopsd, started with a config file, logging to a file."""

    def __init__(self, config_text=None, args=(), env=None, workdir=None, port=None):
        self.tmp = workdir or tempfile.mkdtemp(prefix="iopsd-test-")
        self.port = port or free_port()
        self.config = os.path.join(self.tmp, "iopsd.conf")
        if config_text is not None:
            with open(self.config, "w") as f:
                f.write(config_text.replace("@PORT@", str(self.port)).replace("@TMP@", self.tmp))
        self.log = os.path.join(self.tmp, "iopsd.log")
        self.args = list(args)
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.proc = None
        self.wrapper = []  # e.g. ["setpriv", "--reuid=nobody", ..., "--"]

    def limit_asan_quarantine(self):
        """Under a sanitizer build: ASan keeps freed memory in quarantine
        (256 MiB by default), which would read as growth; keep it small so
        that RSS shows what is live. Returns whether this is one."""
        if not is_asan_build():
            return False
        opts = self.env.get("ASAN_OPTIONS")
        self.env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + \
            "quarantine_size_mb=8:thread_local_quarantine_size_kb=64"
        return True

    def start(self, wait_http=True, extra_args=()):
        cmd = self.wrapper + [IOPSD]
        if os.path.exists(self.config):
            cmd += ["--config", self.config]
        cmd += ["--web.listen-address", f"127.0.0.1:{self.port}"] + self.args + list(extra_args)
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, env=self.env)
        if wait_http:
            self.wait_http()
        return self

    def wait_http(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"iopsd exited with {self.proc.returncode}:\n{self.read_log()}")
            try:
                status, _, _ = self.get("/healthz")
                return status
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"iopsd did not answer HTTP within {timeout}s:\n{self.read_log()}")

    def read_log(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=30.0):
        """SIGTERM; returns (exit status, seconds it took)."""
        if self.proc is None or self.proc.poll() is not None:
            return (self.proc.returncode if self.proc else None), 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        took = time.monotonic() - t0
        log = self.read_log() if os.path.exists(self.log) else ""  # a test may log elsewhere
        if rc < 0 or "Sanitizer" in log:
            # a crash or a sanitizer's report: show it, whatever the test asserts next
            sys.stderr.write(f"iopsd exited with {rc}; its log ends:\n{log[-6000:]}\n")
        return rc, took

    def cleanup(self):
        self.stop()
        with contextlib.suppress(Exception):
            self.logf.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def metric_samples(text, name, labels=None):
    """The values of every sample of `name` whose labels include `labels`."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        rest = line[len(name):]
        if rest and rest[0] not in "{ ":
            continue
        if labels:
            if not all(f'{k}="{v}"' in rest for k, v in labels.items()):
                continue
        yield float(line.rsplit(" ", 1)[1])


def metric_value(text, name, labels=None):
    """Value of the first sample of `name` whose labels include `labels`."""
    return next(metric_samples(text, name, labels), None)


def wait_until(pred, timeout, interval=0.2, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Scraper(threading.Thread):
    """The normal client: GET /metrics once every `interval` (200 ms) from
    127.0.0.1, each on a connection of its own, and after it each of
    `also` ((path, text its answer holds), ...: health checks, as a
    kubelet's). latencies are /metrics'; failures name the path."""

    def __init__(self, d, interval=0.2, also=()):
        super().__init__(daemon=True)
        self.d = d
        self.interval = interval
        self.paths = (("/metrics", b"iopsd_build_info"),) + tuple(also)
        self.stop = threading.Event()
        self.latencies = []
        self.failures = []

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            for path, needle in self.paths:
                s0 = time.monotonic()
                try:
                    status, _, body = self.d.get(path, timeout=30)
                    if status != 200 or needle not in body:
                        self.failures.append(f"{path}: status {status} {body[:100]!r}")
                except OSError as e:
                    self.failures.append(f"{path}: {e!r}")
                if path == "/metrics":
                    self.latencies.append(time.monotonic() - s0)
            self.stop.wait(max(0.0, self.interval - (time.monotonic() - t0)))


# Loop devices, ext4 mounts, process figures ------------------------------

def run(*cmd, check=True):
    """Run a command quietly; raise with its output when it fails."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stdout.decode(errors='replace')}")
    return p


class LoopDevice:
    """A sparse backing file under /var/tmp attached to a loop device with
    direct I/O on. `name` should include the test's role (unique names)."""

    LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81

    def __init__(self, name, size_mb, private=False, in_memory=False):
        """private: a loop device of its own high number (LOOP_CTL_ADD),
        for tests that detach and attach it again: `losetup -f` elsewhere
        on the machine takes the lowest free number, not this one.
        in_memory: the backing file on a tmpfs of its own, so that the
        shared disk's stalls stay out of timing-sensitive tests."""
        self.dir = tempfile.mkdtemp(prefix=f"iopsd-{name}-", dir="/var/tmp")
        self.tmpfs = None
        if in_memory:
            self.tmpfs = os.path.join(self.dir, "tmpfs")
            os.mkdir(self.tmpfs)
            run("mount", "-t", "tmpfs", "-o", f"size={size_mb + 16}m", f"iopsd-{name}", self.tmpfs)
        self.backing = os.path.join(self.tmpfs or self.dir, "backing.img")
        self.index = None
        with open(self.backing, "wb") as f:
            f.truncate(size_mb << 20)
        if private:
            import fcntl
            fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
            try:
                for n in range(300 + os.getpid() % 200, 1000):
                    if os.path.exists(f"/sys/block/loop{n}"):
                        continue
                    try:
                        fcntl.ioctl(fd, self.LOOP_CTL_ADD, n)
                    except OSError:
                        continue
                    self.index = n
                    break
            finally:
                os.close(fd)
            assert self.index is not None, "no free loop device number"
            wait_until(lambda: os.path.exists(f"/dev/loop{self.index}"), 30, interval=0.02,
                       what=f"/dev/loop{self.index}")
            self.path = f"/dev/loop{self.index}"
            run("losetup", "--direct-io=on", self.path, self.backing)
        else:
            self.path = run("losetup", "--direct-io=on", "--find", "--show", self.backing).stdout.decode().strip()
        self.attached = True

    def attach(self):
        run("losetup", "--direct-io=on", self.path, self.backing)
        self.attached = True

    @property
    def name(self):
        return os.path.basename(self.path)

    def detach(self):
        if self.attached:
            run("losetup", "-d", self.path, check=False)
            self.attached = False

    def cleanup(self):
        self.detach()
        if self.index is not None:
            import fcntl
            fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
            try:
                for _ in range(50):
                    try:
                        fcntl.ioctl(fd, self.LOOP_CTL_REMOVE, self.index)
                        break
                    except OSError:
                        time.sleep(0.1)  # still busy for a moment after the detach
            finally:
                os.close(fd)
        if self.tmpfs:
            # the kernel lets go of the backing file a moment after the
            # detach (later still after a stuck I/O): until then the
            # umount is refused (EBUSY), and a lazy one is left for last
            for _ in range(30):
                if run("umount", self.tmpfs, check=False).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                run("umount", "-l", self.tmpfs, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class Ext4Mount:
    """An ext4 filesystem on its own loop device, mounted under /var/tmp."""

    def __init__(self, name, size_mb=64, in_memory=False):
        self.loop = LoopDevice(name, size_mb, in_memory=in_memory)
        self.mountpoint = os.path.join(self.loop.dir, "mnt")
        os.mkdir(self.mountpoint)
        run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.loop.path)
        self.mount()

    def mount(self):
        run("mount", "-t", "ext4", self.loop.path, self.mountpoint)
        self.mounted = True

    def umount(self, lazy=False):
        run("umount", *(["-l"] if lazy else []), self.mountpoint)
        self.mounted = False

    def remount(self, mode, timeout=30.0):
        """Remount ro/rw; retried while a probe has a file open for writing
        (EBUSY), which lasts one run at most."""
        deadline = time.monotonic() + timeout
        while True:
            p = run("mount", "-o", f"remount,{mode}", self.mountpoint, check=False)
            if p.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"remount,{mode} {self.mountpoint}: {p.stdout.decode(errors='replace')}")
            time.sleep(0.02)

    def cleanup(self):
        if self.mounted:
            run("umount", "-l", self.mountpoint, check=False)
            self.mounted = False
        self.loop.cleanup()


class BlkioThrottle:
    """A cgroup v1 blkio group throttling one device for the processes in
    it: moved in with add(pid), or started through wrap(cmd), a shell that
    moves itself in, then execs. `name` should include the test's role."""

    ROOT = "/sys/fs/cgroup/blkio"

    def __init__(self, name, dev):
        self.path = os.path.join(self.ROOT, name)
        os.mkdir(self.path)
        st = os.stat(dev)
        self.devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"

    def limit(self, knob, value):
        """knob: read_iops, write_iops, read_bps or write_bps; 0 lifts it."""
        with open(os.path.join(self.path, f"blkio.throttle.{knob}_device"), "w") as f:
            f.write(f"{self.devno} {value}")

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def wrap(self, cmd):
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$0" "$@"'] + list(cmd)

    def cleanup(self, pid=None):
        """Move `pid` (still running) back to the root group, then remove
        the group once its other processes have gone."""
        if pid:
            try:
                with open(os.path.join(self.ROOT, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
            except OSError:
                pass
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


# Run argv[2:] with the system calls named in argv[1] failing with EPERM,
# as a unit's SystemCallFilter=~... with SystemCallErrorNumber=EPERM does
# (libseccomp comes with systemd; NO_NEW_PRIVS is set by seccomp_load)
_SECCOMP_DENY = r"""
import ctypes, errno, os, sys
lib = ctypes.CDLL("libseccomp.so.2")
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
ctx = lib.seccomp_init(0x7fff0000)  # SCMP_ACT_ALLOW
for name in sys.argv[1].split(","):
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    assert nr >= 0, f"unknown system call {name}"
    assert lib.seccomp_rule_add(ctx, 0x00050000 | errno.EPERM, nr, 0) == 0, name  # SCMP_ACT_ERRNO
assert lib.seccomp_load(ctx) == 0, "seccomp_load failed"
os.execvp(sys.argv[2], sys.argv[2:])
"""


def seccomp_deny(cmd, syscalls):
    """`cmd` under a seccomp filter that fails `syscalls` with EPERM."""
    return [sys.executable, "-c", _SECCOMP_DENY, ",".join(syscalls)] + list(cmd)


def disk_read_bytes(dev):
    """Bytes the block device `dev` has read (/sys/block/NAME/stat; not its
    read count, in which the block layer's merges of adjacent requests
    make two reads one)."""
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[2]) * 512


def proc_status(pid, field):
    """A numeric field of /proc/PID/status (VmRSS in kB, Threads...)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def sha256(path, limit=None):
    """Hex SHA-256 of a file or device, of its first `limit` bytes if given."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = limit
        while left is None or left > 0:
            chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
            if not chunk:
                break
            h.update(chunk)
            if left is not None:
                left -= len(chunk)
    return h.hexdigest()


def metric_sum(text, name, labels=None):
    """Sum of every sample of `name` whose labels include `labels`."""
    return sum(metric_samples(text, name, labels))


class UserTree:
    """Files a user keeps on a probe target: random names, sizes and
    contents, a few right next to DIR/.iopsd and one named like a probe
    file. verify() checks that every one is byte-identical and that nothing
    appeared outside `allowed` (paths relative to root: .iopsd of probe
    directories, and whatever the test itself creates)."""

    def __init__(self, root, seed, n_files=40, probe_files=()):
        import hashlib
        import random
        self._hashlib = hashlib
        self.root = root
        rng = random.Random(seed)
        names = ["w.dat", ".iopsd.dat", "iopsd", ".iopsd-old", "notes.txt", "db.ibd"]
        names += [f"dir{rng.randrange(4)}/f{i:03d}.bin" for i in range(n_files)]
        names += ["dir0/.iopsd/w.dat"]  # a user's own ".iopsd" deeper down
        names += list(probe_files)  # named like iopsd's own files, outside .iopsd
        for rel in names:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            size = rng.choice([0, 1, 511, 4096, 65537, rng.randrange(1, 300_000)])
            with open(path, "wb") as f:
                f.write(rng.randbytes(size))
        os.symlink("notes.txt", os.path.join(root, "link-to-notes"))
        self.snapshot = self._scan()

    def _scan(self, allowed=()):
        state = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = os.path.relpath(dirpath, self.root)
            keep = []
            for dn in dirnames:
                rel = os.path.normpath(os.path.join(rel_dir, dn))
                if rel in allowed:
                    continue
                keep.append(dn)
                if os.path.islink(os.path.join(dirpath, dn)):
                    state[rel] = ("link", os.readlink(os.path.join(dirpath, dn)))
                else:
                    state[rel] = ("dir", None)
            dirnames[:] = keep
            for fn in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, fn))
                if rel in allowed:
                    continue
                p = os.path.join(dirpath, fn)
                if os.path.islink(p):
                    state[rel] = ("link", os.readlink(p))
                else:
                    with open(p, "rb") as f:
                        state[rel] = ("file", self._hashlib.sha256(f.read()).hexdigest())
        return state

    def verify(self, allowed=(".iopsd",)):
        """Raise when a user file changed or vanished, or when something
        new exists outside the allowed paths."""
        now = self._scan(set(allowed))
        under = tuple(a + "/" for a in allowed)
        changed = [p for p, v in self.snapshot.items()
                   if p not in allowed and not p.startswith(under) and now.get(p) != v]
        new = [p for p in now if p not in self.snapshot]
        assert not changed, f"user files changed or missing under {self.root}: {changed}"
        assert not new, f"new entries outside {allowed} under {self.root}: {new}"
        return len(self.snapshot)


class ProbeWatch:
    """The error counters, success gauge, last-run time and log lines of
    one probe of a running Daemon."""

    REASONS = ("eio", "enospc", "erofs", "eacces", "enoent", "einval", "timeout", "other")

    def __init__(self, daemon, probe):
        self.d = daemon
        self.probe = probe

    def errors(self, reason, text=None):
        text = text if text is not None else self.d.metrics()
        return metric_sum(text, "iopsd_probe_errors_total", {"probe": self.probe, "reason": reason})

    def state(self):
        m = self.d.metrics()
        return {
            "success": metric_value(m, "iopsd_probe_success", {"probe": self.probe}),
            "last_run": metric_value(m, "iopsd_probe_last_run_timestamp_seconds", {"probe": self.probe}),
            "errors": {r: self.errors(r, m) for r in self.REASONS},
        }

    def failures_logged(self):
        return self.d.read_log().count(f"Probe [{self.probe}] failed")

    def last_failure(self):
        lines = [l for l in self.d.read_log().splitlines() if f"Probe [{self.probe}] failed" in l]
        return lines[-1] if lines else ""

    def mark(self):
        """Call before causing a fault: expect_failing() then counts the
        log lines from here."""
        return self.failures_logged()

    def expect_failing(self, reason, timeout=60.0, runs=5, mark=None):
        """Wait until the probe fails with `reason` for `runs` more runs
        (success 0), while /metrics and /healthz keep answering. Returns
        the number of failure lines logged since `mark` (or since the call)."""
        logged = self.failures_logged() if mark is None else mark
        before = self.state()
        wait_until(lambda: (lambda s: s["errors"][reason] >= before["errors"][reason] + runs
                            and s["success"] == 0)(self.state()), timeout,
                   what=f"probe {self.probe}: {runs} runs failing with {reason} (before: {before})")
        st = self.state()
        assert st["success"] == 0, st
        assert st["last_run"] and st["last_run"] > (before["last_run"] or 0), "probe runs stopped"
        status, _, _ = self.d.get("/healthz")
        assert status in (200, 503), status
        return self.failures_logged() - logged

    def expect_recovered(self, timeout=30.0):
        """Wait for a successful run after the condition cleared."""
        t0 = time.time()
        wait_until(lambda: (lambda s: s["success"] == 1 and s["last_run"] >= t0)(self.state()), timeout,
                   what=f"probe {self.probe} to recover")


class HangFS:
    """tests/integration/hangfs.py mounted over a backing directory of its
    own: a filesystem whose operations block on command, like an NFS server
    that stops answering. hang("getattr,read") blocks those calls,
    release() lets them through."""

    PYTHON = "/usr/bin/python3"  # Debian's, which has python3-fusepy

    def __init__(self, name, attr_timeout=1.0):
        if not os.path.exists("/dev/fuse") or not shutil.which("fusermount"):
            skip("no FUSE (/dev/fuse, fusermount)")
        if subprocess.run([self.PYTHON, "-c", "import fusepy"], stderr=subprocess.DEVNULL).returncode:
            skip("python3-fusepy not installed")
        self.dir = tempfile.mkdtemp(prefix=f"iopsd-{name}-", dir="/var/tmp")
        self.backing = os.path.join(self.dir, "backing")
        self.mountpoint = os.path.join(self.dir, "mnt")
        self.control = os.path.join(self.dir, "control.sock")
        os.mkdir(self.backing)
        os.mkdir(self.mountpoint)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hangfs.py")
        self.log = open(os.path.join(self.dir, "hangfs.log"), "wb")
        self.proc = subprocess.Popen([self.PYTHON, script, self.backing, self.mountpoint, self.control,
                                      "--attr-timeout", str(attr_timeout)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: self._mounted() or self.proc.poll() is not None, 30, interval=0.05,
                   what="hangfs mounted")
        assert self.proc.poll() is None, f"hangfs exited with {self.proc.returncode}"

    def _mounted(self):
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == self.mountpoint for line in f)

    def command(self, line):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(self.control)
            s.sendall((line + "\n").encode())
            reply = s.makefile().readline().split()
        assert reply[:1] == ["ok"], reply
        return reply

    def hang(self, ops="all"):
        self.command(f"hang {ops}")

    def release(self):
        self.command("release")

    def release_quietly(self):
        """release(), if the filesystem's process still listens."""
        with contextlib.suppress(Exception):
            self.release()

    def release_and_recover(self, d, watch, timeout):
        """release(); then probe `watch` of daemon `d` recovers and d stops
        cleanly."""
        self.release()
        watch.expect_recovered(timeout=timeout)
        print(f"  probe {watch.probe} recovered once the filesystem answered again")
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"

    def blocked(self):
        """Calls waiting in the filesystem right now."""
        return int(self.command("count")[1])

    def cleanup(self):
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.release()
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        run("fusermount", "-u", "-z", self.mountpoint, check=False)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class WatchdogSocket:
    """A NOTIFY_SOCKET with a watchdog: a thread receives what the daemon
    sends and notes when each WATCHDOG=1 arrived (monotonic). Pass env()
    to the Daemon."""

    def __init__(self, directory, watchdog_usec):
        import threading
        self.path = os.path.join(directory, "watchdog.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.watchdog_usec = watchdog_usec
        self.pings = []
        self.messages = []
        self.running = True
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self):
        while self.running:
            try:
                data = self.sock.recv(4096).decode()
            except (socket.timeout, OSError):
                continue
            self.messages.append(data)
            if "WATCHDOG=1" in data.split("\n"):
                self.pings.append(time.monotonic())

    def env(self):
        return {"NOTIFY_SOCKET": self.path, "WATCHDOG_USEC": str(self.watchdog_usec)}

    def longest_gap(self, t0, t1):
        """The longest time without a WATCHDOG=1 between t0 and t1 (monotonic)."""
        marks = [t0] + [p for p in self.pings if t0 <= p <= t1] + [t1]
        return max(b - a for a, b in zip(marks, marks[1:]))

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


class BlockTrace:
    """block:block_rq_issue on one device, in a tracefs instance of its own
    (tracefs mounted for the test where it is not): each request as
    (rwbs, sector, ioprio), ioprio as the kernel prints it ("be,0,3": class,
    hint, level)."""
    ROOT = "/sys/kernel/tracing"

    def __init__(self, dev_path):
        self.mounted = False
        if not os.path.isdir(os.path.join(self.ROOT, "events")):
            subprocess.run(["mount", "-t", "tracefs", "nodev", self.ROOT], check=True)
            self.mounted = True
        st = os.stat(dev_path)
        self.devt = (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)
        self.dir = os.path.join(self.ROOT, "instances", f"iopsd-test-{os.getpid()}")
        os.mkdir(self.dir)
        self.event = os.path.join(self.dir, "events", "block", "block_rq_issue")
        self._write(os.path.join(self.event, "filter"), f"dev == {self.devt}")

    @staticmethod
    def _write(path, text):
        with open(path, "w") as f:
            f.write(text)

    @contextlib.contextmanager
    def tracing(self):
        """Trace while the block runs; the requests in self.requests after."""
        self._write(os.path.join(self.dir, "trace"), "")
        self._write(os.path.join(self.event, "enable"), "1")
        self.requests = []
        try:
            yield self
        finally:
            self._write(os.path.join(self.event, "enable"), "0")
        with open(os.path.join(self.dir, "trace")) as f:
            for line in f:
                if "block_rq_issue: " not in line:
                    continue
                # "7,4 R 4096 () 51202 + 8 be,0,3 [iopsd]"
                w = line.split("block_rq_issue: ", 1)[1].split()
                plus = w.index("+")
                self.requests.append((w[1], int(w[plus - 1]), w[-2]))

    def cleanup(self):
        os.rmdir(self.dir)
        if self.mounted:
            subprocess.run(["umount", self.ROOT], check=False)
