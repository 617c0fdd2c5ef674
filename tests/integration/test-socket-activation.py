#!/usr/bin/env python3
"""Socket activation: under systemd-socket-activate iopsd serves on the
passed socket (LISTEN_FDS) and binds nothing itself."""
import os
import socket
import subprocess
import sys
import tempfile
import http.client

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import IOPSD, free_port, require_tool, wait_until  # noqa: E402


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
        def scrape():
            try:
                c = http.client.HTTPConnection("127.0.0.1", passed_port, timeout=5)
                c.request("GET", "/metrics")
                r = c.getresponse()
                return r.status, r.read().decode()
            except (OSError, http.client.HTTPException):
                return None
        status, body = wait_until(scrape, 15, 0.1, "an answer on the activated socket")
        assert status == 200 and "iopsd_build_info" in body, (status, body[:300])
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", own_port)) != 0, \
                "iopsd bound its configured address although a socket was passed"
        proc.terminate()
        assert proc.wait(5) == 0
        print("ok: served on the passed socket, bound nothing itself")
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        with open(os.path.join(tmp, "log")) as f:
            sys.stdout.write(f.read())


if __name__ == "__main__":
    main()
