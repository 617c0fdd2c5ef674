#!/bin/bash
# The README's test command. Two tiers from one list of tests
# (tests/meson.build; tests/README.md says which check is where):
#
# tests/run.sh: the gate, what CI runs (.ci/run). Installs what the tests
#   need, lints, builds (normal and sanitizers), runs the unit suites on
#   both builds, the integration suite (deterministic: fixtures, loop
#   devices, the real daemon, promtool, the live page) on the sanitizer
#   build, the package build with lintian, and the fuzzers over their
#   committed corpus. About 15 minutes on a 2-core machine. Under CI=true a
#   test that skips is a failure. Ends with its steps' times and the ten
#   slowest tests.
#
# tests/run.sh --short: only the steps that depend on what is installed
#   (the installs, both builds, the unit suites, test-live-page and the
#   package build), as on a fresh Debian.
#
# tests/run.sh --lab [NAME...]: the lab (suite lab), on the normal build
#   and the package: QEMU guests, the cgroup-lab ceilings, the fleet,
#   alerting end to end, the fresh machine, fuzzing past the corpus; every
#   lab test, or those named. Not in CI. Ends with a table: test, result,
#   seconds, what it needs and its key figures. --lab --list lists them.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=gate
names=()
case "${1:-}" in
"") ;;
--short) mode=short ;;
--lab)
	mode=lab
	shift
	names=("$@")
	;;
*)
	echo "usage: tests/run.sh [--short | --lab [--list | NAME...]]" >&2
	exit 2
	;;
esac

./contrib/install-deps.sh --tests

SECONDS=0
log=$(mktemp "${TMPDIR:-/tmp}/iopsd-run.XXXXXX")
times=$(mktemp -d "${TMPDIR:-/tmp}/iopsd-steps.XXXXXX")
trap 'rm -rf "$log" "$times"' EXIT
: >"$times/steps"

# quiet CMD...: run CMD with its output in the log; on failure print what
# failed and all of its output, and return its status.
quiet() {
	local rc=0
	"$@" >"$log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAILED (exit $rc): $*" >&2
		cat "$log" >&2
	fi
	return "$rc"
}

setup() { # DIR ARGS...
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		quiet meson configure "$dir" "$@" || return
	else
		quiet meson setup "$dir" "$@" || return
	fi
	quiet ninja -C "$dir"
}

# step NAME CMD...: run CMD, note its time among the steps
step() {
	local name=$1 t0=$SECONDS rc=0
	shift
	echo "== $name"
	"$@" || rc=$?
	printf '%5d s  %s%s\n' "$((SECONDS - t0))" "$name" "$([ "$rc" -eq 0 ] || echo " (FAILED)")" >>"$times/steps"
	return "$rc"
}

# bg NAME CMD...: start CMD beside the rest at the lowest CPU and I/O
# priority, its output in a file; bg_wait NAME: wait for it, print its
# output when it failed.
declare -A bg_pid
bg() {
	local name=$1
	shift
	echo "== (beside the rest) $name"
	(
		renice -n 19 -p "$BASHPID" >/dev/null
		ionice -c 3 -p "$BASHPID" 2>/dev/null || true
		t0=$SECONDS
		rc=0
		"$@" || rc=$?
		echo "$((SECONDS - t0))" >"$times/$name.secs"
		exit "$rc"
	) >"$times/$name.log" 2>&1 &
	bg_pid[$name]=$!
}
bg_wait() {
	local name=$1 rc=0
	wait "${bg_pid[$name]}" || rc=$?
	printf '%5s s  %s (beside the rest)%s\n' "$(cat "$times/$name.secs" 2>/dev/null || echo "?")" "$name" \
		"$([ "$rc" -eq 0 ] || echo " (FAILED)")" >>"$times/steps"
	if [ "$rc" -ne 0 ]; then
		echo "FAILED (exit $rc): $name; its output:" >&2
		cat "$times/$name.log" >&2
	else
		echo "== $name: ok"
	fi
	return "$rc"
}

