#!/usr/bin/env python3
"""A real Prometheus server scrapes iopsd on loopback, once in plain HTTP
and once through TLS with basic auth (the exporter-toolkit web config):
both targets must be up (Prometheus negotiates OpenMetrics, so this parses
iopsd's OpenMetrics with Prometheus' own parser) and the device, probe and
process series queryable through its HTTP API."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import free_port, require_tool, wait_until  # noqa: E402

spec = importlib.util.spec_from_file_location("server", os.path.join(os.path.dirname(__file__), "test-http-server.py"))
server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(server)

PROM_CONFIG = """global:
  scrape_interval: 5s
  scrape_timeout: 5s
scrape_configs:
  - job_name: iopsd
    static_configs:
      - targets: ['127.0.0.1:{plain}']
  - job_name: iopsd-tls
    scheme: https
    tls_config:
      ca_file: {tmp}/tls.crt
      server_name: localhost
    basic_auth:
      username: prometheus
      password: scrape-secret
    static_configs:
      - targets: ['127.0.0.1:{tls}']
"""


def make_tls_web_config(tmp):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-days", "2", "-nodes", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", f"{tmp}/tls.key", "-out", f"{tmp}/tls.crt"], check=True, capture_output=True)
    hashed = subprocess.run(["htpasswd", "-nbB", "prometheus", "scrape-secret"], check=True,
                            capture_output=True, text=True).stdout.strip().split(":", 1)[1]
    path = f"{tmp}/web.yml"
    with open(path, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
                f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    return path


def api(port, path, **params):
    url = f"http://127.0.0.1:{port}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=30) as r:
        doc = json.load(r)
    assert doc["status"] == "success", doc
    return doc["data"]


def main():
    require_tool("prometheus", "openssl", "htpasswd")
    tmp = tempfile.mkdtemp(prefix="iopsd-prom-")
    plain = server.Server(fixture=False).wait()
    web = make_tls_web_config(tmp)
    tls_port = free_port()
    tls = server.Server(listen=f"127.0.0.1:{tls_port}", fixture=False, args=["--web.config.file", web])
    prom_port = free_port()
    with open(f"{tmp}/prometheus.yml", "w") as f:
        f.write(PROM_CONFIG.format(plain=plain.port, tls=tls_port, tmp=tmp))
    prom_log = open(f"{tmp}/prometheus.log", "wb")
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml",
                             f"--storage.tsdb.path={tmp}/data", f"--web.listen-address=127.0.0.1:{prom_port}",
                             "--log.level=warn"], stdout=prom_log, stderr=subprocess.STDOUT)
    try:
        def targets_up():
            try:
                active = api(prom_port, "targets")["activeTargets"]
            except OSError:
                return False
            health = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in active}
            return health if all(h == "up" for h, _ in health.values()) and len(health) == 2 else False
        try:
            health = wait_until(targets_up, 60, 0.5, "both iopsd targets up in Prometheus")
        except AssertionError:
            print(api(prom_port, "targets"))
            raise
        print(f"ok: Prometheus scrapes both targets: {health}")

        def queryable(expr):
            def q():
                res = api(prom_port, "query", query=expr)["result"]
                return res if res else False
            return wait_until(q, 60, 0.5, f"{expr} in Prometheus")
        for job in ["iopsd", "iopsd-tls"]:
            res = queryable(f'iopsd_device_reads_completed_total{{job="{job}"}}')
            assert all(float(r["value"][1]) >= 0 for r in res)
            queryable(f'iopsd_probe_latency_seconds_bucket{{job="{job}",le="+Inf"}}')
            queryable(f'process_resident_memory_bytes{{job="{job}"}} > 0')
            queryable(f'iopsd_build_info{{job="{job}"}} == 1')
        print(f"ok: iopsd_device_reads_completed_total queryable ({len(res)} devices), histograms, process_*")
    finally:
        prom.terminate()
        try:
            prom.wait(30)
        except subprocess.TimeoutExpired:
            prom.kill()
        prom_log.close()
        with open(f"{tmp}/prometheus.log") as f:
            log = f.read()
        if log.strip():
            print("prometheus log:\n" + log[-3000:])
        rc_plain, rc_tls = plain.stop(), tls.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    assert rc_plain == 0 and rc_tls == 0, (rc_plain, rc_tls)


if __name__ == "__main__":
    main()
