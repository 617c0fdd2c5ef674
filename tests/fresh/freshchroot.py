#!/usr/bin/env python3
"""A fresh Debian 12 chroot with the source tree copied in as from a release
tarball: `mmdebstrap --variant=apt bookworm` (none of the build or test
dependencies), the host's apt configuration so that apt-get inside reaches
the same mirrors, the tree without .git or build directories, and /proc,
/dev and /sys mounted (or a release tarball unpacked instead of the copy:
--tarball). Used by tests/fresh/run-in-chroot.sh and by the lab's fresh
test (tests/fresh/test-fresh.py); every process and mount it makes is
cleaned up by id.

What is copied: in a git checkout, the files git tracks, as they are in the
working tree (uncommitted edits included, untracked files left out, as in a
fresh clone); elsewhere (a tarball, a Debian source package) every file but
.git, meson build directories and the .gitignore'd products."""
import contextlib
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

SUITE = "bookworm"
CHECKOUT = "/root/iopsd"  # where a user would have unpacked or cloned it


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


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


def copy_local_ca_certificates(root):
    """The host's own certificate authorities (/usr/local/share/ca-certificates:
    a machine's network setup, as its apt proxies are) into the chroot, where
    ca-certificates adds them to the system store when install-deps.sh
    installs it: a fresh machine of this kind trusts them too, and npm ci
    reaches its registry through the same network."""
    src = "/usr/local/share/ca-certificates"
    if os.path.isdir(src):
        shutil.copytree(src, root + src, dirs_exist_ok=True)


