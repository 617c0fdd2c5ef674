#!/usr/bin/env python3
"""The public compatibility suite: every job file of Debian's fio-examples
(/usr/share/doc/fio/examples/*.fio) either loads under `iopsd
--check-config` or is refused with FILE:LINE naming the key on that line
(or the section) and why; none crashes, hangs, gives an unknown key or a
vague error. The ones the issue names must load, given a directory (their
/data-style placeholders, and a job without a target, get a scratch
directory: fio would use the working directory). The field notes' four
runbook jobs load unchanged, with the per-job size notice and loops fitted.
Every error line of a refused file must belong to a class of BY_DESIGN
(a by-design first error hides nothing after it); one that does not fails
the test, and so does a file iopsd.conf(5) does not list under each class
it was refused for, or as one that loads. Prints the tally: which load,
which are refused and by which key and class."""
import collections
import glob
import json
import gzip
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

EXAMPLES = "/usr/share/doc/fio/examples"
MUST_LOAD = ["aio-read", "ssd-test", "tiobench-example", "iometer-file-access-server",
             "fixed-rate-submission", "fsx", "numa", "latency-profile"]
RUNBOOK = os.path.join(t.SRCDIR, "tests", "fixtures", "config", "runbook")
# The files the daemon refuses as they are, for a job with no target or a
# relative directory= or filename=, and that `--once` runs unchanged in the
# working directory, as fio does.
ONCE_UNCHANGED = ["1mbs_clients", "backwards-read", "dedupe-global", "fio-seq-read", "fixed-rate-submission",
                  "fsx", "iometer-file-access-server", "poisson-rate-submission", "rand-zones",
                  "tiobench-example"]
ONCE_NOTICE = ("no directory= or filename=: --once runs the job in the working directory, as fio does; "
               "iopsd writes only {dir}/.iopsd/{job}.dat there and removes it at the end")
# What iopsd refuses by design (iopsd.conf(5), "fio's examples"): every
# error line of a refused file must match one class. An error of no class
# fails the test.
BY_DESIGN = {
    "not a disk": (r"ioengine=\S+ is refused: it (does no disk I/O|measures|passes commands)"
                   r"|an option of fio's (network|io_uring) .*engines"
                   r"|is refused: an option of a fio engine that does not measure a disk"),
    "the page cache": r"(direct=0|buffered=1) is not supported",
    "verify": r"verify=\S+ is refused",
    "trims": r"is refused: iopsd never trims",
    "zoned devices": r"zonemode=\S+ is refused|is refused: zoned block devices and zone modes",
    "writes to a raw device": r"writes, but filename=\S+ is a raw device",
    "not a block device or file": r"is a character device",
    "an unset ${VAR}": r"\$\{\w+\} is not set in iopsd's environment",
    "filling a device": r"fill_device=\S+ is refused: filling the filesystem or device",
    "O_SYNC writes": r"sync=\S+ is refused: O_SYNC or barrier writes",
    "blocks under a sector": r"bs=\d+ is out of range: must be between 512 and \d+ bytes \(O_DIRECT",
    "over max_probe_memory": r"the probes up to here need .* more than max_probe_memory=",
    "probe names": r"invalid probe name \[.*\]: a probe's name is a metric label",
}
ERROR = re.compile(r"^(?:<\d>|iopsd: error: )?(?P<file>/[^:]+):(?P<line>\d+): (?P<msg>.*)$")


