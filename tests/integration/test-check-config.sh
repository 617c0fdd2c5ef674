#!/bin/bash
# --check-config: every invalid fixture exits 78 with FILE:LINE on stderr;
# a missing or unreadable file exits 66; the fio seed job file and the
# example config pass with a one-line summary.
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
	# stderr is a pipe here, not the journal: no "<3>" prefix, even when
	# JOURNAL_STREAM is inherited (it names this script's stdin, not the pipe)
	echo "$err" | grep -qF "iopsd: error: $f:$line:" || { echo "FAIL: $f: no 'iopsd: error: $f:$line:' in: $err"; exit 1; }
	n=$((n + 1))
done
[ "$n" -ge 25 ] || { echo "FAIL: only $n invalid fixtures"; exit 1; }
f="$fx/invalid/$(ls "$fx/invalid" | head -1)"
stream=$(stat -L -c '%d:%i' /proc/self/fd/0)
err=$(JOURNAL_STREAM=$stream "$IOPSD" --check-config --config "$f" 2>&1 >/dev/null || true)
case "$err" in
"<"*) echo "FAIL: a journal prefix on a pipe: $err"; exit 1 ;;
"iopsd: error: $f:"*) ;;
*) echo "FAIL: unexpected message with JOURNAL_STREAM set: $err"; exit 1 ;;
esac
# stderr that JOURNAL_STREAM names (a file stands in for journald's socket:
# the rule is its device and inode) gets the "<3>" priority prefix
log=$(mktemp)
: > "$log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$log") "$IOPSD" --check-config --config "$f" 2>>"$log" >/dev/null || true
grep -q "^<3>$f:" "$log" || { echo "FAIL: no '<3>' prefix when stderr is the journal: $(cat "$log")"; rm -f "$log"; exit 1; }
rm -f "$log"
for f in "$fx/valid/fio-seed.conf" "$SRCDIR/config/iopsd.conf.example"; do
	out=$("$IOPSD" --check-config --config "$f")
	[ "$(echo "$out" | wc -l)" -eq 1 ] || { echo "FAIL: summary not one line: $out"; exit 1; }
done
set +e
"$IOPSD" --check-config --config /nonexistent/iopsd.conf 2>/dev/null; rc=$?
"$IOPSD" --bogus-flag 2>/dev/null; rc2=$?
err=$("$IOPSD" --log.level=loud 2>&1); rc3=$?
set -e
[ "$rc" -eq 66 ] || { echo "FAIL: missing config file exit $rc, expected 66 (EX_NOINPUT)"; exit 1; }
[ "$rc2" -eq 64 ] || { echo "FAIL: unknown flag exit $rc2"; exit 1; }
[ "$rc3" -eq 64 ] && echo "$err" | grep -q -- '--log.level' || { echo "FAIL: bad flag value: $rc3 $err"; exit 1; }
# a config the daemon's user may not read is EX_NOINPUT too, not a config
# error; as root, read it as nobody (root reads any file)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$fx/valid/fio-seed.conf" "$tmp/secret.conf"
chmod 0600 "$tmp/secret.conf"
chmod 0755 "$tmp"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
	as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
set +e
err=$("${as_user[@]}" "$IOPSD" --check-config --config "$tmp/secret.conf" 2>&1); rc=$?
set -e
[ "$rc" -eq 66 ] || { echo "FAIL: unreadable config exit $rc, expected 66: $err"; exit 1; }
echo "$err" | grep -q "secret.conf: cannot read configuration: Permission denied" ||
	{ echo "FAIL: unreadable config message: $err"; exit 1; }
"$IOPSD" --version | grep -q '^iopsd [0-9]'
"$IOPSD" --help | grep -q -- '--web.listen-address'
echo "ok: $n invalid configs rejected with FILE:LINE and exit 78; missing and unreadable ones exit 66"
