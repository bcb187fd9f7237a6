#!/usr/bin/python3
"""A sparse flow's latency tail under RRUL behind a bloated modem
(docs/ARCHITECTURE.md, "What a sparse flow waits for").

    sparse_tail.py [--shaperd PATH] [--setups fq_codel,cake-flows,cake-dual]
                   [--rounds 3] [--duration 25] [--capture] [--out DIR]

The bed of autorate.py without its delay line: a kernel tbf "modem" (--down /
--up, default 100/20 Mbit/s, --buffer 1 MB) on each side of the WAN port (the
WAN af_packet port with qdisc_bypass=0 so the upstream tbf sees the frames),
shaperd at --share (95 %) of the modem's rates, 4 TCP uploads + 4 downloads
(BE, CS1, CS5, EF) and an ICMP ping every --probe-interval (50 ms), as run.py's
rrul scenario runs them. The setups run interleaved, round after round, each
on a fresh bed and daemon:

  fq_codel    fq_codel, flows 1024, limit 1024, both directions
  cake-flows  cake besteffort, isolation flows (no ingress, no ACK filter)
  cake-dual   cake besteffort, dual-dsthost + ingress down, dual-srchost +
              ACK filter up, rtt 30ms
  cake-diffserv3  cake-dual with diffserv3 (not run unless named)

A setup may carry changes: '+KEY=VALUE' for both directions, '+up.KEY=VALUE'
or '+down.KEY=VALUE' for one, e.g. 'cake-flows+rtt=30ms+up.ack_filter=true'.

Printed per run: the ping's idle median, induced median, loaded p90 and
induced p99 (loaded p99 minus the idle median), goodput down/up, and the
shaper's sojourn p99 per direction: of the ping's tin (which holds the bulk
flows too) and of that tin's sparse flows (`sparse_sojourn`: packets served
from the new-flows list, as the ping's are), which is the ping's wait inside
shaperd. --capture also records the ICMP packets on both namespace ends
(tcpdump) and the modems' backlog (tc, every 20 ms), and splits each slow
ping's RTT into the upstream path (shaperd + upstream modem), the server side
(downstream modem) and shaperd's downstream direction. Results in
DIR/sparse_tail.json. Needs what autorate.py needs (and tcpdump for --capture).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import autorate  # noqa: E402  (the tbf modem)
import run as bed_run  # noqa: E402  (the bed, probes, flows and daemon stats)


def setup_cfg(name, d, rate_bps):
    """One direction's config for a setup; d is 'upstream' or 'downstream'.
    A setup is a base name with optional '+KEY=VALUE' changes for both
    directions, or '+up.KEY=VALUE' / '+down.KEY=VALUE' for one (VALUE is JSON
    if it parses, else a string): 'cake-flows+rtt=30ms+up.ack_filter=true'."""
    base, *changes = name.split("+")
    rate = "%dkbit" % round(rate_bps / 1000)
    if base == "fq_codel":
        c = {"discipline": "fq_codel", "bandwidth": rate, "flows": 1024, "limit": 1024}
    elif base in ("cake-flows", "cake-dual", "cake-diffserv3"):
        c = {"discipline": "cake", "bandwidth": rate, "diffserv": "besteffort"}
        if base == "cake-flows":
            c["isolation"] = "flows"
        else:
            c["rtt"] = "30ms"
            if base == "cake-diffserv3":
                c["diffserv"] = "diffserv3"
            if d == "downstream":
                c.update(isolation="dual-dsthost", ingress=True)
            else:
                c.update(isolation="dual-srchost", ack_filter=True)
    else:
        raise SystemExit("unknown setup %r (fq_codel, cake-flows, cake-dual, cake-diffserv3)" % base)
    for ch in changes:
        key, _, val = ch.partition("=")
        where, _, k = key.rpartition(".")
        if where and where != d[:len(where)]:
            continue
        try:
            c[k] = json.loads(val)
        except ValueError:
            c[k] = val
    return c


class ModemBacklog(threading.Thread):
    """Both modems' queued bytes (tc -s qdisc), every step seconds."""

    def __init__(self, bed, t0, step=0.02):
        super().__init__(daemon=True)
        self.bed, self.t0, self.step = bed, t0, step
        self.samples, self.stop_ev = [], threading.Event()

    @staticmethod
    def _backlog(argv):
        out = subprocess.run(argv, capture_output=True, text=True).stdout
        m = re.search(r"backlog (\d+)b", out)
        return int(m.group(1)) if m else None

    def run(self):
        up = ["tc", "-s", "qdisc", "show", "dev", self.bed.pfx + "wan0"]
        down = ["ip", "netns", "exec", self.bed.srv, "tc", "-s", "qdisc", "show", "dev", "eth0"]
        while not self.stop_ev.wait(self.step):
            self.samples.append((time.time() - self.t0, self._backlog(up), self._backlog(down)))

    def stop(self):
        self.stop_ev.set()
        self.join(timeout=5)


