#!/bin/bash
# Install what iopsd needs on Debian: build dependencies, and with --tests
# the tools the test suites and benchmarks use. Does nothing when all are
# present already.
set -euo pipefail

build=(meson ninja-build pkg-config gcc libc6-dev libmicrohttpd-dev libjansson-dev
       libsystemd-dev libinih-dev libaio-dev liburing-dev libcrypt-dev libgnutls28-dev zlib1g-dev
       libjs-chart.js libyaml-dev)
tests=(libcmocka-dev clang clang-format libclang-rt-14-dev fio fio-examples sysstat prometheus prometheus-node-exporter
       jq curl apache2-utils e2fsprogs util-linux mount systemd python3 wrk ioping strace
       chromium fonts-liberation valgrind openssl
       mmdebstrap qemu-system-x86 qemu-utils git debhelper dpkg-dev lintian)

want=("${build[@]}")
if [ "${1:-}" = "--tests" ]; then
	want+=("${tests[@]}")
fi

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "iopsd: missing packages: ${missing[*]}; run as root or install them" >&2
	exit 1
fi
echo "iopsd: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
