#!/bin/bash
# Run one libFuzzer harness for a bounded number of runs, starting from the
# committed corpus (read-only: new inputs go to a scratch directory).
set -euo pipefail
harness=$1 corpus=$2 runs=${3:-20000}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# A finding may exit 77 (a sanitizer's exit code), which meson would read as
# a skip: every non-zero status is a failure here.
if ! "$harness" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=1024 "$scratch" "$corpus"; then
	echo "run-fuzz: $harness found a failing input (see above)" >&2
	exit 1
fi
