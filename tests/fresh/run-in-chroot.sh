#!/bin/bash
# The README's test command on a fresh Debian 12: a new mmdebstrap chroot,
# the tree copied in without .git (as from a tarball), CI=true
# ./tests/run.sh inside. --short runs only the steps that depend on what is
# installed (tests/run.sh --short); --ci runs CI's entry point, .ci/run
# (the gate); --tarball FILE unpacks a release tarball (meson dist's)
# instead of copying the tree. Needs root. See freshchroot.py; the lab's
# fresh test (test-fresh.py) runs README commands 1 and 2 this way.
set -euo pipefail
exec python3 "$(dirname "$0")/freshchroot.py" "$@"
