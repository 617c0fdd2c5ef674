#!/usr/bin/env python3
"""contrib/alertmanager as shipped: amtool check-config passes; info alerts
route to the ticket receiver and the rest to the pager; every alert of the
rules has a runbook_url naming its page in docs/runbooks, and every page
says what the alert means, how to confirm it and what to do; and the
notification text (iopsd.tmpl, rendered by amtool template render) of a
throttled RAID0 member says, at 3 a.m., the host, device, array, mount
point, volume id, since when, the rate, the declared limit against the
ceiling found, and the runbook."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import SRCDIR, require_tool  # noqa: E402

AM_DIR = os.path.join(SRCDIR, "contrib", "alertmanager")
CONFIG = os.path.join(AM_DIR, "alertmanager.yml")
RULES = os.path.join(SRCDIR, "contrib", "prometheus", "rules", "iopsd-alerts.rules.yml")
RUNBOOKS = os.path.join(SRCDIR, "docs", "runbooks")


def amtool(*args):
    r = subprocess.run(["amtool", *args], capture_output=True, text=True)
    assert r.returncode == 0, f"amtool {' '.join(args)}: {r.returncode}\n{r.stdout}{r.stderr}"
    return r.stdout


def check(cond, msg, failures):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def check_routes(failures):
    out = amtool("check-config", CONFIG)
    check("SUCCESS" in out and "5 inhibit rules" in out, f"amtool check-config: {out.split()[-1]}", failures)
    for labels, want in ((["alertname=IopsdBurstBalanceLow", "severity=info"], "iopsd-ticket"),
                         (["alertname=IopsdDeviceThrottled", "severity=warning"], "iopsd-page"),
                         (["alertname=IopsdDown", "severity=critical"], "iopsd-page"),
                         (["alertname=IopsdCeilingInhibitor", "severity=none", "cause=IopsdDeviceThrottled"],
                          "iopsd-none")):
        got = amtool("config", "routes", "test", f"--config.file={CONFIG}", *labels).strip()
        check(got == want, f"{' '.join(labels)} routes to {got} (want {want})", failures)


def check_runbooks(failures):
    with open(RULES) as f:
        text = f.read()
    alerts = re.findall(r"- alert: (\w+)\n", text)
    urls = dict(re.findall(r"- alert: (\w+)\n(?:(?!- alert:).*\n)*?\s+runbook_url: \"[^\"]*/(\w+)\.md\"", text))
    index = open(os.path.join(RUNBOOKS, "README.md")).read()
    for a in alerts:
        path = os.path.join(RUNBOOKS, f"{a}.md")
        page = open(path).read() if os.path.exists(path) else ""
        sections = all(s in page for s in ("**Meaning.**", "**Confirm.**", "**What to do.**"))
        check(urls.get(a) == a and sections and f"({a}.md)" in index,
              f"{a}: runbook_url -> {urls.get(a)}.md, page with meaning/confirm/what to do: {sections}", failures)
    check(len(alerts) >= 14, f"{len(alerts)} alerts in the rules", failures)


def member_alert(status):
    """A firing (or resolved) alert as the rules make it: the member xvdf
    of md0 on db1, throttled at 3000 IOPS (its labels from
    iopsd:device:info, its text from the rule's annotation template)."""
    labels = {"alertname": "IopsdDeviceThrottled", "severity": "warning", "job": "iopsd",
              "instance": "db1.example.internal:9477", "host": "db1", "device": "xvdf", "kind": "disk",
              "volume_id": "vol-0aaaaaaaaaaaaaaa1", "array": "md0", "volume": "md0", "mountpoint": "/data"}
    return {
        "status": status, "labels": labels,
        "annotations": {
            "summary": "xvdf (/data) on db1.example.internal:9477 is held at a ceiling",
            "description": "xvdf (volume vol-0aaaaaaaaaaaaaaa1), member of md0, mounted on /data: IOPS or throughput flat while "
                           "requests queue, 100% of the last minute; throttled 75% of "
                           "the last hour. Now 3000 IOPS, 11.72MiB/s. Declared limit: none; ceiling found: "
                           "3000 IOPS. A provisioned limit nobody declared, or one that was reached.",
            "runbook_url": "file:///usr/share/iopsd/runbooks/IopsdDeviceThrottled.md"},
        "startsAt": "2026-12-03T03:12:45Z",
        "endsAt": "2026-12-03T03:40:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph", "fingerprint": "0123456789abcdef"}


def render(tmp, status):
    alert = member_alert(status)
    data = {"receiver": "iopsd-page", "status": status, "alerts": [alert],
            "groupLabels": {"instance": alert["labels"]["instance"], "volume": "md0"},
            "commonLabels": alert["labels"], "commonAnnotations": alert["annotations"],
            "externalURL": "http://alertmanager:9093"}
    path = os.path.join(tmp, f"{status}.json")
    with open(path, "w") as f:
        json.dump(data, f)
    glob = os.path.join(AM_DIR, "*.tmpl")
    title = amtool("template", "render", f"--template.glob={glob}", f"--template.data={path}",
                   '--template.text={{ template "iopsd.title" . }}')
    text = amtool("template", "render", f"--template.glob={glob}", f"--template.data={path}",
                  '--template.text={{ template "iopsd.text" . }}')
    return title.strip(), text


def check_template(failures):
    with tempfile.TemporaryDirectory(prefix="iopsd-am-") as tmp:
        title, text = render(tmp, "firing")
        print(f"--- rendered (firing) ---\n{title}\n{text}---")
        check(title == "[FIRING:1] IopsdDeviceThrottled on db1, volume md0", f"title {title!r}", failures)
        want = [r"^  host:\s+db1 \(db1\.example\.internal:9477\)$", r"^  device:\s+xvdf \(disk\)$",
                r"^  array:\s+md0$", r"^  mounted on:\s+/data$", r"^  volume id:\s+vol-0aaaaaaaaaaaaaaa1$",
                r"^  since:\s+2026-12-03 03:12:45 UTC$", r"Now 3000 IOPS, 11\.72MiB/s\.",
                r"Declared limit: none; ceiling found: 3000 IOPS\.",
                r"^  runbook:\s+file:///usr/share/iopsd/runbooks/IopsdDeviceThrottled\.md$"]
        for w in want:
            check(re.search(w, text, re.M) is not None, f"firing text has {w}", failures)
        title, text = render(tmp, "resolved")
        check(title.startswith("[RESOLVED] IopsdDeviceThrottled on db1"), f"resolved title {title!r}", failures)
        check(re.search(r"RESOLVED at 2026-12-03 03:40:00 UTC", text) is not None,
              "resolved text says when it resolved", failures)


def main():
    require_tool("amtool")
    failures = []
    check_routes(failures)
    check_runbooks(failures)
    check_template(failures)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
