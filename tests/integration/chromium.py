"""Headless Chromium driven over the DevTools protocol, for the live page
tests: stdlib only. The protocol runs over --remote-debugging-pipe (JSON
messages ended by NUL on file descriptors 3 and 4), so there is no port to
pick and no websocket to speak. Every console message, exception, log entry
(CSP violations, failed loads) and request of the page is recorded."""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


def find_chromium():
    for n in CHROMIUM_NAMES:
        p = shutil.which(n)
        if p:
            return p
    return None


class Chromium:
    def __init__(self, workdir=None, width=1280, height=900):
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=workdir)
        self.log_path = os.path.join(self.profile, "chromium.log")
        # our ends stay close-on-exec; the child gets its ends as fds 3 and 4
        cmd_r, self.cmd_w = os.pipe()
        self.ev_r, ev_w = os.pipe()
        # keep the child's ends above 4 so that dup2 cannot clobber one with the other
        hi_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(ev_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(cmd_r)
        os.close(ev_w)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [find_chromium()] + FLAGS + [f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                                         "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.logf, stderr=subprocess.STDOUT,
            # Python's own descriptors are close-on-exec (PEP 446): only 3 and 4
            # are inherited, which close_fds would close again
            preexec_fn=child_fds, close_fds=False)
        os.close(hi_r)
        os.close(hi_w)
        self.next_id = 0
        self.lock = threading.Condition()
        self.replies = {}
        self.events = []
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self.ev_r, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self.lock:
                    if "id" in msg:
                        self.replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self.lock.notify_all()
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def send(self, method, params=None, session=None, timeout=30.0):
        """Send one command; returns its result or raises on an error reply."""
        with self.lock:
            self.next_id += 1
            mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self.lock:
            while mid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise AssertionError(f"no reply to {method} within {timeout}s\n{self.read_log()}")
                self.lock.wait(left)
            reply = self.replies.pop(mid)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def open_page(self, url, width=1280, height=900, mobile=False):
        """A new tab with console, log and network recording on; returns its
        session id once `url` has loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.set_viewport(session, width, height, mobile)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        return session

    def set_viewport(self, session, width, height, mobile=False):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session=session)

    def wait_event(self, method, session, timeout=30.0):
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for e in self.events:
                    if e.get("method") == method and e.get("sessionId") == session:
                        return e
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise AssertionError(f"no {method} within {timeout}s")
                self.lock.wait(left)

    def evaluate(self, session, expression, timeout=30.0):
        """The JSON value of `expression` (awaited when it is a promise)."""
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, session=session, timeout=timeout)
        if "exceptionDetails" in r:
            raise AssertionError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, session, expression, timeout=30.0, what=None):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.evaluate(session, expression)
            if last:
                return last
            time.sleep(0.25)
        raise AssertionError(f"timed out after {timeout}s waiting for {what or expression} (last: {last!r})")

    def screenshot(self, session, path, full_page=True):
        """A PNG of the page; the whole scroll height when full_page."""
        params = {"format": "png"}
        if full_page:
            size = self.evaluate(session, "({w: document.documentElement.clientWidth,"
                                          " h: document.documentElement.scrollHeight})")
            params["clip"] = {"x": 0, "y": 0, "width": size["w"], "height": size["h"], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params, session=session)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def page_events(self, session):
        with self.lock:
            return [e for e in self.events if e.get("sessionId") == session]

    def problems(self, session):
        """Console errors and warnings, uncaught exceptions, error log entries
        (CSP violations, failed loads), as readable strings."""
        out = []
        for e in self.page_events(session):
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: " + " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                entry = p["entry"]
                out.append(f"log {entry['level']} ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
            elif m == "Network.loadingFailed" and not p.get("canceled"):
                out.append(f"load failed: {p.get('errorText')} {p.get('blockedReason', '')}")
        return out

    def requests(self, session):
        """URLs the page requested, in order."""
        return [e["params"]["request"]["url"] for e in self.page_events(session)
                if e["method"] == "Network.requestWillBeSent"]

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("Browser.close", timeout=5)
            except AssertionError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self.cmd_w, self.ev_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.logf.close()
        shutil.rmtree(self.profile, ignore_errors=True)
