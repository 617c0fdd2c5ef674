#!/usr/bin/env python3
"""A removed or renamed probe's files are removed at the next start: [a],
[b] and [c] (nrfiles=2) run in one directory; the next start has [a] and
[b2] (b renamed, c removed): b.dat, c.0.dat and c.1.dat go, a.dat stays,
and so do a user's files in the directory and a file in .iopsd that is not
a probe file. A reload does not remove anything."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import iopsdtest as t  # noqa: E402

HEAD = """[global]
sample_interval=1s
state_directory=@TMP@
rw=randread
bs=4k
size=1m
runtime=100ms
interval=1s
directory={dir}
"""


def main():
    d = t.Daemon()
    target = os.path.join(d.tmp, "target")
    os.mkdir(target)
    state = os.path.join(target, ".iopsd")
    first = HEAD.format(dir=target) + "[a]\n[b]\n[c]\nnrfiles=2\n"
    second = HEAD.format(dir=target) + "[a]\n[b2]\n"
    try:
        with open(d.config, "w") as f:
            f.write(first.replace("@TMP@", d.tmp))
        with open(os.path.join(target, "user.dat"), "w") as f:
            f.write("a user's file\n")
        d.start()
        t.wait_until(lambda: all(os.path.exists(os.path.join(state, n))
                                 for n in ("a.dat", "b.dat", "c.0.dat", "c.1.dat")), 30,
                     what="every probe's files")
        with open(os.path.join(state, "notes.txt"), "w") as f:
            f.write("not a probe file\n")
        with open(d.config, "w") as f:
            f.write(second.replace("@TMP@", d.tmp))
        n = d.read_log().count("Reloaded")
        d.signal(1)
        t.wait_until(lambda: d.read_log().count("Reloaded") > n, 30, what="the reload")
        t.wait_until(lambda: os.path.exists(os.path.join(state, "b2.dat")), 30, what="b2.dat")
        assert os.path.exists(os.path.join(state, "b.dat")), "a reload removed a probe file"
        rc, _ = d.stop()
        assert rc == 0, rc
        d.start()
        t.wait_until(lambda: "no longer configured" in d.read_log(), 30, what="the strays removed")
        left = sorted(os.listdir(state))
        assert "a.dat" in left and "b2.dat" in left and "notes.txt" in left, left
        assert not {"b.dat", "c.0.dat", "c.1.dat"} & set(left), f"strays left: {left}"
        assert os.path.exists(os.path.join(target, "user.dat"))
        print(f"ok: after the restart .iopsd holds {left}")
        rc, _ = d.stop()
        assert rc == 0, rc
    finally:
        d.cleanup()
    print("PASS")


if __name__ == "__main__":
    main()
