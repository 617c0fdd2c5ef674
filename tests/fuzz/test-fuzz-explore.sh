#!/bin/bash
# The lab's fuzz-explore: the clang fuzz build (its own build directory,
# BUILDDIR/fuzz-explore) and 20000 new inputs per harness from the
# committed corpus (suite fuzz-explore). The gate runs the corpus alone.
set -euo pipefail
command -v clang >/dev/null || { echo "SKIP: clang not installed"; exit 77; }
dir=$BUILDDIR/fuzz-explore
if [ ! -f "$dir/build.ninja" ]; then
	CC=clang meson setup "$dir" "$SRCDIR" -Dfuzz=true -Dtests=enabled \
		-Db_sanitize=address,undefined -Db_lundef=false >"$BUILDDIR/fuzz-explore.setup.log" 2>&1 ||
		{ cat "$BUILDDIR/fuzz-explore.setup.log" >&2; exit 1; }
fi
ninja -C "$dir" >/dev/null
meson test -C "$dir" --suite fuzz-explore --print-errorlogs --no-rebuild
