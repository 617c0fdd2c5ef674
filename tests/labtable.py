#!/usr/bin/env python3
"""The lab's table (tests/run.sh --lab): one row per lab test of the run,
from meson's JSON test log, with its result, its seconds, what it needs and
its key figures (the lines `figure: NAME=VALUE` it printed, else its
summary line). Exit 1 when a
test did not pass (a skip included: a lab run asked for it).

usage: tests/labtable.py BUILDDIR/meson-logs/lab.json
       tests/labtable.py --list BUILDDIR     every lab test and what it needs"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slowest import testlog  # noqa: E402


def lab_tests(builddir):
    """[(name, needs)] of suite lab, from meson introspect."""
    out = subprocess.run(["meson", "introspect", "--tests", builddir], check=True,
                         stdout=subprocess.PIPE).stdout
    return [(t["name"], t.get("env", {}).get("IOPSD_LAB_NEEDS", "")) for t in json.loads(out)
            if any(s.split(":")[-1] == "lab" for s in t.get("suite", []))]


def figures(stdout):
    """The test's `figure: NAME=VALUE` lines; without any, its summary:
    the last line that starts with "ok" or counts its checks, else its
    last line."""
    lines = [line.strip() for line in (stdout or "").splitlines() if line.strip()]
    figs = [line.split(":", 1)[1].strip() for line in lines if line.startswith("figure: ")]
    if figs or not lines:
        return figs
    summary = [line for line in lines if line.startswith("ok") or " checks in " in line]
    last = (summary or lines)[-1]
    return [last if len(last) <= 110 else last[:107] + "..."]


def table(path):
    rows = list(testlog(path))
    if not rows:
        print(f"labtable: no test ran ({path} is empty)")
        return 1
    builddir = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    needs = dict(lab_tests(builddir))
    width = max(len(r["name"].split(" / ")[-1]) for r in rows)
    print(f"\n{'test':<{width}}  {'result':<7} {'seconds':>7}  key figures / needs")
    bad = 0
    for r in rows:
        name = r["name"].split(" / ")[-1]
        result = r.get("result", "?")
        bad += result != "OK"
        figs = figures(r.get("stdout"))
        print(f"{name:<{width}}  {result:<7} {r.get('duration', 0):7.0f}  {'; '.join(figs) or '-'}")
        print(f"{'':<{width}}  {'':<7} {'':>7}  needs: {needs.get(name, '?')}")
    print(f"{len(rows)} lab tests, {len(rows) - bad} passed, "
          f"{sum(r.get('duration', 0) for r in rows):.0f} s in all")
    return 1 if bad else 0


def main(argv):
    if argv[:1] == ["--list"] and len(argv) == 2:
        for name, needs in lab_tests(argv[1]):
            print(f"{name:<16} {needs}")
        return 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    return table(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
