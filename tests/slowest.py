#!/usr/bin/env python3
"""The slowest tests of a run, from meson's JSON test logs
(BUILDDIR/meson-logs/LOGBASE.json, one object per test and line): the top N
(default 10) with their times and results, and the total.

usage: tests/slowest.py [--top N] [--logbase GLOB] BUILDDIR..."""
import argparse
import glob
import json
import os
import sys


def testlog(path):
    """The tests of one meson JSON test log, one dict each."""
    with open(path, errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and "name" in r and "duration" in r:
                yield r


def records(dirs, logbase):
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "meson-logs", logbase + ".json"))):
            for r in testlog(path):
                yield os.path.basename(d), r


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--logbase", default="*", help="which logs (a glob; default every one)")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args(argv)
    tests = list(records(args.dirs, args.logbase))
    if not tests:
        print("slowest: no meson test logs under " + ", ".join(args.dirs))
        return 0
    tests.sort(key=lambda dr: dr[1]["duration"], reverse=True)
    total = sum(r["duration"] for _, r in tests)
    print(f"the {min(args.top, len(tests))} slowest of {len(tests)} tests ({total:.0f} s in all, "
          "some beside each other):")
    for d, r in tests[:args.top]:
        print(f"  {r['duration']:7.1f} s  {d}: {r['name'].split(':', 1)[-1]} ({r.get('result', '?')})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
