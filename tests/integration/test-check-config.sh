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
# [device] limits from volume_type=, for the volume's size in sysfs (the
# sampler fixture's xvdf: 100 GiB), with the keys that override them
dl=$(mktemp)
printf '[device xvdf]\nvolume_type=gp2\n\n[device xvdg]\nvolume_type=gp3\niops_limit=5000\n' > "$dl"
out=$("$IOPSD" --check-config --config "$dl" --path.sysfs "$SRCDIR/tests/fixtures/sampler/ec2-md-raid0/sys" 2>&1)
rm -f "$dl"
echo "$out" | grep -qxF "[device xvdg]: volume_type=gp3 (100.0 GiB): iops_limit=5000 iops_unit=256k throughput_limit=125m" ||
	{ echo "FAIL: gp3 under iops_limit=: $out"; exit 1; }
echo "$out" | grep -qxF "[device xvdf]: volume_type=gp2 (100.0 GiB): iops_limit=300 iops_unit=256k throughput_limit=128m burst_iops=3000 burst_credits=5400000 credit_rate=300" ||
	{ echo "FAIL: gp2's derived limits: $out"; exit 1; }
echo "$out" | grep -qF "[device xvdg]: iops_limit= overrides the figure volume_type=gp3 gives" ||
	{ echo "FAIL: no notice of the override: $out"; exit 1; }
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
cg=""
trap 'rm -rf "$tmp"; [ -z "$cg" ] || rmdir "$cg"' EXIT
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
# --check-config predicts the start. A probe directory that does not exist
# yet is a warning naming it (a mount may appear after boot), exit 0
printf '[global]\nstate_directory=%s\n[later]\nrw=randread\ndirectory=%s/not-mounted-yet\n' "$tmp" "$tmp" >"$tmp/later.conf"
set +e
out=$("$IOPSD" --check-config --config "$tmp/later.conf" 2>"$tmp/err"); rc=$?
set -e
[ "$rc" -eq 0 ] || { echo "FAIL: missing probe directory exit $rc: $(cat "$tmp/err")"; exit 1; }
grep -q "^iopsd: warning: $tmp/later.conf:3: \[later\]: directory '$tmp/not-mounted-yet' does not exist" "$tmp/err" ||
	{ echo "FAIL: no warning naming the missing directory: $(cat "$tmp/err")"; exit 1; }
[ "$(echo "$out" | wc -l)" -eq 1 ] || { echo "FAIL: summary not one line: $out"; exit 1; }
mkdir "$tmp/not-mounted-yet"
err=$("$IOPSD" --check-config --config "$tmp/later.conf" 2>&1 >/dev/null)
[ -z "$err" ] || { echo "FAIL: a warning for a directory that exists: $err"; exit 1; }
# listen addresses: the server's parser for the flag (a usage error, 64)...
for bad in '::1:9477' '[::1]9477' '127.0.0.1:9477,' ':0'; do
	set +e
	err=$("$IOPSD" --check-config --config "$tmp/later.conf" --web.listen-address "$bad" 2>&1); rc=$?
	set -e
	[ "$rc" -eq 64 ] && echo "$err" | grep -q -- "--web.listen-address" ||
		{ echo "FAIL: --web.listen-address '$bad': exit $rc: $err"; exit 1; }
done
# ... and a host name that does not resolve fails the check as it fails the start
printf '[global]\nlisten_address=127.0.0.1:9477, no-such-host.invalid:9477\n' >"$tmp/unresolvable.conf"
set +e
err=$("$IOPSD" --check-config --config "$tmp/unresolvable.conf" 2>&1); rc=$?
set -e
[ "$rc" -eq 78 ] && echo "$err" | grep -q "listen address 'no-such-host.invalid:9477': cannot resolve" ||
	{ echo "FAIL: unresolvable listen address: exit $rc: $err"; exit 1; }
out=$("$IOPSD" --check-config --config "$tmp/later.conf" --web.listen-address '127.0.0.1:9477, [::1]:9477, localhost:9478')
echo "$out" | grep -q "listen 127.0.0.1:9477, \[::1\]:9477, localhost:9478" || { echo "FAIL: list: $out"; exit 1; }
# the probes' files and threads against the process's limits (the unit's
# LimitNOFILE): refused with the probe's FILE:LINE
printf '[global]\nrw=randread\ndirectory=%s\n[a]\nnrfiles=100\n[b]\nnrfiles=100\n' "$tmp" >"$tmp/nofile.conf"
set +e
err=$(prlimit --nofile=256 "$IOPSD" --check-config --config "$tmp/nofile.conf" 2>&1); rc=$?
set -e
[ "$rc" -eq 78 ] && echo "$err" | grep -q "$tmp/nofile.conf:4: \[a\]: .* file descriptors, more than LimitNOFILE=256" ||
	{ echo "FAIL: nrfiles beyond LimitNOFILE: exit $rc: $err"; exit 1; }
