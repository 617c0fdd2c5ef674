#!/usr/bin/env python3
"""Fail when a Python script of the tree imports a module that neither the
standard library nor the tree itself holds, unless contrib/install-deps.sh
installs the Debian package that provides it. A fresh Debian has only
what the project's scripts install: test-fleet's `import yaml` passed on a
machine whose interpreter had PyYAML and failed in a new chroot.

usage: python-deps.py [SRCDIR]"""
import ast
import os
import re
import sys

# the Debian package of each third-party module the tree may import
PACKAGES = {
    "yaml": "python3-yaml",
    "fusepy": "python3-fusepy",
    "fuse": "python3-fusepy",
    "six": "python3-six",
}
SKIP_DIRS = {".git", "node_modules", "__pycache__"}


def python_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not os.path.exists(os.path.join(d, x, "meson-private"))]
        for f in files:
            path = os.path.join(d, f)
            if f.endswith(".py"):
                yield path
            elif "." not in f and os.access(path, os.X_OK):
                with open(path, "rb") as fh:
                    if re.match(rb"#!.*python", fh.readline()):
                        yield path


def imports(path):
    """Top-level module names imported anywhere in the file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def installed_packages(root):
    """The packages of install-deps.sh's lists (build=(...), tests=(...),
    package=(...)), not any word of the script."""
    with open(os.path.join(root, "contrib", "install-deps.sh")) as f:
        lists = re.findall(r"^[a-z]+=\(([^)]*)\)", f.read(), re.M)
    return {w for body in lists for w in body.split()}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = sorted(python_files(root))
    own = {os.path.splitext(os.path.basename(p))[0] for p in files}
    listed = installed_packages(root)
    bad = []
    for path in files:
        for mod, line in imports(path):
            if mod in sys.stdlib_module_names or mod in own:
                continue
            pkg = PACKAGES.get(mod)
            where = f"{os.path.relpath(path, root)}:{line}"
            if pkg is None:
                bad.append(f"{where}: imports {mod}, which no Debian package in PACKAGES provides")
            elif pkg not in listed:
                bad.append(f"{where}: imports {mod}, but contrib/install-deps.sh does not install {pkg}")
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        return 1
    print(f"ok: every import of {len(files)} Python scripts is the standard library's, the tree's, "
          f"or a package install-deps.sh installs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
