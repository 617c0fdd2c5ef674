#!/bin/bash
# --check-config: every invalid fixture exits 78 with FILE:LINE on stderr;
# the fio seed job file and the example config pass with a one-line summary.
set -euo pipefail
fx="$SRCDIR/tests/fixtures/config"
n=0
for f in "$fx"/invalid/*.conf; do
	line=$(sed -n '1s/^# expect \([0-9]*\):.*/\1/p' "$f")
	set +e
	err=$("$IOPSD" --check-config --config "$f" 2>&1 >/dev/null)
	rc=$?
	set -e
	[ "$rc" -eq 78 ] || { echo "FAIL: $f: exit $rc, expected 78"; exit 1; }
	echo "$err" | grep -qF "$f:$line:" || { echo "FAIL: $f: no '$f:$line:' in: $err"; exit 1; }
	n=$((n + 1))
done
[ "$n" -ge 25 ] || { echo "FAIL: only $n invalid fixtures"; exit 1; }
for f in "$fx/valid/fio-seed.conf" "$SRCDIR/config/iopsd.conf.example"; do
	out=$("$IOPSD" --check-config --config "$f")
	[ "$(echo "$out" | wc -l)" -eq 1 ] || { echo "FAIL: summary not one line: $out"; exit 1; }
done
set +e
"$IOPSD" --check-config --config /nonexistent/iopsd.conf 2>/dev/null; rc=$?
"$IOPSD" --bogus-flag 2>/dev/null; rc2=$?
err=$("$IOPSD" --log.level=loud 2>&1); rc3=$?
set -e
[ "$rc" -eq 78 ] || { echo "FAIL: missing config file exit $rc"; exit 1; }
[ "$rc2" -eq 64 ] || { echo "FAIL: unknown flag exit $rc2"; exit 1; }
[ "$rc3" -eq 64 ] && echo "$err" | grep -q -- '--log.level' || { echo "FAIL: bad flag value: $rc3 $err"; exit 1; }
"$IOPSD" --version | grep -q '^iopsd [0-9]'
"$IOPSD" --help | grep -q -- '--web.listen-address'
echo "ok: $n invalid configs rejected with FILE:LINE and exit 78"