class IcmpCapture:
    """tcpdump of the ICMP echoes on the client's and the server's eth0."""

    def __init__(self, bed, tmp):
        self.bed, self.files, self.procs = bed, {}, []
        for where in ("cli", "srv"):
            f = os.path.join(tmp, "%s.%s.icmp.txt" % (bed.name, where))
            self.files[where] = f
            self.procs.append(bed.ns(where, ["tcpdump", "-i", "eth0", "-n", "-l", "-tt", "-B", "4096",
                                             "--time-stamp-precision=micro", "icmp"],
                                     out=open(f, "w")))

    def stop(self):
        time.sleep(0.5)
        for p in self.procs:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()

    def legs(self, t0):
        """Per echo: (send time from t0, up ms, server ms, down ms). up = client out ->
        server in (shaperd upstream + upstream modem), server = request in -> reply out
        (the reply waits in the downstream modem's tbf before the tap sees it), down =
        server out -> client in (shaperd downstream)."""
        seen = {}
        pat = re.compile(r"^([\d.]+) IP \S+ > \S+: ICMP echo (request|reply), id (\d+), seq (\d+)")
        for where, f in self.files.items():
            for line in open(f, errors="replace"):
                m = pat.match(line)
                if m:
                    key = (int(m.group(3)), int(m.group(4)))
                    seen.setdefault(key, {})[(where, m.group(2))] = float(m.group(1))
        out = []
        for key, s in seen.items():
            try:
                a, b = s[("cli", "request")], s[("srv", "request")]
                c, d = s[("srv", "reply")], s[("cli", "reply")]
            except KeyError:
                continue
            out.append((a - t0, (b - a) * 1e3, (c - b) * 1e3, (d - c) * 1e3))
        out.sort()
        return out


