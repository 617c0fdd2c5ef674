#!/usr/bin/env python3
"""Fail when a lower layer includes a header of a higher one.

The folders are layers with one direction of dependency (DESIGN, STYLE,
docs/architecture.md), probes/ in three rooms:
    daemon/ -> http/ -> metrics/ -> probes/detect/ -> probes/devices/
            -> probes/io/ -> config/ -> common/
A file may include headers of its own folder and of the folders below it,
never of one above; a file directly in probes/ (none should be) would be
checked as the top room. Headers that no layer holds (system headers, the
generated iopsd-build.h) are not checked. The tests, benchmarks and the
fuzzers sit above every layer and may include anything.

usage: layers.py [SRCDIR]"""
import os
import re
import sys

LAYERS = ["common", "config", "probes/io", "probes/devices", "probes/detect", "metrics", "http", "daemon"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    present = [l for l in LAYERS if os.path.isdir(os.path.join(root, l))]
    rank = {l: i for i, l in enumerate(present)}
    owner = {}  # header file name -> layer that holds it
    def walk(layer):
        """The files of a layer, not those of a layer nested in it."""
        for dirpath, dirs, files in os.walk(os.path.join(root, layer)):
            dirs[:] = [d for d in dirs if os.path.relpath(os.path.join(dirpath, d), root) not in rank]
            yield dirpath, files

    for layer in present:
        for dirpath, files in walk(layer):
            for f in files:
                if f.endswith(".h"):
                    if f in owner and owner[f] != layer:
                        print(f"{f}: in both {owner[f]}/ and {layer}/; header names must be unique")
                        return 1
                    owner[f] = layer
    bad = []
    for layer in present:
        for dirpath, files in walk(layer):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    name = os.path.basename(m.group(1))
                    dep = owner.get(name)
                    if dep is not None and rank[dep] > rank[layer]:
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append(f"{os.path.relpath(path, root)}:{line}: {layer}/ includes "
                                   f"{m.group(1)} of {dep}/, a higher layer")
    for b in bad:
        print(b)
    if bad:
        print(f"layers, lowest first: {' <- '.join(present)}; move the code, or the header, to the "
              "layer that owns it", file=sys.stderr)
        return 1
    print(f"ok: {' <- '.join(present)}: no include goes up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