# Under CI every test must run: a skip is a failure, be it a whole test
# (meson's SKIP, exit 77) or a cmocka test inside a unit binary ("[  SKIPPED ]"
# in its output). LOGBASE is the meson test run's --logbase.
check_skips() { # BUILDDIR LOGBASE
	[ "${CI:-}" = "true" ] || return 0
	local log=$1/meson-logs/$2.json skipped
	skipped=$(grep -c -e '"result": "SKIP"' -e '\[  SKIPPED \]' "$log" || true)
	if [ "$skipped" -gt 0 ]; then
		echo "CI: $skipped test(s) skipped or skipping cmocka tests; under CI every test must run" >&2
		grep -e '"result": "SKIP"' -e '\[  SKIPPED \]' "$log" | grep -o '"name": "[^"]*"' >&2 || true
		return 1
	fi
}

# suite BUILDDIR LOGBASE MESON-TEST-ARGS...: one meson test run, its skips checked
suite() {
	local dir=$1 base=$2 rc=0
	shift 2
	meson test -C "$dir" --print-errorlogs --no-rebuild --logbase "$base" "$@" || rc=1
	check_skips "$dir" "$base" || rc=1
	return "$rc"
}

package() { # the .deb's path on its last line
	tests/vm/build-deb build-deb
}

if [ "$mode" = lab ]; then
	if [ "${names[0]:-}" = --list ]; then
		setup build -Dwerror=true -Dtests=enabled
		exec python3 tests/labtable.py --list build
	fi
	rm -f build/meson-logs/lab.json
	status=0
	step "build: normal (-Werror)" setup build -Dwerror=true -Dtests=enabled
	step "package (dpkg-buildpackage -b from a copy of the tree, into build-deb/)" package >"$log" || {
		cat "$log" >&2
		exit 1
	}
	IOPSD_DEB=$(tail -n 1 "$log")
	export IOPSD_DEB
	# a test that cannot judge says inconclusive and reruns itself; one that
	# stays so fails
	step "lab: ${names[*]:-every lab test}" suite build lab --suite lab "${names[@]}" || status=1
	python3 tests/labtable.py build/meson-logs/lab.json || status=1
	cat "$times/steps"
	exit $status
fi

# Lint first, but go on: a formatting slip should not hide test results.
status=0
step "lint: clang-format (tests/lint/format.sh)" ./tests/lint/format.sh || status=1
step "lint: no function over 60 lines, no file over 900 (tests/lint/function-length.py)" \
	./tests/lint/function-length.py || status=1
step "lint: no include goes up a layer (tests/lint/layers.py)" ./tests/lint/layers.py || status=1
step "lint: every Python import is installed by install-deps.sh (tests/lint/python-deps.py)" \
	./tests/lint/python-deps.py || status=1

step "build: normal (-Werror)" setup build -Dwerror=true -Dtests=enabled
step "build: sanitizers (address,undefined)" \
	setup build-asan -Dwerror=true -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

step "unit (normal build)" suite build gate-unit --suite unit || status=1
step "unit (sanitizer build)" suite build-asan gate-unit --suite unit || status=1

if [ "$mode" = short ]; then
	step "integration: live-page only (sanitizer build; --short)" suite build-asan gate-integration live-page ||
		status=1
	step "package (dpkg-buildpackage -b from a copy of the tree, into build-deb/)" package >/dev/null || status=1
	cat "$times/steps"
	exit $status
fi

# The package build and the fuzzers measure nothing: they run beside the
# integration suite, at the lowest priority.
bg package package
fuzz() {
	CC=clang setup build-fuzz -Dfuzz=true -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false &&
		suite build-fuzz gate-fuzz --suite fuzz
}
bg fuzz fuzz

# test-fleet.py's 50 daemons, when run by hand: the normal build's
export IOPSD_FLEET=$PWD/build/daemon/iopsd
step "integration (sanitizer build)" suite build-asan gate-integration --suite integration || status=1

bg_wait package || status=1
if deb=$(tail -n 1 "$times/package.log") && [ -f "$deb" ]; then
	export IOPSD_DEB=$deb
	step "package: lintian" suite build gate-package --suite package || status=1
else
	status=1
fi
bg_wait fuzz || status=1

echo "== tests/run.sh: exit $status after ${SECONDS}s"
echo "steps:"
cat "$times/steps"
python3 tests/slowest.py --top 10 --logbase 'gate-*' build build-asan build-fuzz
exit $status
