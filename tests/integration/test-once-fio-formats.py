#!/usr/bin/env python3
"""`iopsd --once` as a drop-in for fio, checked with fio and fio's own tools
on the same job (randrw with fsync, ext4 on a loop device, O_DIRECT):

- the key sets of iopsd's and fio's JSON, recursively: every difference is
  in ALLOWED with its reason, or the test fails (either way round);
- fio_jsonplus_clat2csv (Debian's fio package) on `--output-format=json+`
  writes the same columns as on fio's json+, with iopsd's bins as counts;
- normal output has fio's lines in fio's order (figures aside), with the
  loop device in "Disk stats" and its util near fio's;
- terse is version 3 with as many fields as fio's;
- --output=FILE and comma lists as in fio; a bad format is a usage error;
- every key of the JSON --once printed before it had formats (OLD_KEYS, as
  a2b135a^ wrote it) is in --output-format=json's, with its type, as
  README.md and iopsd(8) promise scripts that read it."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

JOB = """[global]
directory={mnt}
ioengine=libaio
direct=1
size=16m
runtime=2s
time_based

[randrw]
rw=randrw
rwmixread=70
bs=4k
iodepth=8
fsync=32
"""

# path (jobs[] for every job; * for any key under it): the reason
ALLOWED = {
    "only fio": {
        "/fio version": "iopsd is not fio: its version is under 'iopsd version'",
        "/global options": "fio echoes the [global] section's text; iopsd keeps parsed values, per job "
                           "under 'job options'",
        "/global options/*": "as /global options",
        "/jobs[]/job options/*": "fio echoes the keys the job file gave, as text; iopsd lists the values "
                                 "it runs with (its fixed set, as before)",
    },
    "only iopsd": {
        "/iopsd version": "iopsd's version (fio's 'fio version')",
        "/jobs[]/job options/*": "as fio's job options",
        "/jobs[]/success": "iopsd's own: the run reached its budget without an error",
        "/jobs[]/error_name": "iopsd's own: the errno's name",
        "/jobs[]/message": "iopsd's own: the error's explanation",
        "/jobs[]/timestamp_ms": "iopsd's own: the run's start",
        "/jobs[]/runtime_usec": "iopsd's own: the I/O phase in microseconds",
        "/jobs[]/layout_usec": "iopsd's own: time laying out the probe file",
        "/jobs[]/target": "iopsd's own: the directory or device probed",
        "/jobs[]/errors": "iopsd's own: errors by reason",
        "/jobs[]/errors/*": "as /jobs[]/errors",
        "/jobs[]/read/errors": "iopsd's own: errors by reason",
        "/jobs[]/read/errors/*": "as above",
        "/jobs[]/write/errors": "iopsd's own: errors by reason",
        "/jobs[]/write/errors/*": "as above",
        "/jobs[]/trim/errors": "iopsd's own: errors by reason",
        "/jobs[]/trim/errors/*": "as above",
        "/jobs[]/sync/iops": "iopsd's own: fsyncs per second, kept from the JSON before formats",
        "/jobs[]/sync/errors": "iopsd's own: errors by reason",
        "/jobs[]/sync/errors/*": "as above",
    },
}
# The JSON `--once` printed before --output-format existed (daemon/once.c and
# metrics/json_probe.c before a2b135a): each key with the type it had. Scripts
# that read it keep working with --output-format=json.
ERRORS = {r: int for r in ("eio", "enospc", "erofs", "eacces", "enoent", "einval", "timeout", "other")}
LATENCY = {"min": int, "max": int, "mean": float, "stddev": float, "N": int, "percentile": dict}
OLD_DIR = {"total_ios": int, "iops": float, "io_bytes": int, "io_kbytes": int, "bw_bytes": int, "bw": int,
           "runtime": int, "clat_ns": LATENCY, "errors": ERRORS}
OLD_KEYS = {
    "iopsd version": str, "timestamp": int, "timestamp_ms": int,
    "jobs": [{
        "success": bool, "error": int, "error_name": str, "message": str, "timestamp_ms": int,
        "job_runtime": int, "runtime_usec": int, "layout_usec": int,
        "read": OLD_DIR, "write": OLD_DIR,
        "sync": {"total_ios": int, "iops": float, "lat_ns": LATENCY, "errors": ERRORS},
        "errors": ERRORS, "jobname": str, "groupid": int, "target": str,
        "job options": {"rw": str, "bs": int, "size": int, "nrfiles": int, "iodepth": int, "numjobs": int,
                        "ioengine": str, "rwmixread": int, "fsync": int, "runtime_usec": int,
                        "number_ios": int, "rate_iops": int, "ramp_time_usec": int, "time_based": bool,
                        "loops": int, "rate": int},
    }],
}


def missing_old_keys(want, got, path=""):
    """The paths of OLD_KEYS not in `got`, or of another type (an int is a
    float's value too: json writes 2.0 as 2)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path or '/'}: not an object"]
        return [m for k, w in want.items()
                for m in ([f"{path}/{k}"] if k not in got else missing_old_keys(w, got[k], f"{path}/{k}"))]
    if isinstance(want, list):
        if not isinstance(got, list) or not got:
            return [f"{path}: not a non-empty list"]
        return [m for i, g in enumerate(got) for m in missing_old_keys(want[0], g, f"{path}[{i}]")]
    ok = isinstance(got, want) and not (want is int and isinstance(got, bool))
    if want is float:
        ok = isinstance(got, (int, float)) and not isinstance(got, bool)
    return [] if ok else [f"{path}: {type(got).__name__}, was {want.__name__}"]


def check_old_keys(job, path):
    p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", job], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    o = json.loads(p.stdout)
    missing = missing_old_keys(OLD_KEYS, o)
    assert not missing, "keys of the JSON before formats gone or retyped:\n  " + "\n  ".join(missing)
    j = o["jobs"][0]
    # and with their meaning: the run's time in us (at most 20 s: a wrong
    # unit is 1000x off, a loaded machine a few seconds), the job's options as given
    assert 1_900_000 <= j["runtime_usec"] <= 20_000_000, j["runtime_usec"]
    t.timing_check(j["runtime_usec"] <= 3_000_000,
                   f"a runtime=2s run measured as {j['runtime_usec']} us (at most 3000000)")
    assert j["job options"]["runtime_usec"] == 2_000_000 and j["job options"]["fsync"] == 32, j["job options"]
    assert j["job options"]["bs"] == 4096 and j["job options"]["rw"] == "randrw", j["job options"]
    assert j["target"] == path and j["error"] == 0 and j["error_name"] == "", (j["target"], j["error_name"])
    assert j["sync"]["total_ios"] > 0 and j["sync"]["iops"] > 0, j["sync"]
    fsyncs = j["sync"]["total_ios"] / (j["runtime_usec"] / 1e6)
    assert abs(j["sync"]["iops"] - fsyncs) <= 0.05 * fsyncs, (j["sync"]["iops"], fsyncs)
    n = sum(1 for _ in key_paths(OLD_KEYS))
    print(f"old JSON: all {n} key paths of the JSON before formats in --output-format=json's, typed as "
          f"before; sync iops {j['sync']['iops']:.1f}")


# keys whose children are data, not keys: the percentile list and the bins
DATA = ("percentile", "bins")


def key_paths(o, prefix=""):
    out = set()
    if isinstance(o, dict):
        for k, v in o.items():
            p = f"{prefix}/{k}"
            out.add(p)
            if k not in DATA:
                out |= key_paths(v, p)
    elif isinstance(o, list):
        for v in o:
            out |= key_paths(v, prefix + "[]")
    return out


def allowed(path, table):
    if path in table:
        return True
    parts = path.split("/")
    return any("/".join(parts[:i]) + "/*" in table for i in range(2, len(parts)))


def check_key_sets(fio, iopsd):
    kf, ki = key_paths(fio), key_paths(iopsd)
    bad = [f"only fio: {p}" for p in sorted(kf - ki) if not allowed(p, ALLOWED["only fio"])]
    bad += [f"only iopsd: {p}" for p in sorted(ki - kf) if not allowed(p, ALLOWED["only iopsd"])]
    assert not bad, "key sets differ beyond the allowed list:\n  " + "\n  ".join(bad)
    fio_job = {p for p in kf if p.startswith("/jobs[]/") and "/job options" not in p}
    print(f"keys: fio {len(kf)}, iopsd {len(ki)}; all {len(fio_job)} of fio's job keys "
          f"(job options aside) in iopsd's; {len(kf - ki)} only in fio, {len(ki - kf)} only in iopsd, "
          "all allowed")


def clat2csv_header(path, out):
    p = subprocess.run(["fio_jsonplus_clat2csv", path, out], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"fio_jsonplus_clat2csv failed on {path}: {p.stderr[-2000:]}"
    with open(out + "_job0") as f:
        lines = f.read().splitlines()
    assert len(lines) > 1, f"{out}_job0 has no rows"
    return lines[0], lines[1:]


def wraps(text):
    """Each percentile block's rows checked against fio's rule: (80 - 7) / (12 + width) to a
    row, width the digits of the block's largest value (5 at least). The rows themselves follow
    the figures, which differ between two runs, so shape() joins them."""
    blocks, cur = [], None
    for line in text.splitlines():
        if re.match(r"^\s+\w+ percentiles \((nsec|usec|msec)\):$", line):
            cur = []
            blocks.append(cur)
        elif cur is not None and line.startswith("     |"):
            cur.append(re.findall(r"th=\[\s*([0-9]+)\]", line))
        else:
            cur = None
    for rows in blocks:
        width = max(5, max(len(v) for r in rows for v in r))
        per = 73 // (12 + width)
        assert all(len(r) == per for r in rows[:-1]) and 0 < len(rows[-1]) <= per, (width, per, rows)
    return len(blocks)


def shape(text):
    """The lines of a normal report without their figures, from the job block on; a percentile
    block's rows joined into one (wraps() checks the rows)."""
    out = []
    started = False
    for line in text.splitlines():
        if started and line.startswith("     |") and out and out[-1].startswith(("|", " |")):
            line = re.sub(r"[0-9][0-9.]*", "#", line)
            out[-1] = out[-1].rstrip(",") + ", " + re.sub(r" +", " ", re.sub(r"([=\[]) +", r"\1", line)).strip(" |")
            continue
        if re.match(r"^\S+: \(groupid=", line):
            started = True
            line = re.sub(r"pid=.*$", "", line)
        if started and line.strip() and not line.startswith("  lat ("):
            line = re.sub(r"[0-9][0-9.]*[kKMGT]?i?B?", "#", line)
            # units and padding follow the figures (KiB/s or MiB/s: which, the rate decides)
            line = re.sub(r"\((nsec|usec|msec)\)", "(unit)", line)
            line = re.sub(r"\(\s*[KM]iB/s\)", "(unit)", line)
            out.append(re.sub(r" +", " ", re.sub(r"([=\[]) +", r"\1", line)).rstrip())
    return out


def run(cmd, timeout=120):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (cmd, p.returncode, p.stderr[-2000:])
    return p.stdout


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "fio", "fio_jsonplus_clat2csv")
    fs = t.Ext4Mount("once-fio-formats", 128, in_memory=True)
    try:
        d = tempfile.mkdtemp(dir=fs.loop.dir)
        job = os.path.join(d, "randrw.fio")
        with open(job, "w") as f:
            f.write(JOB.format(mnt=fs.mountpoint))
        fio_json, iopsd_json = os.path.join(d, "fio.json"), os.path.join(d, "iopsd.json")
        run(["fio", "--output-format=json+", f"--output={fio_json}", job])
        out = run([t.IOPSD, "--once", "--output-format=json+", f"--output={iopsd_json}", "--config", job])
        assert out == "", f"--output=FILE still printed to stdout: {out[:200]}"
        with open(fio_json) as f:
            fio = json.load(f)
        with open(iopsd_json) as f:
            iopsd = json.load(f)
        assert iopsd["jobs"][0]["success"], iopsd["jobs"][0]["message"]
        check_key_sets(fio, iopsd)

        hf, _ = clat2csv_header(fio_json, os.path.join(d, "fio-csv"))
        hi, rows = clat2csv_header(iopsd_json, os.path.join(d, "iopsd-csv"))
        assert hf == hi, f"fio_jsonplus_clat2csv columns differ:\n fio:   {hf}\n iopsd: {hi}"
        cols = [c.strip() for c in hi.split(",")]
        n = cols.index("read_clat_ns_count")
        count = sum(int(r.split(",")[n]) for r in rows if r.split(",")[n].strip())
        assert count == iopsd["jobs"][0]["read"]["total_ios"], (count, iopsd["jobs"][0]["read"]["total_ios"])
        print(f"fio_jsonplus_clat2csv: the same {len(cols) - 1} columns; iopsd's {len(rows)} rows count "
              f"its {count} reads")

        fio_n = run(["fio", "--output-format=normal", job])
        iopsd_n = run([t.IOPSD, "--once", "--config", job])  # normal: fio's default
        nf, ni = wraps(fio_n), wraps(iopsd_n)
        assert nf == ni and ni > 0, f"percentile blocks: fio {nf}, iopsd {ni}"
        sf, si = shape(fio_n), shape(iopsd_n)
        assert sf == si, "normal layout differs:\n" + "\n".join(
            f" fio:   {a}\n iopsd: {b}" for a, b in zip(sf, si) if a != b)
        dev = os.path.basename(fs.loop.path)
        uf = float(re.search(rf"{dev}: .*util=([0-9.]+)%", fio_n).group(1))
        ui = float(re.search(rf"{dev}: .*util=([0-9.]+)%", iopsd_n).group(1))
        assert ui > 0, f"iopsd's disk stats show {dev} idle: {ui}%"
        print(f"normal: fio's {len(sf)} lines in fio's order; {dev} util fio {uf}%, iopsd {ui}%")

        tf = run(["fio", "--output-format=terse", job]).strip().splitlines()[-1]
        ti = run([t.IOPSD, "--once", "--output-format=terse,json", "--config", job])
        ti_line = ti.splitlines()[0]
        assert ti_line.startswith("3;iopsd-"), ti_line[:40]
        assert len(ti_line.split(";")) == len(tf.split(";")), (len(ti_line.split(";")), len(tf.split(";")))
        json.loads(ti[len(ti_line):])  # the json after the terse line, as fio orders them
        print(f"terse: version 3, {len(tf.split(';'))} fields as fio's")

        check_old_keys(job, fs.mountpoint)

        p = subprocess.run([t.IOPSD, "--once", "--output-format=xml", "--config", job], capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 64 and "--output-format" in p.stderr, (p.returncode, p.stderr)
        print("ok: --once writes fio's formats, fio's tools read them")
    finally:
        fs.cleanup()


if __name__ == "__main__":
    main()
