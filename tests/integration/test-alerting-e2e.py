#!/usr/bin/env python3
"""Alerting end to end, as a person on call receives it: real iopsd, a real
Prometheus with the shipped rules (for:, keep_firing_for: and windows 10
times shorter: alertstack.compress_rules says why not more), a real
Alertmanager with the shipped configuration (receivers on a webhook in
this test, group_wait 5 s, group_interval 10 s) and the webhook on
127.0.0.1. test-alerting-realtime.py runs them as shipped.

A. contrib/lab/iopsd-lab: a volume capped at 300 IOPS, declared
   (iops_limit=300), with a probe on it; an unthrottled control volume
   with a probe and a declared 5000 IOPS limit. fio QD16 on the lab
   volume and fio at 100 IOPS on the control for LOAD s:
   - one notification for the lab volume, IopsdDeviceAtLimit with host,
     device, volume, mount point, within for: + group_wait + one
     evaluation interval of the alert going pending (+1 s for the hops);
   - IopsdDeviceThrottled, IopsdDeviceSaturated and IopsdProbeLatencyHigh
     on it fire but are inhibited (Alertmanager says by what), and reach
     nobody;
   - nothing for the control volume;
   - "resolved" after the load stops: IopsdDeviceAtLimit's window (here
     6 s), its keep_firing_for (3 s) and a group_interval; the echoes it
     holds back (probe latency over 5 minutes, here 30 s) stay held by
     IopsdCeilingInhibitor, which keeps firing 6 minutes (36 s) after it;
   - the received notification rendered by iopsd.tmpl has what a person
     needs (host, device, mount point, declared limit, runbook).
B. The host has no md array: a second iopsd reads a fixture tree
   (--path.procfs/--path.sysfs, tests/integration/fleetsim.py) with md0, a
   RAID0 on /data over nvme2n1 (flat at 1000 IOPS with a growing queue,
   no limit declared) and nvme3n1 (busy below it), its counters advanced
   as time passes. The RAID0 pages once: one notification, the member's
   IopsdDeviceThrottled (array md0, mount point /data), while md0's own
   IopsdDeviceThrottled, IopsdDeviceSaturated and IopsdArrayHeldByMember
   and the member's IopsdDeviceSaturated are inhibited; then "resolved"."""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import Daemon, Ext4Mount, require_root, require_tool, run  # noqa: E402
from alertstack import AM_DIR, Alertmanager, Lab, Prometheus, Webhook, alerts_of, inhibited, log, stop  # noqa: E402
import fleetsim  # noqa: E402

IOPSD = os.environ.get("IOPSD", "iopsd")
CAP = 300
LOAD = 100  # s of load (and of the fixture's plateau): IopsdDeviceSaturated's for: 60 s + its window
GROUP_WAIT, GROUP_INTERVAL, EVAL = 5, 10, 1
WINDOW = 6  # the ceiling alerts' [1m], 10 times shorter
HOPS = 1.0  # Prometheus -> Alertmanager -> webhook, and the poll that sees activeAt


