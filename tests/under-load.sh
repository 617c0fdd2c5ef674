#!/bin/bash
# The gate's promise, checked: its integration suite passes ROUNDS times in
# a row (default 2) with `stress-ng --cpu 2` beside it, on the sanitizer
# build that tests/run.sh made. Prints each round's time and result; exit 1
# when a round failed. Run by hand (tests/README.md), not by the gate.
#   tests/under-load.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
command -v stress-ng >/dev/null || { echo "under-load: stress-ng not installed (contrib/install-deps.sh --tests)" >&2; exit 1; }
[ -f build-asan/build.ninja ] && [ -f build/build.ninja ] || { echo "under-load: run tests/run.sh first (build, build-asan)" >&2; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export IOPSD_FLEET=$PWD/build/daemon/iopsd
stress-ng --cpu 2 --timeout 0 --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null || true; wait "$stress" 2>/dev/null || true' EXIT
rc=0
for i in $(seq 1 "$rounds"); do
	t0=$SECONDS
	r=0
	meson test -C build-asan --suite integration --print-errorlogs --no-rebuild --logbase "under-load-$i" || r=$?
	echo "== under-load round $i: exit $r after $((SECONDS - t0)) s (stress-ng --cpu 2 beside it; load $(cut -d' ' -f1-3 /proc/loadavg))"
	[ "$r" -eq 0 ] || rc=1
done
python3 tests/slowest.py --top 10 --logbase 'under-load-*' build-asan
exit $rc