def read_example(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def substitute(text, scratch):
    """Point the job's directories at `scratch`; a job with no target, or
    only relative filenames, gets directory=scratch first."""
    text = re.sub(r"(?m)^(\s*directory\s*=).*$", r"\g<1>" + scratch, text)
    has_dir = re.search(r"(?m)^\s*directory\s*=", text)
    absolute = re.search(r"(?m)^\s*filename\s*=\s*/", text)
    if not has_dir and not absolute:
        text = f"[global]\ndirectory={scratch}\n" + text
    return text


def classes_of(msg):
    return [c for c, rx in BY_DESIGN.items() if re.search(rx, msg)]


def check_refusal(name, path, stderr):
    """Every error names the key on its line (or the section) and says why.
    Returns the first error's key and message, and every error's class (None
    for an error outside BY_DESIGN)."""
    errors = [m for m in (ERROR.match(line) for line in stderr.splitlines()) if m]
    assert errors, f"{name}: exit 78 without a FILE:LINE error: {stderr!r}"
    with open(path) as f:
        lines = f.read().split("\n")
    for e in errors:
        msg = e["msg"]
        assert e["file"] == path, (name, e["file"])
        assert "unknown key" not in msg, f"{name}: every fio key is classified: {msg}"
        assert "syntax error" not in msg, f"{name}: vague error: {msg}"
    classes = []
    for e in errors:
        n = int(e["line"])
        assert 1 <= n <= len(lines), (name, n)
        src = lines[n - 1].strip()
        if src.startswith("["):
            what = src
        else:
            what = re.split(r"\s*[=;#]", src, maxsplit=1)[0].strip()
        assert what and what in e["msg"], f"{name}:{n}: the error does not name '{what}': {e['msg']}"
        # a reason after the key, not only its name
        assert len(e["msg"]) > len(what) + 20 and ":" in e["msg"], f"{name}: no reason: {e['msg']}"
        found = classes_of(e["msg"])
        assert len(found) <= 1, f"{name}:{n}: in several classes {found}: {e['msg']}"
        classes.append((n, found[0] if found else None, e["msg"]))
        if e is errors[0]:
            first = (what, e["msg"])
    return first[0], first[1], classes


def check_examples(scratch, work):
    files = sorted(glob.glob(os.path.join(EXAMPLES, "*.fio")) + glob.glob(os.path.join(EXAMPLES, "*.fio.gz")))
    assert len(files) >= 80, f"fio-examples has {len(files)} job files in {EXAMPLES}"
    loaded, refused = [], collections.OrderedDict()
    for src in files:
        name = os.path.basename(src).replace(".gz", "").replace(".fio", "")
        path = os.path.join(work, name + ".fio")
        with open(path, "w") as f:
            f.write(substitute(read_example(src), scratch))
        try:
            p = subprocess.run([t.IOPSD, "--check-config", "--config", path], capture_output=True, text=True,
                               timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name}: --check-config hung")
        assert p.returncode in (0, 78), f"{name}: exit {p.returncode} (crash?): {p.stderr[-2000:]}"
        if p.returncode == 0:
            assert len(p.stdout.strip().split("\n")) == 1, f"{name}: summary: {p.stdout}"
            loaded.append(name)
        else:
            refused[name] = check_refusal(name, path, p.stderr)
    outside = [f"{name}:{n}: {msg}" for name, (_, _, classes) in refused.items()
               for n, cls, msg in classes if cls is None]
    assert not outside, "refused, but not by design:\n  " + "\n  ".join(outside)
    missing = [n for n in MUST_LOAD if n not in loaded]
    assert not missing, f"must load: {missing}: " + "; ".join(f"{n}: {refused[n][1]}" for n in missing if n in refused)
    return files, loaded, refused


def man_examples():
    """iopsd.conf(5)'s "fio's examples": the files that load, and the files
    of each refused class, as the page lists them."""
    with open(os.path.join(t.SRCDIR, "man", "iopsd.conf.5")) as f:
        page = f.read()
    section = page.split('.SS "fio\'s examples"\n', 1)[1].split("\n.SS ", 1)[0]
    m = re.search(r"(\d+) load \(([^)]*)\)", section.replace("\n", " "))
    loaded = [n.strip() for n in m[2].split(",")]
    assert int(m[1]) == len(loaded), m[0]
    classes = {}
    section = section.split("\n.PP\n", 1)[0]
    for block in section.split("\n.TP\n")[1:]:
        head, text = block.split("\n", 1)
        h = re.fullmatch(r"\.B (.+) \((\d+)\)", head)
        assert h, head
        text = re.sub(r"\([^)]*\)", "", text.replace("\n", " ")).rsplit(":", 1)[-1]
        files = [n.strip().rstrip(".").strip() for n in text.split(",")]
        assert int(h[2]) == len(files), (h[1], files)
        classes[h[1]] = files
    return loaded, classes


def check_man_page(loaded, refused):
    """The page lists what the run found: the files that load, and each
    refused file under every class one of its errors belongs to, and
    nowhere else."""
    man_loaded, man_classes = man_examples()
    assert sorted(man_loaded) == sorted(loaded), f"iopsd.conf(5) says {man_loaded} load, the run {loaded}"
    assert set(man_classes) == set(BY_DESIGN), (sorted(man_classes), sorted(BY_DESIGN))
    for cls in BY_DESIGN:
        found = sorted(name for name, (_, _, classes) in refused.items() if any(c == cls for _, c, _ in classes))
        assert sorted(man_classes[cls]) == found, f"{cls}: iopsd.conf(5) lists {sorted(man_classes[cls])}, the run {found}"


def check_config(path, cwd, once=False):
    argv = [t.IOPSD, "--check-config", "--config", path] + (["--once"] if once else [])
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=cwd)


