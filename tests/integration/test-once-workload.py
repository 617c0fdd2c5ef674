#!/usr/bin/env python3
"""fio's workload keys in `iopsd --once`, each against fio on the same job
(ext4 on a loop device, O_DIRECT, libaio) or against what the key asks:

- thinktime: a QD1 job pausing 50 ms every 4 I/Os does as many I/Os as
  fio's (within 15%); thinktime_spin spends the CPU time fio's does;
  thinktime_iotime pauses after that much I/O time, not after every I/O;
  thinktime_blocks_type=complete and issue count as fio counts;
- rate_process=poisson: rate_iops=300 gives 300 IOPS (within 10%) whose
  500 ms samples spread as Poisson arrivals do (stddev near sqrt(2 x 300)),
  as fio's do, within 2x of fio's, where linear pacing gives nearly none;
- prioclass/prio: ioprio_get(2) on the job threads while they run, the
  same as on fio's job processes;
- cmdprio_percentage=20: a fifth of the reads carry the I/O's own
  priority (strace decodes IOCB_FLAG_IOPRIO), in iopsd as in fio traced
  the same way, and cmdprio_bssplit's shares per size; on io_uring, a fifth
  of the reads reach the block layer with it (block_rq_issue), as fio's;
- buffer_pattern, buffer_compress_percentage, dedupe_percentage: the
  probe file's blocks after a write job hold the pattern, compress to the
  share asked, repeat as often as asked; dedupe_global shares the working
  set between jobs as fio's does;
- wait_for: the job starts when the named one has ended;
- flow: two jobs of weights 1 and 8 issue 1:8, in iopsd as in fio;
- ss: a steady job ends once ss_dur seconds are within the limit, within
  2 s of when fio's does;
- latency_target: the depth search ends the run and reports as fio's;
  latency_run=1 keeps it going for the whole runtime, as fio's."""
import ctypes
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

SYS_ioprio_get = 252  # x86_64
IOPRIO_WHO_PROCESS = 1


def job(mnt, name, body, size="8m"):
    return f"[{name}]\ndirectory={mnt}\nioengine=libaio\ndirect=1\nsize={size}\nbs=4k\n{body}\n"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def iopsd(path, timeout=120):
    p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", path], capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    j = json.loads(p.stdout)["jobs"][0]
    assert j["success"], j["message"]
    return j


def fio(path, timeout=120):
    p = subprocess.run(["fio", "--output-format=json", path], capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    return json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]


def check_thinktime(mnt, d):
    path = os.path.join(d, "think.fio")
    write(path, job(mnt, "think", "rw=randread\niodepth=1\nruntime=2\ntime_based\nthinktime=50ms\n"
                                  "thinktime_blocks=4"))
    f, i = fio(path)["read"]["total_ios"], iopsd(path)["read"]["total_ios"]
    # 2 s of 4 I/Os per 50 ms pause: about 160
    # the pauses rule: a loaded machine oversleeps them, in both
    assert abs(i - f) <= 0.15 * f, f"thinktime: fio {f} I/Os, iopsd {i}"
    print(f"thinktime=50ms every 4: fio {f} I/Os, iopsd {i}")


def forget(mnt, *names):
    """Remove the jobs' files, fio's and iopsd's: the filesystem is small."""
    for name in names:
        for path in (os.path.join(mnt, f"{name}.0.0"), os.path.join(mnt, ".iopsd", f"{name}.dat")):
            if os.path.exists(path):
                os.unlink(path)


