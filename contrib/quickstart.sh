#!/bin/bash
# Quick start: install the build dependencies if missing, build iopsd, and run
# it in the foreground on the built-in default configuration.
set -euo pipefail
cd "$(dirname "$0")/.."

./contrib/install-deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build >/dev/null

args=()
if [ "$(id -u)" -ne 0 ]; then
	# Without root there is no /var/lib/iopsd: keep the state in the build tree.
	mkdir -p build/state
	printf '[global]\nstate_directory=%s\n\n[default]\nrw=randread\nbs=4k\nsize=64m\ndirectory=%s\nrate_iops=50\nruntime=1s\ninterval=10s\n' \
		"$PWD/build/state" "$PWD/build/state" > build/quickstart.conf
	args=(--config build/quickstart.conf)
fi

cat <<MSG
iopsd is starting in the foreground (Ctrl-C stops it). In another shell:

    curl -s http://127.0.0.1:9477/metrics | grep ^iopsd_
    curl -s http://127.0.0.1:9477/api/v1/devices | jq
    curl -s http://127.0.0.1:9477/api/v1/probes | jq
    open http://127.0.0.1:9477/ in a browser for the live page

MSG
exec ./build/daemon/iopsd "${args[@]}"
