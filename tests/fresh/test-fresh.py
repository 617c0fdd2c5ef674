#!/usr/bin/env python3
"""The lab's fresh test: the release tarball on a fresh Debian 12.

`meson dist` makes the tarball from what git holds at HEAD (in a tree that
is no git checkout, the tree is copied without .git instead:
tests/fresh/freshchroot.py); a minimal chroot (mmdebstrap --variant=apt
bookworm, none of the test dependencies) gets the host's apt
configuration, the tarball unpacked as a user would, and /proc /dev /sys.
Then, exactly as the README has them:
1. `./contrib/quickstart.sh`: from the host, /healthz and /metrics answer
   and the built-in probe runs, placed on its device although the chroot's
   mountinfo does not show its root; it stops on SIGTERM with status 0;
2. `CI=true ./tests/run.sh`, the gate, installs included: exit 0 (its time
   is printed; the issue's budget is 25 minutes);
3. a broken build must print the compiler's error, not exit silently.
Every process and mount is cleaned up by id."""
import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import iopsdtest as t  # noqa: E402
from freshchroot import CHECKOUT, SUITE, Chroot, is_git_checkout, log  # noqa: E402

BUILDDIR = os.environ.get("BUILDDIR", os.path.join(t.SRCDIR, "build"))
README_COMMAND = "./contrib/quickstart.sh"
README_TEST_COMMAND = "./tests/run.sh"
START_TIMEOUT = 900  # apt downloads and a build on a loaded 2-core machine
GATE_TIMEOUT = 2700  # the gate with its installs: 25 minutes asked, 45 before this test gives up


def readme_commands():
    """The README's first two commands must be the ones this test runs."""
    with open(os.path.join(t.SRCDIR, "README.md")) as f:
        text = f.read()
    quick = text.split("## Quick start", 1)[1]
    lines = [l.strip() for l in quick.splitlines() if l.startswith("    ")][:2]
    commands = [l.split("#", 1)[0].strip() for l in lines]
    want = [README_COMMAND, README_TEST_COMMAND]
    assert commands == want, f"README's first commands are {commands!r}, the test runs {want!r}"


def release_tarball():
    """meson dist's tarball of HEAD (None in a tree that is no checkout)."""
    if not is_git_checkout(t.SRCDIR):
        log(f"{t.SRCDIR} is no git checkout: the tree is copied without .git")
        return None
    with open(os.path.join(t.SRCDIR, "meson.build")) as f:
        version = re.search(r"version: '([^']+)'", f.read()).group(1)
    p = subprocess.run(["meson", "dist", "-C", BUILDDIR, "--formats", "gztar", "--no-tests", "--allow-dirty"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 0, f"meson dist failed ({p.returncode}):\n{out}"
    tarball = os.path.join(BUILDDIR, "meson-dist", f"iopsd-{version}.tar.gz")
    assert os.path.exists(tarball), f"meson dist made no {tarball}:\n{out}"
    log(f"meson dist: {os.path.basename(tarball)}, {os.path.getsize(tarball) // 1024} KiB")
    return tarball


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
    # the chroot's mountinfo does not show its root: the probe is placed on
    # its device by stat()'s st_dev, as the kernel names it
    status, _, body = fetch(port, "/api/v1/probes")
    assert status == 200, f"/api/v1/probes: {status}"
    probes = {p["name"]: p for p in json.loads(body)["probes"]}
    device = probes["default"].get("device")
    assert device, f"the built-in probe is on no device in the chroot: {probes['default']}"
    log(f"the built-in probe is placed on {device}")
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


def run_gate(chroot, env):
    """README command 2 in the chroot, as CI runs it; its time in seconds."""
    logpath = os.path.join(chroot.dir, "gate.log")
    t0 = time.monotonic()
    with open(logpath, "wb") as logfile:
        p = subprocess.Popen([README_TEST_COMMAND], env=dict(env, CI="true"), stdin=subprocess.DEVNULL,
                             stdout=logfile, stderr=subprocess.STDOUT, preexec_fn=chroot.enter,
                             start_new_session=True)
        try:
            rc = p.wait(GATE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = "timeout"
    secs = time.monotonic() - t0
    with open(logpath, errors="replace") as f:
        out = f.read()
    assert rc == 0, f"{README_TEST_COMMAND} in the chroot: exit {rc} after {secs:.0f}s; its last output:\n{out[-20000:]}"
    log(f"{README_TEST_COMMAND} in the chroot: exit 0 after {secs:.0f}s, installs included")
    print("\n".join(out.splitlines()[-14:]), flush=True)
    return secs


def main():
    t.require_root()
    t.require_tool("mmdebstrap", "tar", "meson")
    readme_commands()
    port = t.free_port()
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "IOPSD_LISTEN_ADDRESS": f"127.0.0.1:{port}"}
    t0 = time.monotonic()
    tarball = release_tarball()
    chroot = Chroot(recursive=True, prefix="iopsd-fresh-")
    try:
        chroot.create(t.SRCDIR, tarball=tarball)
        chroot.mount()
        logpath = os.path.join(chroot.dir, "quickstart.log")
        with open(logpath, "wb") as logfile:
            t1 = time.monotonic()
            chroot.start([README_COMMAND], env, logfile)
            status, body = wait_healthy(chroot, port, logpath)
            log(f"{README_COMMAND}: answering after {time.monotonic() - t1:.0f}s (/healthz {status})")
            check_running(port)
            assert not os.path.exists(chroot.root + CHECKOUT + "/build/tests"), \
                "tests were configured without cmocka (-Dtests=auto)"
            serving = time.monotonic() - t1
            rc = chroot.stop()
            assert rc == 0, f"iopsd exited {rc} on SIGTERM"
        gate = run_gate(chroot, env)
        check_broken_build_prints_the_error(chroot, env)
    finally:
        chroot.cleanup()
    assert not os.path.exists(chroot.dir)
    print(f"ok: {README_COMMAND} and {README_TEST_COMMAND} work in a fresh {SUITE} chroot from "
          f"{os.path.basename(tarball) if tarball else 'a copy of the tree'} ({time.monotonic() - t0:.0f}s in all)")
    t.figure("command-1-serving-s", f"{serving:.0f}")
    t.figure("command-2-gate-s", f"{gate:.0f}")


if __name__ == "__main__":
    main()