def leg_summary(legs, a, b):
    """Median and p99 of each leg in [a, b), and the legs of the slowest 1 % of echoes."""
    sel = [x for x in legs if a <= x[0] < b]
    if not sel:
        return None
    out = {"n": len(sel)}
    for i, name in ((1, "up"), (2, "server"), (3, "down")):
        v = sorted(x[i] for x in sel)
        out[name] = {"median": bed_run.rnd(bed_run.percentile(v, 50)), "p90": bed_run.rnd(bed_run.percentile(v, 90)),
                     "p99": bed_run.rnd(bed_run.percentile(v, 99)), "max": bed_run.rnd(v[-1])}
    slow = sorted(sel, key=lambda x: -(x[1] + x[2] + x[3]))[:max(1, len(sel) // 100)]
    out["slowest_1pct_mean"] = {name: bed_run.rnd(sum(x[i] for x in slow) / len(slow))
                                for i, name in ((1, "up"), (2, "server"), (3, "down"))}
    return out


def backlog_summary(samples, a, b):
    out = {}
    for i, name in ((1, "up"), (2, "down")):
        v = sorted(s[i] for s in samples if a <= s[0] < b and s[i] is not None)
        if v:
            out[name] = {"median_bytes": bed_run.percentile(v, 50), "p99_bytes": bed_run.percentile(v, 99), "max_bytes": v[-1]}
    return out


def run_one(args, setup, rnd_no, tmp):
    bed = bed_run.Bed(args.prefix, args.shaperd, tmp, "%s_%d" % (setup, rnd_no))
    bed.wan_opts = ",qdisc_bypass=0"  # the upstream modem's tbf must see the frames
    bed.rt_priority, bed.probe_rt = args.rt_priority, args.probe_rt
    bed.pin_cpus = bed_run.load_cpus()
    cfg = {d: setup_cfg(setup, d, (args.down if d == "downstream" else args.up) * args.share)
           for d in ("upstream", "downstream")}
    ra = SimpleNamespace(scenario="rrul", rtt_s=0.0, idle=args.idle, duration=args.duration,
                         probe_interval=args.probe_interval, rrul_marks="BE,CS1,CS5,EF", settle=3.0,
                         flows=None, stagger=3.0, shared_server=False,
                         down_bps=args.down * args.share, up_bps=args.up * args.share)
    try:
        bed.up()
        autorate.tc_modem(bed, "srv", "add", int(args.down), args.buffer, args.modem_burst)
        autorate.tc_modem(bed, "wan", "add", int(args.up), args.buffer, args.modem_burst)
        bed.start_daemon(cfg)
        cap = IcmpCapture(bed, tmp) if args.capture else None
        mb = ModemBacklog(bed, 0.0) if args.capture else None
        if mb:
            mb.start()
        raw = bed_run.run_scenario(ra, setup, bed, tmp)
        if cap:
            cap.stop()
            mb.stop()
        bed.stop_daemon()
        r = bed_run.analyse(ra, raw)
        if cap:
            # Capture times are wall clock; run_scenario's are from its own t0.
            win = raw["window"]
            legs = cap.legs(0.0)
            shift = probe_shift(raw["lat"]["icmp"], legs)
            legs = [(t - shift,) + tuple(x) for t, *x in legs]
            r["legs"] = {"idle": leg_summary(legs, 0.5, raw["idle"] - 0.1), "loaded": leg_summary(legs, *win)}
            r["legs_raw"] = [[round(v, 4) for v in x] for x in legs]
            samples = [(t - shift, u, d) for t, u, d in mb.samples]
            r["modem_backlog"] = {"idle": backlog_summary(samples, 0.5, raw["idle"] - 0.1),
                                  "loaded": backlog_summary(samples, *win)}
        return r
    finally:
        bed.down()


def probe_shift(icmp, legs):
    """Wall clock minus run_scenario's clock: both see fping's first echo first."""
    if not icmp or not legs:
        return 0.0
    return legs[0][0] - min(t for t, _ in icmp)


def ping_tin_sojourn(dl, key="sojourn"):
    """A sojourn summary (key: sojourn or sparse_sojourn) of the tin the ping (ICMP,
    DSCP 0) is in: 'Best Effort' in the diffserv modes, else the first (only) tin."""
    tins = (dl or {}).get("tins") or []
    for t in tins:
        if t.get("name") == "Best Effort":
            return t.get(key) or {}
    return ((tins[0] if tins else dl) or {}).get(key) or {}


ROW = "%-{w}s %6s %8s %8s %8s %12s %12s %11s %13s %5s"


def row(setup, r, w):
    ic = r["phases"]["loaded"]["latency"]["icmp"]
    idle = r["phases"]["idle"]["latency"]["icmp"]
    ind = r["induced_ms"].get("icmp", {})
    g = r["phases"]["loaded"].get("goodput", {})
    dm = r["daemon"]["loaded"]
    sj = [bed_run.fmt(ping_tin_sojourn(dm.get(d)).get("p99_ms"), "%.2f") for d in ("downstream", "upstream")]
    sp = [bed_run.fmt(ping_tin_sojourn(dm.get(d), "sparse_sojourn").get("p99_ms"), "%.2f")
          for d in ("downstream", "upstream")]
    return ROW.format(w=w) % (
        setup, bed_run.fmt(idle.get("median"), "%.2f"), bed_run.fmt(ind.get("median"), "%+.2f"),
        bed_run.fmt(ic.get("p90"), "%.2f"), bed_run.fmt(ind.get("p99"), "%+.2f"),
        "%s/%s" % (bed_run.fmt(g.get("down", {}).get("total")), bed_run.fmt(g.get("up", {}).get("total"))),
        "%s/%s" % tuple(sj), "%s/%s" % tuple(sp),
        "/".join(bed_run.fmt(((dm.get(d) or {}).get("lag_skipped_us") or 0) / 1000.0, "%.0f")
                 for d in ("downstream", "upstream")),
        "yes" if r["health"].get("disturbed") else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shaperd", default=None)
    ap.add_argument("--setups", default="fq_codel,cake-flows,cake-dual")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--down", type=bed_run.parse_rate, default=bed_run.parse_rate("100mbit"), help="modem")
    ap.add_argument("--up", type=bed_run.parse_rate, default=bed_run.parse_rate("20mbit"), help="modem")
    ap.add_argument("--share", type=float, default=0.95, help="shaperd's rate as a share of the modem's")
    ap.add_argument("--buffer", type=int, default=1 << 20, help="modem buffer, bytes")
    ap.add_argument("--modem-burst", type=int, default=None,
                    help="the modems' token bucket, bytes (default: autorate.py's, 4 ms of line rate)")
    ap.add_argument("--duration", type=float, default=25.0, help="seconds of load")
    ap.add_argument("--idle", type=float, default=4.0)
    ap.add_argument("--probe-interval", type=bed_run.parse_time, default=0.05)
    ap.add_argument("--rt-priority", type=int, default=50, help="shaperd's dataplane.rt_priority")
    ap.add_argument("--probe-rt", type=int, default=10, help="fping and irtt under SCHED_FIFO (0 = off)")
    ap.add_argument("--capture", action="store_true", help="split the ping's RTT (tcpdump, tc)")
    ap.add_argument("--prefix", default="st")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rc = bed_run.preflight("sparse_tail.py", bed_run.BED_TOOLS + ("tc",) +
                           (("tcpdump",) if args.capture else ()))
    if rc is not None:
        return rc
    for c in ("build-bed/src/shaperd", "build/src/shaperd"):
        if not args.shaperd and os.access(os.path.join(bed_run.ROOT, c), os.X_OK):
            args.shaperd = os.path.join(bed_run.ROOT, c)
    if not args.shaperd:
        raise SystemExit("sparse_tail.py: no shaperd (build it, or give --shaperd)")
    out = args.out or os.path.join(bed_run.ROOT, "build-bed", "results")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="shaper_sparse_")
    setups = [s.strip() for s in args.setups.split(",")]
    runs = []
    w = max(len(x) for x in setups + ["setup"])
    hdr = ROW.format(w=w) % ("setup", "idle", "ind p50", "load p90", "ind p99", "goodput d/u", "soj p99 d/u",
                             "sparse d/u", "stalls d/u", "dist")
    for n in range(args.rounds):
        for s in setups:
            r = run_one(args, s, n, tmp)
            r["config"] = {d: setup_cfg(s, d, (args.down if d == "downstream" else args.up) * args.share)
                           for d in ("upstream", "downstream")}
            runs.append({"setup": s, "round": n, "result": r})
            print(hdr + "\n" + row(s, r, w), flush=True)
    print("\nping (ICMP every %g ms), ms; goodput Mbit/s; shaperd's sojourn p99 (ms) of the ping's tin and of "
          "its sparse flows (served from the new-flows list, as the ping is); stalls: ms of worker absence "
          "written off (lag_skipped); dist: the bed was disturbed (steal or worker wait >= 20 ms per 100 ms)" % (
              args.probe_interval * 1000))
    print(hdr)
    for x in runs:
        print(row(x["setup"], x["result"], w) + "  (round %d)" % x["round"])
    if args.capture:
        print("\nthe ping's legs in the loaded phase, ms (p50/p90/p99/max); modem backlog, bytes (p99/max)")
        print(("%-{w}s %27s %27s %27s %13s %13s".format(w=w)) % ("setup", "up: shaperd + up modem",
                                                                 "server (+ down modem)", "down: shaperd",
                                                                 "up modem", "down modem"))
        for x in runs:
            lg, mb = x["result"]["legs"]["loaded"] or {}, x["result"]["modem_backlog"]["loaded"]
            cell = lambda k: "/".join(bed_run.fmt((lg.get(k) or {}).get(q), "%.2f")
                                      for q in ("median", "p90", "p99", "max"))
            bl = lambda k: "%s/%s" % ((mb.get(k) or {}).get("p99_bytes"), (mb.get(k) or {}).get("max_bytes"))
            print(("%-{w}s %27s %27s %27s %13s %13s".format(w=w)) % (
                x["setup"], cell("up"), cell("server"), cell("down"), bl("up"), bl("down")))
    path = os.path.join(out, "sparse_tail.json")
    with open(path, "w") as f:
        json.dump({"params": {k: v for k, v in vars(args).items()}, "runs": runs}, f, indent=1)
    print("results: %s" % path)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
