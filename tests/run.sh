#!/bin/bash
# Install what the tests need, build (normal and sanitizer builds), run every
# suite. Under CI=true an integration test that skips is a failure.
#
# --short: only the steps that depend on what is installed (install-deps.sh
# --tests, both builds, the unit suites, test-live-page and the package
# build), as tests/fresh/run-in-chroot.sh --short runs them on a fresh
# Debian. The full run ends with that short run in a new chroot (skipped
# when this run is in one already).
#
# --lab: the VM lab (suite vm-lab: tests/vm/test-lab-scenarios.py, the field
# notes' volumes; test-lab-raid0-once.py, their four job files on an md
# RAID0; test-lab-cloud.py, cloud volumes as providers count them; about 30
# minutes in all), on the normal build and the package. CI runs it after the
# full run (.ci/run): the two together would take tests/run.sh past its 30
# minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
short=false
lab=false
case "${1:-}" in
"") ;;
--short) short=true ;;
--lab) lab=true ;;
*)
	echo "usage: tests/run.sh [--short|--lab]" >&2
	exit 2
	;;
esac

./contrib/install-deps.sh --tests

log=$(mktemp "${TMPDIR:-/tmp}/iopsd-run.XXXXXX")
trap 'rm -f "$log"' EXIT

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

if $lab; then
	echo "== build: normal (-Werror)"
	setup build -Dwerror=true -Dtests=enabled
	echo "== package (dpkg-buildpackage -b from a copy of the tree, into build-deb/)"
	deb=$(tests/vm/build-deb build-deb)
	echo "== vm-lab (the field notes' volumes and job files, cloud volumes as providers count them; Debian 12 guests under QEMU)"
	rc=0
	IOPSD_DEB=$deb meson test -C build --suite vm-lab --print-errorlogs --no-rebuild || rc=1
	if [ "${CI:-}" = "true" ] && grep -q '"result": "SKIP"' build/meson-logs/testlog.json; then
		echo "CI: a vm-lab test skipped; under CI every test must run" >&2
		rc=1
	fi
	exit $rc
fi

# Lint first, but go on: a formatting slip should not hide test results.
lint_status=0
echo "== lint: clang-format (tests/lint/format.sh)"
./tests/lint/format.sh || lint_status=1
echo "== lint: no function over 60 lines, no file over 900 (tests/lint/function-length.py)"
./tests/lint/function-length.py || lint_status=1
echo "== lint: no include goes up a layer (tests/lint/layers.py)"
./tests/lint/layers.py || lint_status=1
echo "== lint: every Python import is installed by install-deps.sh (tests/lint/python-deps.py)"
./tests/lint/python-deps.py || lint_status=1

echo "== build: normal (-Werror)"
setup build -Dwerror=true -Dtests=enabled
echo "== build: sanitizers (address,undefined)"
setup build-asan -Dwerror=true -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Under CI every test must run: a skip is a failure, be it a whole test
# (meson's SKIP, exit 77) or a cmocka test inside a unit binary ("[  SKIPPED ]"
# in its output). Call after each meson test run: each rewrites testlog.json.
check_skips() { # BUILDDIR
	[ "${CI:-}" = "true" ] || return 0
	local log=$1/meson-logs/testlog.json skipped
	skipped=$(grep -c -e '"result": "SKIP"' -e '\[  SKIPPED \]' "$log" || true)
	if [ "$skipped" -gt 0 ]; then
		echo "CI: $skipped test(s) skipped or skipping cmocka tests; under CI every test must run" >&2
		grep -e '"result": "SKIP"' -e '\[  SKIPPED \]' "$log" | grep -o '"name": "[^"]*"' >&2 || true
		status=1
	fi
}

status=$lint_status
echo "== unit (normal build)"
meson test -C build --suite unit --print-errorlogs || status=1
check_skips build
echo "== unit (sanitizer build)"
meson test -C build-asan --suite unit --print-errorlogs || status=1
check_skips build-asan

if $short; then
	echo "== integration: live-page only (sanitizer build; --short)"
	meson test -C build-asan live-page --print-errorlogs --no-rebuild || status=1
	echo "== package (dpkg-buildpackage -b from a copy of the tree, into build-deb/)"
	tests/vm/build-deb build-deb >/dev/null || status=1
	exit $status
fi

echo "== integration (sanitizer build)"
# test-fleet.py's 50 daemons: the normal build's (50 sanitized ones are more than a runner has)
export IOPSD_FLEET=$PWD/build/daemon/iopsd
meson test -C build-asan --suite integration --print-errorlogs --no-rebuild || status=1
check_skips build-asan

echo "== package (dpkg-buildpackage -b from a copy of the tree, into build-deb/)"
if deb=$(tests/vm/build-deb build-deb); then
	export IOPSD_DEB=$deb
else
	status=1
fi
echo "== vm (a Debian 12 guest under QEMU with real systemd; the package in it; lintian)"
meson test -C build --suite vm --print-errorlogs --no-rebuild || status=1
check_skips build

if [ -f tests/fuzz/meson.build ] && command -v clang >/dev/null; then
	echo "== fuzz (clang, bounded runs from the committed corpus)"
	if CC=clang setup build-fuzz -Dfuzz=true -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false; then
		meson test -C build-fuzz --suite fuzz --print-errorlogs || status=1
	else
		echo "fuzz: the clang build failed (its output is above)" >&2
		status=1
	fi
fi

# The steps that depend on what is installed, on a fresh Debian: what this
# machine has installed before cannot hide a missing install step.
if [ "${IOPSD_FRESH_CHROOT:-}" = "1" ]; then
	echo "== fresh chroot: skipped, this run is in one"
else
	echo "== fresh chroot (tests/fresh/run-in-chroot.sh --short: a new mmdebstrap chroot, the tree without .git)"
	tests/fresh/run-in-chroot.sh --short || status=1
fi

exit $status
