"""The alerting chain as a user runs it, for the integration tests: a real
Prometheus with the shipped rules (their for:, keep_firing_for: and range
windows 10 times shorter, or as shipped), a real Alertmanager with the
shipped configuration (its receivers pointed at a webhook in the test, its
group timings shortened, or as shipped) and that webhook receiver, all on
127.0.0.1."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from iopsdtest import SRCDIR, free_port, run

RULES_DIR = os.path.join(SRCDIR, "contrib", "prometheus", "rules")
AM_DIR = os.path.join(SRCDIR, "contrib", "alertmanager")
LAB = os.path.join(SRCDIR, "contrib", "lab", "iopsd-lab")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def compress_rules(dst_dir, minute=6):
    """The shipped rule files with every duration of for:, keep_firing_for:
    and of [..] windows in seconds or minutes read `minute` seconds a
    minute (a 15s for: at minute=6 is 1500ms): the same expressions and
    texts in a test's time (60: as shipped; hours, which only the texts'
    queries use, are left alone). Not shorter: iopsd's ceiling detection
    takes its 4 to 20 one-second samples whatever the rules say, and at a
    minute a second it would lag alerts it precedes by minutes in
    production (IopsdDeviceSaturated would fire before the
    IopsdDeviceThrottled that inhibits it). Returns the files' paths and
    the alerts' for: and keep_firing_for: in seconds ({alert: (for, keep)})."""
    def scaled(m):
        ms = int(m.group(2)) * {"ms": 1, "s": 1000, "m": 60000}[m.group(3)] * minute // 60
        return f"{m.group(1)}{ms // 1000}s" if ms % 1000 == 0 else f"{m.group(1)}{ms}ms"

    paths, timing = [], {}
    for n in sorted(os.listdir(RULES_DIR)):
        if not n.endswith(".yml"):
            continue
        with open(os.path.join(RULES_DIR, n)) as f:
            text = f.read()
        if minute != 60:
            text = re.sub(r"((?:keep_firing_)?for:\s*)(\d+)(ms|s|m)\b", scaled, text)
            text = re.sub(r"(\[)(\d+)(ms|s|m)(?=[]:])", scaled, text)
        for block in re.split(r"\n\s+- alert: ", text)[1:]:
            name = block.split("\n", 1)[0].strip()
            f_ = re.search(r"\n\s+for: (\d+)(ms|s|m)\n", block)
            k_ = re.search(r"\n\s+keep_firing_for: (\d+)(ms|s|m)\n", block)
            timing[name] = tuple(int(x.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[x.group(2)] if x else 0.0
                                 for x in (f_, k_))
        paths.append(os.path.join(dst_dir, n))
        with open(paths[-1], "w") as f:
            f.write(text)
    return paths, timing


class Webhook:
    """Alertmanager's webhook receiver: every notification, with the time it
    arrived and the receiver path (/page, /ticket)."""

    def __init__(self):
        self.notifications = []
        self.cond = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.cond:
                    outer.notifications.append((time.monotonic(), self.path, json.loads(body)))
                    outer.cond.notify_all()
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, pred, timeout):
        """Wait until pred(notifications) is true; returns it, or None."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                r = pred(self.notifications)
                if r or time.monotonic() >= deadline:
                    return r
                self.cond.wait(max(0.05, deadline - time.monotonic()))

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def alerts_of(notifications, status=None):
    """(alertname, labels) of every alert in the notifications, with status."""
    out = []
    for t, path, n in notifications:
        for a in n["alerts"]:
            if status is None or a["status"] == status:
                out.append((t, path, a["labels"]["alertname"], a["labels"], a))
    return out


class Process:
    def __init__(self, tmp, name, argv):
        self.name = name
        self.logf = open(os.path.join(tmp, f"{name}.log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def http_json(url, data=None, timeout=30):
    try:
        with urllib.request.urlopen(url, data=data, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


class Alertmanager(Process):
    """The shipped alertmanager.yml, its receivers' URLs on `webhook`, and
    the root route's group_wait/group_interval/repeat_interval as given
    (the shipped 30s, 30s, 4h do not fit a compressed test); None keeps
    the shipped value."""

    def __init__(self, tmp, webhook, group_wait="5s", group_interval="10s", repeat_interval="1h"):
        self.port = free_port()
        with open(os.path.join(AM_DIR, "alertmanager.yml")) as f:
            text = f.read()
        text = text.replace("http://127.0.0.1:9095", webhook.url)
        for key, value in (("group_wait", group_wait), ("group_interval", group_interval),
                           ("repeat_interval", repeat_interval)):
            if value is not None:
                text = re.sub(rf"(\n  {key}: )\S+", rf"\g<1>{value}", text)
        os.makedirs(os.path.join(tmp, "am"), exist_ok=True)
        self.config = os.path.join(tmp, "am", "alertmanager.yml")
        with open(self.config, "w") as f:
            f.write(text)
        shutil.copy(os.path.join(AM_DIR, "iopsd.tmpl"), os.path.join(tmp, "am"))
        super().__init__(tmp, "alertmanager", [
            "prometheus-alertmanager", f"--config.file={self.config}",
            f"--storage.path={tmp}/am/data", f"--web.listen-address=127.0.0.1:{self.port}",
            "--cluster.listen-address=", "--log.level=warn"])
        self.url = f"http://127.0.0.1:{self.port}"
        wait_ready(f"{self.url}/-/ready", self)

    def alerts(self, **params):
        """GET /api/v2/alerts (active, silenced and inhibited by default)."""
        q = urllib.parse.urlencode(params)
        return http_json(f"{self.url}/api/v2/alerts?{q}")


class Prometheus(Process):
    """prometheus with `config`: YAML text (@RULES@ becomes the compressed
    rule files) or a parsed configuration (its rule_files and alerting are
    replaced); alerts to `am`; rule files shortened to `minute` seconds a
    minute (60: as shipped)."""

    def __init__(self, tmp, config, am=None, extra_args=(), minute=6):
        self.port = free_port()
        self.tmp = tmp
        os.makedirs(os.path.join(tmp, "rules"), exist_ok=True)
        self.rule_files, self.timing = compress_rules(os.path.join(tmp, "rules"), minute)
        self.for_s = {name: f for name, (f, _) in self.timing.items()}
        alerting = {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am.port}"]}]}]} if am else None
        if isinstance(config, dict):
            config = dict(config, rule_files=self.rule_files)
            config.pop("alerting", None)
            if alerting:
                config["alerting"] = alerting
            text = json.dumps(config, indent=1)  # JSON is YAML
        else:
            text = config.replace("@RULES@", json.dumps(self.rule_files))
            if alerting:
                text += "alerting: " + json.dumps(alerting) + "\n"
        self.config = os.path.join(tmp, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write(text)
        super().__init__(tmp, "prometheus", [
            "prometheus", f"--config.file={self.config}", f"--storage.tsdb.path={tmp}/prom-data",
            f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn", *extra_args])
        self.url = f"http://127.0.0.1:{self.port}"

    def api(self, path, **params):
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        return http_json(url)

    def query(self, expr):
        doc = self.api("query", query=expr)
        assert doc["status"] == "success", f"{expr}: {doc}"
        return doc["data"]["result"]

    def wait_up(self, n, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if len(self.query("up == 1")) >= n:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"Prometheus did not scrape {n} targets within {timeout}s")

    def rule_errors(self):
        """Rules whose last evaluation failed: [(name, error)]."""
        groups = self.api("rules")["data"]["groups"]
        return [(r["name"], r.get("lastError")) for g in groups for r in g["rules"]
                if r.get("health") not in ("ok", "unknown") or r.get("lastError")]


class VictoriaMetrics(Process):
    """Debian's victoria-metrics, receiving Prometheus's remote_write, its
    query API Prometheus's; data visible 1 s after it arrives."""

    def __init__(self, tmp):
        self.port = free_port()
        super().__init__(tmp, "victoria-metrics", [
            "victoria-metrics", f"-httpListenAddr=127.0.0.1:{self.port}", f"-storageDataPath={tmp}/vm-data",
            "-retentionPeriod=1d", "-search.latencyOffset=1s", "-loggerLevel=WARN"])
        self.url = f"http://127.0.0.1:{self.port}"
        self.write_url = f"{self.url}/api/v1/write"
        wait_ready(f"{self.url}/health", self)

    def api(self, path, **params):
        return http_json(f"{self.url}/api/v1/{path}?" + urllib.parse.urlencode(params, doseq=True))


