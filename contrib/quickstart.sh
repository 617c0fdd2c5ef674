#!/bin/bash
# Quick start: install the build dependencies if missing, build iopsd, and run
# it in the foreground on the built-in default configuration.
#
# IOPSD_LISTEN_ADDRESS=HOST:PORT listens there instead of 127.0.0.1:9477.
# The build's output goes to a log that is printed when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp "${TMPDIR:-/tmp}/iopsd-quickstart.XXXXXX")
trap 'rm -f "$log"' EXIT

# step WHAT CMD...: run CMD with its output in the log; on failure print
# what failed and all of its output.
step() {
	local what=$1 rc=0
	shift
	echo "iopsd: $what"
	"$@" >"$log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "iopsd: $what failed (exit $rc): $*" >&2
		echo "---- output of: $* ----" >&2
		cat "$log" >&2
		echo "----" >&2
		exit "$rc"
	fi
}

./contrib/install-deps.sh
if [ ! -f build/build.ninja ]; then
	step "configuring the build (meson setup build)" meson setup build
fi
step "building (ninja -C build)" ninja -C build

args=()
if [ "$(id -u)" -ne 0 ]; then
	# Without root there is no /var/lib/iopsd: keep the state in the build tree.
	mkdir -p build/state
	printf '[global]\nstate_directory=%s\n\n[default]\nrw=randread\nbs=4k\nsize=64m\ndirectory=%s\nrate_iops=50\nruntime=1s\ninterval=10s\n' \
		"$PWD/build/state" "$PWD/build/state" > build/quickstart.conf
	args=(--config build/quickstart.conf)
fi
listen=127.0.0.1:9477
if [ -n "${IOPSD_LISTEN_ADDRESS:-}" ]; then
	listen=$IOPSD_LISTEN_ADDRESS
	args+=(--web.listen-address "$listen")
fi
url=http://$listen
case $listen in
:*) url=http://127.0.0.1$listen ;;
esac

cat <<MSG
iopsd is starting in the foreground (Ctrl-C stops it). In another shell:

    curl -s $url/metrics | grep ^iopsd_
    curl -s $url/api/v1/devices | jq
    curl -s $url/api/v1/probes | jq
    open $url/ in a browser for the live page

MSG
rm -f "$log"
trap - EXIT
exec ./build/daemon/iopsd "${args[@]}"
