#!/usr/bin/env python3
"""List C functions longer than a limit (default 60 lines, counted as a
reader counts them: from the first line of the signature to the closing
brace, both included), and production
.c files longer than a file limit (default 900 lines), for the folders given
(default: every layer, daemon/ included). Exit 1 when any is found.

The tree is kernel-style (enforced by .clang-format): a function's opening
brace stands alone in column 0 and its closing brace too, so the scan needs
no C parser.

usage: function-length.py [--max N] [--max-file-lines N] [DIR...]"""
import argparse
import os
import re
import sys

DEFAULT_DIRS = ["common", "config", "probes", "metrics", "http", "daemon"]
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """(name, first line, length) of each function in `path`: from the
    signature's first line to the closing brace, both included."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            # the signature: back to the line that starts in column 0
            j = i - 1
            while j > 0 and lines[j][:1] in ("\t", " "):
                j -= 1
            m = NAME.search(lines[j])
            end = i + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            if m:
                out.append((m.group(1), j + 1, end - j + 1))
            i = end
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=60)
    ap.add_argument("--max-file-lines", type=int, default=900)
    ap.add_argument("dirs", nargs="*")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dirs = args.dirs or [d for d in DEFAULT_DIRS if os.path.isdir(os.path.join(root, d))]
    long = []
    big = []
    for d in dirs:
        base = d if os.path.isabs(d) else os.path.join(root, d)
        for dirpath, _, files in os.walk(base):
            for name in sorted(files):
                if name.endswith(".c"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        n_lines = f.read().count("\n")
                    if n_lines > args.max_file_lines:
                        big.append((n_lines, os.path.relpath(path, root)))
                    for fn, line, n in functions(path):
                        if n > args.max:
                            long.append((n, os.path.relpath(path, root), line, fn))
    for n, path, line, fn in sorted(long, reverse=True):
        print(f"{path}:{line}: {fn}() is {n} lines (limit {args.max})")
    for n, path in sorted(big, reverse=True):
        print(f"{path}: {n} lines (limit {args.max_file_lines})")
    if long:
        print(f"{len(long)} function(s) over {args.max} lines: split them by the steps they do",
              file=sys.stderr)
    if big:
        print(f"{len(big)} file(s) over {args.max_file_lines} lines: a file does one job",
              file=sys.stderr)
    if long or big:
        return 1
    print(f"ok: no function over {args.max} lines and no file over {args.max_file_lines} "
          f"in {', '.join(dirs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
