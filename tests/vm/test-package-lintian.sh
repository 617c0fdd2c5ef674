#!/bin/bash
# The package as dpkg-buildpackage builds it from a clean checkout: lintian
# (pedantic) reports no error and no warning; every override in
# debian/iopsd.lintian-overrides says why in a comment.
set -euo pipefail
deb=${IOPSD_DEB:-}
if [ -z "$deb" ]; then
	deb=$("$SRCDIR/tests/vm/build-deb" "$BUILDDIR/deb" | tail -n 1)
fi
changes=$(ls "$(dirname "$deb")"/iopsd_*_amd64.changes)
echo "lintian --pedantic --info $(basename "$changes")"
out=$(lintian --pedantic --info "$changes" 2>&1 | grep -v 'running with root privileges' || true)
echo "${out:-(nothing)}"
if grep -E '^[EW]: ' <<<"$out"; then
	echo "lintian: errors or warnings" >&2
	exit 1
fi
# an override without a comment above it
awk '/^#/ { c = 1; next } /^[^#[:space:]]/ { if (!c) { print "uncommented override: " $0; bad = 1 } next }
     /^$/ { c = 0 } END { exit bad }' "$SRCDIR/debian/iopsd.lintian-overrides"
echo "ok"
