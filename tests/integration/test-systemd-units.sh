#!/bin/bash
# The shipped units verify cleanly and the service's exposure is <= 2.0.
set -euo pipefail
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e "s|@sbindir@|$(dirname "$IOPSD")|; s|@sysconfdir@|/etc|" "$SRCDIR/systemd/iopsd.service.in" > "$tmp/iopsd.service"
cp "$SRCDIR/systemd/iopsd.socket" "$tmp/"
systemd-analyze verify --man=no "$tmp/iopsd.service" "$tmp/iopsd.socket"
out=$(systemd-analyze security --offline=true "$tmp/iopsd.service" 2>&1)
score=$(echo "$out" | sed -n 's/.*Overall exposure level for iopsd.service: \([0-9.]*\).*/\1/p')
echo "exposure: $score"
[ -n "$score" ] || { echo "$out"; exit 1; }
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || { echo "exposure $score > 2.0"; echo "$out" | grep '✗'; exit 1; }
grep -q '^Type=notify' "$tmp/iopsd.service"
grep -q '^WatchdogSec=' "$tmp/iopsd.service"
grep -q '^ExecReload=' "$tmp/iopsd.service"
echo "ok"
