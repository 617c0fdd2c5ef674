#!/bin/bash
# Run one libFuzzer harness from the committed corpus (read-only: new
# inputs go to a scratch directory). RUNS 0: every corpus input once and
# nothing more (a regression test); otherwise that many runs in all.
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
if [ "$runs" = 0 ]; then
	echo "run-fuzz: $(find "$corpus" -type f | wc -l) corpus inputs of $(basename "$corpus"), each run once"
fi
