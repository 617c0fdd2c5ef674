#!/usr/bin/env python3
"""The shipped alerting in real time: a cap pages once within 2 minutes of
binding and resolves within 2 minutes of the load stopping, on the rules'
real windows (uncompressed), through a real Prometheus with the shipped
prometheus-single-host.yml (scrapes every 5 s, rules every 15 s; only its
target is this test's iopsd) and a real Alertmanager with the shipped
alertmanager.yml (group_wait 30s, group_interval 30s; only the receivers'
URL is this test's webhook).

Two volumes of contrib/lab/iopsd-lab, each capped at CAP IOPS by a blkio
throttle: one with no limit declared (IopsdDeviceThrottled pages), one
with iops_limit=CAP declared (IopsdDeviceAtLimit pages, its
IopsdDeviceThrottled is held back by IopsdCeilingInhibitor). fio QD16 on
both for LOAD s, started together; iopsd watches both, from outside the
labs. For each volume:
  - the cap binds when iopsd's per-second IOPS first reach 90% of the
    cap (the start of that second), and the load stops with the first
    second below half of it after that (its start);
  - exactly one firing notification, with that volume's cause, within
    BOUND s of the binding;
  - its resolved notification within BOUND s of the load stopping;
  - no other notification, up to AFTER s after the last one.
It prints a table of the times (seconds after fio started) and the host's
load average, and passes the key figures to the lab's table."""
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import SRCDIR, Daemon, figure, require_root, require_tool, run  # noqa: E402
from alertstack import Alertmanager, Lab, Prometheus, Webhook, inhibited, log, stop  # noqa: E402

CAP = 300
LOAD = 180     # s of demand above the cap
QUIET = 20     # s idle before it: a baseline, and the onset test's quiet
BOUND = 120    # s: cap bound -> page, load stopped -> resolved
AFTER = 60     # s watched after the last notification for a second page
PROM_YML = os.path.join(SRCDIR, "contrib", "prometheus", "prometheus-single-host.yml")


