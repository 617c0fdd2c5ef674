#!/usr/bin/env python3
"""Ceilings end to end: contrib/lab/iopsd-lab builds a volume capped at 600
read IOPS (a cgroup throttle on the loop device under it); fio QD16 random
reads run on it inside the cgroup, and on an unthrottled loop device next
to it. Two iopsd, also in the cgroup, watch both devices: A declares
iops_limit=600 for the lab volume, B declares nothing. A real Prometheus
scrapes both every second, with contrib/prometheus's rules loaded.

  capped at 600:  device IOPS 600 +-3%, limit_ratio ~1, at_ceiling_seconds
                  growing ~1 s/s, throttled=1 within 30 s, B's
                  iops_ceiling_estimate 600 +-5%; the unthrottled device
                  under the same load is never throttled
  cap -> 300:     the estimate follows within 60 s
  load at half the cap (fio --rate_iops): throttled=0, estimate kept
  then quiet: a third iopsd with a ceiling probe (ceiling=1) measures the
                  300 cap directly and makes it its estimate, once
  every expression of the rules and of the Grafana dashboard evaluates
  without error against that Prometheus, and the main panels have data."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from iopsdtest import (SRCDIR, Daemon, Ext4Mount, free_port, metric_value, require_root,  # noqa: E402
                       require_tool, run)
from alertstack import stop  # noqa: E402

LAB = os.path.join(SRCDIR, "contrib", "lab", "iopsd-lab")
CAP = 600
NEW_CAP = 300
FIO_SIZE = "192m"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Lab:
    def __init__(self, iops):
        self.base = tempfile.mkdtemp(prefix="iopsd-ceiling-lab-", dir="/var/tmp")
        self.name = f"ceiling-it-{os.getpid()}"
        self.opts = ["--name", self.name, "--dir", self.base]
        run(LAB, "up", "--iops", str(iops), "--size", "384M", *self.opts)
        env = run(LAB, "env", *self.opts).stdout.decode()
        self.env = dict(line.split("=", 1) for line in env.split())

    def cap(self, iops):
        run(LAB, "cap", str(iops), *self.opts)

    def cmd(self, *argv):
        return [LAB, "run", *self.opts, "--", *argv]

    def down(self):
        run(LAB, "down", "--force", *self.opts, check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def fio(directory, name, extra=(), runtime=600):
    return ["fio", f"--name={name}", f"--directory={directory}", "--rw=randread", "--bs=4k",
            f"--size={FIO_SIZE}", "--ioengine=libaio", "--direct=1", "--iodepth=16", "--numjobs=1",
            "--time_based", f"--runtime={runtime}", "--output=/dev/null", *extra]


class Prometheus:
    def __init__(self, tmp, targets):
        self.port = free_port()
        self.tmp = tmp
        rules = os.path.join(SRCDIR, "contrib", "prometheus", "rules")
        with open(f"{tmp}/prometheus.yml", "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files:\n  - {rules}/iopsd-recording.rules.yml\n  - {rules}/iopsd-alerts.rules.yml\n"
                    "scrape_configs:\n  - job_name: iopsd\n    static_configs:\n"
                    f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        self.logf = open(f"{tmp}/prometheus.log", "wb")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml",
                                      f"--storage.tsdb.path={tmp}/prom-data",
                                      f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                                     stdout=self.logf, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                doc = json.load(r)
        except urllib.error.HTTPError as e:
            doc = json.load(e)
        return doc

    def query(self, expr):
        doc = self.api("query", query=expr)
        assert doc["status"] == "success", f"{expr}: {doc}"
        return doc["data"]["result"]

    def value(self, expr):
        res = self.query(expr)
        return float(res[0]["value"][1]) if res else None

    def wait_up(self, n, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if len([r for r in self.query('up == 1')]) >= n:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"Prometheus did not scrape {n} targets within {timeout}s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def check(cond, msg, failures):
    log(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def dashboard_queries():
    path = os.path.join(SRCDIR, "contrib", "grafana", "iopsd-dashboard.json")
    with open(path) as f:
        d = json.load(f)
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    variables = [v.get("definition", "") for v in d["templating"]["list"] if v["type"] == "query"]
    return out, variables


def grafana_to_promql(expr):
    for var, value in (("$__rate_interval", "10s"), ("$__range", "2m"), ("$__interval", "1s")):
        expr = expr.replace(var, value)
    return re.sub(r"\$(instance|device|probe)\b", ".*", expr)


def main():
    require_root()
    require_tool("fio", "prometheus", "losetup", "mkfs.ext4", "findmnt", "blkid")
    if not os.path.exists("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device") and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        print("SKIP: no blkio/io cgroup controller")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="iopsd-ceiling-it-", dir="/var/tmp")
    failures = []
    lab = free = a = b = prom = load = free_load = None
    t_start = time.monotonic()
    try:
        lab = Lab(CAP)
        inner, mnt = lab.env["IOPSD_LAB_INNER_NAME"], lab.env["IOPSD_LAB_MOUNT"]
        free = Ext4Mount("ceiling-free", size_mb=384)
        log(f"lab volume {inner} on {mnt} capped at {CAP}; unthrottled {free.loop.name} on {free.mountpoint}")
        # lay the fio files out first (their writes are not what we measure)
        run(*lab.cmd(*fio(mnt, "lab", ["--create_only=1"])))
        run(*fio(free.mountpoint, "free", ["--create_only=1"]))

        include = f"^({inner}|{free.loop.name})$"
        common = (f"[global]\nlisten_address=127.0.0.1:@PORT@\nstate_directory=@TMP@\n"
                  f"device_include={include}\n")
        # A also probes the unthrottled volume gently, for the latency panels
        a = Daemon(common + f"[device {inner}]\niops_limit={CAP}\n"
                   f"[gentle]\ndirectory={free.mountpoint}\nrw=randread\nbs=4k\nsize=16m\n"
                   "rate_iops=20\nruntime=1s\ninterval=5s\n")
        b = Daemon(common)
        for d in (a, b):
            cmd = lab.cmd(os.environ.get("IOPSD", "iopsd"), "--config", d.config)
            d.logf = open(d.log, "ab")
            d.proc = subprocess.Popen(cmd, stdout=d.logf, stderr=subprocess.STDOUT)
            d.wait_http()
        prom = Prometheus(tmp, [f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"])
        prom.wait_up(2)
        A, B = f'instance="127.0.0.1:{a.port}"', f'instance="127.0.0.1:{b.port}"'
        dev = f'device="{inner}"'
        fdev = f'device="{free.loop.name}"'

        # ---- capped at 600, QD16 ----
        load = subprocess.Popen(lab.cmd(*fio(mnt, "lab")))
        t0 = time.monotonic()
        detected = None
        while time.monotonic() - t0 < 40:
            if metric_value(b.metrics(), "iopsd_device_throttled", {"device": inner}) == 1:
                detected = time.monotonic() - t0
                break
            time.sleep(0.25)
        check(detected is not None and detected <= 30,
              f"throttled=1 on {inner} {detected and round(detected, 1)} s after fio started (<= 30 s)", failures)
        time.sleep(max(0.0, 30 - (time.monotonic() - t0)))  # a settled window for the figures below

        iops = prom.value(f'avg_over_time(iopsd:device_iops:sum{{{A},{dev}}}[10s])')
        check(iops is not None and abs(iops - CAP) <= 0.03 * CAP, f"device IOPS {iops} within 3% of {CAP}",
              failures)
        ratio = prom.value(f'avg_over_time(iopsd_device_limit_ratio{{{A},{dev},resource="iops"}}[10s])')
        check(ratio is not None and abs(ratio - 1) <= 0.03, f"limit_ratio {ratio} ~ 1", failures)
        # over 20 s: a second the throttle lets through short of 98% of the
        # limit is rightly not at the limit, and a busy host has a few
        growth = prom.value(f'increase(iopsd_device_at_ceiling_seconds_total{{{A},{dev},resource="iops"}}[20s]) / 20')
        check(growth is not None and 0.85 <= growth <= 1.1, f"at_ceiling_seconds_total grows {growth} s/s (~1)",
              failures)
        est = prom.value(f'iopsd_device_iops_ceiling_estimate{{{B},{dev}}}')
        check(est is not None and abs(est - CAP) <= 0.05 * CAP,
              f"undeclared: iops_ceiling_estimate {est} within 5% of {CAP}", failures)
        check(prom.value(f'iopsd_device_iops_limit{{{B},{dev}}}') is None, "B has no declared limit", failures)

        # ---- the cap moves to 300 under load ----
        lab.cap(NEW_CAP)
        t1 = time.monotonic()
        followed = None
        while time.monotonic() - t1 < 60:
            v = metric_value(b.metrics(), "iopsd_device_iops_ceiling_estimate", {"device": inner})
            if v is not None and abs(v - NEW_CAP) <= 0.05 * NEW_CAP:
                followed = time.monotonic() - t1
                break
            time.sleep(0.25)
        check(followed is not None, f"estimate followed {CAP} -> {NEW_CAP} in "
              f"{followed and round(followed, 1)} s (<= 60 s)", failures)
        stop(load)

        # ---- load at half the cap: not throttled, estimate kept; meanwhile
        # the unthrottled volume under the QD16 load (not earlier: flat out,
        # it takes a CPU the lab's throttle needs to hold 600 steadily) ----
        load = subprocess.Popen(lab.cmd(*fio(mnt, "lab", [f"--rate_iops={NEW_CAP // 2}"])))
        free_load = subprocess.Popen(fio(free.mountpoint, "free"))
        time.sleep(25)
        free_iops = prom.value(f'avg_over_time(iopsd:device_iops:sum{{{A},{fdev}}}[20s])')
        free_util = prom.value(f'avg_over_time(iopsd_device_utilization_ratio{{{A},{fdev}}}[20s])')
        free_thr = prom.value(f'max_over_time(iopsd_device_throttled{{{fdev}}}[25s])')
        check(free_thr == 0 and free_iops is not None and free_iops > 3 * CAP,
              f"unthrottled {free.loop.name} under the same QD16 load ({free_iops and round(free_iops)} "
              f"IOPS, util {free_util and round(free_util, 2)}): throttled max {free_thr}", failures)
        stop(free_load)
        free_load = None
        half = prom.value(f'avg_over_time(iopsd:device_iops:sum{{{A},{dev}}}[15s])')
        thr = prom.value(f'max_over_time(iopsd_device_throttled{{{dev}}}[15s])')
        check(thr == 0, f"fio --rate_iops={NEW_CAP // 2} ({half and round(half)} IOPS) under a {NEW_CAP} cap: "
              f"throttled max {thr}", failures)
        est = prom.value(f'iopsd_device_iops_ceiling_estimate{{{B},{dev}}}')
        check(est is not None and abs(est - NEW_CAP) <= 0.05 * NEW_CAP, f"estimate kept at {est}", failures)
        stop(load)
        load = None

        # ---- quiet: the ceiling probe measures the cap ----
        c = Daemon(common + f"[ceil]\ndirectory={mnt}\nrw=randread\nbs=4k\nsize=32m\niodepth=32\n"
                   "ceiling=1\ninterval=10s\n")
        c.logf = open(c.log, "ab")
        c.proc = subprocess.Popen(lab.cmd(os.environ.get("IOPSD", "iopsd"), "--config", c.config),
                                  stdout=c.logf, stderr=subprocess.STDOUT)
        try:
            c.wait_http()
            t2 = time.monotonic()
            measured = None
            while time.monotonic() - t2 < 40:
                text = c.metrics()
                est = metric_value(text, "iopsd_device_iops_ceiling_estimate", {"device": inner})
                if metric_value(text, "iopsd_probe_runs_total", {"probe": "ceil"}) and est:
                    measured = time.monotonic() - t2
                    break
                time.sleep(0.5)
            time.sleep(3)
            text = c.metrics()
            est = metric_value(text, "iopsd_device_iops_ceiling_estimate", {"device": inner})
            probe_iops = metric_value(text, "iopsd_probe_iops", {"probe": "ceil", "op": "read"})
            # what the burst got through the throttle becomes the estimate
            # (the lab's kernel throttle delivers less than its cap when
            # the machine is starved of CPU, never more)
            check(measured is not None and est is not None and probe_iops is not None
                  and abs(est - probe_iops) <= 0.005 * probe_iops and 0.5 * NEW_CAP <= est <= 1.05 * NEW_CAP,
                  f"ceiling probe on the quiet volume measured {probe_iops} IOPS under the {NEW_CAP} cap, "
                  f"estimate {est}, {measured and round(measured, 1)} s after start", failures)
            check(metric_value(text, "iopsd_probe_runs_total", {"probe": "ceil"}) == 1
                  and metric_value(text, "iopsd_device_throttled", {"device": inner}) == 0,
                  "ceiling probe ran once (its budget) and its burst is not a throttled plateau", failures)
            rc, _ = c.stop()
            check(rc == 0, f"iopsd with the ceiling probe stopped cleanly ({rc})", failures)
        finally:
            c.cleanup()

        # ---- every rule and dashboard expression runs ----
        groups = prom.api("rules")["data"]["groups"]
        bad = [(r["name"], r.get("lastError")) for g in groups for r in g["rules"]
               if r.get("health") not in ("ok", "unknown") or r.get("lastError")]
        n_rules = sum(len(g["rules"]) for g in groups)
        check(n_rules >= 17 and not bad, f"{n_rules} rules loaded and evaluated without error {bad}", failures)
        queries, variables = dashboard_queries()
        errors, empty = [], []
        must_have_data = {"IOPS against limit", "Time at the limit", "Throttled / saturated", "Utilization",
                          "Queue depth (aqu-sz)", "Probe latency", "Limit ratio", "Device await"}
        for title, expr in queries:
            q = grafana_to_promql(expr)
            doc = prom.api("query", query=q)
            if doc["status"] != "success":
                errors.append((title, q, doc.get("error")))
            elif title in must_have_data and not doc["data"]["result"]:
                empty.append(title)
            r = prom.api("query_range", query=q, start=time.time() - 120, end=time.time(), step="2")
            if r["status"] != "success":
                errors.append((title, q, r.get("error")))
        for v in variables:
            m = re.match(r"label_values\((.*),\s*(\w+)\)$", v)
            sel = grafana_to_promql(m.group(1)) if m else None
            doc = prom.api("series", **{"match[]": sel}) if sel else {"status": "bad", "error": v}
            if doc["status"] != "success" or not doc["data"]:
                errors.append(("variable", v, doc.get("error")))
        check(not errors, f"{len(queries)} dashboard queries and {len(variables)} variables ran: {errors}", failures)
        check(not empty, f"main dashboard panels have data (empty: {empty})", failures)
        for d in (a, b):
            rc, _ = d.stop()
            check(rc == 0, f"iopsd on port {d.port} stopped cleanly ({rc})", failures)
    finally:
        for p in (free_load, load):
            stop(p)
        for d in (a, b):
            if d:
                d.cleanup()
        if prom:
            prom.stop()
        if free:
            free.cleanup()
        if lab:
            lab.down()
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"total {time.monotonic() - t_start:.0f} s")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