def check_once_unchanged(loaded, work):
    """Each loading file, unchanged: which ones the daemon refuses (a job
    with no target, a relative path) and `--check-config --once` loads in
    the working directory; --check-config writes nothing there."""
    cwd = os.path.join(work, "cwd")
    os.mkdir(cwd)
    found = []
    for name in loaded:
        path = os.path.join(work, name + ".orig.fio")
        src = os.path.join(EXAMPLES, name + ".fio")
        with open(path, "w") as f:
            f.write(read_example(src if os.path.exists(src) else src + ".gz"))
        daemon = check_config(path, cwd)
        if daemon.returncode == 0:
            continue
        assert daemon.returncode == 78, f"{name}: exit {daemon.returncode}: {daemon.stderr[-2000:]}"
        assert re.search(r"missing target|expected an absolute path|is a relative path", daemon.stderr), \
            f"{name}: the daemon refuses it for something else: {daemon.stderr[-2000:]}"
        once = check_config(path, cwd, once=True)
        assert once.returncode == 0, f"{name}: --once does not load it unchanged: {once.stderr[-2000:]}"
        found.append(name)
    assert sorted(found) == sorted(ONCE_UNCHANGED), f"--once loads unchanged {found}, want {ONCE_UNCHANGED}"
    assert os.listdir(cwd) == [], os.listdir(cwd)
    return cwd


def check_once_run(cwd):
    """fixed-rate-submission.fio, with no target, run by --once for 2 s in
    the working directory: its 1000 IOPS, the notice, and the directory left
    as it was (the probe file and .iopsd removed)."""
    with open(os.path.join(EXAMPLES, "fixed-rate-submission.fio")) as f:
        text = f.read() + "\nruntime=2\ntime_based\n"
    path = os.path.join(os.path.dirname(cwd), "fixed-rate-2s.fio")
    with open(path, "w") as f:
        f.write(text)
    with open(os.path.join(cwd, "users-file"), "w") as f:
        f.write("not iopsd's\n")
    before = sorted(os.listdir(cwd))
    p = subprocess.run([t.IOPSD, "--once", "--config", path, "--output-format=json"], capture_output=True,
                       text=True, timeout=120, cwd=cwd)
    assert p.returncode == 0, f"--once fixed-rate-submission: exit {p.returncode}: {p.stderr[-2000:]}"
    notice = ONCE_NOTICE.format(dir=os.path.realpath(cwd), job="fixed-rate-submit")
    assert notice in p.stderr, f"no notice {notice!r}: {p.stderr[-2000:]}"
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    iops = job["read"]["iops"]
    assert job["read"]["total_ios"] > 0 and iops <= 1020, \
        f"fixed-rate-submission in the working directory: {iops:.1f} IOPS, want reads at rate_iops=1000 at most"
    t.timing_check(abs(iops - 1000) <= 20, f"fixed-rate-submission in the working directory: {iops:.1f} IOPS "
                                           "(rate_iops=1000, within 20)")
    assert sorted(os.listdir(cwd)) == before, f"the working directory was {before}, is {sorted(os.listdir(cwd))}"
    print(f"--once fixed-rate-submission.fio in the working directory: {iops:.1f} IOPS (rate_iops=1000); "
          f"the directory left as it was")
    return path


