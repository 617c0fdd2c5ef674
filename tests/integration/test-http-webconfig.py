#!/usr/bin/env python3
"""--web.config.file with curl: TLS from a certificate made at test time,
basic auth with a bcrypt hash from htpasswd. The right password gets the
metrics; a wrong one, none, or an unknown user get 401 with WWW-Authenticate
and nothing else, and the connection closed; the sixth failure from one
address within 10 s gets 429 with Retry-After; plain HTTP to the TLS port gets no answer; a TLS version
below min_version is refused; a bad web config stops the start with a
FILE:LINE message and exit 78."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import free_port, require_tool, timing_check  # noqa: E402

spec = importlib.util.spec_from_file_location("server", os.path.join(os.path.dirname(__file__), "test-http-server.py"))
server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(server)


def curl(*args):
    """(exit status, http status, headers text, body) of one curl call."""
    r = subprocess.run(["curl", "-sS", "--max-time", "30", "-D", "-", "-o", "-", *args], capture_output=True)
    out = r.stdout.decode(errors="replace")
    head, _, body = out.partition("\r\n\r\n")
    status = int(head.split()[1]) if head.startswith("HTTP/") else None
    return r.returncode, status, head.lower(), body


def main():
    require_tool("curl", "openssl", "htpasswd")
    tmp = tempfile.mkdtemp(prefix="iopsd-web-")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "2", "-nodes", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", f"{tmp}/key.pem", "-out", f"{tmp}/cert.pem"], check=True, capture_output=True)
    hashed = subprocess.run(["htpasswd", "-nbB", "alice", "wonder land"], check=True, capture_output=True,
                            text=True).stdout.strip().split(":", 1)[1]
    web = f"{tmp}/web.yml"
    with open(web, "w") as f:
        f.write("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  min_version: TLS12\n"
                "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
                f"basic_auth_users:\n  alice: {hashed}\n")
    port = free_port()
    s = server.Server(listen=f"127.0.0.1:{port}", args=["--web.config.file", web])
    base = f"https://127.0.0.1:{port}"
    tls = ["--cacert", f"{tmp}/cert.pem"]
    try:
        def up():
            assert s.proc.poll() is None, s.read_log()
            return curl(*tls, "-u", "alice:wonder land", f"{base}/healthz")[1] in (200, 503)
        server.wait_until(up, 30, 0.1, "iopsd over TLS")

        rc, status, head, body = curl(*tls, "-u", "alice:wonder land", f"{base}/metrics")
        assert rc == 0 and status == 200 and "iopsd_build_info{" in body, (rc, status, body[:200])
        assert "x-content-type-options: nosniff" in head, head
        rc, status, head, body = curl(*tls, "-u", "alice:wonder land", f"{base}/api/v1/devices")
        assert status == 200 and "devices" in json.loads(body)
        print("ok: right password over TLS: 200, configured header sent")

        # each from an address of its own: an address gets 5 failures in 10 s, then 429
        src = iter(f"127.0.0.{n}" for n in range(10, 60))
        for what, auth in [("wrong password", ["-u", "alice:wonderland"]), ("no password", []),
                           ("unknown user", ["-u", "bob:wonder land"]), ("empty password", ["-u", "alice:"])]:
            for path in ["/metrics", "/api/v1/status", "/nope", "/"]:
                rc, status, head, body = curl(*tls, *auth, "--interface", next(src), f"{base}{path}")
                assert status == 401, f"{what} {path}: {status}"
                assert 'www-authenticate: basic realm="iopsd"' in head, f"{what}: {head}"
                assert json.loads(body) == {"error": "authentication required"}, f"{what}: {body!r}"
                assert "iopsd_" not in body and "x-content-type-options: nosniff" in head
        print("ok: wrong, missing, unknown-user credentials: 401 with WWW-Authenticate, nothing else")

        # the window is 10 s from the first failure: six TLS curls that took
        # 9 s or more cannot tell a missing 429 from a window that ended, so
        # such a sequence is tried again from a fresh address (3 at most)
        for n, addr in enumerate(["127.0.0.60", "127.0.0.61", "127.0.0.62"], 1):
            t0 = time.monotonic()
            statuses = [curl(*tls, "-u", "alice:guess", "--interface", addr, f"{base}/metrics")[1:3]
                        for _ in range(6)]
            took = time.monotonic() - t0
            codes = [st for st, _ in statuses]
            assert codes[:5] == [401] * 5 and codes[5] in (401, 429), codes
            assert "connection: close" in statuses[0][1], statuses
            if codes[5] == 429 or took < 9:
                assert codes == [401] * 5 + [429], f"six failures from {addr} in {took:.1f}s: {codes}"
                assert "retry-after:" in statuses[5][1], statuses
                break
            print(f"note: six failed logins from {addr} took {took:.1f}s, the 10 s window may have ended: "
                  f"{codes} cannot be judged (try {n} of 3)")
        else:
            print("note: no sequence of six failed logins within 9 s: the 429 was not checked")
        timing_check(took < 9, f"six failed logins from {addr} took {took:.1f}s (< 9 s, in the 10 s window)")
        rc, status, _, _ = curl(*tls, "-u", "alice:wonder land", f"{base}/metrics")
        assert status == 200, f"the right password from another address: {status}"
        print("ok: a 401 closes its connection; the 6th failure from one address in 10 s gets 429 "
              "with Retry-After, other addresses are not held up")

        rc, status, head, body = curl(f"http://127.0.0.1:{port}/metrics")
        assert rc != 0 and status is None and "iopsd_" not in body, (rc, status, body[:100])
        rc, status, _, _ = curl("-k", "--tls-max", "1.1", "-u", "alice:wonder land", f"{base}/metrics")
        assert rc != 0 and status is None, f"TLS 1.1 accepted despite min_version TLS12: {rc} {status}"
        rc, status, _, _ = curl(*tls, "-u", "alice:wonder land", f"{base}/healthz")
        assert status in (200, 503), "server down after plain HTTP and an old TLS version"
        print("ok: plain HTTP to the TLS port and TLS 1.1 get no answer; the server stays up")
    finally:
        assert s.stop() == 0

    bad = f"{tmp}/bad.yml"
    with open(bad, "w") as f:
        f.write("tls_server_config:\n  cert_file: cert.pem\n  key_file: missing.pem\n")
    for path, needle in [(bad, f"{bad}:3: key_file: cannot read"), (f"{tmp}/absent.yml", "cannot read the web config")]:
        b = server.Server(listen=f"127.0.0.1:{free_port()}", args=["--web.config.file", path])
        rc = b.proc.wait(30)
        log = b.read_log()
        b.stop()
        assert rc == 78 and needle in log, f"exit {rc}, log: {log}"
    print("ok: a bad web config stops the start: exit 78 with FILE:LINE")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
