#!/usr/bin/env python3
"""A reload (SIGHUP) applies --web.config.file: a basic-auth user removed
from the file gets 401 afterwards, and after the certificate and key are
swapped new connections see the new certificate (connections already open
may finish with the old one). The remaining user keeps getting 200. The
connection limits apply at a reload too (max_connections_per_ip lowered to
2: a third connection from one address is refused)."""
import base64
import http.client
import os
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
max_connections_per_ip={per_ip}
"""


def make_cert(tmp, name):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "2", "-nodes", "-subj",
                    f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", f"{tmp}/{name}.key", "-out", f"{tmp}/{name}.pem"], check=True, capture_output=True)
    der = subprocess.run(["openssl", "x509", "-in", f"{tmp}/{name}.pem", "-outform", "DER"], check=True,
                         capture_output=True).stdout
    return der


def bcrypt(user, password):
    return subprocess.run(["htpasswd", "-nbB", user, password], check=True, capture_output=True,
                          text=True).stdout.strip().split(":", 1)[1]


def write_web(path, cert, users):
    with open(path, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {cert}.pem\n  key_file: {cert}.key\n")
        f.write("basic_auth_users:\n" + "".join(f"  {u}: {h}\n" for u, h in users.items()))


def get(port, user, password, path="/api/v1/status"):
    """(status, the server's certificate in DER) over a new connection."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    try:
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        c.request("GET", path, headers={"Authorization": f"Basic {auth}"})
        cert = c.sock.getpeercert(binary_form=True)
        r = c.getresponse()
        r.read()
        return r.status, cert
    finally:
        c.close()


def main():
    t.require_tool("openssl", "htpasswd")
    d = t.Daemon(CONFIG.format(per_ip=16))
    web = os.path.join(d.tmp, "web.yml")
    cert_a, cert_b = make_cert(d.tmp, "a"), make_cert(d.tmp, "b")
    users = {"alice": bcrypt("alice", "wonder land"), "bob": bcrypt("bob", "builder")}
    write_web(web, "a", users)
    d.args += ["--web.config.file", web]
    try:
        d.start(wait_http=False)
        t.wait_until(lambda: _up(d), 15, what="iopsd over TLS")
        assert get(d.port, "bob", "builder") == (200, cert_a)
        assert get(d.port, "alice", "wonder land") == (200, cert_a)
        print("ok: before the reload: alice and bob get 200 with certificate a")

        del users["bob"]
        write_web(web, "b", users)
        with open(d.config, "w") as f:
            f.write(CONFIG.format(per_ip=2).replace("@TMP@", d.tmp))
        reloads = d.read_log().count("Reloaded")
        d.signal(1)  # SIGHUP
        t.wait_until(lambda: d.read_log().count("Reloaded") > reloads, 10, what="the reload")

        status, cert = get(d.port, "bob", "builder")
        assert status == 401, f"a user removed from the web config still gets {status} after a reload"
        status, cert = get(d.port, "alice", "wonder land")
        assert status == 200, status
        assert cert == cert_b, "new connections after the reload still see the old certificate"
        print("ok: after the reload: bob gets 401, alice 200, new connections see certificate b")

        held = [held_connection(d.port) for _ in range(2)]
        try:
            status = None
            try:
                status, _ = get(d.port, "alice", "wonder land")
            except (OSError, http.client.HTTPException):
                pass
            assert status is None, f"a third connection from one address got {status} with max_connections_per_ip=2"
        finally:
            for c in held:
                c.close()
        t.wait_until(lambda: _up(d), 10, what="connections again once the two are closed")
        print("ok: max_connections_per_ip=2 from the reload holds for new connections")
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}:\n{d.read_log()[-3000:]}"
    finally:
        d.cleanup()
    print("PASS")


def held_connection(port):
    """A TLS connection that has sent nothing yet (it counts against the limits)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    c.connect()
    return c


def _up(d):
    assert d.proc.poll() is None, d.read_log()
    try:
        return get(d.port, "alice", "wonder land", "/healthz")[0] in (200, 503)
    except OSError:
        time.sleep(0.1)
        return False


if __name__ == "__main__":
    main()
