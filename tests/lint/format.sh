#!/bin/bash
# The C sources follow the project's .clang-format (kernel style), checked,
# not reviewed: clang-format --dry-run --Werror over every layer, the tests,
# the benchmarks and the fuzzers. Prints the first deviations and exits 1 on
# any; `clang-format -i FILE` fixes a file.
set -euo pipefail
cd "$(dirname "$0")/../.."
dirs=()
for d in common config probes metrics http daemon tests bench; do
	[ -d "$d" ] && dirs+=("$d")
done
mapfile -t files < <(find "${dirs[@]}" -name '*.[ch]' -not -path '*/build*' | sort)
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
	echo "$out" | grep -E '^[^ ].*: error:' | head -20
	echo "clang-format: $(echo "$out" | grep -c ': error:') deviation(s) from .clang-format in ${#files[@]} files" >&2
	exit 1
fi
echo "ok: ${#files[@]} C files follow .clang-format"