def is_git_checkout(src):
    if not os.path.exists(os.path.join(src, ".git")) or not shutil.which("git"):
        return False
    p = subprocess.run(["git", "-C", src, "rev-parse", "--show-toplevel"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return p.returncode == 0 and os.path.realpath(p.stdout.decode().strip()) == os.path.realpath(src)


def is_build_dir(path):
    return os.path.exists(os.path.join(path, "meson-private")) or \
        os.path.exists(os.path.join(path, "build.ninja"))


def walked_files(src):
    """Every path to copy in a tree that is not a git checkout, symlinks as
    symlinks: os.walk lists a symlink to a directory among the directories
    (and does not descend into it), so it is taken from there as a file."""
    files = []
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        keep = []
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                files.append(os.path.normpath(os.path.join(rel, d)))
                continue
            top = rel == "."
            if d in (".git", "__pycache__", "node_modules") or is_build_dir(full) or \
                    (top and (d.startswith("build") or d.startswith("obj-") or d == "artifacts")):
                continue
            keep.append(d)
        dirnames[:] = keep
        files.extend(os.path.normpath(os.path.join(rel, f)) for f in filenames if not f.endswith((".o", ".swp")))
    return files


def source_files(src):
    """The relative paths to copy (see the module's docstring)."""
    if is_git_checkout(src):
        out = subprocess.run(["git", "-C", src, "ls-files", "-z"], check=True,
                             stdout=subprocess.PIPE).stdout.decode()
        return [p for p in out.split("\0") if p and os.path.lexists(os.path.join(src, p))]
    return walked_files(src)


def copy_tree(src, dst):
    """Copy the source tree to dst without .git: what a tarball holds."""
    files = source_files(src)
    os.makedirs(dst, exist_ok=True)
    pack = subprocess.Popen(["tar", "-C", src, "--no-recursion", "--null", "-T", "-", "-c", "-f", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    unpack = subprocess.Popen(["tar", "-x", "-C", dst, "-f", "-"], stdin=pack.stdout)
    pack.stdout.close()
    pack.stdin.write("\0".join(files).encode() + b"\0")
    pack.stdin.close()
    assert pack.wait() == 0 and unpack.wait() == 0, "tar of the source tree failed"
    assert not os.path.exists(os.path.join(dst, ".git")), "the copy has a .git"
    log(f"copied {len(files)} files ({'git ls-files' if is_git_checkout(src) else 'no git checkout'})")


def unpack_tarball(tarball, dst):
    """A release tarball (meson dist's: one top directory) unpacked as dst,
    as a user would unpack it."""
    os.makedirs(dst, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", dst, "--strip-components=1", "-f", tarball], check=True)
    assert not os.path.exists(os.path.join(dst, ".git")), "the tarball has a .git"
    assert os.path.exists(os.path.join(dst, "tests/run.sh")), f"{tarball} holds no tests/run.sh at its top"
    log(f"unpacked {os.path.basename(tarball)}")


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
    """Processes whose root directory is the chroot."""
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        with contextlib.suppress(OSError):
            if os.readlink(d + "/root") == root:
                pids.append(int(os.path.basename(d)))
    return pids


class Chroot:
    """recursive: bind /dev and /sys with what is mounted below them
    (/dev/shm, /dev/pts, the cgroup hierarchies), as the whole suite
    needs; otherwise plain binds."""

    def __init__(self, recursive=False, prefix="iopsd-fresh-"):
        self.dir = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
        self.root = os.path.join(self.dir, "root")
        self.recursive = recursive
        self.mounted = []
        self.proc = None

    def create(self, src, includes=(), tarball=None):
        t0 = time.monotonic()
        cmd = ["mmdebstrap", "--variant=apt"]
        if includes:
            cmd.append("--include=" + ",".join(includes))
        p = subprocess.run(cmd + [SUITE, self.root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise AssertionError(f"mmdebstrap failed ({p.returncode}):\n{p.stdout.decode(errors='replace')}")
        log(f"mmdebstrap --variant=apt {SUITE}: {time.monotonic() - t0:.0f}s")
        for pkg in ("libcmocka-dev", "gcc", "meson", "build-essential"):
            p = subprocess.run(["chroot", self.root, "dpkg-query", "-W", "-f=${Status}", pkg],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert b"install ok installed" not in p.stdout, f"{pkg} is in the fresh chroot already"
        copy_apt_config(self.root)
        copy_local_ca_certificates(self.root)
        if tarball:
            unpack_tarball(tarball, self.root + CHECKOUT)
        else:
            copy_tree(src, self.root + CHECKOUT)

    def mount(self):
        bind = "--rbind" if self.recursive else "--bind"
        for what, args in (("proc", ["-t", "proc", "proc"]), ("dev", [bind, "/dev"]), ("sys", [bind, "/sys"])):
            target = os.path.join(self.root, what)
            subprocess.run(["mount", *args, target], check=True)
            self.mounted.append(target)
            if self.recursive and what != "proc":
                # unmounting the copies must never reach the host's
                subprocess.run(["mount", "--make-rslave", target], check=True)

    def enter(self):
        """In the child: into the chroot and the copied tree."""
        os.chroot(self.root)
        os.chdir(CHECKOUT)

    def start(self, argv, env, logfile):
        """argv in the chroot, in a session of its own."""
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=logfile,
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
        for target in sorted(mounts_under(self.root), key=len, reverse=True):
            if subprocess.run(["umount", target], stderr=subprocess.DEVNULL).returncode != 0:
                subprocess.run(["umount", "--lazy", target])
        self.mounted = []
        left = mounts_under(self.dir)
        if left:
            # never rm -rf across a bind mount of /dev or /sys
            raise AssertionError(f"still mounted, not removing {self.dir}: {left}")
        shutil.rmtree(self.dir, ignore_errors=True)


def run_suite(src, short, ci=False, tarball=None):
    """CI=true ./tests/run.sh [--short] in a new chroot (with ci, CI's whole
    entry point, .ci/run: the gate, tests/run.sh); its exit
    status."""
    cmd = [".ci/run"] if ci else ["./tests/run.sh"] + (["--short"] if short else [])
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "CI": "true", "IOPSD_FRESH_CHROOT": "1"}
    t0 = time.monotonic()
    chroot = Chroot(recursive=True)
    rc = 1
    try:
        chroot.create(src, tarball=tarball)
        chroot.mount()
        log(f"in the chroot: CI=true {' '.join(cmd)}")
        t1 = time.monotonic()
        proc = chroot.start(cmd, env, None)
        rc = proc.wait()
        log(f"{' '.join(cmd)}: exit {rc} after {time.monotonic() - t1:.0f}s")
    finally:
        chroot.cleanup()
    log(f"fresh chroot ({'ci' if ci else 'short' if short else 'full'} mode): exit {rc}, {time.monotonic() - t0:.0f}s in all")
    return rc


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true",
                    help="only the steps that depend on what is installed: install-deps.sh --tests, "
                         "both builds, the unit suites, the package build and test-live-page")
    ap.add_argument("--ci", action="store_true",
                    help="CI's entry point, .ci/run (the gate, tests/run.sh)")
    ap.add_argument("--tarball", metavar="FILE",
                    help="unpack this release tarball (meson dist's) instead of copying --src")
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("run-in-chroot: needs root (mmdebstrap, chroot, mounts)")
        return 1
    for tool in ("mmdebstrap", "tar"):
        if not shutil.which(tool):
            print(f"run-in-chroot: {tool} not found: run contrib/install-deps.sh --tests")
            return 1
    tarball = os.path.realpath(args.tarball) if args.tarball else None
    return run_suite(os.path.realpath(args.src), args.short, args.ci, tarball)


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
