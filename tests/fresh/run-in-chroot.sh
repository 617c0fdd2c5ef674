#!/bin/bash
# The README's test command on a fresh Debian 12: a new mmdebstrap chroot,
# the tree copied in without .git (as from a tarball), CI=true
# ./tests/run.sh inside. --short runs only the steps that depend on what is
# installed (tests/run.sh --short); --ci runs CI's entry point, .ci/run
# (tests/run.sh, then the VM lab, tests/run.sh --lab). Needs root. See
# freshchroot.py.
set -euo pipefail
exec python3 "$(dirname "$0")/freshchroot.py" "$@"
