#!/usr/bin/env python3
"""iopsd as it ships, under a real systemd: the .deb installed with apt in a
Debian 12 guest, the hardened unit enforced. One boot, in order:

 1. install: enabled and running, user, state directory, conffile, files;
 2. socket activation: with only iopsd.socket started, the first
    connection (from the host, through the forwarded port) starts iopsd;
 3. Type=notify: `systemctl start` returns with the unit active, /healthz
    answers on the host;
 4. reload applies a changed config; a broken one is refused, the old one
    keeps running, and the journal has FILE:LINE at priority err;
 5. the sandbox: no writes outside the state directory and ReadWritePaths
    (a probe directory becomes writable only with a ReadWritePaths drop-in),
    a raw-device read probe works, opening that device for writing from the
    service's cgroup fails, `systemd-analyze security` <= 2.0;
 6. what the hardening forbids: the HTTP threads' nice level,
    io_setup (the libaio probes), the EBS NVMe log page (an NVMe volume
    presented as EBS; no CAP_SYS_ADMIN): a metric says why, iopsd serves on;
 7. watchdog: a SIGSTOP'd iopsd is killed and restarted after WatchdogSec;
 8. stop during a probe file's layout: within TimeoutStopSec, exit 0, no
    half-written file;
 9. apt remove stops it and keeps the conffile; apt purge removes state,
    conffile, user and group.

IOPSD_DEB names the .deb; without it, tests/vm/build-deb builds one into
BUILDDIR/deb."""
import json
import os
import re
import subprocess
import sys
import time

# the QEMU harness is the VM lab's (contrib/lab/iopsdvm.py), shared with it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "contrib", "lab"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "integration"))
from iopsdtest import HttpClient  # noqa: E402
from iopsdvm import GUEST_ADDR, VM, Disk, Image, VMError  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
CONF = "/etc/iopsd/iopsd.conf"
EBS_SERIAL = "vol0123456789abcdef0"

BASE_CONFIG = """[global]
state_directory=/var/lib/iopsd
sample_interval=1s

[default]
rw=randread
bs=4k
size=64m
directory=/var/lib/iopsd
iodepth=1
rate_iops=50
runtime=1s
interval=10s
"""


def check(what, cond, detail=""):
    if not cond:
        raise AssertionError(f"{what}: {detail}")
    print(f"ok: {what}", flush=True)


def find_deb():
    deb = os.environ.get("IOPSD_DEB")
    if deb:
        return deb
    out = os.path.join(os.environ.get("BUILDDIR", "build"), "deb")
    print(f"IOPSD_DEB not set: building the package into {out}", flush=True)
    return subprocess.run([os.path.join(HERE, "build-deb"), out], check=True, stdout=subprocess.PIPE,
                          text=True).stdout.split()[-1]