SHORT = ("size=16m", "runtime=1", "time_based")
BUDGET_KEY = re.compile(r"^\s*(size|filesize|runtime|timeout|time_based|loops|number_ios|startdelay)\s*(=|$)")


def shortened(text):
    """The job file with every section's budget set to 16 MiB for 1 s, and
    no start delays (1mbs_clients' 32 clients start 4 s apart): the same
    jobs, targets and I/O, short enough for the gate."""
    out = []
    for line in text.splitlines():
        if BUDGET_KEY.match(line):
            continue
        out.append(line)
        if re.match(r"^\s*\[[^]]+\]", line):
            out.extend(SHORT)
    return "\n".join(out) + "\n"


def processes_in(directory):
    """The PIDs of every process whose working directory is DIRECTORY or
    under it: fio's job processes, whatever session they moved to."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == directory or cwd.startswith(directory + "/"):
            found.append(int(pid))
    return found


def run_fio(job, cwd, timeout=20):
    """fio on JOB in CWD: None when it ran, else why not. fio 3.33 hangs now
    and then on io_submit_mode=offload with time_based; then every process
    it started (found by working directory, since its job processes outlive
    a kill of its process group) is killed and reaped, so none is left
    holding a file on the test's filesystem."""
    with open(os.path.join(cwd, "..", os.path.basename(cwd) + ".err"), "w+") as err:
        fio = subprocess.Popen(["fio", "--output-format=json", job], stdout=subprocess.DEVNULL, stderr=err,
                               cwd=cwd, start_new_session=True)
        try:
            rc = fio.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for _ in range(50):
                left = processes_in(cwd)
                if not left:
                    break
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.1)
            fio.wait(timeout=30)
            assert not processes_in(cwd), f"fio's processes {processes_in(cwd)} outlived SIGKILL in {cwd}"
            return f"still running after {timeout} s of a 1 s job"
        err.seek(0)
        return None if rc == 0 else f"exit {rc}: {err.read().strip()[-200:]}"


def check_once_runs_like_fio(work):
    """Each job file --once loads unchanged, shortened, run by fio and by
    iopsd --once in working directories of their own: every one fio runs
    here, --once runs too (exit 0, reads or writes done), and leaves the
    working directory as it found it."""
    ran = []
    for name in ONCE_UNCHANGED:
        src = os.path.join(EXAMPLES, name + ".fio")
        job = os.path.join(work, name + ".short.fio")
        with open(job, "w") as f:
            f.write(shortened(read_example(src if os.path.exists(src) else src + ".gz")))
        dirs = {tool: os.path.join(work, f"{name}-{tool}") for tool in ("fio", "iopsd")}
        for d in dirs.values():
            os.makedirs(os.path.join(d, "tmp"))  # 1mbs_clients' directory=tmp, there for fio
        why = run_fio(job, dirs["fio"])
        if why:
            print(f"  {name}: fio itself does not run it here ({why}); not asked of --once")
            continue
        p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", job], capture_output=True,
                           text=True, timeout=300, cwd=dirs["iopsd"])
        assert p.returncode == 0, f"{name}: fio runs it here, --once exits {p.returncode}: {p.stderr[-2000:]}"
        jobs = json.loads(p.stdout[p.stdout.index("{"):])["jobs"]
        ios = sum(j[d]["total_ios"] for j in jobs for d in ("read", "write"))
        assert ios > 0, f"{name}: --once did no I/O: {p.stdout[:2000]}"
        # what it made in the working directory is gone; a directory= the
        # job names (tmp) keeps iopsd's .iopsd/, as an absolute one would
        assert sorted(os.listdir(dirs["iopsd"])) == ["tmp"], \
            f"{name}: --once left {os.listdir(dirs['iopsd'])} in its working directory"
        assert set(os.listdir(os.path.join(dirs["iopsd"], "tmp"))) <= {".iopsd"}, \
            f"{name}: --once wrote {os.listdir(os.path.join(dirs['iopsd'], 'tmp'))} in tmp/"
        ran.append(name)
        print(f"  {name}: fio and --once both run it in the working directory ({len(jobs)} jobs, {ios} I/Os)")
    assert len(ran) >= 5, f"fio ran only {ran} of {ONCE_UNCHANGED} here: too few to judge --once"
    print(f"--once runs {len(ran)} of the {len(ONCE_UNCHANGED)} files as fio does here: {', '.join(ran)}")


