#!/usr/bin/env python3
"""The README's first command on a fresh Debian 12: a minimal chroot
(mmdebstrap --variant=apt bookworm, none of the test dependencies), the
host's apt configuration, the tree copied in without .git as from a tarball
(tests/fresh/freshchroot.py says what is copied: a git checkout's tracked
files with their uncommitted edits, or the whole tree when it is no
checkout), /proc /dev /sys mounted; then `./contrib/quickstart.sh` exactly
as the README has it. From the host: /healthz and /metrics answer and the
built-in probe runs, placed on its device although the chroot's mountinfo
does not show its root. Then a broken build must print the compiler's
error, not exit silently. Every process and mount is cleaned up by id."""
import contextlib
import http.client
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fresh"))
import iopsdtest as t  # noqa: E402
from freshchroot import CHECKOUT, SUITE, Chroot, log  # noqa: E402

README_COMMAND = "./contrib/quickstart.sh"
START_TIMEOUT = 900  # apt downloads and a build on a loaded 2-core machine


def readme_first_command():
    """The README's first command must be the one this test runs."""
    with open(os.path.join(t.SRCDIR, "README.md")) as f:
        text = f.read()
    quick = text.split("## Quick start", 1)[1]
    first = next(l.strip() for l in quick.splitlines() if l.startswith("    "))
    command = first.split("#", 1)[0].strip()
    assert command == README_COMMAND, f"README's first command is {command!r}, the test runs {README_COMMAND!r}"


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


def main():
    t.require_root()
    t.require_tool("mmdebstrap", "tar")
    readme_first_command()
    port = t.free_port()
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "IOPSD_LISTEN_ADDRESS": f"127.0.0.1:{port}"}
    t0 = time.monotonic()
    chroot = Chroot(prefix="iopsd-quickstart-")
    try:
        chroot.create(t.SRCDIR)
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
            rc = chroot.stop()
            assert rc == 0, f"iopsd exited {rc} on SIGTERM"
        check_broken_build_prints_the_error(chroot, env)
    finally:
        chroot.cleanup()
    assert not os.path.exists(chroot.dir)
    print(f"ok: {README_COMMAND} works in a fresh {SUITE} chroot ({time.monotonic() - t0:.0f}s in all)")


if __name__ == "__main__":
    main()