class Guest:
    """The test's view of the guest: systemctl, the journal, iopsd's HTTP."""

    def __init__(self, vm):
        self.vm = vm
        self.api = HttpClient(vm.host_port())  # through the forwarded port

    def show(self, unit, *props):
        out = self.vm.sh(f"systemctl show {unit} " + " ".join(f"-p {p}" for p in props))
        return dict(line.split("=", 1) for line in out.splitlines())

    def main_pid(self):
        return int(self.show("iopsd.service", "MainPID")["MainPID"])

    def mark(self):
        """The guest's clock (usec since the epoch), for journal(since)."""
        return int(self.vm.sh("date +%s%6N"))

    def journal(self, since, unit="iopsd.service", priority=None):
        """Messages of `unit` logged after `since` (mark()), at `priority`
        if given. (Not journalctl --after-cursor with -u/-p: with a filter
        that the cursor's own entry does not match it skips the first match.)"""
        out = self.vm.run(f"journalctl -o json --no-pager -u {unit}").stdout
        msgs = []
        for line in out.splitlines():
            e = json.loads(line)
            if int(e["__REALTIME_TIMESTAMP"]) <= since:
                continue
            if priority is not None and e.get("PRIORITY") != str(priority):
                continue
            m = e.get("MESSAGE")
            msgs.append(m if isinstance(m, str) else bytes(m).decode(errors="replace"))
        return "\n".join(msgs)

    def write_config(self, text):
        self.vm.write_file(CONF, text, 0o644)

    def dropin(self, unit, name, text):
        self.vm.run(f"mkdir -p /etc/systemd/system/{unit}.d")
        self.vm.write_file(f"/etc/systemd/system/{unit}.d/{name}.conf", text)
        self.vm.run("systemctl daemon-reload")

    def probe(self, name):
        for p in self.api.get_json("/api/v1/probes")["probes"]:
            if p["name"] == name:
                return p
        return None

    def wait(self, pred, timeout, what, interval=1.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = pred()
            except (OSError, AssertionError, ValueError) as e:
                last = e
            else:
                if last:
                    return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")

    def wait_probe_run(self, name, after=0.0, timeout=90):
        """The probe's first last_run newer than `after` (epoch seconds)."""
        def ran():
            p = self.probe(name)
            lr = p and p.get("last_run")
            return lr if lr and lr["time"] > after else None
        return self.wait(ran, timeout, f"a run of probe {name}")

    def wait_active(self, timeout=60):
        return self.wait(lambda: self.vm.run("systemctl is-active iopsd.service", check=False).stdout.strip()
                         == "active", timeout, "iopsd.service active")


# --- the steps ------------------------------------------------------------------

def step_install(g, deb):
    vm = g.vm
    r = vm.install_deb(deb, check=False)
    check("apt-get install ./iopsd_*.deb", r.ok, r.describe())
    check("iopsd.service and iopsd.socket enabled",
          vm.run("systemctl is-enabled iopsd.service iopsd.socket", check=False).stdout.split() == ["enabled"] * 2)
    g.wait_active(60)
    st = g.show("iopsd.service", "ActiveState", "SubState", "Type", "User", "StatusText")
    check("... and running after the install", (st["ActiveState"], st["SubState"]) == ("active", "running"), st)
    check("Type=notify with its status text", st["Type"] == "notify" and st["StatusText"].startswith("Running:"), st)
    pw = vm.sh("getent passwd iopsd").split(":")
    check("system user iopsd, home /var/lib/iopsd, no shell", int(pw[2]) < 1000 and pw[5] == "/var/lib/iopsd"
          and pw[6] in ("/usr/sbin/nologin", "/sbin/nologin"), pw)
    check("... in the disk group", "disk" in vm.sh("id -nG iopsd").split())
    check("state directory iopsd:iopsd 0750", vm.sh("stat -c '%U:%G %a' /var/lib/iopsd") == "iopsd:iopsd 750")
    conffiles = vm.sh("dpkg-query -W -f='${Conffiles}' iopsd")
    check("/etc/iopsd/iopsd.conf is a conffile", CONF in conffiles, conffiles)
    r = vm.run(f"iopsd --check-config --config {CONF}", check=False)
    check("the shipped configuration is valid", r.ok, r.describe())
    for f in ("/usr/sbin/iopsd", "/lib/systemd/system/iopsd.service", "/lib/systemd/system/iopsd.socket",
              "/usr/lib/sysusers.d/iopsd.conf", "/usr/lib/tmpfiles.d/iopsd.conf",
              "/usr/share/man/man8/iopsd.8.gz", "/usr/share/man/man5/iopsd.conf.5.gz",
              "/usr/share/iopsd/prometheus/rules/iopsd-alerts.rules.yml",
              "/usr/share/iopsd/prometheus/rules/iopsd-recording.rules.yml",
              "/usr/share/iopsd/grafana/iopsd-dashboard.json", "/usr/share/iopsd/lab/iopsd-lab",
              "/usr/share/doc/iopsd/examples/iopsd.conf.example"):
        vm.run(f"test -s {f}")
    check("binary, units, sysusers/tmpfiles snippets, man pages, rules, dashboard, lab installed", True)
    out = vm.sh("curl -sf http://127.0.0.1:9477/api/v1/probes")
    probes = json.loads(out)["probes"]
    check("the shipped config runs the built-in default probe on /var/lib/iopsd",
          [(p["name"], p["target"], p["rw"]) for p in probes] == [("default", "/var/lib/iopsd", "randread")], probes)


def step_socket_activation(g):
    vm = g.vm
    # the host reaches the guest's NIC only: the socket listens there too
    g.dropin("iopsd.socket", "10-vm", f"[Socket]\nListenStream={GUEST_ADDR}:9477\nFreeBind=yes\n")
    g.write_config(BASE_CONFIG)
    vm.run("systemctl stop iopsd.service iopsd.socket && systemctl start iopsd.socket")
    check("only the socket is up", vm.run("systemctl is-active iopsd.service", check=False).stdout.strip()
          == "inactive" and vm.sh("systemctl is-active iopsd.socket") == "active")
    status, _, body = g.api.get("/healthz", timeout=60)
    check("the first connection (host -> forwarded port -> socket) starts iopsd and is answered",
          status in (200, 503) and b"status" in body, (status, body))
    check("... iopsd.service is active", vm.sh("systemctl is-active iopsd.service") == "active")
    journal = vm.sh("journalctl -u iopsd -b -o cat -n 30")
    check("... serving on the sockets systemd passed", "socket-activated socket(s)" in journal, journal[-800:])


def step_start_notify(g):
    vm = g.vm
    vm.run("systemctl stop iopsd.service")
    t = time.monotonic()
    vm.run("systemctl start iopsd.service", timeout=120)
    took = time.monotonic() - t
    st = g.show("iopsd.service", "ActiveState", "SubState", "StatusText")
    # Type=notify: start returns once READY=1 came (a missing READY=1
    # would leave it "activating" until TimeoutStartSec)
    check("systemctl start returns with the unit active (READY=1)", st["ActiveState"] == "active"
          and st["SubState"] == "running" and st["StatusText"].startswith("Running:"), (st, took))
    g.wait(lambda: g.api.get("/healthz")[0] == 200, 60, "/healthz 200")
    check("/healthz answers 200 through the host's forwarded port", True)


def step_reload(g):
    vm = g.vm
    pid = g.main_pid()
    g.write_config(BASE_CONFIG + "\n[second]\nrw=randread\nbs=4k\nsize=16m\ndirectory=/var/lib/iopsd\n"
                   "rate_iops=20\nruntime=1s\ninterval=5s\n")
    vm.run("systemctl reload iopsd")
    g.wait(lambda: g.probe("second"), 60, "probe 'second' after the reload")
    check("systemctl reload applies a changed config (new probe), same PID", g.main_pid() == pid)

    since = g.mark()
    broken = BASE_CONFIG + "\n[second]\nrw=randread\nbs=banana\ndirectory=/var/lib/iopsd\n"
    bad_line = broken.splitlines().index("bs=banana") + 1
    g.write_config(broken)
    vm.run("systemctl reload iopsd")
    want = f"{CONF}:{bad_line}:"
    errs = g.wait(lambda: (lambda j: j if want in j else None)(g.journal(since, priority=3)), 60,
                  f"{want} in the journal at priority err")
    check(f"a broken config: '{want} ...' in the journal at priority err", True, errs)
    st = g.show("iopsd.service", "ActiveState", "StatusText", "MainPID")
    check("... iopsd keeps running the old config", st["ActiveState"] == "active" and int(st["MainPID"]) == pid
          and "previous configuration" in st["StatusText"] and g.probe("second") is not None, st)
    g.write_config(BASE_CONFIG)
    vm.run("systemctl reload iopsd")
    g.wait(lambda: g.probe("second") is None, 60, "probe 'second' gone after the good reload")


def step_sandbox(g, raw_dev, scratch_dev):
    vm = g.vm
    # /srv/probe: a filesystem of its own, DIR/.iopsd owned by iopsd as the
    # README says, but not in ReadWritePaths yet
    vm.run(f"mkfs.ext4 -q -F {scratch_dev} && mkdir -p /srv/probe && mount {scratch_dev} /srv/probe && "
           "install -d -o iopsd -g iopsd -m 0700 /srv/probe/.iopsd")
    raw_sum = vm.sh(f"sha256sum {raw_dev}").split()[0]
    g.write_config(BASE_CONFIG + f"""
[outside]
rw=randread
bs=4k
size=8m
directory=/srv/probe
rate_iops=20
runtime=1s
interval=3s

[raw]
rw=randread
bs=4k
filename={raw_dev}
rate_iops=50
runtime=1s
interval=3s
""")
    t = time.time()
    vm.run("systemctl restart iopsd")
    lr = g.wait_probe_run("outside", t)
    check("no write outside the state directory: the probe on /srv/probe fails (read-only)",
          not lr["success"] and ("read-only" in lr["error"].lower() or "erofs" in lr["error"].lower()), lr)
    check("... and left nothing there", vm.sh("ls -A /srv/probe/.iopsd") == "")
    pid = g.main_pid()
    for path in ("/etc/iopsd/x", "/usr/x", "/var/log/x", "/srv/probe/.iopsd/x", "/root/x"):
        r = vm.run(f"nsenter -t {pid} -m -- setpriv --reuid=iopsd --regid=iopsd --init-groups touch {path}",
                   check=False)
        check(f"the service's mount namespace refuses a write to {path}", not r.ok and
              ("Read-only file system" in r.stderr or "Permission denied" in r.stderr), r.describe())
    r = vm.run(f"nsenter -t {pid} -m -- setpriv --reuid=iopsd --regid=iopsd --init-groups "
               "sh -c 'touch /var/lib/iopsd/x && rm /var/lib/iopsd/x'", check=False)
    check("... and allows one to its state directory", r.ok, r.describe())

    lr = g.wait_probe_run("raw", t)
    check(f"a raw-device read probe on {raw_dev} works (SupplementaryGroups=disk, DeviceAllow=... r)",
          lr["success"] and lr["ops"]["read"]["ops"] > 0, lr)
    join = (f"echo $$ > /sys/fs/cgroup/system.slice/iopsd.service/cgroup.procs && exec setpriv --reuid=iopsd "
            f"--regid=iopsd --init-groups dd if=/dev/zero of={raw_dev} bs=4096 count=1 conv=notrunc,fsync")
    r = vm.run(["sh", "-c", join], check=False)
    check("opening the device for writing from the service's cgroup fails (device cgroup)",
          not r.ok and "Operation not permitted" in r.stderr, r.describe())
    r = vm.run(f"setpriv --reuid=iopsd --regid=iopsd --init-groups dd of={raw_dev} count=0 conv=notrunc",
               check=False)
    check("... while outside it the same user (group disk) could open it: the unit is what stops it", r.ok,
          r.describe())
    check("... the device is unchanged", vm.sh(f"sha256sum {raw_dev}").split()[0] == raw_sum)

    g.dropin("iopsd.service", "20-probe-dir", "[Service]\nReadWritePaths=/srv/probe/.iopsd\n")
    t = time.time()
    vm.run("systemctl restart iopsd")
    lr = g.wait_probe_run("outside", t)
    check("with ReadWritePaths=/srv/probe/.iopsd the probe works", lr["success"], lr)
    check("... writing its own file only", vm.sh("ls -A /srv/probe/.iopsd") == "outside.dat")

    out = vm.run("systemd-analyze security --no-pager iopsd.service").stdout
    m = re.search(r"Overall exposure level for iopsd\.service: ([0-9.]+)", out)
    score = float(m.group(1)) if m else None
    print(f"systemd-analyze security iopsd.service (live, in the guest): {score}")
    check("systemd-analyze security on the live unit <= 2.0", score is not None and score <= 2.0, out[-3000:])


def step_forbidden(g, ebs_dev):
    vm = g.vm
    pid = g.main_pid()

    def threads():
        rows = [ln.split(None, 2) for ln in vm.sh(f"ps -L -o tid=,ni=,comm= -p {pid}").splitlines()]
        return [(int(tid), int(ni), comm.strip()) for tid, ni, comm in rows]

    seen = []

    def http_threads_niced():
        # a thread lowers its priority when it first sees a connection;
        # each listening socket (127.0.0.1 and the guest's NIC) has its own
        for _ in range(4):
            g.api.get("/healthz")
        vm.run("for i in 1 2 3 4; do curl -s -o /dev/null http://127.0.0.1:9477/healthz; done")
        ts = threads()
        seen[:] = ts
        http = [t for t in ts if t[2].startswith("MHD")]
        return ts if http and all(ni == 10 for _, ni, _ in http) else None
    try:
        ts = g.wait(http_threads_niced, 60, "every HTTP thread at nice 10")
    except AssertionError as e:
        raise AssertionError(f"{e}: threads (tid, nice, name) {seen}")
    others = [t for t in ts if not t[2].startswith("MHD")]
    check("the HTTP threads run at nice 10 (setpriority allowed), the rest at 0",
          others and all(ni == 0 for _, ni, _ in others), ts)

    for name in ("default", "raw", "outside"):
        p = g.probe(name)
        check(f"io_setup under SystemCallFilter: libaio probe {name} runs", p["last_run"]["success"], p)

    # An NVMe volume presented as EBS: its controller's model as EBS names
    # it, bind-mounted over sysfs before iopsd starts.
    model = f"/sys/block/{os.path.basename(ebs_dev)}/device/model"
    vm.run(f"printf '%-40s\\n' 'Amazon Elastic Block Store' > /run/ebs-model && mount --bind /run/ebs-model {model}")
    vm.run("systemctl restart iopsd")
    dev = os.path.basename(ebs_dev)

    def ebs_metric():
        text = g.api.metrics()
        for line in text.splitlines():
            if line.startswith("iopsd_ebs_volume_statistics_readable{") and f'device="{dev}"' in line:
                return line
        return None
    line = g.wait(ebs_metric, 60, "iopsd_ebs_volume_statistics_readable")
    check("the EBS log page without CAP_SYS_ADMIN: iopsd_ebs_volume_statistics_readable says 0 and why",
          line.endswith(" 0") and 'volume_id="vol-0123456789abcdef0"' in line
          and re.search(r'reason="(eacces|eperm)"', line), line)
    check("... no statistics of zeros", "iopsd_ebs_volume_queue_length" not in g.api.metrics())
    check("... and iopsd serves on (/healthz 200, unit active)", g.api.get("/healthz")[0] == 200
          and vm.sh("systemctl is-active iopsd") == "active")
    vm.run(f"umount {model}")


def step_watchdog(g):
    vm = g.vm
    g.dropin("iopsd.service", "30-watchdog", "[Service]\nWatchdogSec=3s\n")
    vm.run("systemctl restart iopsd")
    st = g.show("iopsd.service", "NRestarts", "WatchdogUSec", "MainPID")
    check("drop-in WatchdogSec=3s", st["WatchdogUSec"] == "3s", st)
    before, pid = int(st["NRestarts"]), int(st["MainPID"])
    since = g.mark()
    time.sleep(8)  # 2.5 watchdog periods: a live iopsd keeps pinging
    check("a running iopsd keeps the watchdog fed", g.main_pid() == pid
          and int(g.show("iopsd.service", "NRestarts")["NRestarts"]) == before)
    t = time.monotonic()
    vm.run(f"kill -STOP {pid}")

    def restarted():
        s = g.show("iopsd.service", "NRestarts", "MainPID", "ActiveState")
        ok = int(s["NRestarts"]) > before and s["ActiveState"] == "active" and int(s["MainPID"]) not in (0, pid)
        return s if ok else None
    s = g.wait(restarted, 90, "a restart after the watchdog timeout")
    took = time.monotonic() - t
    journal = g.journal(since)
    check(f"a SIGSTOP'd iopsd is killed by the watchdog and restarted (NRestarts {before} -> {s['NRestarts']}, "
          f"{took:.0f} s)", "watchdog timeout" in journal.lower(), journal[-1500:])
    cores = vm.sh("ls -A /var/lib/iopsd")
    print(f"state directory after the watchdog kill: {cores!r}")
    vm.run("rm -f /etc/systemd/system/iopsd.service.d/30-watchdog.conf && systemctl daemon-reload && "
           "systemctl restart iopsd")


def step_stop(g):
    vm = g.vm
    # the write probe's file is laid out at 4 MB/s (the volume's cap): a
    # stop arrives in the middle of it
    g.write_config(BASE_CONFIG + "\n[writer]\nrw=randwrite\nbs=4k\nsize=96m\ndirectory=/srv/probe\n"
                   "rate_iops=20\nruntime=1s\ninterval=5s\n")
    vm.run("rm -f /srv/probe/.iopsd/*.dat && systemctl restart iopsd")
    vm.wait_until("ls -A /srv/probe/.iopsd | grep -q '^\\.writer\\.dat\\..*\\.tmp$'", timeout=60,
                  what="the layout of writer.dat")
    timeout = g.show("iopsd.service", "TimeoutStopUSec")["TimeoutStopUSec"]
    t = time.monotonic()
    vm.run("systemctl stop iopsd.service", timeout=120)
    took = time.monotonic() - t
    st = g.show("iopsd.service", "ActiveState", "Result", "ExecMainCode", "ExecMainStatus")
    check(f"systemctl stop during a layout ends in {took:.1f} s (TimeoutStopSec={timeout}), exit 0",
          st["ActiveState"] == "inactive" and st["Result"] == "success" and st["ExecMainStatus"] == "0"
          and st["ExecMainCode"] == "1" and took < 10, st)
    sock = g.show("iopsd.socket", "ActiveState", "Result")
    check("... and iopsd.socket stays listening (iopsd does not shutdown() the passed socket)",
          sock == {"ActiveState": "active", "Result": "success"}, sock)
    files = vm.sh("ls -A /srv/probe/.iopsd")
    sizes = vm.sh("stat -c '%n %s' /srv/probe/.iopsd/* 2>/dev/null || true")
    check("... and leaves no half-written probe file",
          not [f for f in files.split() if f.startswith(".writer.dat.") and f.endswith(".tmp")]
          and all(int(s.split()[1]) == 96 << 20 for s in sizes.splitlines() if "writer.dat" in s), sizes)
    g.write_config(BASE_CONFIG)
    vm.run("systemctl start iopsd.service")


def step_remove_purge(g):
    vm = g.vm
    vm.run("rm -rf /etc/systemd/system/iopsd.service.d /etc/systemd/system/iopsd.socket.d && "
           "systemctl daemon-reload")
    r = vm.run("apt-get remove -y -q iopsd", timeout=300, check=False)
    check("apt-get remove", r.ok, r.describe())
    states = vm.run("systemctl is-active iopsd.service iopsd.socket", check=False).stdout.split()
    check("... stops the service and the socket", all(s in ("inactive", "unknown") for s in states), states)
    check("... nothing listens on 9477", vm.sh("ss -Hltn 'sport = :9477'") == "")
    check("... keeps the conffile and the user", vm.run(f"test -f {CONF} && getent passwd iopsd",
                                                        check=False).ok)
    r = vm.run("apt-get purge -y -q iopsd", timeout=300, check=False)
    check("apt-get purge", r.ok, r.describe())
    left = vm.run("ls -d /etc/iopsd /var/lib/iopsd 2>/dev/null; getent passwd iopsd; getent group iopsd; "
                  "getent group disk | grep -w iopsd; dpkg-query -W -f='${db:Status-Status}' iopsd 2>/dev/null",
                  check=False).stdout.strip()
    check("... removes the conffile, the state directory, the user and group", left in ("", "not-installed"),
          left)


def main():
    t0 = time.monotonic()
    deb = find_deb()
    image = Image.ensure()
    disks = [Disk("raw", "64M", bus="virtio", serial="volraw"),
             Disk("scratch", "256M", bus="virtio", serial="volscratch",
                  throttle={"bps-write": 4 << 20}),
             Disk("ebs", "64M", bus="nvme", serial=EBS_SERIAL)]
    with VM(image, disks=disks) as vm:
        print(f"boot: {vm.boot_seconds:.1f} s (agent after {vm.agent_seconds:.1f} s)", flush=True)
        g = Guest(vm)
        raw, scratch, ebs = (vm.find_disk(s) for s in ("volraw", "volscratch", EBS_SERIAL))
        check("the guest's volumes", raw and scratch and ebs == "/dev/nvme0n1", (raw, scratch, ebs))
        steps = [("install", lambda: step_install(g, deb)),
                 ("socket activation", lambda: step_socket_activation(g)),
                 ("start", lambda: step_start_notify(g)),
                 ("reload", lambda: step_reload(g)),
                 ("sandbox", lambda: step_sandbox(g, raw, scratch)),
                 ("hardening", lambda: step_forbidden(g, ebs)),
                 ("watchdog", lambda: step_watchdog(g)),
                 ("stop", lambda: step_stop(g)),
                 ("remove/purge", lambda: step_remove_purge(g))]
        for name, fn in steps:
            t = time.monotonic()
            print(f"== {name}", flush=True)
            try:
                fn()
            except (AssertionError, VMError):
                print("--- journal (iopsd)\n" + vm.run("journalctl -u iopsd -u iopsd.socket -b -n 60 --no-pager",
                                                        check=False).stdout)
                raise
            print(f"   ({time.monotonic() - t:.1f} s)", flush=True)
    print(f"ok: vm-systemd in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