def fio_guarded(path, timeout=30):
    """fio's JSON job, or None when fio hangs: fio 3.33 sleeps for ever
    when thinktime_spin's spin overruns thinktime (a loaded machine
    preempts it), which later fio fixed. Its job process is fio's child:
    the whole session goes."""
    p = subprocess.Popen(["fio", "--output-format=json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    assert p.returncode == 0, (p.returncode, err[-2000:])
    return json.loads(out[out.index("{"):])["jobs"][0]


def check_thinktime_spin(mnt, d):
    """thinktime_spin=10ms of thinktime=20ms after each I/O: the job spends
    about half its time on the CPU (usr_cpu), as fio's does; without the
    spin, next to none. The spin is wall-clock time: a loaded machine
    takes CPU time from both; a round where fio's spin shows under 30%, or
    fio hangs (fio_guarded()), says nothing and runs again."""
    path = os.path.join(d, "spin.fio")
    body = "rw=randread\niodepth=1\nruntime=2\ntime_based\nthinktime=20ms\n"
    write(path, job(mnt, "spin", body))
    plain = iopsd(path)["usr_cpu"]
    assert plain < 15, f"thinktime without spin: usr_cpu {plain:.1f}%"
    write(path, job(mnt, "spin", body + "thinktime_spin=10ms"))
    seen = []
    for _ in range(3):
        jf = fio_guarded(path)
        f, i = (jf["usr_cpu"] if jf else None), iopsd(path)["usr_cpu"]
        seen.append((f and round(f, 1), round(i, 1)))
        if f is not None and f >= 30:
            assert abs(i - f) <= 20, f"thinktime_spin=10ms: usr_cpu fio {f:.1f}%, iopsd {i:.1f}%"
            print(f"thinktime_spin=10ms of 20ms: usr_cpu fio {f:.1f}%, iopsd {i:.1f}% (no spin: {plain:.1f}%)")
            return
    raise AssertionError(f"inconclusive: fio's spin under 30% or hung in three rounds (fio, iopsd): {seen}")


def check_thinktime_iotime(mnt, d):
    """thinktime_iotime=250ms without thinktime_blocks, thinktime=1s, 2.5 s:
    250 ms of I/O, a 1 s pause, 250 ms, a pause: iopsd does about a fifth
    of the I/Os of the same job without thinktime (fio counts no blocks
    then). A block count of 1 would pause after every I/O (next to none),
    no pauses would leave all of them. That is fio's schedule since it
    measures the I/O time from the end of a pause; fio 3.33 (Debian's)
    counts the first pause into it, so its first I/O phase is 1.25 s and
    it does about 0.6: fio's figure is held to one of the two. The share
    moves with the load (an idle pause leaves the I/O phases more CPU, and
    the rate without pauses is another run's): iopsd's within 0.05 to 0.5,
    fio's within 0.3 of its schedule's. The last pause is cut at the end of
    the runtime, as fio cuts it."""
    path = os.path.join(d, "iotime.fio")
    paused = os.path.join(d, "iotime-paused.fio")
    body = "rw=randread\niodepth=1\nruntime=2500ms\ntime_based\n"
    write(path, job(mnt, "iotime", body))
    write(paused, job(mnt, "iotime", body + "thinktime=1s\nthinktime_iotime=250ms"))
    ia = iopsd(path)["read"]["total_ios"]
    jp = iopsd(paused)
    ip = jp["read"]["total_ios"]
    # fio 3.33 now and then does not pause at all (a run: 54,265 I/Os with
    # the pauses, 52,223 without): its figure is the reference, so a round
    # in which it followed neither schedule is inconclusive, run again
    rounds = []
    for _ in range(3):
        fa, fp = fio(path)["read"]["total_ios"], fio(paused)["read"]["total_ios"]
        rounds.append((fp, fa))
        rf = fp / fa
        if min(abs(rf - 0.2), abs(rf - 0.6)) <= 0.3:
            break
    else:
        raise AssertionError(f"inconclusive in three rounds: fio did not follow its schedule "
                             f"(I/Os with the pauses, without): {rounds}")
    ri = ip / ia
    assert 0.05 <= ri <= 0.5, f"thinktime_iotime=250ms: iopsd {ip} of {ia} I/Os ({ri:.2f}), fio {rf:.2f}"
    # the last pause ends with the runtime, as fio's
    assert jp["job_runtime"] <= 2600, jp["job_runtime"]
    print(f"thinktime_iotime=250ms, thinktime=1s: I/Os against no pauses iopsd {ri:.2f} (a fifth), "
          f"fio {rf:.2f} (3.33's schedule: 0.6)")


def check_thinktime_blocks_type(mnt, d):
    """thinktime_blocks=4 at iodepth=16: counted at issue, a pause after
    each 4 I/Os, in iopsd as in fio (within 15%). Counted at completion,
    the pause falls due once the queue is full and 4 have completed, and
    the I/Os that complete while it drains count towards the next pause
    (fio reads the count before it drains, after each completion it reaps
    one at a time): fio alternates full queues with single I/Os, about 9 a
    pause. iopsd within 20% of fio's count, where a count taken after the
    drain, or after a whole batch of completions, gives the whole queue
    (16 a pause, 70% over fio's); the count moves with the load, and a
    round outside runs again, three fail."""
    path = os.path.join(d, "btype.fio")
    body = "rw=randread\niodepth=16\nruntime=2\ntime_based\nthinktime=20ms\nthinktime_blocks=4\n"
    write(path, job(mnt, "btype", body + "thinktime_blocks_type=issue"))
    fi, ii = fio(path)["read"]["total_ios"], iopsd(path)["read"]["total_ios"]
    assert abs(ii - fi) <= 0.15 * fi, f"thinktime_blocks_type=issue: fio {fi} I/Os, iopsd {ii}"
    write(path, job(mnt, "btype", body + "thinktime_blocks_type=complete"))
    seen = []
    for _ in range(3):
        fc, ic = fio(path)["read"]["total_ios"], iopsd(path)["read"]["total_ios"]
        seen.append((fc, ic))
        assert fc > 1.5 * fi, f"fio: complete {fc} I/Os, issue {fi}"
        if abs(ic - fc) <= 0.2 * fc:
            print(f"thinktime_blocks=4 type issue: fio {fi} I/Os, iopsd {ii}; type complete: fio {fc}, iopsd {ic}"
                  f" (rounds {seen})")
            return
    raise AssertionError(f"thinktime_blocks_type=complete: iopsd off fio's by over 20% in three rounds "
                         f"(fio, iopsd): {seen}")


def check_poisson(mnt, d):
    path = os.path.join(d, "poisson.fio")
    body = "rw=randread\niodepth=8\nruntime=8\ntime_based\nrate_iops=300\n"
    write(path, job(mnt, "poisson", body + "rate_process=poisson"))
    # three runs of each: one run's 16 samples give a stddev within ~20%,
    # the pooled three within ~10%
    ips, fps = zip(*((iopsd(path)["read"], fio(path)["read"]) for _ in range(3)))
    ip, fp = ips[0], fps[0]
    ip_sd, fp_sd = (statistics.fmean(r["iops_stddev"] ** 2 for r in rs) ** 0.5 for rs in (ips, fps))
    write(path, job(mnt, "poisson", body))
    # even pacing: the least of three runs (another load on the machine
    # delays wakeups, and that spread is not the pacing's)
    il = min((iopsd(path)["read"] for _ in range(3)), key=lambda r: r["iops_stddev"])
    want = (2 * 300) ** 0.5  # a 500 ms sample's count has variance 150: stddev sqrt(150)/0.5
    assert abs(ip["iops"] - 300) <= 30, ip["iops"]
    # at least Poisson's spread (a loaded machine's late wakeups add to it),
    # where even pacing has a fraction of it
    assert ip["iops_stddev"] >= 0.5 * want, (ip["iops_stddev"], want)
    assert il["iops_stddev"] < 0.5 * want, (il["iops_stddev"], want)
    # fio's Poisson spreads as much, and iopsd's is within 2x of it
    assert fp_sd >= 0.5 * want, ("fio", fp_sd, want)
    assert 0.5 <= ip_sd / fp_sd <= 2, (ip_sd, fp_sd)
    print(f"rate_iops=300 poisson: iopsd {ip['iops']:.0f} IOPS, sample stddev {ip['iops_stddev']:.1f} "
          f"(fio {fp['iops_stddev']:.1f}, Poisson {want:.1f}); pooled over 3 runs iopsd {ip_sd:.1f}, "
          f"fio {fp_sd:.1f}; linear {il['iops_stddev']:.1f}")


def ioprio_get(tid):
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid)


def job_ioprios(pid, name):
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith(name + "/"):
            v = ioprio_get(int(tid))
            if v >= 0:
                out.add((v >> 13, v & 0x1fff))
    return out


def fio_job_ioprios(pid, name):
    """fio's job processes are the main process's children (and their
    threads)."""
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for child in children:
            try:
                tids = os.listdir(f"/proc/{child}/task")
            except OSError:
                continue
            for ctid in tids:
                v = ioprio_get(int(ctid))
                if v >= 0:
                    out.add((v >> 13, v & 0x1fff))
    return out


def ioprios_while_running(cmd, find, name):
    """The I/O priorities `find` saw on cmd's job threads while it ran, but
    class 0 (none set): fio's job process starts with its parent's and
    sets its own after, and an exiting one has none left."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = set()
    deadline = time.monotonic() + 10
    while p.poll() is None and time.monotonic() < deadline:
        seen |= {v for v in find(p.pid, name) if v[0] != 0}
        time.sleep(0.1)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-2000:]
    return seen


def check_prio(mnt, d):
    """The job threads' ioprio_get(2), in iopsd as on fio's job processes
    for the same job: prio= alone is best effort, prioclass= alone level 0,
    in both."""
    for cls, lvl, keys in ((3, 0, "prioclass=3"), (2, 0, "prioclass=2"), (2, 7, "prioclass=2\nprio=7"),
                           (2, 1, "prio=1")):
        path = os.path.join(d, "prio.fio")
        write(path, job(mnt, "prio", f"rw=randread\niodepth=2\nruntime=3\ntime_based\n{keys}"))
        fio_seen = ioprios_while_running(["fio", "--output-format=json", path], fio_job_ioprios, "prio")
        seen = ioprios_while_running([t.IOPSD, "--once", "--output-format=json", "--config", path], job_ioprios,
                                     "prio")
        forget(mnt, "prio")
        assert fio_seen == {(cls, lvl)}, f"{keys!r}: fio's job ioprio {fio_seen}, want class {cls} level {lvl}"
        assert seen == fio_seen, f"{keys!r}: iopsd's job threads' ioprio {seen}, fio's {fio_seen}"
        print(f"{keys.replace(chr(10), ' ')}: ioprio_get gives class {cls}, level {lvl}, in iopsd as in fio")


def traced_env():
    """LeakSanitizer cannot run under ptrace: leaks are checked by every
    other run of the sanitizer build, not by the traced ones."""
    return dict(os.environ, ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "detect_leaks=0"])))


def traced_reads(cmd, trace):
    """The read iocbs cmd submits, as strace decodes them (one io_submit
    may carry several)."""
    p = subprocess.run(["strace", "-f", "-qq", "-v", "-e", "trace=io_submit", "-o", trace] + cmd,
                       capture_output=True, text=True, timeout=120, env=traced_env())
    assert p.returncode == 0, p.stderr[-2000:]
    with open(trace) as f:
        return [c for line in f for c in line.split("{aio_data=")[1:] if "IOCB_CMD_PREAD" in c]


def iocb_prios(iocbs):
    return {re.search(r"IOPRIO_PRIO_VALUE\(([^)]*)\)", c)[1] for c in iocbs}


def check_cmdprio(mnt, d):
    """cmdprio_percentage and cmdprio_bssplit on libaio: the share of reads
    sent with IOCB_FLAG_IOPRIO and the priority they carry, traced the same
    way on fio and on iopsd for the same job."""
    path = os.path.join(d, "cmdprio.fio")
    trace = os.path.join(d, "strace.txt")
    cmds = {"fio": ["fio", "--output-format=json", path],
            "iopsd": [t.IOPSD, "--once", "--output-format=json", "--config", path]}
    write(path, job(mnt, "cmdprio", "rw=randread\niodepth=4\nnumber_ios=1000\ncmdprio_percentage=20\n"
                                    "cmdprio_class=2\ncmdprio=3"))
    shares = {}
    for name, cmd in cmds.items():
        reads = traced_reads(cmd, trace)
        with_prio = [c for c in reads if "IOCB_FLAG_IOPRIO" in c]
        assert iocb_prios(with_prio) == {"IOPRIO_CLASS_BE, 3"}, (name, iocb_prios(with_prio))
        shares[name] = f"{len(with_prio)} of {len(reads)}"
        assert abs(len(with_prio) / len(reads) - 0.2) <= 0.05, f"{name}: {shares[name]} reads carried the priority"
    print(f"cmdprio_percentage=20: reads sent with class 2 level 3: iopsd {shares['iopsd']}, fio {shares['fio']}")
    # cmdprio_bssplit: 40% of the 4k reads at best effort 5, 10% of the 8k
    # ones at the default (realtime 0), in fio as in iopsd
    write(path, job(mnt, "cmdprio", "rw=randread\niodepth=4\nnumber_ios=2000\nbssplit=4k/50:8k/50\n"
                                    "cmdprio_bssplit=4k/40/2/5:8k/10"))
    for name, cmd in cmds.items():
        reads = traced_reads(cmd, trace)
        for size, want, prio in (("4096", 0.4, "IOPRIO_CLASS_BE, 5"), ("8192", 0.1, "IOPRIO_CLASS_RT, 0")):
            sized = [c for c in reads if f"aio_nbytes={size}," in c]
            marked = [c for c in sized if "IOCB_FLAG_IOPRIO" in c]
            assert iocb_prios(marked) == {prio}, (name, size, iocb_prios(marked))
            assert abs(len(marked) / len(sized) - want) <= 0.06, (name, size, len(marked), len(sized))
            print(f"cmdprio_bssplit, {name}: {len(marked)} of {len(sized)} {size}-byte reads with {prio}")
    forget(mnt, "cmdprio")


def check_cmdprio_uring(mnt, d, dev):
    """cmdprio_percentage=20 on io_uring: a fifth of the reads reach the
    block layer (block_rq_issue on the loop device) with class 2 level 3,
    the rest at the thread's own, in iopsd as in fio (io_uring's SQEs are in
    shared memory, out of strace's sight)."""
    path = os.path.join(d, "cmdprio-uring.fio")
    write(path, job(mnt, "cpuring", "rw=randread\niodepth=4\nnumber_ios=2000\ncmdprio_percentage=20\n"
                                    "cmdprio_class=2\ncmdprio=3").replace("ioengine=libaio", "ioengine=io_uring"))
    trace = t.BlockTrace(dev)
    try:
        shares = {}
        for name, cmd in (("fio", ["fio", path]),
                          ("iopsd", [t.IOPSD, "--once", "--output-format=json", "--config", path])):
            with trace.tracing():
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stderr[-2000:]
            prios = [prio for rwbs, _, prio in trace.requests if "R" in rwbs]
            assert len(prios) >= 1800, f"{name}: {len(prios)} reads traced"
            marked = sum(p == "be,0,3" for p in prios)
            shares[name] = marked / len(prios)
            assert abs(shares[name] - 0.2) <= 0.05, f"{name}: {marked} of {len(prios)} reads at be,0,3"
    finally:
        trace.cleanup()
    print(f"cmdprio_percentage=20 on io_uring: reads at class 2 level 3 fio {shares['fio']:.2f}, "
          f"iopsd {shares['iopsd']:.2f}")


def probe_blocks(mnt, name):
    with open(os.path.join(mnt, ".iopsd", name + ".dat"), "rb") as f:
        data = f.read()
    return [data[i:i + 4096] for i in range(0, len(data), 4096)]


def check_buffers(mnt, d):
    body = "rw=write\niodepth=4\nloops=3\n"
    path = os.path.join(d, "buf.fio")
    write(path, job(mnt, "pattern", body + "buffer_pattern=0xdeadbeef", "2m"))
    iopsd(path)
    blocks = probe_blocks(mnt, "pattern")
    assert all(b == b"\xde\xad\xbe\xef" * 1024 for b in blocks), "a block without the pattern"
    write(path, job(mnt, "compress", body + "buffer_compress_percentage=60", "2m"))
    iopsd(path)
    share = statistics.mean(len(zlib.compress(b)) / 4096 for b in probe_blocks(mnt, "compress"))
    assert abs(share - 0.4) <= 0.05, f"compress 60%: blocks compress to {share:.2f}"
    write(path, job(mnt, "dedupe", body + "dedupe_percentage=50", "2m"))
    iopsd(path)
    blocks = probe_blocks(mnt, "dedupe")
    unique = len(set(blocks)) / len(blocks)
    assert abs(unique - 0.5) <= 0.08, f"dedupe 50%: {unique:.2f} of the blocks unique"
    print(f"buffer_pattern: all {len(blocks)} blocks; compress 60%: blocks compress to {share:.2f}; "
          f"dedupe 50%: {unique:.2f} unique")


def blocks_of(path):
    with open(path, "rb") as f:
        data = f.read()
    return [data[i:i + 4096] for i in range(0, len(data), 4096)]


def dedupe_shares(mnt, file_a, file_b):
    """The share of unique blocks in file_a, and of file_b's blocks in it."""
    a, b = blocks_of(os.path.join(mnt, file_a)), blocks_of(os.path.join(mnt, file_b))
    seen = set(a)
    return len(seen) / len(a), sum(x in seen for x in b) / len(b)


def check_dedupe_global(mnt, d):
    """fio-examples' dedupe-global, smaller: jobs [a] and [b] write 8m
    each, half their writes from a working set of half the blocks. Its
    share of unique blocks in [a]'s file, and the share of [b]'s blocks
    also in [a]'s, are fio's (within 0.08): with dedupe_global=1 the two
    jobs share their set (about half of [b] is in [a]), without it nothing."""
    path = os.path.join(d, "dedupe.fio")
    for g in (1, 0):
        write(path, f"[global]\ndirectory={mnt}\nioengine=libaio\ndirect=1\niodepth=4\nsize=8m\nbs=4k\n"
                    f"rw=write\ndedupe_mode=working_set\ndedupe_global={g}\ndedupe_percentage=50\n"
                    "dedupe_working_set_percentage=50\n[a]\n[b]\n")
        fio(path)
        fu, fb = dedupe_shares(mnt, "a.0.0", "b.0.0")
        iopsd_all(path)
        iu, ib = dedupe_shares(mnt, ".iopsd/a.dat", ".iopsd/b.dat")
        assert abs(iu - fu) <= 0.08 and abs(ib - fb) <= 0.08, \
            f"dedupe_global={g}: [a] unique, [b] in [a]: fio {fu:.2f} {fb:.2f}, iopsd {iu:.2f} {ib:.2f}"
        assert (fb > 0.3) if g else (fb < 0.01), (g, fb)
        print(f"dedupe_global={g}: [a]'s blocks unique fio {fu:.2f}, iopsd {iu:.2f}; [b]'s in [a] fio {fb:.2f}, "
              f"iopsd {ib:.2f}")


def iopsd_all(path):
    p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", path], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    jobs = json.loads(p.stdout)["jobs"]
    assert all(j["success"] for j in jobs), [j["message"] for j in jobs]
    return jobs


def check_wait_for(mnt, d):
    """[b] wait_for=a starts when [a] has ended; [c] runs beside [a]."""
    path = os.path.join(d, "waitfor.fio")
    body = "rw=randread\niodepth=1\nruntime=1\ntime_based\n"
    write(path, job(mnt, "a", body) + job(mnt, "b", body + "wait_for=a") + job(mnt, "c", body))
    p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", path], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    jobs = {j["jobname"]: j for j in json.loads(p.stdout)["jobs"]}
    a_end = jobs["a"]["timestamp_ms"] + jobs["a"]["runtime_usec"] / 1000
    assert jobs["b"]["timestamp_ms"] >= a_end, (jobs["b"]["timestamp_ms"], a_end)
    assert abs(jobs["c"]["timestamp_ms"] - jobs["a"]["timestamp_ms"]) < 500
    print(f"wait_for=a: [b] started {jobs['b']['timestamp_ms'] - a_end:.0f} ms after [a] ended, "
          f"[c] beside [a]")


def check_flow(mnt, d):
    """fio-examples' flow: a writer of weight 1 and a reader of weight 8
    share flow 0: their I/Os are 1:8, in iopsd as in fio."""
    path = os.path.join(d, "flow.fio")
    body = "iodepth=4\nruntime=2\ntime_based\nflow_sleep=100\n"
    write(path, job(mnt, "w", body + "rw=randwrite\nflow=1") + job(mnt, "r", body + "rw=randread\nflow=8"))
    # the first run of each lays the files out; then up to three rounds:
    # on a few runs fio itself has not held 1:8 here (13-20 reads per write,
    # and iopsd the same on that run), and such a round says nothing
    seen = []
    for attempt in range(4):
        p = subprocess.run([t.IOPSD, "--once", "--output-format=json", "--config", path], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr[-2000:]
        pf = subprocess.run(["fio", "--output-format=json", path], capture_output=True, text=True, timeout=60)
        if attempt == 0:
            continue
        ji = {j["jobname"]: j for j in json.loads(p.stdout)["jobs"]}
        jf = {j["jobname"]: j for j in json.loads(pf.stdout[pf.stdout.index("{"):])["jobs"]}
        ri = ji["r"]["read"]["total_ios"] / ji["w"]["write"]["total_ios"]
        rf = jf["r"]["read"]["total_ios"] / jf["w"]["write"]["total_ios"]
        seen.append((round(ri, 2), round(rf, 2)))
        if abs(rf - 8) <= 0.5:
            assert abs(ri - 8) <= 0.5, f"fio held 1:8 ({rf:.2f}), iopsd {ri:.2f}"
            break
    else:
        raise AssertionError(f"inconclusive: fio did not hold 1:8 in three rounds (iopsd, fio): {seen}")
    print(f"flow=1 and flow=8: reads per write iopsd {ri:.2f}, fio {rf:.2f}")


def check_steadystate(mnt, d):
    """ss=iops:10% over 3 s after a 1 s ss_ramp, on a job paced at 2000 IOPS
    for 30 s: it ends at about 4 s, attained, within 2 s of fio's
    job_runtime on the same job; fio's JSON object with it."""
    path = os.path.join(d, "ss.fio")
    write(path, job(mnt, "ss", "rw=randread\niodepth=4\nruntime=30\ntime_based\nrate_iops=2000\n"
                               "ss=iops:10%\nss_dur=3s\nss_ramp=1s"))
    ji = iopsd(path)
    jf = fio(path)
    ss = ji["steadystate"]
    assert ss["attained"] == 1 and ss["duration"] == 3 and len(ss["data"]["iops"]) == 3, ss
    assert 3.5e6 <= ji["runtime_usec"] <= 8e6, ji["runtime_usec"]
    assert jf["steadystate"]["attained"] == 1, jf["steadystate"]
    assert abs(ji["job_runtime"] - jf["job_runtime"]) <= 2000, (ji["job_runtime"], jf["job_runtime"])
    assert set(ss) == set(jf["steadystate"]) and set(ss["data"]) == set(jf["steadystate"]["data"])
    print(f"ss=iops:10% ss_dur=3s: attained after {ji['runtime_usec'] / 1e6:.1f} s (fio "
          f"{jf['job_runtime'] / 1000:.1f} s), criterion {ss['criterion']}")


def check_latency_target(mnt, d):
    """latency_target=200us at the 99th percentile, iodepth up to 64, 20 s:
    the search ends the run before its runtime, at the depth it found; the
    figures are its last window's only (shorter than the run); the job
    reports fio's latency_* keys (target in ns, window in us) as fio's.

    The search is fio's and wanders as fio's does where the windows' p99
    straddles the target (a loaded machine, the sanitizer build): a round
    whose search runs the whole runtime runs again, beside fio's on the
    same job; three such rounds fail.
    The search's steps are checked window by window in
    test-latency-target."""
    path = os.path.join(d, "lat.fio")
    runtime = 20
    write(path, job(mnt, "lat", f"rw=randread\niodepth=64\nruntime={runtime}\ntime_based\nlatency_target=200\n"
                                "latency_window=200ms\nlatency_percentile=99"))
    seen = []
    for _ in range(3):
        t0 = time.monotonic()
        ji = iopsd(path)
        wall = time.monotonic() - t0
        t0 = time.monotonic()
        jf = fio(path)
        fio_wall = time.monotonic() - t0
        for k in ("latency_target", "latency_window", "latency_percentile"):
            assert ji[k] == jf[k], (k, ji[k], jf[k])
        assert 1 <= ji["latency_depth"] <= 64, ji["latency_depth"]
        seen.append((round(wall, 1), ji["latency_depth"], round(fio_wall, 1), jf["latency_depth"]))
        if wall < runtime - 1:
            # the report covers the last window only: at least one window
            # (200 ms) of the search came before it
            assert ji["runtime_usec"] <= (wall - 0.2) * 1e6, (ji["runtime_usec"], wall)
            # job_runtime too, as fio's reset_all_stats() makes it
            assert abs(ji["job_runtime"] - ji["runtime_usec"] / 1000) <= 50, (ji["job_runtime"], ji["runtime_usec"])
            print(f"latency_target=200us p99: depth {ji['latency_depth']}, the run ended after {wall:.1f} s, "
                  f"its last window {ji['runtime_usec'] / 1e6:.1f} s (fio: depth {jf['latency_depth']} after "
                  f"{fio_wall:.1f} s, last window {jf['job_runtime'] / 1000:.1f} s)")
            return
    fio_ended = sum(r[2] < runtime - 1 for r in seen)
    raise AssertionError(f"iopsd's search did not end its run in three rounds; fio's did in {fio_ended} "
                         f"(iopsd s, depth, fio s, depth): {seen}")


def check_latency_run(mnt, d):
    """latency_target=500ms, which every window meets: the search doubles
    the depth to iodepth=16 and, without latency_run, ends the run a window
    later, its figures (job_runtime) that window's, as fio's; with
    latency_run=1 the job runs its whole 4 s runtime, as fio's. Neither
    depends on the machine's load: no window can miss the target."""
    path = os.path.join(d, "latrun.fio")
    body = ("rw=randread\niodepth=16\nruntime=4\ntime_based\nlatency_target=500ms\nlatency_window=200ms\n"
            "latency_percentile=99\n")
    figures = {}
    for lr in (0, 1):
        write(path, job(mnt, "latrun", body + f"latency_run={lr}"))
        t0 = time.monotonic()
        ji = iopsd(path)
        wall = time.monotonic() - t0
        jf = fio(path)
        figures[lr] = (round(wall, 1), ji["job_runtime"], jf["job_runtime"])
        if lr:
            assert wall >= 3.9 and ji["job_runtime"] >= 3900, f"latency_run=1: {wall:.1f} s, {ji['job_runtime']} ms"
            assert jf["job_runtime"] >= 3900, f"fio's latency_run=1 job ran {jf['job_runtime']} ms"
        else:
            assert wall < 3.5 and ji["job_runtime"] <= 400, f"latency_run=0: {wall:.1f} s, {ji['job_runtime']} ms"
            assert jf["job_runtime"] <= 400, f"fio's search ran {jf['job_runtime']} ms"
        assert ji["latency_depth"] == jf["latency_depth"] == 16, (ji["latency_depth"], jf["latency_depth"])
    # fio 3.33's normal output: the target in ns, the window in us
    lines = []
    for cmd in (["fio", path], [t.IOPSD, "--once", "--config", path]):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr[-2000:]
        lines.append(next(x.strip() for x in p.stdout.splitlines() if x.strip().startswith("latency   : target=")))
    assert lines[0] == lines[1], f"fio: {lines[0]!r}, iopsd: {lines[1]!r}"
    print("latency_target=500ms (iopsd wall s, job_runtime ms, fio job_runtime ms): "
          f"latency_run=0 {figures[0]}, latency_run=1 {figures[1]}; normal output as fio's: {lines[1]}")


def main():
    t.require_root()
    t.require_tool("losetup", "mkfs.ext4", "fio", "strace")
    fs = t.Ext4Mount("once-workload", 200, in_memory=True)
    try:
        mnt = fs.mountpoint
        d = fs.loop.dir
        check_thinktime(mnt, d)
        check_thinktime_spin(mnt, d)
        check_thinktime_iotime(mnt, d)
        check_thinktime_blocks_type(mnt, d)
        forget(mnt, "spin", "iotime", "btype")
        check_poisson(mnt, d)
        check_prio(mnt, d)
        check_cmdprio(mnt, d)
        check_cmdprio_uring(mnt, d, fs.loop.path)
        forget(mnt, "cpuring")
        check_buffers(mnt, d)
        check_dedupe_global(mnt, d)
        forget(mnt, "a", "b")
        check_wait_for(mnt, d)
        check_flow(mnt, d)
        check_steadystate(mnt, d)
        check_latency_target(mnt, d)
        check_latency_run(mnt, d)
        forget(mnt, "latrun")
        print("ok: fio's workload keys do in --once what they do in fio")
    finally:
        fs.cleanup()


if __name__ == "__main__":
    main()