class VMAlert(Process):
    """vmalert (in the victoria-metrics package) evaluating rule files
    against VictoriaMetrics and writing what they record back to it."""

    def __init__(self, tmp, vm, rule_files, interval="1s"):
        self.port = free_port()
        super().__init__(tmp, "vmalert", [
            "vmalert", *[f"-rule={p}" for p in rule_files], f"-datasource.url={vm.url}",
            f"-remoteWrite.url={vm.url}", f"-evaluationInterval={interval}", "-remoteWrite.flushInterval=1s",
            f"-httpListenAddr=127.0.0.1:{self.port}", "-loggerLevel=WARN"])
        self.url = f"http://127.0.0.1:{self.port}"
        wait_ready(f"{self.url}/health", self)

    def groups(self):
        return http_json(f"{self.url}/api/v1/rules")["data"]["groups"]


class Lab:
    """A volume of contrib/lab/iopsd-lab capped at `iops`, under /var/tmp."""

    def __init__(self, iops, name="lab"):
        self.base = tempfile.mkdtemp(prefix=f"iopsd-alerting-{name}-", dir="/var/tmp")
        self.opts = ["--name", f"alerting-{os.getpid()}-{name}", "--dir", self.base]
        run(LAB, "up", "--iops", str(iops), "--size", "256M", *self.opts)
        env = run(LAB, "env", *self.opts).stdout.decode()
        self.env = dict(line.split("=", 1) for line in env.split())

    def cmd(self, *argv):
        return [LAB, "run", *self.opts, "--", *argv]

    def down(self):
        run(LAB, "down", "--force", *self.opts, check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def stop(proc):
    """SIGINT a load (fio prints its report), SIGKILL it after 15 s."""
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def inhibited(am, instance):
    """{(alertname, device): [inhibitors]} of the instance's inhibited alerts."""
    out = {}
    for a in am.alerts(inhibited="true", silenced="false", active="false", unprocessed="false"):
        if a["labels"].get("instance") == instance and a["status"]["inhibitedBy"]:
            out[(a["labels"]["alertname"], a["labels"].get("device"))] = a["status"]["inhibitedBy"]
    return out


def wait_ready(url, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if proc.proc.poll() is not None:
                break
            time.sleep(0.2)
    raise AssertionError(f"{proc.name} did not start: see its log")
