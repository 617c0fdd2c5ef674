#!/usr/bin/env python3
"""The README's first command on a fresh Debian 12: a minimal chroot
(mmdebstrap --variant=apt bookworm, none of the test dependencies), the
host's apt configuration, the checkout copied in with git archive, /proc
/dev /sys mounted; then `./contrib/quickstart.sh` exactly as the README has
it. From the host: /healthz and /metrics answer and the built-in probe
runs. Then a broken build must print the compiler's error, not exit
silently. Every process and mount is cleaned up by id.

What is copied: `git stash create` of the source tree, i.e. HEAD plus the
uncommitted changes to tracked files (untracked files stay out, as in a
fresh clone). A clean tree, as in CI, is exactly HEAD; a developer's edit to
quickstart.sh is tested before it is committed, not silently ignored."""
import contextlib
import glob
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iopsdtest as t  # noqa: E402

SUITE = "bookworm"
README_COMMAND = "./contrib/quickstart.sh"
CHECKOUT = "/root/iopsd"  # where a user would have cloned it
START_TIMEOUT = 900  # apt downloads and a build on a loaded 2-core machine


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def readme_first_command():
    """The README's first command must be the one this test runs."""
    with open(os.path.join(t.SRCDIR, "README.md")) as f:
        text = f.read()
    quick = text.split("## Quick start", 1)[1]
    first = next(l.strip() for l in quick.splitlines() if l.startswith("    "))
    command = first.split("#", 1)[0].strip()
    assert command == README_COMMAND, f"README's first command is {command!r}, the test runs {README_COMMAND!r}"


