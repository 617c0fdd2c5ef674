#!/usr/bin/env python3
"""A reload (SIGHUP) applies --web.config.file: a basic-auth user removed
from the file gets 401 afterwards, and after the certificate and key are
swapped new connections see the new certificate (connections already open
may finish with the old one). The remaining user keeps getting 200. The
connection limits apply at a reload too (max_connections_per_ip lowered to
2: a third connection from one address is refused).

A reload that fails halfway (the configuration loads, but the web config it
names cannot: a certificate that is not there) keeps the running
configuration whole: the probe the new one adds does not start, the
connection limit and the web config stay the old ones, the log says
"Reload failed" and iopsd_config_last_reload_successful is 0, until a
reload that succeeds sets it back to 1.
connection_timeout and max_history_points apply at a reload too: on a
fixture tree of 500 devices, a history window that max_history_points=
100000 answers is refused (400, naming the new limit) after a reload to
1000, and an idle connection that connection_timeout=30s kept is closed
within 2 s + the 1 s sweep after a reload to 2s (a timing check; in the
gate within 20 s, which still tells it from the old 30 s)."""
import base64
import http.client
import os
import signal
import socket
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

# added by the reload that fails halfway
PROBE = """
[added]
rw=randread
directory=@TMP@
bs=4k
size=1m
runtime=100ms
interval=1s
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


def get(port, user, password, path="/api/v1/status", body=None):
    """(status, the server's certificate in DER) over a new connection;
    the answer's text into body[0] when body is a list."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx)
    try:
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        c.request("GET", path, headers={"Authorization": f"Basic {auth}"})
        cert = c.sock.getpeercert(binary_form=True)
        r = c.getresponse()
        text = r.read().decode()
        if body is not None:
            body[:] = [text]
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
        t.wait_until(lambda: _up(d), 30, what="iopsd over TLS")
        assert get(d.port, "bob", "builder") == (200, cert_a)
        assert get(d.port, "alice", "wonder land") == (200, cert_a)
        print("ok: before the reload: alice and bob get 200 with certificate a")

        del users["bob"]
        write_web(web, "b", users)
        with open(d.config, "w") as f:
            f.write(CONFIG.format(per_ip=2).replace("@TMP@", d.tmp))
        reloads = d.read_log().count("Reloaded")
        d.signal(1)  # SIGHUP
        t.wait_until(lambda: d.read_log().count("Reloaded") > reloads, 30, what="the reload")

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
        t.wait_until(lambda: _up(d), 30, what="connections again once the two are closed")
        print("ok: max_connections_per_ip=2 from the reload holds for new connections")
        check_failed_reload(d, web, users, cert_b)
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}:\n{d.read_log()[-3000:]}"
    finally:
        d.cleanup()
    check_reloaded_limits()
    print("PASS")


LIMITS_CONFIG = """[global]
sample_interval=1s
state_directory=@TMP@
history=2m
connection_timeout={timeout}s
max_history_points={points}
"""
N_DEVICES = 500