def check(cond, msg, failures):
    log(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def fio(directory, name, extra=()):
    return ["fio", f"--name={name}", f"--directory={directory}", "--rw=randread", "--bs=4k", "--size=96m",
            "--ioengine=libaio", "--direct=1", "--iodepth=16", "--numjobs=1", "--time_based",
            f"--runtime={LOAD + 60}", "--output=/dev/null", *extra]


class ActiveAt:
    """Polls Prometheus's /api/v1/alerts: the first activeAt (wall clock)
    of each (alertname, instance, device)."""

    def __init__(self, prom):
        self.prom, self.seen = prom, {}

    def poll(self):
        for a in self.prom.api("alerts")["data"]["alerts"]:
            k = (a["labels"]["alertname"], a["labels"].get("instance"), a["labels"].get("device"))
            if k not in self.seen:
                main, _, frac = a["activeAt"].rstrip("Z").partition(".")
                t = datetime.datetime.strptime(main, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
                self.seen[k] = t.timestamp() + float("0." + (frac or "0"))


def render(tmp, payload):
    path = os.path.join(tmp, "received.json")
    with open(path, "w") as f:
        json.dump(payload, f)
    r = subprocess.run(["amtool", "template", "render", f"--template.glob={AM_DIR}/*.tmpl",
                        f"--template.data={path}", '--template.text={{ template "iopsd.text" . }}'],
                       capture_output=True, text=True)
    return r.stdout + r.stderr


def main():
    require_root()
    require_tool("fio", "prometheus", "prometheus-alertmanager", "amtool", "losetup", "mkfs.ext4")
    if not os.path.exists("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device") and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        print("SKIP: no blkio/io cgroup controller")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="iopsd-alerting-e2e-", dir="/var/tmp")
    failures = []
    lab = ctl = a = b = gen = prom = am = hook = load = ctl_load = None
    t_start = time.monotonic()
    try:
        lab = Lab(CAP)
        inner, mnt = lab.env["IOPSD_LAB_INNER_NAME"], lab.env["IOPSD_LAB_MOUNT"]
        ctl = Ext4Mount("alerting-ctl", size_mb=256)
        cdev = ctl.loop.name
        log(f"lab volume {inner} on {mnt} capped at {CAP}; control {cdev} on {ctl.mountpoint}")
        run(*lab.cmd(*fio(mnt, "lab", ["--create_only=1"])))
        run(*fio(ctl.mountpoint, "ctl", ["--create_only=1"]))

        probe = "rw=randread\nbs=4k\nsize=16m\nrate_iops=20\nruntime=1s\ninterval=2s\n"
        a = Daemon("[global]\nlisten_address=127.0.0.1:@PORT@\nstate_directory=@TMP@\n"
                   f"device_include=^({inner}|{cdev})$\n"
                   f"[device {inner}]\niops_limit={CAP}\n[device {cdev}]\niops_limit=5000\n"
                   f"[lab]\ndirectory={mnt}\n{probe}[ctl]\ndirectory={ctl.mountpoint}\n{probe}")
        a.logf = open(a.log, "ab")
        a.proc = subprocess.Popen(lab.cmd(IOPSD, "--config", a.config), stdout=a.logf, stderr=subprocess.STDOUT)
        a.wait_http()

        host = fleetsim.Host(os.path.join(tmp, "raid-host"), 1, n=4, md=True, profiles={
            2: fleetsim.flat(1000, 0, until=LOAD), 3: fleetsim.busy(500), 1: fleetsim.busy(200)})
        b = Daemon("[global]\nlisten_address=127.0.0.1:@PORT@\nstate_directory=@TMP@\n",
                   args=["--path.procfs", host.proc, "--path.sysfs", host.sys])
        gen = fleetsim.Generator([host])

        hook = Webhook()
        am = Alertmanager(tmp, hook, group_wait=f"{GROUP_WAIT}s", group_interval=f"{GROUP_INTERVAL}s")
        A, B = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        prom = Prometheus(tmp, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                          "rule_files: @RULES@\nscrape_configs:\n  - job_name: iopsd\n    static_configs:\n"
                          f"      - targets: ['{A}', '{B}']\n", am=am)
        for_s = prom.for_s
        prom.wait_up(1)
        time.sleep(5)
        check(not hook.notifications, f"nothing notified before the load ({len(hook.notifications)})", failures)

        # ---- the load, and the fixture's plateau ----
        b.start()
        gen.start()
        load = subprocess.Popen(lab.cmd(*fio(mnt, "lab")))
        ctl_load = subprocess.Popen(fio(ctl.mountpoint, "ctl", ["--rate_iops=100"]))
        t_load = time.time()
        prom.wait_up(2)
        active = ActiveAt(prom)
        seen_inhibited = {}
        while time.time() - t_load < LOAD:
            active.poll()
            for inst in (A, B):
                for k, v in inhibited(am, inst).items():
                    seen_inhibited.setdefault((inst,) + k, v)
            time.sleep(0.5)
        stop(load)
        stop(ctl_load)
        load = ctl_load = None
        t_stop = time.time()
        log(f"load stopped after {t_stop - t_load:.0f} s; {len(hook.notifications)} notifications")

        def resolved_for(inst, volume):
            return lambda ns: [x for x in alerts_of(ns, "resolved")
                               if x[3].get("instance") == inst and x[3].get("volume") == volume]
        hook.wait(lambda ns: resolved_for(A, inner)(ns) and resolved_for(B, "md0")(ns), 120)
        t_end = time.time()
        for n in hook.notifications:
            log(f"  notification {n[1]} {n[2]['status']}: " + ", ".join(
                f"{x['labels']['alertname']}{{{x['labels'].get('device', '')}}}={x['status']}"
                for x in n[2]["alerts"]))

        # ---- A: the capped volume pages once, with IopsdDeviceAtLimit ----
        wall = {id(n): time.time() - (time.monotonic() - n[0]) for n in hook.notifications}
        lab_n = [n for n in hook.notifications if n[2]["groupLabels"].get("instance") == A]
        firing = [n for n in lab_n if n[2]["status"] == "firing"]
        got = sorted({(x["labels"]["alertname"], x["labels"].get("device")) for n in firing for x in n[2]["alerts"]})
        check(len(firing) == 1 and got == [("IopsdDeviceAtLimit", inner)],
              f"the capped volume: {len(firing)} firing notification(s), with {got} "
              f"(want 1, IopsdDeviceAtLimit on {inner})", failures)
        if firing:
            x = firing[0][2]["alerts"][0]
            lab_labels = x["labels"]
            want = {"device": inner, "volume": inner, "mountpoint": mnt, "resource": "iops", "severity": "warning"}
            check(all(lab_labels.get(k) == v for k, v in want.items()) and firing[0][1] == "/page",
                  f"its labels {lab_labels} to {firing[0][1]}", failures)
            t_act = active.seen.get(("IopsdDeviceAtLimit", A, inner))
            bound = for_s["IopsdDeviceAtLimit"] + GROUP_WAIT + EVAL + HOPS
            lag = wall[id(firing[0])] - t_act if t_act else None
            check(lag is not None and lag <= bound,
                  f"notified {lag and round(lag, 1)} s after it went pending (for {for_s['IopsdDeviceAtLimit']} s "
                  f"+ group_wait {GROUP_WAIT} s + eval {EVAL} s + {HOPS:g} s = {bound:g} s); "
                  f"{round(wall[id(firing[0])] - t_load, 1)} s after fio started", failures)
            text = render(tmp, firing[0][2])
            log("rendered:\n" + text)
            for w in (f"device:     {inner}", f"mounted on: {mnt}", f"host:       {A}", f"Declared limit: {CAP} IOPS",
                      "runbook:    file:///usr/share/iopsd/runbooks/IopsdDeviceAtLimit.md",
                      "at its declared iops limit"):
                check(w in text, f"the rendered page has {w!r}", failures)
        for name in ("IopsdDeviceThrottled", "IopsdDeviceSaturated", "IopsdProbeLatencyHigh"):
            by = seen_inhibited.get((A, name, inner))
            check(by is not None, f"{name} on {inner} fired and was inhibited (by {by})", failures)
        res = resolved_for(A, inner)(hook.notifications)
        t_res = min((wall[id(n)] for n in lab_n if n[2]["status"] == "resolved"), default=None)
        keep = prom.timing["IopsdDeviceAtLimit"][1]
        bound = WINDOW + keep + GROUP_INTERVAL + 10
        check(bool(res) and t_res is not None and t_res - t_stop <= bound,
              f"resolved {t_res and round(t_res - t_stop, 1)} s after the load stopped (the window {WINDOW} s "
              f"+ keep_firing_for {keep:g} s + group_interval {GROUP_INTERVAL} s + 10: <= {bound:g} s)", failures)
        on_ctl = [x[2] for x in alerts_of(hook.notifications) if cdev in (x[3].get("device"), x[3].get("volume"))
                  or x[3].get("probe") == "ctl"]
        ctl_alerts = prom.query(f'ALERTS{{device="{cdev}"}} or ALERTS{{probe="ctl"}}')
        check(not on_ctl and not ctl_alerts, f"nothing for the control volume {cdev} (notified {on_ctl}, "
              f"Prometheus ALERTS {[r['metric']['alertname'] for r in ctl_alerts]})", failures)

        # ---- B: the RAID0 held by a member pages once ----
        raid_n = [n for n in hook.notifications if n[2]["groupLabels"].get("instance") == B]
        firing = [n for n in raid_n if n[2]["status"] == "firing"]
        got = sorted({(x["labels"]["alertname"], x["labels"].get("device")) for n in firing for x in n[2]["alerts"]})
        check(len(firing) == 1 and got == [("IopsdDeviceThrottled", "nvme2n1")],
              f"the RAID0: {len(firing)} firing notification(s), with {got} "
              f"(want 1, IopsdDeviceThrottled on its member nvme2n1)", failures)
        if firing:
            lbl = firing[0][2]["alerts"][0]["labels"]
            check(lbl.get("array") == "md0" and lbl.get("volume") == "md0" and lbl.get("mountpoint") == "/data"
                  and lbl.get("volume_id", "").startswith("vol-") and firing[0][2]["groupLabels"].get("volume") == "md0",
                  f"the member's labels {lbl}", failures)
            t_act = active.seen.get(("IopsdDeviceThrottled", B, "nvme2n1"))
            bound = for_s["IopsdDeviceThrottled"] + GROUP_WAIT + EVAL + HOPS
            lag = wall[id(firing[0])] - t_act if t_act else None
            check(lag is not None and lag <= bound, f"notified {lag and round(lag, 1)} s after it went pending "
                  f"(<= {bound:g} s)", failures)
        for k in (("IopsdDeviceThrottled", "md0"), ("IopsdArrayHeldByMember", "md0"),
                  ("IopsdDeviceSaturated", "md0"), ("IopsdDeviceSaturated", "nvme2n1")):
            by = seen_inhibited.get((B,) + k)
            check(by is not None, f"{k[0]} on {k[1]} fired and was inhibited (by {by})", failures)
        check(bool(resolved_for(B, "md0")(hook.notifications)), "the RAID0's page resolved after its plateau ended",
              failures)
        others = [(x[2], x[3].get("device")) for x in alerts_of(hook.notifications)
                  if x[3].get("instance") == B and x[3].get("volume") != "md0"]
        check(not others, f"nothing for the fixture host's other volumes ({others})", failures)
        errs = prom.rule_errors()
        check(not errs, f"every rule evaluated without error ({errs})", failures)
        log(f"the generator's writes: {gen.late} of {gen.writes} more than a period late")
        log(f"test took {t_end - t_load:.0f} s from the load")
        for d in (a, b):
            rc, _ = d.stop()
            check(rc == 0, f"iopsd on port {d.port} stopped cleanly ({rc})", failures)
    finally:
        for p in (load, ctl_load):
            stop(p)
        if gen:
            gen.stop()
        for d in (a, b):
            if d:
                d.cleanup()
        for p in (prom, am):
            if p:
                p.stop()
        if hook:
            hook.stop()
        if ctl:
            ctl.cleanup()
        if lab:
            lab.down()
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"total {time.monotonic() - t_start:.0f} s")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