def source_tree_commit():
    """HEAD, or HEAD plus the uncommitted changes to tracked files."""
    p = subprocess.run(["git", "-C", t.SRCDIR, "rev-parse", "--is-inside-work-tree"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise AssertionError(f"{t.SRCDIR} is not a git checkout: the test copies it with git archive")
    stash = subprocess.run(["git", "-C", t.SRCDIR, "stash", "create"], check=True,
                           stdout=subprocess.PIPE).stdout.decode().strip()
    head = t.run("git", "-C", t.SRCDIR, "rev-parse", "HEAD").stdout.decode().strip()
    if stash:
        log(f"copying HEAD {head[:12]} plus the uncommitted changes to tracked files")
        return stash
    log(f"copying HEAD {head[:12]} (clean tree)")
    return head


def signed_by_paths():
    """The keyrings the host's apt sources name (Signed-By / signed-by=)."""
    files = glob.glob("/etc/apt/sources.list.d/*.list") + glob.glob("/etc/apt/sources.list.d/*.sources")
    if os.path.exists("/etc/apt/sources.list"):
        files.append("/etc/apt/sources.list")
    paths = set()
    for fn in files:
        with open(fn, errors="replace") as f:
            text = f.read()
        paths.update(re.findall(r"^\s*Signed-By:\s*(/\S+)", text, re.M | re.I))
        paths.update(re.findall(r"signed-by=(/[^\s\]]+)", text, re.I))
    return sorted(paths)


def copy_apt_config(root):
    """The host's apt configuration replaces the chroot's, so apt-get in the
    chroot reaches the same mirrors (and proxies) as the host's."""
    etc = os.path.join(root, "etc/apt")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(etc, "sources.list"))  # mmdebstrap's own
    if os.path.exists("/etc/apt/sources.list"):
        shutil.copy2("/etc/apt/sources.list", etc)
    for d in ("apt.conf.d", "sources.list.d", "preferences.d", "trusted.gpg.d", "keyrings"):
        if os.path.isdir(f"/etc/apt/{d}"):
            shutil.copytree(f"/etc/apt/{d}", os.path.join(etc, d), dirs_exist_ok=True, symlinks=True)
    if os.path.exists("/etc/apt/trusted.gpg"):
        shutil.copy2("/etc/apt/trusted.gpg", etc)
    for p in signed_by_paths():
        dst = root + p
        if os.path.isfile(p) and not os.path.exists(dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(p, dst)
    shutil.copy2("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))


def mounts_under(root):
    """Mount points at or below root, from /proc/self/mountinfo."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == root or mp.startswith(root + "/"):
                found.append(mp)
    return found


def pids_in(root):
    """Processes whose root directory is the chroot (ours: nothing else runs
    there)."""
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        with contextlib.suppress(OSError):
            if os.readlink(d + "/root") == root:
                pids.append(int(os.path.basename(d)))
    return pids


class Chroot:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="iopsd-quickstart-", dir="/var/tmp")
        self.root = os.path.join(self.dir, "root")
        self.mounted = []
        self.proc = None

    def create(self):
        t0 = time.monotonic()
        p = subprocess.run(["mmdebstrap", "--variant=apt", SUITE, self.root],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise AssertionError(f"mmdebstrap failed ({p.returncode}):\n{p.stdout.decode(errors='replace')}")
        log(f"mmdebstrap --variant=apt {SUITE}: {time.monotonic() - t0:.0f}s")
        for pkg in ("libcmocka-dev", "gcc", "meson"):
            p = subprocess.run(["chroot", self.root, "dpkg-query", "-W", "-f=${Status}", pkg],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert b"install ok installed" not in p.stdout, f"{pkg} is in the fresh chroot already"
        copy_apt_config(self.root)
        dst = self.root + CHECKOUT
        os.makedirs(dst)
        archive = subprocess.Popen(["git", "-C", t.SRCDIR, "archive", source_tree_commit()], stdout=subprocess.PIPE)
        tar = subprocess.run(["tar", "-x", "-C", dst, "-f", "-"], stdin=archive.stdout)
        archive.stdout.close()
        assert archive.wait() == 0 and tar.returncode == 0, "git archive | tar failed"

    def mount(self):
        for what, args in (("proc", ["-t", "proc", "proc"]), ("dev", ["--bind", "/dev"]),
                           ("sys", ["--bind", "/sys"])):
            target = os.path.join(self.root, what)
            t.run("mount", *args, target)
            self.mounted.append(target)

    def enter(self):
        """In the child: into the chroot and the checkout, as a user's shell
        would be when typing the README's command."""
        os.chroot(self.root)
        os.chdir(CHECKOUT)

    def start(self, env, logfile):
        """The README's command in the chroot, in a session of its own."""
        self.proc = subprocess.Popen([README_COMMAND], env=env, stdin=subprocess.DEVNULL, stdout=logfile,
                                     stderr=subprocess.STDOUT, preexec_fn=self.enter, start_new_session=True)
        return self.proc

    def stop(self, timeout=15.0):
        """SIGTERM to the process group we started, SIGKILL after timeout;
        returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything left in the group
        return self.proc.returncode

    def cleanup(self):
        self.stop()
        for pid in pids_in(self.root):  # started in our chroot, outside the group
            log(f"killing leftover process {pid} in the chroot")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for target in reversed(self.mounted):
            if subprocess.run(["umount", target], stderr=subprocess.DEVNULL).returncode != 0:
                subprocess.run(["umount", "--lazy", target])
        self.mounted = []
        left = mounts_under(self.dir)
        if left:
            # never rm -rf across a bind mount of /dev or /sys
            raise AssertionError(f"still mounted, not removing {self.dir}: {left}")
        shutil.rmtree(self.dir, ignore_errors=True)


def fetch(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        c.close()


def wait_healthy(chroot, port, logpath):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if chroot.proc.poll() is not None:
            with open(logpath, errors="replace") as f:
                out = f.read()
            raise AssertionError(f"{README_COMMAND} exited with {chroot.proc.returncode}:\n{out}")
        with contextlib.suppress(OSError):
            status, _, body = fetch(port, "/healthz")
            return status, body
        time.sleep(1)
    with open(logpath, errors="replace") as f:
        out = f.read()
    raise AssertionError(f"no answer on port {port} within {START_TIMEOUT}s:\n{out[-5000:]}")


def check_running(port):
    status, _, body = fetch(port, "/metrics")
    assert status == 200, f"/metrics: {status}"
    text = body.decode()
    assert t.metric_value(text, "iopsd_build_info") == 1, text[:500]
    assert t.metric_value(text, "iopsd_device_reads_completed_total") is not None, "no device sampled"

    def probe_ran():
        text = fetch(port, "/metrics")[2].decode()
        runs = t.metric_value(text, "iopsd_probe_runs_total", {"probe": "default"}) or 0
        return runs >= 1 and t.metric_value(text, "iopsd_probe_success", {"probe": "default"}) == 1

    t.wait_until(probe_ran, 60, interval=1, what="a successful run of the built-in probe")
    status, _, body = fetch(port, "/healthz")
    assert status == 200 and b'"ok"' in body, (status, body)


def check_broken_build_prints_the_error(chroot, env):
    """A compiler error must reach the user, with the step that failed."""
    main_c = chroot.root + CHECKOUT + "/daemon/main.c"
    with open(main_c, "a") as f:
        f.write("\n#error quickstart-test: this line breaks the build\n")
    p = subprocess.run([README_COMMAND], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=600, preexec_fn=chroot.enter, start_new_session=True)
    out = p.stdout.decode(errors="replace")
    assert p.returncode != 0, f"a broken build exited 0:\n{out}"
    assert "quickstart-test: this line breaks the build" in out, f"the compiler's error is not shown:\n{out}"
    assert "building (ninja -C build) failed" in out, f"the failing step is not named:\n{out}"
    log("a broken build: exit %d, the step and the compiler's error printed" % p.returncode)


def main():
    t.require_root()
    t.require_tool("mmdebstrap", "git", "tar")
    readme_first_command()
    port = t.free_port()
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "IOPSD_LISTEN_ADDRESS": f"127.0.0.1:{port}"}
    t0 = time.monotonic()
    chroot = Chroot()
    try:
        chroot.create()
        chroot.mount()
        logpath = os.path.join(chroot.dir, "quickstart.log")
        with open(logpath, "wb") as logfile:
            t1 = time.monotonic()
            chroot.start(env, logfile)
            status, body = wait_healthy(chroot, port, logpath)
            log(f"{README_COMMAND}: answering after {time.monotonic() - t1:.0f}s (/healthz {status})")
            check_running(port)
            assert not os.path.exists(chroot.root + CHECKOUT + "/build/tests"), \
                "tests were configured without cmocka (-Dtests=auto)"
            rc = chroot.stop()
            assert rc == 0, f"iopsd exited {rc} on SIGTERM"
        check_broken_build_prints_the_error(chroot, env)
    finally:
        chroot.cleanup()
    assert not os.path.exists(chroot.dir)
    print(f"ok: {README_COMMAND} works in a fresh {SUITE} chroot ({time.monotonic() - t0:.0f}s in all)")


if __name__ == "__main__":
    main()