prlimit --nofile=4096 "$IOPSD" --check-config --config "$tmp/nofile.conf" >/dev/null ||
	{ echo "FAIL: nrfiles within LimitNOFILE refused"; exit 1; }
# ... and their threads against the cgroup's pids.max (the unit's
# TasksMax), as /proc/self/cgroup names it: iopsd in a cgroup of its own
# (v1's pids hierarchy, or v2's where the root delegates pids)
if [ "$(id -u)" -eq 0 ] && [ -d /sys/fs/cgroup/pids ]; then
	cg=/sys/fs/cgroup/pids/iopsd-check-config-$$
elif [ "$(id -u)" -eq 0 ] && grep -qw pids /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
	cg=/sys/fs/cgroup/iopsd-check-config-$$
fi
if [ -n "$cg" ]; then
	mkdir "$cg"
	in_cgroup() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"; }
	# 16 for the daemon, then 1 + 2 * (1 + numjobs) a probe: 27, 38, 49
	printf '[global]\nrw=randread\ndirectory=%s\nnumjobs=4\n[a]\n[b]\n[c]\n' "$tmp" >"$tmp/tasks.conf"
	echo 40 >"$cg/pids.max"
	set +e
	err=$(in_cgroup "$IOPSD" --check-config --config "$tmp/tasks.conf" 2>&1); rc=$?
	set -e
	[ "$rc" -eq 78 ] && echo "$err" | grep -q "$tmp/tasks.conf:7: \[c\]: .* 49 threads, more than TasksMax=40" ||
		{ echo "FAIL: numjobs beyond the cgroup's pids.max (40): exit $rc: $err"; exit 1; }
	echo 49 >"$cg/pids.max"
	in_cgroup "$IOPSD" --check-config --config "$tmp/tasks.conf" >/dev/null ||
		{ echo "FAIL: numjobs within the cgroup's pids.max (49) refused"; exit 1; }
	echo "ok: numjobs checked against a cgroup's pids.max of 40 and 49"
	# a reload is checked the same way: beyond pids.max it fails, and the
	# running configuration stays
	echo 45 >"$cg/pids.max"
	printf '[global]\nrw=randread\ndirectory=%s\nstate_directory=%s\nsize=1m\nnumjobs=4\n[a]\n' "$tmp" "$tmp" >"$tmp/reload.conf"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# sh execs iopsd: $! is iopsd's
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$IOPSD" --config "$tmp/reload.conf" \
		--web.listen-address "127.0.0.1:$port" >"$tmp/reload.log" 2>&1 &
	pid=$!
	# about 30 s: a deadline against a hang only, not a judged time
	wait_log() {
		for _ in $(seq 300); do grep -q "$1" "$tmp/reload.log" && return 0; sleep 0.1; done
		echo "FAIL: no '$1' in the log within 30 s: $(cat "$tmp/reload.log")"; kill "$pid"; exit 1
	}
	wait_log "iopsd started"
	printf '[b]\n[c]\n' >>"$tmp/reload.conf"
	kill -HUP "$pid"
	wait_log "Reload failed"
	grep -q "$tmp/reload.conf:9: \[c\]: .* 49 threads, more than TasksMax=45" "$tmp/reload.log" ||
		{ echo "FAIL: a reload beyond pids.max: $(cat "$tmp/reload.log")"; kill "$pid"; exit 1; }
	kill "$pid"
	wait "$pid" || { echo "FAIL: iopsd exited with $? after a refused reload: $(cat "$tmp/reload.log")"; exit 1; }
	echo "ok: a reload beyond the cgroup's pids.max (45) fails and keeps the running configuration"
else
	echo "no pids cgroup to run iopsd in (not root, or no pids controller): TasksMax left to test-proclimits"
fi
# the one setting a reload cannot apply says so, in --check-config as in the log
printf '[global]\nlisten_address=127.0.0.1:9477\n' >"$tmp/listen.conf"
err=$("$IOPSD" --check-config --config "$tmp/listen.conf" 2>&1 >/dev/null)
echo "$err" | grep -q "$tmp/listen.conf:2: listen_address takes effect when iopsd starts: a reload keeps" ||
	{ echo "FAIL: no notice that listen_address needs a restart: $err"; exit 1; }
"$IOPSD" --version | grep -q '^iopsd [0-9]'
"$IOPSD" --help | grep -q -- '--web.listen-address'
echo "ok: $n invalid configs rejected with FILE:LINE and exit 78; missing and unreadable ones exit 66"
