#!/usr/bin/env python3
"""Socket activation: under systemd-socket-activate iopsd serves on the
passed socket (LISTEN_FDS) and binds nothing itself; and, as systemd keeps
the socket across a restart of the service, an iopsd that stops leaves it
listening for the next one (it used to shut it down: the next start failed
with "fd 3 is not a listening stream socket")."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import http.client

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import IOPSD, free_port, require_tool, wait_until  # noqa: E402


def get_metrics(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/metrics")
        r = c.getresponse()
        return r.status, r.read().decode()
    except (OSError, http.client.HTTPException):
        return None


def restart_keeps_the_socket(cfg):
    """Two iopsd in turn on one socket held here, as systemd holds it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        port, fd = s.getsockname()[1], s.fileno()
        for run in (1, 2):
            p = subprocess.Popen(["sh", "-c", f'exec 3<&{fd}; LISTEN_FDS=1 LISTEN_PID=$$ exec "$0" --config "$1"',
                                  IOPSD, cfg], pass_fds=(fd,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                got = wait_until(lambda: get_metrics(port) or (p.poll() is not None and ("exited", p.poll())),
                                 30, 0.1, f"start {run} answering on the kept socket")
                assert got[0] == 200, (run, got, p.stderr.read().decode() if p.poll() is not None else "")
            finally:
                p.terminate()
                rc = p.wait(30)
            assert rc == 0, (run, rc)
            assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1, \
                f"iopsd stop {run} left the passed socket not listening"
    print("ok: a stopped iopsd leaves the passed socket listening; the next one serves on it")


def main():
    require_tool("systemd-socket-activate")
    tmp = tempfile.mkdtemp(prefix="iopsd-sa-")
    own_port = free_port()
    passed_port = free_port()
    cfg = os.path.join(tmp, "iopsd.conf")
    with open(cfg, "w") as f:
        f.write(f"[global]\nlisten_address=127.0.0.1:{own_port}\nstate_directory={tmp}\n")
    log = open(os.path.join(tmp, "log"), "wb")
    proc = subprocess.Popen(["systemd-socket-activate", "-l", f"127.0.0.1:{passed_port}",
                             IOPSD, "--config", cfg], stdout=log, stderr=subprocess.STDOUT)
    try:
        status, body = wait_until(lambda: get_metrics(passed_port), 30, 0.1, "an answer on the activated socket")
        assert status == 200 and "iopsd_build_info" in body, (status, body[:300])
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", own_port)) != 0, \
                "iopsd bound its configured address although a socket was passed"
        proc.terminate()
        assert proc.wait(30) == 0
        print("ok: served on the passed socket, bound nothing itself")
        restart_keeps_the_socket(cfg)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        with open(os.path.join(tmp, "log")) as f:
            sys.stdout.write(f.read())
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
