#!/bin/bash
# Install what iopsd needs on Debian: build dependencies; with --package
# also what dpkg-buildpackage checks for (build-essential, debhelper,
# dpkg-dev and every Build-Depends of debian/control); with --tests all of
# that and the tools the test suites, the lab and the benchmarks use (podman
# and runc: the lab's container test; runc because podman's default runtime,
# crun, refuses hosts with cgroups in hybrid mode). Does nothing when all are
# present already.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

build=(meson ninja-build pkg-config gcc libc6-dev libmicrohttpd-dev libjansson-dev
       libsystemd-dev libinih-dev libaio-dev liburing-dev libcrypt-dev libgnutls28-dev zlib1g-dev
       libjs-chart.js libyaml-dev)
tests=(libcmocka-dev clang clang-format libclang-rt-14-dev fio fio-examples python3-six sysstat prometheus prometheus-node-exporter
       prometheus-alertmanager victoria-metrics
       jq curl apache2-utils e2fsprogs util-linux mount systemd python3 python3-yaml wrk ioping strace
       chromium fonts-liberation fonts-dejavu-core fonts-noto-core fonts-noto-mono fontconfig valgrind openssl
       mmdebstrap qemu-system-x86 qemu-utils git lintian python3-fusepy fuse3 stress-ng
       podman runc)
package=(build-essential debhelper dpkg-dev)

mode=${1:-}
case "$mode" in
"" | --package | --tests) ;;
*)
	echo "usage: install-deps.sh [--package | --tests]" >&2
	exit 2
	;;
esac
want=("${build[@]}")
if [ "$mode" = "--package" ] || [ "$mode" = "--tests" ]; then
	want+=("${package[@]}")
fi
if [ "$mode" = "--tests" ]; then
	want+=("${tests[@]}")
	# Node.js for tests/kubernetes/: Debian's nodejs and npm, unless a node
	# and an npm are there already (a nodejs package of another origin
	# carries its own npm and conflicts with Debian's)
	command -v node >/dev/null || want+=(nodejs)
	command -v npm >/dev/null || want+=(npm)
fi

# What dpkg-buildpackage itself checks: build-essential and debian/control's
# Build-Depends, as dpkg-checkbuilddeps reads them (so that a new entry in
# debian/control needs no second list here).
builddeps_met() {
	[ "$mode" = "--package" ] || [ "$mode" = "--tests" ] || return 0
	command -v dpkg-checkbuilddeps >/dev/null || return 1
	(cd "$top" && dpkg-checkbuilddeps >/dev/null 2>&1)
}

# tests/kubernetes/'s packages, as its package-lock.json pins them; npm ci
# again only when the lock changed since the last one (a copy of the lock
# it installed is kept in node_modules, which npm ci empties first).
# Neither audit nor funding requests: the install needs the registry alone.
node_modules() {
	local dir=$top/tests/kubernetes
	[ "$mode" = "--tests" ] || return 0
	cmp -s "$dir/package-lock.json" "$dir/node_modules/.iopsd-package-lock.json" && return 0
	echo "iopsd: npm ci in tests/kubernetes"
	(cd "$dir" && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error)
	cp "$dir/package-lock.json" "$dir/node_modules/.iopsd-package-lock.json"
}

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && builddeps_met; then
	node_modules
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "iopsd: missing packages: ${missing[*]}; run as root or install them" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
if [ ${#missing[@]} -gt 0 ]; then
	echo "iopsd: installing ${missing[*]}"
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if ! builddeps_met; then
	echo "iopsd: installing the Build-Depends of debian/control"
	(cd "$top" && apt-get build-dep -y -q --no-install-recommends ./)
	if ! builddeps_met; then
		(cd "$top" && dpkg-checkbuilddeps) || true
		echo "iopsd: dpkg-checkbuilddeps still finds unmet build dependencies" >&2
		exit 1
	fi
fi
node_modules