def idle_connection_lasts(port, limit):
    """Seconds until the server closes a connection that sends nothing
    (None: still open after `limit` s)."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
        t0 = time.monotonic()
        try:
            while s.recv(1024):
                pass
        except socket.timeout:
            return None
        except ConnectionError:
            pass
        return time.monotonic() - t0


def check_reloaded_limits():
    d = t.Daemon(LIMITS_CONFIG.format(timeout=30, points=100000))
    tree = os.path.join(d.tmp, "tree")
    subprocess.run([sys.executable, os.path.join(t.SRCDIR, "bench", "scrape", "make-tree.py"), tree,
                    str(N_DEVICES)], check=True, stdout=subprocess.DEVNULL)
    d.args += ["--path.procfs", f"{tree}/proc", "--path.sysfs", f"{tree}/sys"]
    try:
        d.start()
        # 10 s of 500 devices' series: 5000 points
        status, _, body = d.get("/api/v1/history?window=10s", timeout=30)
        assert status == 200, f"before the reload, max_history_points=100000: {status} {body[:200]}"
        lasted = idle_connection_lasts(d.port, 5)
        assert lasted is None, f"an idle connection closed after {lasted:.1f} s with connection_timeout=30s"
        with open(d.config, "w") as f:
            f.write(LIMITS_CONFIG.format(timeout=2, points=1000).replace("@TMP@", d.tmp))
        reloads = d.read_log().count("Reloaded")
        d.signal(signal.SIGHUP)
        t.wait_until(lambda: d.read_log().count("Reloaded") > reloads, 30, what="the reload")
        status, _, body = d.get("/api/v1/history?window=10s", timeout=30)
        assert status == 400 and b"max_history_points=1000 " in body, \
            f"after a reload to max_history_points=1000: {status} {body[:200]}"
        # within 20 s (the old connection_timeout, 30 s, told apart), in the
        # lab within 2 s + 1.5 s
        lasted = idle_connection_lasts(d.port, 25)
        assert lasted is not None and lasted <= 20, \
            f"an idle connection lasted {lasted} s (None: 25 s or more) after a reload to connection_timeout=2s"
        t.timing_check(lasted <= 2 + 1.5, f"an idle connection lasted {lasted:.1f} s after a reload to "
                       f"connection_timeout=2s, <= 3.5 s")
        print(f"ok: after the reload the window is refused ({body[:120].decode()}...), and an idle "
              f"connection is closed after {lasted:.1f} s")
        rc, _ = d.stop()
        assert rc == 0, f"iopsd exited with {rc}"
    finally:
        d.cleanup()


def metrics(d):
    body = []
    status, _ = get(d.port, "alice", "wonder land", "/metrics", body)
    assert status == 200, status
    return body[0]


def third_connection_refused(port):
    held = [held_connection(port) for _ in range(2)]
    try:
        get(port, "alice", "wonder land")
        return False
    except (OSError, http.client.HTTPException):
        return True
    finally:
        for c in held:
            c.close()


def check_failed_reload(d, web, users, cert_b):
    with open(web, "w") as f:
        f.write("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n")
        f.write("basic_auth_users:\n" + "".join(f"  {u}: {h}\n" for u, h in users.items()))
    with open(d.config, "w") as f:
        f.write((CONFIG.format(per_ip=16) + PROBE).replace("@TMP@", d.tmp))
    failed, reloads = d.read_log().count("Reload failed"), d.read_log().count("Reloaded")
    d.signal(1)  # SIGHUP
    t.wait_until(lambda: d.read_log().count("Reload failed") > failed, 30, what="the reload to fail")
    time.sleep(2)  # the added probe would have run by now
    log = d.read_log()
    assert log.count("Reloaded") == reloads, "a reload whose web config cannot be loaded says it reloaded"
    m = metrics(d)
    assert t.metric_value(m, "iopsd_config_last_reload_successful") == 0, \
        "iopsd_config_last_reload_successful is not 0 after a failed reload"
    assert t.metric_value(m, "iopsd_probe_success", {"probe": "added"}) is None, \
        "the probe of a configuration whose reload failed runs"
    status, cert = get(d.port, "alice", "wonder land")
    assert (status, cert) == (200, cert_b), "the running web config did not stay after a failed reload"
    assert third_connection_refused(d.port), "max_connections_per_ip of the failed reload applies"
    t.wait_until(lambda: _up(d), 30, what="connections again once the two are closed")
    print("ok: a reload whose web config cannot be loaded fails whole: the old probes, limits and "
          "web config stay, iopsd_config_last_reload_successful 0")

    write_web(web, "b", users)
    d.signal(1)
    t.wait_until(lambda: d.read_log().count("Reloaded") > reloads, 30, what="the good reload")
    t.wait_until(lambda: t.metric_value(metrics(d), "iopsd_probe_success", {"probe": "added"}) == 1, 30,
                 what="the added probe succeeding")
    assert t.metric_value(metrics(d), "iopsd_config_last_reload_successful") == 1
    assert not third_connection_refused(d.port), "max_connections_per_ip=16 of the good reload does not apply"
    print("ok: the next good reload applies it all, iopsd_config_last_reload_successful 1")


def held_connection(port):
    """A TLS connection that has sent nothing yet (it counts against the limits)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx)
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
