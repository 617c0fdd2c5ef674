"""iopsd-lab vm: cloud volumes in a QEMU guest, with iopsd watching them.

  iopsd-lab vm up [DECLARATION] [INSTALL] [OPTIONS]   boot the lab (foreground; --background)
  iopsd-lab vm status [--json]                        volumes, their devices, caps and faults, URLs
  iopsd-lab vm cap NAME [--iops N] [--bps B] ...      change a volume's or group's caps live
  iopsd-lab vm detach NAME | attach NAME              unplug / plug a volume back
  iopsd-lab vm fault NAME none|eio|delay=50ms
  iopsd-lab vm exec [--timeout S] -- COMMAND...       run a command in the guest (root)
  iopsd-lab vm iopsd-config FILE                      new iopsd.conf template, iopsd restarted
  iopsd-lab vm down                                   stop the lab (as Ctrl-C on `up`)

DECLARATION: --file LAB (lines `volume NAME key=value ...`, `group ...`,
`array ...`, `iopsd-config FILE`) and/or --volume SPEC, --group SPEC,
--array SPEC (SPEC: NAME,key=value,...). Volume keys: size=1G,
bus=virtio|nvme, serial=vol0123456789abcdef0, iops=, iops-read=,
iops-write=, bps=, bps-read=, bps-write= (125m), iops-size=256k (an I/O
larger counts as size/256k operations, as EBS counts), burst=IOPS,
burst-length=30s, paths=2 (NVMe native multipath: controllers sharing
the namespace), group=NAME, array=NAME, fs=ext4|xfs|none, mount=DIR,
faults=yes (a dm device under its users, for `fault`), iopsd.KEY=VALUE
(declared to iopsd in a [device] section: iopsd.iops_limit=1000).
Group keys: the caps. Array keys: level=0|1|10, chunk=256k, fs=, mount=,
iopsd.KEY=.

INSTALL: --deb FILE (the package), or --iopsd BINARY with the units of
the source tree or the host's package (default: the source tree's
build/daemon/iopsd, or the installed one).

OPTIONS: --name NAME (several labs at once), --port N (host port for the
guest's iopsd; default a free one, on 127.0.0.1 only), --prometheus
(a Prometheus on the host scraping it with the shipped rules; 
--prometheus-port, --prometheus-interval 5s, --prometheus-rules FILE),
--memory 2048M, --smp 2, --console FILE, --instance-type m5.large (the
guest's SMBIOS product name; --instance-vendor, default "Amazon EC2").

Runs as root. State, the command socket and Prometheus' data are in
/run/iopsd-lab/NAME ($IOPSD_LAB_VM_DIR). contrib/lab/README.md has more."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import iopsdlab  # noqa: E402
from iopsdlab import Caps, LabClient, LabConfig, SpecError, VMError  # noqa: E402


def state_dir(args):
    return os.path.join(args.dir or iopsdlab.STATE_BASE, args.name)


def load_config(args):
    cfg = LabConfig.load(args.file) if args.file else LabConfig()
    for kind in ("group", "volume", "array"):
        for spec in getattr(args, kind):
            cfg.add(kind, spec, where=f"--{kind} ")
    if args.iopsd_config:
        with open(args.iopsd_config) as f:
            cfg.iopsd_template = f.read()
    return cfg.check()


def cmd_up(args):
    cfg = load_config(args)
    sd = state_dir(args)
    if os.path.exists(os.path.join(sd, "control.sock")):
        try:
            LabClient(sd, timeout=5).call("status")
            raise SystemExit(f"iopsd-lab vm: lab '{args.name}' is running already (iopsd-lab vm down --name "
                             f"{args.name})")
        except VMError:
            pass  # a stale socket of a lab that died
    if args.background:
        return up_background(args, sd)
    lab = iopsdlab.Lab(cfg, name=args.name, state_dir=sd, deb=args.deb, iopsd_binary=args.iopsd, port=args.port,
                       prometheus=args.prometheus, prometheus_port=args.prometheus_port,
                       prometheus_rules=args.prometheus_rules or None, prometheus_interval=args.prometheus_interval,
                       memory=args.memory, smp=args.smp, console_copy=args.console,
                       instance_type=args.instance_type, instance_vendor=args.instance_vendor)

    def stop(signum, frame):
        raise SystemExit(0)  # unwinds the with-block: QEMU and Prometheus go, the state too
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, stop)
    try:
        with lab:
            lab.serve()
            show_status(lab.status())
            print(f"lab {args.name} is up: iopsd-lab vm status|cap|detach|attach|fault|exec|down "
                  f"--name {args.name}; Ctrl-C stops it", flush=True)
            while True:
                signal.pause()
    finally:
        print(f"lab {args.name}: stopped", flush=True)


def up_background(args, sd):
    """Start `up` as a child of its own (session leader, output in
    STATE/up.log) and return once the lab is up or the child failed."""
    os.makedirs(sd, exist_ok=True)
    argv = [a for a in sys.argv if a != "--background"]
    log = open(os.path.join(sd, "up.log"), "ab")
    child = subprocess.Popen([sys.executable] + argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             start_new_session=True)
    while True:
        if child.poll() is not None:
            with open(os.path.join(sd, "up.log"), "rb") as f:
                sys.stderr.write(f.read().decode(errors="replace")[-4000:])
            raise SystemExit(f"iopsd-lab vm up failed ({child.returncode})")
        if os.path.exists(os.path.join(sd, "lab.json")) and os.path.exists(os.path.join(sd, "control.sock")):
            show_status(LabClient(sd).call("status"))
            print(f"lab {args.name} runs in the background (pid {child.pid}, log {sd}/up.log)")
            return 0
        time.sleep(1)


def show_status(st):
    print(f"lab {st['name']}: iopsd {st['url']}" + (f", Prometheus {st['prometheus']}" if st.get("prometheus") else ""))
    for x in st["items"]:
        if x["kind"] == "volume":
            dev = x["device"] or "-"
            extra = [f"group {x['group']}" if x["group"] else "", f"array {x['array']}" if x["array"] else "",
                     f"on {x['mount']}" if x["mount"] else "", f"fault {x['fault']}" if x["fault"] != "none" else "",
                     "DETACHED" if not x["attached"] else "",
                     "declared " + ",".join(f"{k}={v}" for k, v in x["iopsd"].items()) if x["iopsd"] else ""]
            print(f"  volume {x['name']:10} {dev:20} {x['bus']:6} {x['serial']:21} {x['describe']}"
                  + "".join(f"; {e}" for e in extra if e))
        elif x["kind"] == "group":
            print(f"  group  {x['name']:10} shared {x['describe']}")
        else:
            chunk = f" chunk {x['chunk'] // 1024}k" if x["chunk"] else ""
            print(f"  array  {x['name']:10} /dev/{x['disk']} RAID{x['level']}{chunk} over "
                  f"{', '.join(x['members'])}" + (f"; on {x['mount']}" if x["mount"] else ""))


def client(args):
    return LabClient(state_dir(args))


def cmd_status(args):
    st = client(args).call("status")
    if args.json:
        print(json.dumps(st, indent=1))
    else:
        show_status(st)
    return 0


def cmd_cap(args):
    caps = {k: v for k, v in (("iops", args.iops), ("iops-read", args.iops_read), ("iops-write", args.iops_write),
                              ("bps", args.bps), ("bps-read", args.bps_read), ("bps-write", args.bps_write),
                              ("burst", args.burst), ("burst-length", args.burst_length),
                              ("iops-size", args.iops_size)) if v is not None}
    Caps.from_opts(dict(caps), args.target)  # the same checks here as in the lab
    r = client(args).call("cap", name=args.target, **caps)
    print(f"{args.target}: {r['describe']}")
    return 0


def cmd_detach(args):
    r = client(args).call("detach", name=args.target)
    print(f"{args.target}: detached (was {r['disk']})")
    return 0


def cmd_attach(args):
    r = client(args).call("attach", name=args.target)
    print(f"{args.target}: attached as {r['disk']}")
    return 0


def cmd_fault(args):
    kind, _, val = args.kind.partition("=")
    delay_ms = 0
    if kind == "delay":
        if not val:
            raise SystemExit("iopsd-lab vm fault: delay=DURATION (e.g. delay=50ms)")
        delay_ms = iopsdlab.parse_seconds(val, "delay") * 1000
    elif kind not in ("none", "eio") or val:
        raise SystemExit(f"iopsd-lab vm fault: {args.kind}: none, eio or delay=DURATION")
    r = client(args).call("fault", name=args.target, kind=kind, delay_ms=delay_ms)
    print(f"{args.target}: fault {r['fault']}")
    return 0


def cmd_exec(args):
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not argv:
        raise SystemExit("iopsd-lab vm exec: no command (iopsd-lab vm exec -- COMMAND...)")
    r = client(args).call("exec", argv=argv[0] if len(argv) == 1 else argv, timeout=args.timeout)
    sys.stdout.write(r["stdout"])
    sys.stderr.write(r["stderr"])
    return r["returncode"]


def cmd_iopsd_config(args):
    with open(args.file) as f:
        r = client(args).call("iopsd-config", template=f.read())
    print(r["iopsd.conf"], end="")
    return 0


def cmd_down(args):
    c = client(args)
    pid = c.call("status")["pid"]
    c.call("down")
    deadline = time.monotonic() + 90
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.5)
    if os.path.exists(f"/proc/{pid}"):
        raise SystemExit(f"iopsd-lab vm: lab {args.name} (pid {pid}) still running after 90 s")
    print(f"lab {args.name}: stopped")
    return 0


def main():
    p = argparse.ArgumentParser(prog="iopsd-lab vm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", default="default")
    p.add_argument("--dir", help="state directory base (default /run/iopsd-lab)")
    sub = p.add_subparsers(dest="what", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--name", default=argparse.SUPPRESS)
    common.add_argument("--dir", default=argparse.SUPPRESS)

    up = sub.add_parser("up", parents=[common])
    up.add_argument("--file")
    up.add_argument("--volume", action="append", default=[])
    up.add_argument("--group", action="append", default=[])
    up.add_argument("--array", action="append", default=[])
    up.add_argument("--iopsd-config")
    up.add_argument("--deb")
    up.add_argument("--iopsd")
    up.add_argument("--port", type=int)
    up.add_argument("--prometheus", action="store_true")
    up.add_argument("--prometheus-port", type=int)
    up.add_argument("--prometheus-interval", default="5s")
    up.add_argument("--prometheus-rules", action="append", default=[])
    up.add_argument("--memory", default="2048M")
    up.add_argument("--smp", type=int, default=2)
    up.add_argument("--console")
    up.add_argument("--instance-type")
    up.add_argument("--instance-vendor", default="Amazon EC2")
    up.add_argument("--background", action="store_true")

    st = sub.add_parser("status", parents=[common])
    st.add_argument("--json", action="store_true")
    cap = sub.add_parser("cap", parents=[common])
    cap.add_argument("target")
    for k in ("iops", "iops-read", "iops-write", "bps", "bps-read", "bps-write", "burst", "burst-length",
              "iops-size"):
        cap.add_argument(f"--{k}")
    for name in ("detach", "attach"):
        sub.add_parser(name, parents=[common]).add_argument("target")
    fl = sub.add_parser("fault", parents=[common])
    fl.add_argument("target")
    fl.add_argument("kind")
    ex = sub.add_parser("exec", parents=[common])
    ex.add_argument("--timeout", type=float, default=600)
    ex.add_argument("command", nargs=argparse.REMAINDER)
    ic = sub.add_parser("iopsd-config", parents=[common])
    ic.add_argument("file")
    sub.add_parser("down", parents=[common])

    args = p.parse_args()
    try:
        return {"up": cmd_up, "status": cmd_status, "cap": cmd_cap, "detach": cmd_detach, "attach": cmd_attach,
                "fault": cmd_fault, "exec": cmd_exec, "iopsd-config": cmd_iopsd_config,
                "down": cmd_down}[args.what](args) or 0
    except (VMError, SpecError, OSError) as e:
        print(f"iopsd-lab vm: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
