#!/usr/bin/env python3
"""promtool check metrics on the live /metrics, in both formats, with
devices (a fixture md RAID0 over two volumes), a probe that has run, and
process_* metrics.

promtool (2.x) reads only the text format 0.0.4: on OpenMetrics it reports
"no help text" for every counter, because OpenMetrics names a counter family
without its _total suffix. Those findings are checked to be exactly that
(the family has its HELP and TYPE under the suffix-less name) and any other
finding fails the test."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import require_tool, wait_until  # noqa: E402
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("server", os.path.join(os.path.dirname(__file__), "test-http-server.py"))
server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(server)


def promtool(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    findings = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    return r.returncode, findings


def main():
    require_tool("promtool")
    s = server.Server().wait()
    try:
        def probe_ran():
            _, _, body = server.request("GET", "/metrics", port=s.port)
            return re.search(r'^iopsd_probe_runs_total\{probe="rr",[^}]*\} [1-9]', body.decode(), re.M)
        wait_until(probe_ran, 30, 0.2, "the probe to complete a run")

        _, h, body = server.request("GET", "/metrics", port=s.port)
        text = body.decode()
        assert h["content-type"] == server.PROM_TYPE
        for needle in ["iopsd_probe_latency_seconds_bucket{", "iopsd_device_reads_completed_total{device=\"md0\"}",
                       "process_cpu_seconds_total ", "iopsd_build_info{"]:
            assert needle in text, f"{needle} missing from /metrics"
        rc, findings = promtool(text)
        assert rc == 0 and not findings, f"promtool on the text format: exit {rc}: {findings}"
        print(f"ok: promtool check metrics: nothing to report on {len(text.splitlines())} lines (0.0.4)")

        _, h, body = server.request("GET", "/metrics", {"Accept": "application/openmetrics-text"}, port=s.port)
        om = body.decode()
        assert h["content-type"] == server.OM_TYPE and om.endswith("# EOF\n")
        rc, findings = promtool(om)
        unexplained = []
        for f in findings:
            m = re.fullmatch(r"(\S+)_total no help text", f)
            fam = m and m.group(1)
            if not (fam and f"# HELP {fam} " in om and f"# TYPE {fam} counter\n" in om):
                unexplained.append(f)
        assert not unexplained, f"promtool on OpenMetrics: {unexplained}"
        print(f"ok: promtool on OpenMetrics: only the {len(findings)} counter-suffix notes of a 0.0.4 linter")
    finally:
        assert s.stop() == 0


if __name__ == "__main__":
    main()
