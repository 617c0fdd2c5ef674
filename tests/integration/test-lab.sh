#!/bin/bash
# contrib/lab/iopsd-lab: up is idempotent (a second up keeps the same
# devices), cap moves the throttle, run puts a command in the cgroup, env
# and status describe the lab, down refuses while processes are inside
# and removes everything it made, and nothing it did not make is touched.
set -euo pipefail
SRCDIR=${SRCDIR:-$(dirname "$0")/../..}
LAB="$SRCDIR/contrib/lab/iopsd-lab"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in losetup mkfs.ext4 findmnt blkid; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[ -f /sys/fs/cgroup/blkio/blkio.throttle.read_iops_device ] || [ -f /sys/fs/cgroup/cgroup.controllers ] ||
	{ echo "SKIP: no blkio/io cgroup controller"; exit 77; }

base=$(mktemp -d /var/tmp/iopsd-lab-test-XXXXXX)
name=lab-test-$$
opts=(--name "$name" --dir "$base")
sleeper=
cleanup() {
	[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null || true
	"$LAB" down --force "${opts[@]}" >/dev/null 2>&1 || true
	rm -rf "$base"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

"$LAB" up --iops 500 --size 96M "${opts[@]}" >/dev/null
eval "$("$LAB" env "${opts[@]}")"
[ -b "$IOPSD_LAB_INNER" ] && [ -b "$IOPSD_LAB_OUTER" ] || fail "no loop devices"
findmnt -n --mountpoint "$IOPSD_LAB_MOUNT" -o SOURCE | grep -qx "$IOPSD_LAB_INNER" || fail "volume not mounted"
mm=$(cat "/sys/class/block/$IOPSD_LAB_OUTER_NAME/dev")
if [ "$IOPSD_LAB_CGROUP_KIND" = v1 ]; then
	grep -qx "$mm 500" "$IOPSD_LAB_CGROUP/blkio.throttle.read_iops_device" || fail "read cap not set"
	grep -qx "$mm 500" "$IOPSD_LAB_CGROUP/blkio.throttle.write_iops_device" || fail "write cap not set"
fi

# idempotent: the same devices, the cap kept when --iops is not given
inner=$IOPSD_LAB_INNER
"$LAB" up "${opts[@]}" >/dev/null
eval "$("$LAB" env "${opts[@]}")"
[ "$IOPSD_LAB_INNER" = "$inner" ] || fail "second up built another volume"
[ "$IOPSD_LAB_IOPS" = 500 ] || fail "second up changed the cap to $IOPSD_LAB_IOPS"

"$LAB" cap 250 "${opts[@]}" >/dev/null
eval "$("$LAB" env "${opts[@]}")"
[ "$IOPSD_LAB_IOPS" = 250 ] || fail "cap did not move"
if [ "$IOPSD_LAB_CGROUP_KIND" = v1 ]; then
	grep -qx "$mm 250" "$IOPSD_LAB_CGROUP/blkio.throttle.read_iops_device" || fail "cap not applied"
fi

# the throttle holds for a process in the cgroup reading the raw volume
"$LAB" check "${opts[@]}" | grep -q "throttle holds" || fail "check: the cap does not hold"

# run: the command lives in the lab's cgroup
"$LAB" run "${opts[@]}" -- cat /proc/self/cgroup | grep -q "iopsd-lab-$name" || fail "run is not in the cgroup"
"$LAB" run "${opts[@]}" -- sleep 60 &
sleeper=$!
listed() { "$LAB" status "${opts[@]}" | grep -q "procs:.*$sleeper"; }
for _ in $(seq 300); do listed && break; sleep 0.1; done  # up to 30 s: a hang guard only
listed || fail "status does not list the process"
if "$LAB" down "${opts[@]}" >/dev/null 2>&1; then
	fail "down went ahead with a process in the cgroup"
fi
kill "$sleeper"
wait "$sleeper" 2>/dev/null || true
sleeper=

# refuses a directory it did not create
mkdir -p "$base/other"
if "$LAB" down --name other --dir "$base" >/dev/null 2>&1; then
	fail "down touched a directory without the lab's marker"
fi
[ -d "$base/other" ] || fail "down removed a foreign directory"

"$LAB" down "${opts[@]}" >/dev/null
losetup -a | grep -q "$base/$name" && fail "loop devices left behind"
[ -d "$IOPSD_LAB_CGROUP" ] && fail "cgroup left behind"
[ -e "$base/$name" ] && fail "state directory left behind"
echo "ok: lab up/cap/run/status/down"
