#!/usr/bin/env python3
"""fio's workload keys in the daemon, as in --once: a probe with
random_distribution=zoned:50/5:50/95 and prioclass=3 on a raw loop device,
its runs traced at the block layer (block_rq_issue). Half the reads land in
the first 5% of the region (a probe that ignored the key would put 5% there)
and every read carries the idle class. Each run ends after its 600 reads
(number_ios, with a runtime to spare), so that how many are traced does not
depend on how much CPU the machine leaves the probe."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

REGION = 32 << 20  # the probe's size: the zoned layout is over this, from 0
SECTOR = 512


def runs(d, probe):
    return t.metric_value(d.metrics(), "iopsd_probe_runs_total", {"probe": probe}) or 0


def main():
    t.require_root()
    t.require_tool("losetup")
    raw = t.LoopDevice("daemon-workload", 64, in_memory=True)
    trace = t.BlockTrace(raw.path)
    d = None
    try:
        d = t.Daemon("[global]\nlisten_address=127.0.0.1:@PORT@\nstate_directory=@TMP@\n"
                     f"[zoned]\nfilename={raw.path}\nrw=randread\nbs=4k\nsize={REGION >> 20}m\n"
                     "random_distribution=zoned:50/5:50/95\nprioclass=3\n"
                     "rate_iops=1000\nnumber_ios=600\nruntime=2s\ninterval=2s\n")
        d.start()
        t.wait_until(lambda: runs(d, "zoned") >= 1, 60, what="the probe's first run")
        with trace.tracing():
            # counted with the trace on: the last two of the three runs are traced whole
            first = runs(d, "zoned")
            t.wait_until(lambda: runs(d, "zoned") >= first + 3, 60, what="three more runs")
        text = d.metrics()
        assert t.metric_value(text, "iopsd_probe_success", {"probe": "zoned"}) == 1, d.read_log()[-2000:]
        reads = [(sector, prio) for rwbs, sector, prio in trace.requests if "R" in rwbs]
        assert len(reads) >= 600, f"only {len(reads)} reads traced over three runs"
        beyond = [s for s, _ in reads if s * SECTOR >= REGION]
        assert not beyond, f"{len(beyond)} reads past the probe's size, e.g. sector {beyond[0]}"
        hot = sum(1 for s, _ in reads if s * SECTOR < REGION * 5 // 100) / len(reads)
        assert 0.45 <= hot <= 0.55, f"the first 5% of the region got {hot:.1%} of {len(reads)} reads, not 50%"
        prios = {p.split(",")[0] for _, p in reads}
        assert prios == {"idle"}, f"prioclass=3: the reads' classes are {sorted(prios)}"
        print(f"ok: {len(reads)} reads of the daemon's probe traced: {hot:.1%} in the first 5% of "
              f"the region (zoned:50/5), every one of class idle")
    finally:
        if d:
            d.cleanup()
        trace.cleanup()
        raw.cleanup()


if __name__ == "__main__":
    main()