def check_once_read_only(job):
    """A working directory --once cannot write to: a clear error naming it
    and a failing exit, no warning about files it never made."""
    ro = tempfile.mkdtemp(prefix="iopsd-once-ro-")
    t.run("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro)
    try:
        p = subprocess.run([t.IOPSD, "--once", "--config", job], capture_output=True, text=True, timeout=120,
                           cwd=ro)
    finally:
        t.run("umount", ro)
        os.rmdir(ro)
    assert p.returncode != 0, f"--once in a read-only working directory exited 0: {p.stderr[-2000:]}"
    want = f"cannot create {ro}/.iopsd: Read-only file system"
    assert want in p.stderr, f"no {want!r}: {p.stderr[-2000:]}"
    assert "cannot remove" not in p.stderr, f"a warning about files it never made: {p.stderr[-2000:]}"
    print(f"--once in a read-only working directory: exit {p.returncode}, \"{want}\"")


def check_runbook():
    for name in ("randread4k", "randwrite4k", "seqread4k", "seqwrite4k"):
        path = os.path.join(RUNBOOK, name + ".fio")
        with open(path) as f:
            assert "loops=5" in f.read()
        p = subprocess.run([t.IOPSD, "--check-config", "--config", path], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, f"{name}: {p.stderr}"
        assert f"{path}:7: [{name}]: loops=5 fitted to 1s per run every 10s" in p.stderr, p.stderr
        assert "size=100m is per job in fio (16 jobs lay out 1600m in all)" in p.stderr, p.stderr


def main():
    if not os.path.isdir(EXAMPLES):
        raise AssertionError(f"{EXAMPLES} missing: install fio-examples (contrib/install-deps.sh --tests)")
    with tempfile.TemporaryDirectory(prefix="iopsd-fio-examples-") as work:
        scratch = os.path.join(work, "data")
        os.mkdir(scratch)
        files, loaded, refused = check_examples(scratch, work)
        check_man_page(loaded, refused)
        # --check-config writes nothing: no probe file, not even .iopsd
        assert os.listdir(scratch) == [], os.listdir(scratch)
        cwd = check_once_unchanged(loaded, work)
        check_once_read_only(check_once_run(cwd))
        check_once_runs_like_fio(work)
    check_runbook()
    by_key = collections.Counter(key.split("=")[0] for key, _, _ in refused.values())
    print(f"{len(files)} fio example job files: {len(loaded)} load, {len(refused)} refused")
    print("load: " + ", ".join(loaded))
    print("refused, by the key named first: " + ", ".join(f"{k} {n}" for k, n in by_key.most_common()))
    by_class = collections.Counter(c for _, _, classes in refused.values() for c in {c for _, c, _ in classes})
    n_errors = sum(len(classes) for _, _, classes in refused.values())
    print(f"refused, files by class ({n_errors} errors, each in a class): "
          + ", ".join(f"{c} {n}" for c, n in by_class.most_common()))
    for name, (key, msg, classes) in refused.items():
        print(f"  {name}: {msg} [{', '.join(sorted({c for _, c, _ in classes}))}]")
    print(f"--once loads {len(ONCE_UNCHANGED)} of them unchanged, in the working directory: "
          + ", ".join(ONCE_UNCHANGED))
    print("ok: every fio example loads or is refused with FILE:LINE, the key and why; the runbook jobs load")


if __name__ == "__main__":
    main()