def check(cond, msg, failures):
    log(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def prometheus_config(target):
    """prometheus-single-host.yml as shipped, its target and rule files
    this test's (alertstack.Prometheus puts in the rules, uncompressed)."""
    with open(PROM_YML) as f:
        text = f.read()
    assert "127.0.0.1:9477" in text, "prometheus-single-host.yml: no target 127.0.0.1:9477 to replace"
    text = text.replace("127.0.0.1:9477", target)
    head, _, rest = text.partition("rule_files:\n")
    lines = rest.split("\n")
    while lines and lines[0].startswith("  - "):
        lines.pop(0)
    return head + "rule_files: @RULES@\n" + "\n".join(lines)


def fio(directory, name, extra=()):
    return ["fio", f"--name={name}", f"--directory={directory}", "--rw=randread", "--bs=4k", "--size=96m",
            "--ioengine=libaio", "--direct=1", "--iodepth=16", "--numjobs=1", "--time_based",
            f"--runtime={LOAD}", "--output-format=json", "--output=/dev/null", *extra]


class Watch:
    """Polls Prometheus's alerts and Alertmanager's inhibitions: the first
    time each (alertname, device) was seen pending and firing (wall clock),
    its activeAt, and the inhibited alerts with what held them."""

    def __init__(self, prom, am, instance):
        self.prom, self.am, self.instance = prom, am, instance
        self.pending, self.firing, self.active_at, self.inhibited = {}, {}, {}, {}

    def poll(self):
        now = time.time()
        for a in self.prom.api("alerts")["data"]["alerts"]:
            k = (a["labels"]["alertname"], a["labels"].get("device"))
            (self.firing if a["state"] == "firing" else self.pending).setdefault(k, now)
            main, _, frac = a["activeAt"].rstrip("Z").partition(".")
            t = datetime.datetime.strptime(main, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
            self.active_at.setdefault(k, t.timestamp() + float("0." + (frac or "0")))
        for k, v in inhibited(self.am, self.instance).items():
            self.inhibited.setdefault(k, v)


def seconds(d, device):
    """iopsd's per-second history of the device: [(time, iops, throttled, at_limit)]."""
    h = d.get_json(f"/api/v1/history?window=15m&device={device}")
    s = next(x for x in h["devices"] if x["name"] == device)["series"]
    at = s.get("at_limit") or [None] * len(s["time"])
    return list(zip(s["time"], s["iops"], s["throttled"], at))


def bound_and_stop(hist, t_fio):
    """When the cap bound (the start of the first second at 90% of the
    cap) and the load stopped (the start of the first second below half
    of it after that), and when iopsd first flagged it."""
    step = hist[1][0] - hist[0][0] if len(hist) > 1 else 1.0
    t_bind = next((t - step for t, iops, _, _ in hist if t > t_fio and iops >= 0.9 * CAP), None)
    t_stop = next((t - step for t, iops, _, _ in hist if t_bind and t > t_bind + step and iops < 0.5 * CAP), None)
    t_flag = next((t for t, _, thr, _ in hist if t_bind and t > t_bind and thr), None)
    return t_bind, t_stop, t_flag


def group_notifications(hook, volume):
    """(wall time, status, [(alertname, device)]) of the notifications of
    the volume's group, in order."""
    out = []
    for t, path, n in list(hook.notifications):
        if n["groupLabels"].get("volume") == volume:
            wall = time.time() - (time.monotonic() - t)
            out.append((wall, n["status"], path, sorted((a["labels"]["alertname"], a["labels"].get("device"))
                                                        for a in n["alerts"] if a["status"] == n["status"])))
    return out


def rel(t, t0):
    return f"{t - t0:7.1f}" if t is not None else "      -"


def judge(name, dev, want, hist, t_fio, hook, watch, failures):
    """The checks for one volume; returns its row of the table."""
    t_bind, t_stop, t_flag = bound_and_stop(hist, t_fio)
    check(t_bind is not None and t_stop is not None,
          f"{name} ({dev}): the cap bound at {t_bind and round(t_bind - t_fio, 1)} s, the load stopped at "
          f"{t_stop and round(t_stop - t_fio, 1)} s (iopsd's seconds)", failures)
    ns = group_notifications(hook, dev)
    firing = [n for n in ns if n[1] == "firing"]
    resolved = [n for n in ns if n[1] == "resolved"]
    check(len(firing) == 1 and firing[0][3] == [(want, dev)] and firing[0][2] == "/page",
          f"{name}: {len(firing)} firing notification(s): {[(n[2], n[3]) for n in firing]} "
          f"(want one, {want} on {dev}, to /page)", failures)
    t_page = firing[0][0] if firing else None
    t_res = resolved[0][0] if resolved else None
    page_lag = t_page - t_bind if t_page and t_bind else None
    res_lag = t_res - t_stop if t_res and t_stop else None
    check(page_lag is not None and page_lag <= BOUND,
          f"{name}: paged {page_lag and round(page_lag, 1)} s after the cap bound (<= {BOUND} s)", failures)
    check(res_lag is not None and res_lag <= BOUND and len(resolved) == 1,
          f"{name}: {len(resolved)} resolved notification(s), the first {res_lag and round(res_lag, 1)} s after "
          f"the load stopped (one, <= {BOUND} s)", failures)
    figure(f"{name}_bind_to_page_s", f"{page_lag:.1f}" if page_lag is not None else "none")
    figure(f"{name}_stop_to_resolved_s", f"{res_lag:.1f}" if res_lag is not None else "none")
    k = (want, dev)
    return (name, dev, t_bind, t_flag, watch.active_at.get(k), watch.firing.get(k), t_page, t_stop, t_res,
            page_lag, res_lag)


def table(rows, t0):
    print(f"\ntimes in s after fio started ({time.strftime('%H:%M:%S', time.localtime(t0))}); cap {CAP} IOPS, "
          f"load {LOAD} s; bound = first second at 90% of the cap, stop = first second below half of it")
    print(f"{'volume':<10} {'device':<8} {'bound':>7} {'flagged':>7} {'pending':>7} {'firing':>7} "
          f"{'paged':>7} {'stopped':>7} {'resolved':>8}  bound->paged  stopped->resolved")
    for name, dev, tb, tf, ta, tfi, tp, ts, tr, pl, rl in rows:
        print(f"{name:<10} {dev:<8} {rel(tb, t0)} {rel(tf, t0)} {rel(ta, t0)} {rel(tfi, t0)} {rel(tp, t0)} "
              f"{rel(ts, t0)} {rel(tr, t0):>8}  {pl if pl is None else round(pl, 1):>12}  "
              f"{rl if rl is None else round(rl, 1):>17}")
    print(flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    require_root()
    require_tool("fio", "prometheus", "prometheus-alertmanager", "losetup", "mkfs.ext4")
    if not os.path.exists("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device") and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        print("SKIP: no blkio/io cgroup controller")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="iopsd-alerting-rt-", dir="/var/tmp")
    failures = []
    labs, loads, d, prom, am, hook = [], [], None, None, None, None
    t_start = time.monotonic()
    log(f"load average at the start: {loadavg()}")
    try:
        labs.append(Lab(CAP, "und"))
        labs.append(Lab(CAP, "dec"))
        U, D = (lab.env["IOPSD_LAB_INNER_NAME"] for lab in labs)
        for lab in labs:
            run(*lab.cmd(*fio(lab.env["IOPSD_LAB_MOUNT"], "rt", ["--create_only=1"])))
        log(f"volumes {U} (no limit declared) and {D} (iops_limit={CAP}), each capped at {CAP} IOPS")

        d = Daemon("[global]\nlisten_address=127.0.0.1:@PORT@\nstate_directory=@TMP@\n"
                   f"device_include=^({U}|{D})$\n[device {D}]\niops_limit={CAP}\n")
        d.start()
        hook = Webhook()
        am = Alertmanager(tmp, hook, group_wait=None, group_interval=None, repeat_interval=None)
        target = f"127.0.0.1:{d.port}"
        prom = Prometheus(tmp, prometheus_config(target), am=am, minute=60)
        for name in ("IopsdDeviceThrottled", "IopsdDeviceAtLimit"):
            log(f"{name}: for {prom.timing[name][0]:g} s, keep_firing_for {prom.timing[name][1]:g} s (as shipped)")
        prom.wait_up(1)
        time.sleep(QUIET)
        check(not hook.notifications, f"nothing notified before the load ({len(hook.notifications)})", failures)

        watch = Watch(prom, am, target)
        t_fio = time.time()
        loads = [subprocess.Popen(lab.cmd(*fio(lab.env["IOPSD_LAB_MOUNT"], "rt")), stdout=subprocess.DEVNULL)
                 for lab in labs]
        while any(p.poll() is None for p in loads) and time.time() - t_fio < LOAD + 60:
            watch.poll()
            time.sleep(1)
        for p in loads:
            stop(p)
        t_fio_end = time.time()
        log(f"fio ran {t_fio_end - t_fio:.0f} s; load average {loadavg()}")

        def resolved_both(ns):
            return all(any(n[2]["status"] == "resolved" and n[2]["groupLabels"].get("volume") == v for n in ns)
                       for v in (U, D))
        deadline = t_fio_end + BOUND + 30
        while not resolved_both(hook.notifications) and time.time() < deadline:
            watch.poll()
            time.sleep(1)
        t_quiet = time.time() + AFTER
        while time.time() < t_quiet:
            watch.poll()
            time.sleep(1)

        for t, path, n in hook.notifications:
            log(f"  notification to {path} {n['status']} ({n['groupLabels'].get('volume')}): " + ", ".join(
                f"{x['labels']['alertname']}{{{x['labels'].get('device', '')}}}={x['status']}" for x in n["alerts"]))
        rows = [judge("throttled", U, "IopsdDeviceThrottled", seconds(d, U), t_fio, hook, watch, failures),
                judge("at-limit", D, "IopsdDeviceAtLimit", seconds(d, D), t_fio, hook, watch, failures)]
        held = watch.inhibited.get(("IopsdDeviceThrottled", D))
        check(("IopsdDeviceThrottled", D) not in watch.firing or held is not None,
              f"IopsdDeviceThrottled on the declared volume {D}: "
              + (f"fired and was inhibited (by {held})" if ("IopsdDeviceThrottled", D) in watch.firing
                 else "never fired"), failures)
        others = [n[2]["groupLabels"] for n in hook.notifications if n[2]["groupLabels"].get("volume") not in (U, D)]
        check(not others, f"no other notification ({others})", failures)
        errs = prom.rule_errors()
        check(not errs, f"every rule evaluated without error ({errs})", failures)
        table(rows, t_fio)
        log(f"load average at the end: {loadavg()}")
        rc, _ = d.stop()
        check(rc == 0, f"iopsd stopped cleanly ({rc})", failures)
    finally:
        for p in loads:
            stop(p)
        closers = [d and d.cleanup, prom and prom.stop, am and am.stop, hook and hook.stop]
        for close in closers + [lab.down for lab in labs]:
            if close:
                close()
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"total {time.monotonic() - t_start:.0f} s")
    if failures:
        sys.exit("FAILED:\n  " + "\n  ".join(failures))

if __name__ == "__main__":
    main()
