#!/usr/bin/python3
"""Bufferbloat runs on the namespace bed (tools/testbed/bed.sh).

    run.py SCENARIO [--shaperd PATH] [--down RATE] [--up RATE] [--rtt 40ms]
           [--duration S] [--out DIR] [--disciplines cake,fifo] [--flows N]

For each discipline, in the same invocation and one after the other: make the
bed (bed.sh up PREFIX), write a config (downstream = WAN->LAN at --down,
upstream = LAN->WAN at --up, base RTT from the daemon's delay line: rtt/2 per
direction), start shaperd with its worker on lcore 1, run the scenario,
collect, stop shaperd, tear the bed down. Then write DIR/SCENARIO.json,
DIR/SCENARIO.png and print a table.

Scenarios (flows go between the client netns, LAN side, and the server netns,
WAN side; "download" = server -> client through the downstream scheduler):
  rrul          idle probes, then 4 TCP uploads + 4 downloads marked BE, CS1,
                CS5, EF, with ICMP (fping) and UDP (irtt, BE and EF) probes
  bbr-converge  --flows (4) BBR downloads through 80 Mbit/s, 10 ms RTT: Jain's
                index and the largest 100 ms total-goodput sample
  staggered     BBR, cubic, BBR, cubic downloads started 3 s apart through
                20 Mbit/s, 48 ms RTT: each flow's share of the fair share
  hosts         uploads: host 10.99.0.11 with 1 flow to 10.99.0.2, host 10.99.0.12
                with 8 flows to 10.99.0.22 (--shared-server: to 10.99.0.2 too);
                cake uses triple-isolate both ways: each host's share
  subscribers   hosts 10.99.0.11 (A) and 10.99.0.12 (B) are subscribers with plans
                of 30 % and 50 % of the link both ways (cake only: a subscribers
                file); each runs 4 downloads and 2 uploads, the probes run from A:
                what the shaper sent for each (subscribers.list over its own
                clock) against its plan, and A's latency inside its own CAKE
  l4s           a scalable download (scalable.py: UDP, ECT(1), DCTCP's response)
                alone for the first half, then beside a cubic download: each
                one's share, the scalable flow's queueing delay (its RTT less
                the least it saw) and, alone, the shaper's own sojourn of its
                tin; the tin's ECT(1) packets and step marks

Disciplines: fifo (a bloated tail-drop queue of --fifo-limit packets at the
same rates), cake (dual-dsthost + ingress downstream, dual-srchost + ACK
filter upstream; triple-isolate in 'hosts'), fq_codel, or cake/ISOLATION
(e.g. cake/flows) to force the isolation mode; a "+l4s" suffix (cake+l4s,
cake/flows+l4s, fq_codel+l4s) turns l4s on both ways. Default: cake,fifo; for l4s
cake+l4s,cake.

Also recorded: the shaper's L2 output per 100 ms (tx_bytes of the output veths),
the daemon's counters over each phase (control socket: drops by reason, ECN
marks, per-tin packets), and whether the machine was disturbed (CPU steal by the
hypervisor, other processes' load): a disturbed phase is flagged in the table.

Goodput is TCP payload as the receiving iperf3 counts it; the configured rate
is the L2 rate (whole Ethernet frames, no FCS: "raw" overhead), so a full
1514-byte frame carries 1448 payload bytes (95.6 %) and the ACKs of the other
direction use the same link. Times in the JSON are seconds from the start of
the probes; latencies are milliseconds; rates Mbit/s (10^6).
Needs root, iperf3, fping, irtt, ethtool; matplotlib for the plot.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BED = os.path.join(HERE, "bed.sh")
sys.path.insert(0, os.path.dirname(HERE))
from shaperlib import (ControlError, favour_session, percentile, request, shaperd_argv,  # noqa: E402
                       start_logged, stop_process, units, write_config)
CLI_ADDR, SRV_ADDR = "10.99.0.1", "10.99.0.2"
HOST_A, HOST_B = "10.99.0.11", "10.99.0.12"
SRV_B = "10.99.0.22"  # hosts: host B's server, unless --shared-server
TOS = {"BE": 0x00, "CS1": 0x20, "CS5": 0xA0, "EF": 0xB8}

SCENARIOS = {
    # rates, base RTT, default duration (loaded part, s), idle lead-in (s)
    "rrul": dict(down="100mbit", up="20mbit", rtt="40ms", duration=30, idle=5),
    "bbr-converge": dict(down="80mbit", up="80mbit", rtt="10ms", duration=30, idle=2),
    "staggered": dict(down="20mbit", up="20mbit", rtt="48ms", duration=30, idle=2),
    "hosts": dict(down="100mbit", up="20mbit", rtt="40ms", duration=20, idle=2),
    "subscribers": dict(down="100mbit", up="20mbit", rtt="40ms", duration=20, idle=3),
    "l4s": dict(down="100mbit", up="20mbit", rtt="20ms", duration=30, idle=2),
}
SCALABLE = os.path.join(HERE, "scalable.py")
SCALABLE_OPTS = os.environ.get("SCALABLE_OPTS", "").split()
# subscribers: two subscribers on the client side, each an address with a plan (a share of
# the link's rate in both directions); the probes run from the first, through its own CAKE.
SUBSCRIBERS = {"A": (HOST_A, 0.3), "B": (HOST_B, 0.5)}


T_START = time.time()


def log(*a):
    print("run.py: %6.1fs" % (time.time() - T_START), *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- units

def parse_rate(s):
    """A rate as the config writes it (shaperlib.units) -> bit/s."""
    try:
        return units.parse_rate(s) * 8
    except units.UnitError as e:
        raise argparse.ArgumentTypeError(str(e))


def parse_time(s):
    """A time as the config writes it (shaperlib.units) -> seconds."""
    try:
        return units.parse_time(s) / 1e9
    except units.UnitError as e:
        raise argparse.ArgumentTypeError(str(e))


def jain(xs):
    xs = [x for x in xs]
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def rnd(x, n=3):
    return None if x is None else round(x, n)


# ---------------------------------------------------------------- bed

class Bed:
    """One namespace bed, one shaperd, and every process started in it."""

    def __init__(self, prefix, shaperd, tmp, name):
        self.pfx, self.shaperd, self.tmp, self.name = prefix, shaperd, tmp, name
        self.cli, self.srv = prefix + "cli", prefix + "srv"
        self.procs = []
        self.daemon = None
        self.subscribers = False  # the config has a subscribers section: snapshots list them
        self.pin_cpus = None  # taskset list for the load and the probes (not shaperd)
        self.nice = 0  # shaperd's nice value
        self.rt_priority = 0  # shaperd's workers under SCHED_FIFO (dataplane.rt_priority)
        self.workers = 1  # more: both on CPU 1 (lcores 1..N), af_packet with qpairs=N
        self.probe_rt = 0  # probes under SCHED_FIFO at this priority (0 = not)
        self.wan_opts = ""  # more af_packet options for the WAN port (",qdisc_bypass=0")
        self.modem = False  # a bridge namespace (<pfx>mdm) between the WAN port and the server
        self.sock = os.path.join(tmp, name + ".sock")

    def up(self):
        subprocess.run(["bash", BED, "up", self.pfx] + (["modem"] if self.modem else []),
                       check=True, stdout=subprocess.DEVNULL)

    def down(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.stop_daemon()
        subprocess.run(["bash", BED, "down", self.pfx], stdout=subprocess.DEVNULL)

    def ns(self, where, argv, out=None, err=subprocess.DEVNULL, probe=False):
        """Start argv in netns 'cli' or 'srv'; returns the Popen (also kept for cleanup).
        A probe runs under SCHED_FIFO (if probe_rt): it measures the path, not how long
        it waited for a CPU behind the load generators."""
        ns = self.cli if where == "cli" else self.srv
        pin = ["taskset", "-c", self.pin_cpus] if self.pin_cpus else []
        if probe and self.probe_rt:
            pin = ["chrt", "-f", str(self.probe_rt)] + pin
        p = subprocess.Popen(["ip", "netns", "exec", ns] + pin + argv, stdout=out or subprocess.DEVNULL,
                             stderr=err, stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def pids(self):
        out = {p.pid for p in self.procs}
        if self.daemon is not None:
            out.add(self.daemon.pid)
        return out

    def ns_run(self, where, argv):
        ns = self.cli if where == "cli" else self.srv
        subprocess.run(["ip", "netns", "exec", ns] + argv, check=True, stdout=subprocess.DEVNULL)

    # --- shaperd
    def start_daemon(self, cfg):
        path = os.path.join(self.tmp, self.name + ".json")
        cfg = dict(cfg)
        qp = ",qpairs=%d" % self.workers if self.workers > 1 else ""
        cfg["ports"] = {"lan": "net_af_packet0,iface=%slan0%s" % (self.pfx, qp),
                        "wan": "net_af_packet1,iface=%swan0%s%s" % (self.pfx, qp, self.wan_opts)}
        cfg["control"] = {"enabled": True, "socket": self.sock, "mode": "0600"}
        cfg["lcores"] = {"workers": list(range(1, self.workers + 1))}
        cfg["dataplane"] = {"idle_sleep": "20us"}
        if self.rt_priority:  # left out at 0, so builds older than the key run too
            cfg["dataplane"]["rt_priority"] = self.rt_priority
        write_config(path, cfg, indent=1)
        self.stats_file = os.path.join(self.tmp, self.name + ".stats")
        self.log_file = os.path.join(self.tmp, self.name + ".log")
        lcores = "0,1" if self.workers == 1 else "0@0," + ",".join(
            "%d@1" % (i + 1) for i in range(self.workers))
        argv = (["nice", "-n", str(self.nice)] if self.nice else []) + shaperd_argv(
            self.shaperd, path, self.stats_file, lcores=lcores,
            prefix="bed_%s_%s_%d" % (self.pfx, self.name.replace("/", "_"), os.getpid()))
        favour_session(os.getpid())  # shaperd runs in this session
        self.daemon = start_logged(argv, self.log_file)
        for _ in range(100):
            if "bridging" in open(self.log_file).read():
                return cfg
            if self.daemon.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("shaperd did not start:\n" + open(self.log_file).read())

    def stop_daemon(self):
        """SIGTERM, wait, and return the --stats-file JSON (None if none)."""
        if self.daemon is None:
            return None
        d, self.daemon = self.daemon, None
        self.daemon_rc = stop_process(d, 20)
        try:
            return json.load(open(self.stats_file))
        except (OSError, ValueError):
            return None

    def ctl(self, cmd, args=None):
        """One request on the control socket; returns 'result' or None."""
        try:
            return request(self.sock, cmd, args or None, timeout=3)
        except ControlError:
            return None
        except (OSError, ValueError) as e:
            log("control socket: %s" % e)
            return None


# ---------------------------------------------------------------- configs

BED_TOOLS = ("iperf3", "fping", "irtt", "ethtool", "ip", "ss")


def preflight(who, tools, skip=""):
    """None when we are root and every tool is there; else says why and
    returns 77 (meson's skip: the machine, not the shaper)."""
    if os.geteuid() != 0:
        print("%s: %sneeds root (network namespaces)" % (who, skip), file=sys.stderr)
        return 77
    for tool in tools:
        if not shutil.which(tool):
            print("%s: %s%s is missing (tools/install-deps.sh)" % (who, skip, tool),
                  file=sys.stderr)
            return 77
    return None


def load_cpus():
    """The load's CPU list for Bed.pin_cpus: all but CPU 1, the daemon's worker."""
    cpus = sorted(os.sched_getaffinity(0) - {1})
    return ",".join(map(str, cpus)) if cpus else None


def subscribers_file(args, tmp, disc):
    """The subscribers scenario's plans (JSON form, docs/subscribers.md): each a share of the
    link's rate in both directions, for its one client address."""
    subs = {"link": {"download": "%dkbit" % round(args.down_bps / 1e3), "upload": "%dkbit" % round(args.up_bps / 1e3)},
            "subscribers": [{"id": name, "addresses": [addr],
                             "download": {"max": "%dkbit" % round(args.down_bps * share / 1e3)},
                             "upload": {"max": "%dkbit" % round(args.up_bps * share / 1e3)}}
                            for name, (addr, share) in sorted(SUBSCRIBERS.items())]}
    path = os.path.join(tmp, "subscribers-%s.json" % disc.replace("/", "-"))
    with open(path, "w") as f:
        json.dump(subs, f, indent=1)
    return path


def direction_cfg(disc, rate_bps, d, scenario, rtt_s, fifo_limit, l4s_step=None):
    """One direction's config. d is 'upstream' or 'downstream'."""
    rate = "%dkbit" % round(rate_bps / 1000)
    l4s = disc.endswith("+l4s")
    disc = disc[:-len("+l4s")] if l4s else disc
    base = disc.split("/")[0]
    if base == "fifo":
        c = {"discipline": "fifo", "bandwidth": rate, "limit": fifo_limit}
    elif base == "fq_codel":
        c = {"discipline": "fq_codel", "bandwidth": rate}
    elif base == "cake":
        c = {"discipline": "cake", "bandwidth": rate}
        if scenario == "hosts":
            c["isolation"] = "triple-isolate"
        elif d == "downstream":
            c["isolation"] = "dual-dsthost"
        else:
            c["isolation"] = "dual-srchost"
        if d == "downstream":
            c["ingress"] = True
        else:
            c["ack_filter"] = True
        if "/" in disc:
            c["isolation"] = disc.split("/", 1)[1]
    else:
        raise SystemExit("unknown discipline %r (fifo, cake, cake/ISOLATION, fq_codel)" % disc)
    if l4s:
        if base == "fifo":
            raise SystemExit("fifo has no l4s (cake+l4s, fq_codel+l4s)")
        c["l4s"] = True
        if l4s_step:
            c["l4s_step"] = l4s_step
    c["emulate"] = {"delay": "%dus" % round(rtt_s / 2 * 1e6)}
    return c


# ---------------------------------------------------------------- probes

class Probes:
    """ICMP (fping) and UDP (irtt, BE and EF) probes from the client to the server."""

    def __init__(self, bed, tmp, interval_s, total_s, udp_tos=("BE", "EF"), src=None):
        self.bed, self.tmp, self.iv, self.total = bed, tmp, interval_s, total_s
        self.udp_tos = udp_tos
        self.src = src  # the probes' source address (default: the client's own)
        self.files = {}

    def start(self):
        iv_ms = max(1, round(self.iv * 1000))
        self.bed.ns("srv", ["irtt", "server", "-b", SRV_ADDR + ":2112", "-i", "0", "-d", "0",
                            "--allow-fills="], probe=True)
        time.sleep(0.3)
        count = int(self.total / self.iv)
        f = os.path.join(self.tmp, self.bed.name + ".fping")
        self.files["icmp"] = f
        # -D prints the receive wall time; lost probes are printed as timeouts.
        src = ["-S", self.src] if self.src else []
        self.fping = self.bed.ns("cli", ["fping", "-D", "-c", str(count), "-p", str(iv_ms), "-i", "1", "-t", "3000",
                                         "-e"] + src + [SRV_ADDR], out=open(f, "w"), err=subprocess.STDOUT, probe=True)
        self.irtt = []  # irtt --dscp takes the whole ToS byte (46 would be 0x2e)
        for name in self.udp_tos:
            f = os.path.join(self.tmp, "%s.irtt_%s.json" % (self.bed.name, name))
            self.files["udp_" + name] = f
            self.irtt.append(self.bed.ns("cli", [
                "irtt", "client", "-Q", "-i", "%dms" % iv_ms, "-d", "%.3fs" % self.total,
                "--dscp=%d" % TOS[name], "--wait=2x1s", "--tstamp=both", "-o", f]
                + (["--local=%s:0" % self.src] if self.src else []) + [SRV_ADDR + ":2112"],
                err=subprocess.DEVNULL, probe=True))

    def wait(self, t0):
        for name, p in [("fping", self.fping)] + list(zip(self.udp_tos, self.irtt)):
            try:
                p.wait(timeout=self.total + 15)
            except subprocess.TimeoutExpired:
                p.kill()
            log("probe %s done" % name)
        out = {}
        icmp, seqs, lost = [], [], []
        for line in open(self.files["icmp"], errors="replace"):
            m = re.match(r"\[([\d.]+)\]\s+\S+\s*:\s*\[(\d+)\],\s*(\d+) bytes,\s*([\d.]+) ms", line)
            if m:
                rtt = float(m.group(4))
                icmp.append((float(m.group(1)) - rtt / 1000 - t0, rtt))
                seqs.append(int(m.group(2)))
                continue
            m = re.match(r"\[([\d.]+)\]\s+\S+\s*:\s*\[(\d+)\],\s*timed out", line)
            if m:
                lost.append(int(m.group(2)))
        # A lost probe's send time: the first send plus its sequence number times the interval.
        if icmp and lost:
            first = sorted(t - seq * self.iv for (t, _), seq in zip(icmp, seqs))[len(icmp) // 2]
            icmp += [(first + seq * self.iv, None) for seq in lost]
            icmp.sort(key=lambda p: p[0])
        out["icmp"] = icmp
        for name in self.udp_tos:
            f = self.files["udp_" + name]
            pts = []
            try:
                j = json.load(open(f))
                for rt in j.get("round_trips", []):
                    t = rt["timestamps"]["client"]["send"]["wall"] / 1e9 - t0
                    if rt.get("lost", "false") != "false":
                        pts.append((t, None))
                    else:
                        pts.append((t, rt["delay"]["rtt"] / 1e6))
            except (OSError, ValueError, KeyError) as e:
                log("irtt %s: %s" % (name, e))
            out["udp_" + name] = pts
        return out


def less_stolen_time(pts, stolen):
    """Each probe's RTT less the time the hypervisor stole while it was in flight (the
    samples of stolen_time() its flight overlaps): what the shaper can answer for."""
    out = []
    for t, r in pts:
        if r is None:
            out.append((t, r))
            continue
        end = t + r / 1000.0
        ms = sum(v for a, b, v in stolen if a < end and b > t)
        out.append((t, max(0.0, r - ms)))
    return out


def latency_stats(pts, a, b):
    vals = sorted(r for t, r in pts if a <= t < b and r is not None)
    lost = sum(1 for t, r in pts if a <= t < b and r is None)
    if not vals:
        return {"n": 0, "lost": lost}
    return {"n": len(vals), "lost": lost, "min": rnd(vals[0]), "median": rnd(percentile(vals, 50)),
            "p90": rnd(percentile(vals, 90)), "p99": rnd(percentile(vals, 99)), "max": rnd(vals[-1])}


# ---------------------------------------------------------------- flows

class Flow:
    """One iperf3 test (one or more TCP streams), receiver-side goodput."""

    def __init__(self, name, direction, cc="cubic", tos="BE", host=None, streams=1, server=SRV_ADDR):
        self.name, self.direction, self.cc, self.tos = name, direction, cc, tos
        self.server = server
        self.host, self.streams = host, streams
        self.series = {}  # stream label -> [(t_start, t_end, bytes)]
        self.sums = []  # [(t_start, t_end, bytes)] as iperf3 summed its streams

    def start(self, bed, port, duration, t0, rtt_s, tmp):
        self.port, self.file = port, os.path.join(tmp, "%s.iperf_%s.json" % (bed.name, self.name))
        self.server_file = self.file.replace(".json", ".server.json")
        # For uploads the server is the receiver: its intervals are the goodput.
        self.server_proc = bed.ns("srv", ["iperf3", "-s", "-1", "-J", "-i", "0.1", "-B", self.server, "-p", str(port)],
               out=open(self.server_file, "w"))
        argv = ["iperf3", "-c", self.server, "-p", str(port), "-t", "%g" % duration, "-i", "0.1", "-J",
                "-C", self.cc, "-S", str(TOS[self.tos])]
        if self.streams > 1:
            argv += ["-P", str(self.streams)]
        if self.host:
            argv += ["-B", self.host]
        if self.direction == "down":
            argv += ["-R"]  # the client receives: its own intervals are the goodput
        self.t0, self.rtt = t0, rtt_s
        self._wait_server(bed, port)
        # The intervals start after the control and data connections are up: ~2 RTT.
        self.t_start = time.time() - t0 + 2 * rtt_s
        self.proc = bed.ns("cli", argv, out=open(self.file, "w"))

    @staticmethod
    def _wait_server(bed, port):
        for _ in range(50):
            r = subprocess.run(["ip", "netns", "exec", bed.srv, "ss", "-ltn", "sport", "= :%d" % port],
                               capture_output=True, text=True)
            if ":%d" % port in r.stdout:
                return
            time.sleep(0.05)

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for _ in range(50):  # the server writes its JSON when the test ends
            if self.server_proc.poll() is not None:
                break
            time.sleep(0.1)
        try:
            j = json.load(open(self.file))
            if "error" in j:
                log("%s: iperf3: %s" % (self.name, j["error"]))
            src = j if self.direction == "down" else json.load(open(self.server_file))
        except (OSError, ValueError):
            log("%s: no iperf3 JSON" % self.name)
            return
        labels = {}
        for iv in src.get("intervals", []):
            for s in iv["streams"]:
                lab = labels.setdefault(s["socket"], "%s" % (len(labels) + 1))
                self.series.setdefault(lab, []).append(
                    (self.t_start + s["start"], self.t_start + s["end"], s["bytes"]))
            su = iv["sum"]
            self.sums.append((self.t_start + su["start"], self.t_start + su["end"], su["bytes"]))

    def stream_names(self):
        if self.streams == 1:
            return {k: self.name for k in self.series}
        return {k: "%s.%s" % (self.name, k) for k in self.series}


class ScalableFlow:
    """One scalable.py flow (UDP, ECT(1), DCTCP's response), delivery counted from
    the echoes; 'down' only: the sender in the server's netns, the echo in the client's."""

    def __init__(self, name, ecn="ect1"):
        self.name, self.direction, self.cc, self.tos = name, "down", "scalable-" + ecn, "BE"
        self.ecn, self.host, self.streams = ecn, None, 1
        self.series, self.sums, self.result = {}, [], None

    def start(self, bed, port, duration, t0, rtt_s, tmp):
        self.file = os.path.join(tmp, "%s.scalable_%s.json" % (bed.name, self.name))
        self.echo = bed.ns("cli", ["python3", SCALABLE, "echo", "--bind", "%s:%d" % (CLI_ADDR, port),
                                   "--duration", "%g" % (duration + 10)])
        time.sleep(0.3)  # the echo binds before the first packet
        self.proc = bed.ns("srv", ["python3", SCALABLE, "send", "--to", "%s:%d" % (CLI_ADDR, port),
                                   "--duration", "%g" % duration, "--out", self.file, "--ecn", self.ecn,
                                   "--t0", "%.6f" % t0] + SCALABLE_OPTS, err=None)

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.echo.kill()
        try:
            self.result = json.load(open(self.file))
        except (OSError, ValueError):
            log("%s: no scalable.py JSON" % self.name)
            return
        self.series["1"] = [(a, b, n) for a, b, n, _, _ in self.result["bins"]]
        self.sums = self.series["1"]

    def stream_names(self):
        return {k: self.name for k in self.series}

    def queueing(self, a, b):
        """Its RTT less the least it saw, for packets sent in [a, b): p50, p99 (ms), and the
        marked fraction of what was echoed then."""
        r = self.result or {}
        base = r.get("min_rtt_ms")
        q = sorted(v - base for t, v in r.get("rtt_ms", []) if a <= t < b) if base is not None else []
        bins = [x for x in r.get("bins", []) if x[0] >= a and x[1] <= b]
        pk, ce = sum(x[3] for x in bins), sum(x[4] for x in bins)
        tr = [(w, al) for t, w, al in r.get("cwnd", []) if a <= t < b]
        return {"samples": len(q), "base_rtt_ms": base, "p50_ms": rnd(percentile(q, 50)), "p99_ms": rnd(percentile(q, 99)),
                "ce_fraction": rnd(ce / pk, 4) if pk else None,
                "mean_cwnd": rnd(sum(w for w, _ in tr) / len(tr), 1) if tr else None,
                "mean_alpha": rnd(sum(al for _, al in tr) / len(tr), 4) if tr else None,
                "totals": r.get("totals")}


def bytes_in(ivs, a, b):
    """Bytes of intervals [(s, e, bytes)] that fall in [a, b), pro rata."""
    tot = 0.0
    for s, e, n in ivs:
        if e <= a or s >= b or e <= s:
            continue
        tot += n * (min(e, b) - max(s, a)) / (e - s)
    return tot


def mbit_in(ivs, a, b):
    return bytes_in(ivs, a, b) * 8 / (b - a) / 1e6 if b > a else None


def binned(ivs, a, b, step=0.1):
    """Mbit/s on a grid of step seconds: [(t_mid, mbit)]."""
    out, t = [], a
    while t + step <= b + 1e-9:
        out.append((round(t + step / 2, 3), bytes_in(ivs, t, t + step) * 8 / step / 1e6))
        t += step
    return out


class WireRate(threading.Thread):
    """Bytes the shaper put on each output veth (its L2 output, after the delay
    line), read from sysfs every step seconds: a rate per sample that does not
    depend on when a receiving application got round to reading."""

    def __init__(self, bed, t0, step=0.1):
        super().__init__(daemon=True)
        self.bed = bed
        self.files = {"down": "/sys/class/net/%slan0/statistics/tx_bytes" % bed.pfx,
                      "up": "/sys/class/net/%swan0/statistics/tx_bytes" % bed.pfx}
        self.t0, self.step, self.samples, self.stop_ev = t0, step, [], threading.Event()
        # Why a bed stalls: CPU stolen from each vCPU, and how long shaperd's worker
        # thread waited on a run queue (both cumulative; differences per sample).
        self.worker_stat = None
        if bed.daemon is not None:
            for tid in os.listdir("/proc/%d/task" % bed.daemon.pid):
                try:
                    with open("/proc/%d/task/%s/comm" % (bed.daemon.pid, tid)) as f:
                        if f.read().strip().startswith("rte-worker"):
                            self.worker_stat = "/proc/%d/task/%s/schedstat" % (bed.daemon.pid, tid)
                except OSError:
                    pass

    def read(self):
        out = {}
        for d, f in self.files.items():
            try:
                with open(f) as fh:
                    out[d] = int(fh.read())
            except (OSError, ValueError):
                out[d] = None
        try:
            with open("/proc/stat") as fh:
                for line in fh:
                    if line.startswith("cpu") and line[3].isdigit():
                        v = line.split()
                        out["steal_" + v[0]] = int(v[8])
                    elif not line.startswith("cpu"):
                        break
            if self.worker_stat:
                with open(self.worker_stat) as fh:
                    v = fh.read().split()
                    out["worker_run_ns"], out["worker_wait_ns"] = int(v[0]), int(v[1])
        except (OSError, ValueError, IndexError):
            pass
        # The scheduler's own output (before the delay line), stamped with the
        # worker's clock: a rate over the real interval between two snapshots,
        # whenever this sampler itself got to run.
        st = self.bed.ctl("stats") if self.bed.daemon is not None else None
        for d, key in (("downstream", "sched_down"), ("upstream", "sched_up")):
            x = (st or {}).get("directions", {}).get(d)
            if x and x.get("time_ns"):
                out[key] = (x["time_ns"], x["bytes"], x.get("lag_skipped_us", 0))
        return out

    def stalls(self, a, b):
        """Per-sample worst cases in [a, b): ms stolen from any vCPU, ms the worker waited to run."""
        hz = os.sysconf("SC_CLK_TCK")
        steal, wait = [], []
        for (ta, x), (tb, y) in zip(self.samples, self.samples[1:]):
            if ta < a or tb > b:
                continue
            st = steal_ms(x, y, hz)
            if st is not None:
                steal.append((round(ta, 2), st))
            if "worker_wait_ns" in x and "worker_wait_ns" in y:
                wait.append((round(ta, 2), (y["worker_wait_ns"] - x["worker_wait_ns"]) / 1e6))
        top = lambda xs: sorted(xs, key=lambda p: -p[1])[:5]
        return {"max_steal_ms_per_100ms": rnd(max([v for _, v in steal], default=None), 1),
                "max_worker_runqueue_wait_ms_per_100ms": rnd(max([v for _, v in wait], default=None), 2),
                "worst_steal": [[t, rnd(v, 1)] for t, v in top(steal)],
                "worst_worker_wait": [[t, rnd(v, 2)] for t, v in top(wait)]}

    def stolen_time(self):
        """[(t_start, t_end, ms)] per sample: the most any vCPU lost to the hypervisor.
        /proc/stat counts steal in USER_HZ ticks (10 ms), so a sample's figure is exact to a
        tick. The worker's own waits are not counted: under SCHED_FIFO they are its wake-ups,
        the shaper's own behaviour."""
        hz = os.sysconf("SC_CLK_TCK")
        out = []
        for (ta, x), (tb, y) in zip(self.samples, self.samples[1:]):
            ms = steal_ms(x, y, hz) or 0.0
            if ms > 0:
                out.append((ta, tb, ms))
        return out

    def run(self):
        nxt = time.time()
        while not self.stop_ev.is_set():
            self.samples.append((time.time() - self.t0, self.read()))
            nxt += self.step
            self.stop_ev.wait(max(0.0, nxt - time.time()))

    def stop(self):
        self.stop_ev.set()
        self.join()

    def rates(self, d):
        """[(t_start, t_end, bytes)] between consecutive samples."""
        out = []
        for (ta, a), (tb, b) in zip(self.samples, self.samples[1:]):
            if a.get(d) is not None and b.get(d) is not None and tb > ta:
                out.append((ta, tb, b[d] - a[d]))
        return out

    def sched_rates(self, d):
        """[(t_start, t_end, bytes, interval_s)] of the scheduler's output between
        consecutive snapshots; interval_s is the worker clock's interval."""
        key = "sched_" + d
        out = []
        for (ta, a), (tb, b) in zip(self.samples, self.samples[1:]):
            if key in a and key in b and b[key][0] > a[key][0]:
                out.append((ta, tb, b[key][1] - a[key][1], (b[key][0] - a[key][0]) / 1e9))
        return out


def steal_ms(x, y, hz):
    """The most any vCPU lost to the hypervisor between two WireRate readings, in ms."""
    st = [(y[k] - x[k]) * 1000.0 / hz for k in y if k.startswith("steal_cpu") and k in x]
    return max(st) if st else None


class CpuWatch:
    """Is the bed honest? CPU stolen by the hypervisor and CPU used by processes
    that are not this run's (another engineer's daemon or tests) over a window."""

    def __init__(self, mine):
        self.mine = mine  # callable -> set of our pids

    @staticmethod
    def _stat():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v  # user nice system idle iowait irq softirq steal ...

    @staticmethod
    def _procs():
        out = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    st = f.read()
            except OSError:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            f = st[st.rindex(")") + 2:].split()
            ppid, ticks = int(f[1]), int(f[11]) + int(f[12])
            if ppid == 2 or int(pid) == 2:
                continue  # kernel threads: softirq work is the bed's own traffic
            out[int(pid)] = (comm, ticks)
        return out

    def start(self):
        self.t, self.s, self.p = time.time(), self._stat(), self._procs()

    def stop(self):
        dt, s1, p1 = time.time() - self.t, self._stat(), self._procs()
        d = [b - a for a, b in zip(self.s, s1)]
        total = sum(d[:8]) or 1
        hz = os.sysconf("SC_CLK_TCK")
        mine = self.mine() | {os.getpid()}
        foreign = []
        for pid, (comm, ticks) in p1.items():
            if pid in mine or pid not in self.p:
                continue
            use = (ticks - self.p[pid][1]) / hz / dt * 100
            if use >= 5:
                foreign.append({"pid": pid, "comm": comm, "cpu_pct_of_one_core": round(use, 1)})
        foreign.sort(key=lambda x: -x["cpu_pct_of_one_core"])
        steal = 100.0 * d[7] / total
        other = sum(x["cpu_pct_of_one_core"] for x in foreign)
        return {"steal_pct": round(steal, 1), "foreign": foreign,
                "busy_pct": round(100.0 * (total - d[3] - d[4]) / total, 1),
                "disturbed": steal > 10 or other > 20}


# ---------------------------------------------------------------- daemon stats

def dir_summary(st):
    """What matters of one direction's stats JSON (control socket or stats file)."""
    if st is None:
        return None
    out = {k: st.get(k) for k in ("rx_packets", "tx_packets", "tx_bytes", "drops", "ecn_mark", "qlen", "backlog",
                                  "emulator_qlen", "lag_skips", "lag_skipped_us", "sojourn", "sparse_sojourn",
                                  "time_ns", "bytes", "backlogged_us")}
    out["drop_reasons"] = {k: v for k, v in st.get("drop_reasons", {}).items() if v}
    if "accounting" in st:
        out["accounting"] = st["accounting"]
    tins = st.get("tins")
    if tins:
        out["tins"] = [{k: t.get(k) for k in ("name", "sent_packets", "sent_bytes", "drops", "ecn_mark", "ack_drops",
                                              "ect1_packets", "step_marks",
                                              "peak_delay_us", "avg_delay_us", "sojourn", "sparse_sojourn")}
                       for t in tins]
    return out


def hist_delta(a, b):
    """b - a of two sojourn histograms ([[lo_ns, hi_ns, packets], ...])."""
    old = {lo: n for lo, hi, n in (a or [])}
    return [[lo, hi, n - old.get(lo, 0)] for lo, hi, n in (b or []) if n - old.get(lo, 0) > 0]


def hist_summary(h):
    """Packets and sojourn percentiles (upper bound of the bucket, ms) of a histogram."""
    total = sum(n for _, _, n in h)
    out = {"packets": total}
    for name, q in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99), ("max_ms", 1.0)):
        need, acc, val = math.ceil(q * total), 0, None
        for lo, hi, n in sorted(h):
            acc += n
            if acc >= need:
                val = (hi if hi < 1 << 62 else lo) / 1e6  # the last bucket is open-ended
                break
        out[name] = rnd(val, 3) if total else None
    return out


def delta(a, b):
    """b - a for the counters of dir_summary (None if either is missing)."""
    if a is None or b is None:
        return None
    out = {}
    for k in ("rx_packets", "tx_packets", "tx_bytes", "drops", "ecn_mark"):
        if a.get(k) is not None and b.get(k) is not None:
            out[k] = b[k] - a[k]
    out["drop_reasons"] = {k: v - a["drop_reasons"].get(k, 0) for k, v in b["drop_reasons"].items()
                           if v - a["drop_reasons"].get(k, 0)}
    for k in ("lag_skips", "lag_skipped_us", "time_ns", "bytes", "backlogged_us"):
        if a.get(k) is not None and b.get(k) is not None:
            out[k] = b[k] - a[k]
    for k in ("sojourn", "sparse_sojourn"):
        out[k] = hist_summary(hist_delta(a.get(k), b.get(k)))
    if b.get("tins") and a.get("tins"):
        out["tins"] = []
        for ta, tb in zip(a["tins"], b["tins"]):
            out["tins"].append({"name": tb["name"], **{k: (tb.get(k) or 0) - (ta.get(k) or 0) for k in
                                ("sent_packets", "sent_bytes", "drops", "ecn_mark", "ack_drops",
                                 "ect1_packets", "step_marks")},
                                "peak_delay_us": tb["peak_delay_us"],
                                **{k: hist_summary(hist_delta(ta.get(k), tb.get(k)))
                                   for k in ("sojourn", "sparse_sojourn")}})
    return out


PORT_KEYS = ("rx_packets", "tx_packets", "rx_missed", "rx_errors", "tx_errors", "rx_nombuf")


def snapshot(bed):
    r = bed.ctl("stats")
    if not r:
        return None
    out = {d: dir_summary(v) for d, v in r.get("directions", {}).items()}
    out["ports"] = {p: {k: v.get(k) for k in PORT_KEYS} for p, v in r.get("ports", {}).items()}
    if bed.subscribers:
        lst = bed.ctl("subscribers.list")
        if lst:
            out["subscribers"] = {x["id"]: {"time_ns": lst["time_ns"],
                                            "down": x["download"]["bytes"], "up": x["upload"]["bytes"],
                                            "down_lag_us": x["download"].get("lag_skipped_us", 0),
                                            "up_lag_us": x["upload"].get("lag_skipped_us", 0),
                                            "rtt": x.get("rtt")}
                                  for x in lst["subscribers"]}
    return out


def port_delta(a, b):
    """Port counters over a phase: frames the bed lost outside the scheduler show here."""
    if not a or not b:
        return None
    return {p: {k: (b[p].get(k) or 0) - (a.get(p, {}).get(k) or 0) for k in PORT_KEYS} for p in b}


# ---------------------------------------------------------------- scenarios

def run_scenario(args, disc, bed, tmp):
    """Run one scenario on a live bed+daemon; returns the raw data of the run."""
    sc = args.scenario
    rtt = args.rtt_s
    idle = args.idle
    dur = args.duration
    # Probes: at most half the base RTT apart (rrul: 20 ms at 40 ms), never more than 100 ms.
    iv = args.probe_interval or max(0.005, min(0.1, rtt / 2))
    flows, starts = [], []
    if sc == "rrul":
        for i, tos in enumerate(args.rrul_marks.split(",")):
            flows.append(Flow("up%d_%s" % (i + 1, tos), "up", "cubic", tos))
            flows.append(Flow("down%d_%s" % (i + 1, tos), "down", "cubic", tos))
        starts = [0.0] * len(flows)
        total = idle + dur + 1
    elif sc == "bbr-converge":
        flows.append(Flow("bbr", "down", "bbr", "BE", streams=args.flows or 4))
        starts = [0.0]
        total = idle + dur + 1
    elif sc == "staggered":
        ccs = ["bbr", "cubic", "bbr", "cubic"] if not args.flows else \
            [("bbr", "cubic")[i % 2] for i in range(args.flows)]
        for i, cc in enumerate(ccs):
            flows.append(Flow("%d_%s" % (i + 1, cc), "down", cc, "BE"))
            starts.append(args.stagger * i)
        total = idle + dur + 1
    elif sc == "hosts":
        bed.ns_run("cli", ["ip", "addr", "add", HOST_A + "/24", "dev", "eth0"])
        bed.ns_run("cli", ["ip", "addr", "add", HOST_B + "/24", "dev", "eth0"])
        # Each host talks to its own server unless --shared-server: triple-isolate also
        # balances destination hosts, and CAKE divides a flow's quantum by the larger of its
        # source and destination host loads, so 9 flows into one server are 9 equal flows.
        srv_b = SRV_ADDR if args.shared_server else SRV_B
        if not args.shared_server:
            bed.ns_run("srv", ["ip", "addr", "add", SRV_B + "/24", "dev", "eth0"])
        flows.append(Flow("hostA_1flow", "up", "cubic", "BE", host=HOST_A, streams=1))
        flows.append(Flow("hostB_8flows", "up", "cubic", "BE", host=HOST_B, streams=args.flows or 8, server=srv_b))
        starts = [0.0, 0.0]
        total = idle + dur + 1
    elif sc == "subscribers":
        for name, (addr, _) in sorted(SUBSCRIBERS.items()):
            bed.ns_run("cli", ["ip", "addr", "add", addr + "/24", "dev", "eth0"])
            flows.append(Flow("sub%s_down" % name, "down", "cubic", "BE", host=addr, streams=args.flows or 4))
            flows.append(Flow("sub%s_up" % name, "up", "cubic", "BE", host=addr, streams=2))
            starts += [0.0, 0.0]
        total = idle + dur + 1
    elif sc == "l4s":
        flows.append(ScalableFlow("scalable"))
        flows.append(Flow("cubic", "down", "cubic", "BE"))
        starts = [0.0, dur / 2]
        total = idle + dur + 1
    probe_src = SUBSCRIBERS["A"][0] if sc == "subscribers" else None
    if probe_src:  # the address must exist before the probes bind to it
        for _ in range(50):
            r = subprocess.run(["ip", "netns", "exec", bed.cli, "ip", "-o", "addr", "show", "dev", "eth0"],
                               capture_output=True, text=True)
            if probe_src + "/" in r.stdout and "tentative" not in r.stdout:
                break
            time.sleep(0.05)
    probes = Probes(bed, tmp, iv, total, src=probe_src)
    snaps = {}
    t0 = time.time()
    probes.start()
    t0 = time.time()  # probe times are taken from their own timestamps, relative to t0
    wire = WireRate(bed, t0)
    wire.start()
    snaps["start"] = snapshot(bed)
    time.sleep(max(0.0, idle - (time.time() - t0)))
    snaps["idle_end"] = snapshot(bed)
    load_t = time.time() - t0
    timers = []
    if sc == "l4s":  # the scalable flow alone: from settle s after its start to the cubic one's
        alone = (load_t + args.settle, load_t + dur / 2 - 0.2)
        for name, at in (("alone_start", alone[0]), ("alone_end", alone[1])):
            def snap(name=name):
                snaps[name] = snapshot(bed)
                snaps[name + "_t"] = time.time() - t0
            timers.append(threading.Timer(max(0.0, at - (time.time() - t0)), snap))
            timers[-1].start()
    order = sorted(range(len(flows)), key=lambda i: starts[i])
    for i in order:
        f = flows[i]
        delay = load_t + starts[i] - (time.time() - t0)
        if delay > 0:
            time.sleep(delay)
        f.start(bed, 5201 + i, dur - starts[i], t0, rtt, tmp)
    load_end = load_t + dur
    # The loaded phase: from settle seconds after the last start to just before the end.
    win = (load_t + max(starts) + args.settle, load_end - 0.2)
    cpu = CpuWatch(bed.pids)
    for name, at in (("window_start", win[0]), ("window_end", win[1])):
        delay = at - (time.time() - t0)
        if delay > 0:
            time.sleep(delay)
        snaps[name] = snapshot(bed)
        snaps[name + "_t"] = time.time() - t0
        if name == "window_start":
            cpu.start()
        else:
            health = cpu.stop()
    for f in flows:
        f.wait(dur + 30)
    for t in timers:
        t.join()
    snaps["load_end"] = snapshot(bed)
    wire.stop()
    health.update(wire.stalls(*win))
    # A vCPU descheduled by the hypervisor for 20 ms or more stalls every packet on the bed;
    # so does a worker kept off its core that long (another real-time thread there: a test
    # daemon too short-lived for CpuWatch to name).
    if (health.get("max_steal_ms_per_100ms") or 0) >= 20 or \
            (health.get("max_worker_runqueue_wait_ms_per_100ms") or 0) >= 20:
        health["disturbed"] = True
    log("%s: flows done" % disc)
    lat = probes.wait(t0)
    log("%s: probes done" % disc)
    return dict(flows=flows, starts=[load_t + s for s in starts], lat=lat, snaps=snaps,
                load_t=load_t, load_end=load_end, idle=idle, probe_interval=iv, window=win,
                wire={d: wire.rates(d) for d in ("down", "up")},
                sched_out={d: wire.sched_rates(d) for d in ("down", "up")}, health=health,
                stolen=wire.stolen_time())


def analyse(args, raw):
    """Phases, latency and goodput figures of one discipline's run."""
    sc = args.scenario
    load_t, load_end = raw["load_t"], raw["load_end"]
    phases = {"idle": (0.5, raw["idle"] - 0.1), "loaded": raw["window"]}
    res = {"phases": {}, "health": raw["health"]}
    for ph, (x, y) in phases.items():
        p = {"window_s": [rnd(x, 2), rnd(y, 2)], "latency": {}}
        for k, pts in raw["lat"].items():
            p["latency"][k] = latency_stats(pts, x, y)
            if ph == "loaded":
                q = latency_stats(less_stolen_time(pts, raw.get("stolen") or []), x, y)
                p["latency"][k]["p99_less_stolen"] = q.get("p99")
        if ph == "loaded":
            gp = {}
            for f in raw["flows"]:
                names = f.stream_names()
                d = gp.setdefault(f.direction, {"flows": {}, "total": 0.0})
                for lab, ivs in f.series.items():
                    v = mbit_in(ivs, x, y)
                    d["flows"][names[lab]] = rnd(v)
                    d["total"] += v
            for d in gp.values():
                d["total"] = rnd(d["total"])
                rate = args.down_bps if d is gp.get("down") else args.up_bps
                d["shaped_mbit"] = rate / 1e6
                d["of_shaped"] = rnd(d["total"] / (rate / 1e6), 4)
            p["goodput"] = gp
        res["phases"][ph] = p
    idle_l, load_l = res["phases"]["idle"]["latency"], res["phases"]["loaded"]["latency"]
    res["induced_ms"] = {}
    for k in load_l:
        if idle_l.get(k, {}).get("median") is not None and load_l[k].get("median") is not None:
            res["induced_ms"][k] = {
                "median": rnd(load_l[k]["median"] - idle_l[k]["median"]),
                "p99": rnd(load_l[k]["p99"] - idle_l[k]["median"])}
            if load_l[k].get("p99_less_stolen") is not None:
                res["induced_ms"][k]["p99_less_stolen"] = rnd(load_l[k]["p99_less_stolen"] - idle_l[k]["median"])
    s = raw["snaps"]
    res["daemon"] = {"loaded": {d: delta((s.get("window_start") or {}).get(d), (s.get("window_end") or {}).get(d))
                                for d in ("upstream", "downstream")},
                     "idle": {d: delta((s.get("start") or {}).get(d), (s.get("idle_end") or {}).get(d))
                              for d in ("upstream", "downstream")}}
    res["daemon"]["loaded"]["ports"] = port_delta((s.get("window_start") or {}).get("ports"),
                                                  (s.get("window_end") or {}).get("ports"))
    # L2 throughput out of the scheduler in the loaded window (the rate is an L2 rate).
    span = (s.get("window_end_t") or 0) - (s.get("window_start_t") or 0)
    gp = res["phases"]["loaded"].get("goodput", {})
    for d, key, rate in (("downstream", "down", args.down_bps), ("upstream", "up", args.up_bps)):
        dl = res["daemon"]["loaded"].get(d)
        if dl and dl.get("tx_bytes") is not None and span > 0:
            dl["tx_mbit"] = rnd(dl["tx_bytes"] * 8 / span / 1e6)
            dl["of_shaped"] = rnd(dl["tx_bytes"] * 8 / span / rate, 4)
            if key in gp:
                gp[key]["l2_mbit"] = dl["tx_mbit"]
                gp[key]["l2_of_shaped"] = dl["of_shaped"]
        # The same by the shaper's own clock: what its scheduler released over the time it
        # held a backlog (so owed the rate), less the time its worker was not scheduled (a
        # stall is written off, never made up). Neither a sender off its CPU nor this
        # sampler's timing enters.
        if dl and dl.get("backlogged_us") is not None and dl.get("time_ns"):
            owed = (dl["backlogged_us"] - (dl.get("lag_skipped_us") or 0)) / 1e6
            dl["owed_s"] = rnd(owed, 3)
            dl["owed_of_window"] = rnd(owed / (dl["time_ns"] / 1e9), 3)
            dl["owed_mbit"] = rnd(dl["bytes"] * 8 / owed / 1e6) if owed > 0 else None
            dl["owed_of_shaped"] = rnd(dl["bytes"] * 8 / owed / rate, 4) if owed > 0 else None
            if key in gp:
                for k in ("owed_s", "owed_of_window", "owed_mbit", "owed_of_shaped"):
                    gp[key][k] = dl[k]
    # Scenario figures.
    x, y = phases["loaded"]
    if sc == "bbr-converge":
        f = raw["flows"][0]
        horizon = min(load_t + 20.0, load_end)
        per = [bytes_in(ivs, load_t, horizon) for ivs in f.series.values()]
        last = [mbit_in(ivs, load_end - 5.0, load_end - 0.2) for ivs in f.series.values()]
        samples = [n * 8 / (e - s) / 1e6 for s, e, n in f.sums if e - s > 0.09]
        # The shaper's own output per ~100 ms (L2 bytes on the LAN veth) over the loaded part.
        wire = [n * 8 / (e - s) / 1e6 for s, e, n in raw["wire"]["down"] if s >= load_t and e <= load_end]
        # The scheduler's output per snapshot interval (~100 ms of the worker's clock).
        sched = [n * 8 / iv / 1e6 for s, e, n, iv in raw["sched_out"]["down"]
                 if s >= load_t and e <= load_end and 0.05 <= iv <= 0.2]
        rate = args.down_bps / 1e6
        res["bbr"] = {
            "jain_first_20s": rnd(jain(per), 4),
            "jain_window_s": [rnd(load_t, 2), rnd(horizon, 2)],
            "jain_last_5s": rnd(jain(last), 4),
            "max_100ms_total_mbit": rnd(max(samples) if samples else None),
            "max_100ms_of_shaped": rnd(max(samples) / (args.down_bps / 1e6), 4) if samples else None,
            "samples_over_1.05": sum(1 for v in samples if v > 1.05 * rate),
            "n_samples": len(samples),
            "note": "max_100ms_*: iperf3's receiver-side 100 ms sums (when the application read the bytes); "
                    "wire_max_100ms_*: L2 bytes the shaper put on the LAN veth per ~100 ms sample",
            "wire_max_100ms_mbit": rnd(max(wire)) if wire else None,
            "wire_max_100ms_of_shaped": rnd(max(wire) / rate, 4) if wire else None,
            "wire_samples_over_1.05": sum(1 for v in wire if v > 1.05 * rate),
            "wire_n_samples": len(wire),
            "sched_max_100ms_mbit": rnd(max(sched)) if sched else None,
            "sched_max_100ms_of_shaped": rnd(max(sched) / rate, 4) if sched else None,
            "sched_n_samples": len(sched),
        }
    if sc == "staggered":
        rates = {f.name: mbit_in(list(f.series.values())[0], x, y) if f.series else 0.0
                 for f in raw["flows"]}
        fair = sum(rates.values()) / len(rates)
        res["staggered"] = {"fair_share_mbit": rnd(fair),
                            "share_of_fair": {k: rnd(v / fair, 3) if fair else None
                                              for k, v in rates.items()},
                            "min_share_of_fair": rnd(min(rates.values()) / fair, 3) if fair else None}
    if sc == "hosts":
        tot = {}
        for f in raw["flows"]:
            tot[f.host] = sum(mbit_in(ivs, x, y) for ivs in f.series.values())
        s_all = sum(tot.values())
        res["hosts"] = {h: {"mbit": rnd(v), "share": rnd(v / s_all, 3) if s_all else None}
                        for h, v in tot.items()}
    if sc == "subscribers":
        res["subscribers"] = subscriber_rates(args, raw)
    if sc == "l4s":
        res["l4s"] = l4s_figures(args, raw, phases["loaded"])
    return res


def l4s_figures(args, raw, both):
    """Per phase (the scalable flow alone, then beside the cubic one): each flow's share
    of the rate, the scalable flow's queueing delay and marks, and the downstream Best
    Effort tin (fq_codel's one) by the shaper's own counters (its sojourn is the scalable
    flow's alone)."""
    s = raw["snaps"]
    sf, cf = raw["flows"]
    rate = args.down_bps / 1e6
    out = {}
    for ph, a, b in (("alone", "alone_start", "alone_end"), ("both", "window_start", "window_end")):
        x, y = (s.get(a + "_t"), s.get(b + "_t")) if ph == "alone" else both
        if x is None or y is None:
            continue
        d = delta((s.get(a) or {}).get("downstream"), (s.get(b) or {}).get("downstream")) or {}
        tin = next((t for t in d.get("tins", []) if t["name"] in ("Best Effort", "fq_codel")), None)
        p = {"window_s": [rnd(x, 2), rnd(y, 2)],
             "scalable_mbit": rnd(mbit_in(sf.series.get("1", []), x, y)),
             "scalable_queueing": sf.queueing(x, y)}
        p["scalable_of_rate"] = rnd(p["scalable_mbit"] / rate, 4)
        if ph == "both":
            c = mbit_in(list(cf.series.values())[0], x, y) if cf.series else 0.0
            p["cubic_mbit"] = rnd(c)
            p["cubic_of_rate"] = rnd(c / rate, 4)
        if tin:
            p["tin"] = {k: tin.get(k) for k in ("sent_packets", "ect1_packets", "step_marks", "ecn_mark",
                                                "drops", "sojourn")}
        out[ph] = p
    return out


def subscriber_rates(args, raw):
    """Each subscriber's rate out of the shaper over the loaded window, from its sent bytes in
    subscribers.list over shaperd's own clock (time_ns), against its plan; and its TCP
    goodput as the receivers read it (a neighbour's CPU shows there, not in the former)."""
    a = (raw["snaps"].get("window_start") or {}).get("subscribers") or {}
    b = (raw["snaps"].get("window_end") or {}).get("subscribers") or {}
    x, y = raw["window"]
    out = {}
    for name, (addr, share) in sorted(SUBSCRIBERS.items()):
        r = {}
        for d, rate in (("down", args.down_bps), ("up", args.up_bps)):
            plan = rate * share / 1e6
            gp = sum(mbit_in(ivs, x, y) for f in raw["flows"] if f.host == addr and f.direction == d
                     for ivs in f.series.values())
            r[d] = {"plan_mbit": plan, "goodput_mbit": rnd(gp)}
            if name in a and name in b and b[name]["time_ns"] > a[name]["time_ns"]:
                # Over the shaper's clock less the time its worker was not scheduled
                # (written off for this subscriber, never made up in a burst).
                ran = (b[name]["time_ns"] - a[name]["time_ns"]) / 1e9 - (
                    b[name].get(d + "_lag_us", 0) - a[name].get(d + "_lag_us", 0)) / 1e6
                mbit = (b[name][d] - a[name][d]) * 8 / ran / 1e6
                r[d].update(sent_mbit=rnd(mbit), of_plan=rnd(mbit / plan, 4), ran_s=rnd(ran, 3))
        # Its passive RTT at the end of the window (the last 10-20 s of its flows' samples).
        r["rtt"] = (b.get(name) or {}).get("rtt")
        out[name] = r
    return out


def series(raw):
    """Time series for the JSON and the plot."""
    a, b = 0.0, raw["load_end"] + 0.5
    out = {"latency": {k: [[rnd(t, 3), rnd(r)] for t, r in v] for k, v in raw["lat"].items()},
           "goodput": {}}
    for f in raw["flows"]:
        names = f.stream_names()
        for lab, ivs in f.series.items():
            out["goodput"][names[lab]] = {"direction": f.direction, "cc": f.cc, "tos": f.tos,
                                          "host": f.host,
                                          "mbit": [[t, rnd(v)] for t, v in binned(ivs, a, b)]}
    for f in raw["flows"]:  # a scalable flow's own RTT, every 10th sample
        if getattr(f, "result", None):
            out["latency"][f.name + "_rtt"] = [[t, r] for t, r in f.result["rtt_ms"][::10]]
    for d in ("up", "down"):
        ivs = [iv for f in raw["flows"] if f.direction == d for s in f.series.values() for iv in s]
        if ivs:
            out["goodput"]["total_" + d] = {"direction": d, "mbit": [[t, rnd(v)] for t, v in binned(ivs, a, b)]}
            out["goodput"]["l2_" + d] = {"direction": d, "mbit": [
                [rnd((s + e) / 2), rnd(n * 8 / (e - s) / 1e6)] for s, e, n in raw["wire"][d]]}
    return out


# ---------------------------------------------------------------- output

def plot(args, result, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no plot")
        return None
    discs = list(result["disciplines"])
    dirs = [d for d in ("down", "up") if any(
        v.get("direction") == d for r in result["disciplines"].values() for v in r["series"]["goodput"].values())]
    rows = len(dirs) + 1
    fig, axes = plt.subplots(rows, len(discs), figsize=(6.5 * len(discs), 2.8 * rows), squeeze=False,
                             sharex=True)
    for c, disc in enumerate(discs):
        r = result["disciplines"][disc]
        for i, d in enumerate(dirs):
            ax = axes[i][c]
            for name, s in sorted(r["series"]["goodput"].items()):
                if s["direction"] != d:
                    continue
                t = [p[0] for p in s["mbit"]]
                v = [p[1] for p in s["mbit"]]
                if name.startswith("total_"):
                    ax.plot(t, v, color="black", lw=1.2, label="total")
                elif name.startswith("l2_"):
                    ax.plot(t, v, color="grey", lw=0.8, ls="--", label="L2 out")
                else:
                    ax.plot(t, v, lw=0.8, label=name)
            rate = (args.down_bps if d == "down" else args.up_bps) / 1e6
            ax.axhline(rate, color="grey", ls=":", lw=0.8)
            ax.set_ylabel("%s goodput Mbit/s" % ("download" if d == "down" else "upload"))
            ax.set_title("%s: %s" % (disc, "download (WAN->LAN)" if d == "down" else "upload (LAN->WAN)"),
                         fontsize=9)
            ax.legend(fontsize=6, ncol=3, loc="upper right")
            ax.set_ylim(0, rate * 1.25)
            ax.grid(alpha=0.3)
        ax = axes[-1][c]
        for name, pts in r["series"]["latency"].items():
            t = [p[0] for p in pts if p[1] is not None]
            v = [p[1] for p in pts if p[1] is not None]
            ax.plot(t, v, ".", ms=1.5, label={"icmp": "ICMP", "udp_BE": "UDP BE", "udp_EF": "UDP EF"}.get(name, name))
        vals = sorted(p[1] for pts in r["series"]["latency"].values() for p in pts if p[1] is not None)
        if vals:
            ax.set_ylim(min(vals) * 0.98, max(percentile(vals, 99.9) * 1.15, min(vals) + 2))
        ax.set_ylabel("RTT ms (top 0.1 % cut)")
        ax.set_xlabel("seconds")
        ax.set_title("%s: latency (base RTT %g ms)" % (disc, args.rtt_s * 1000), fontsize=9)
        ax.axvspan(*r["phases"]["loaded"]["window_s"], color="orange", alpha=0.08)
        ax.legend(fontsize=7, markerscale=5, loc="upper right")
        ax.grid(alpha=0.3)
    fig.suptitle("%s: down %g / up %g Mbit/s, base RTT %g ms" % (
        args.scenario, args.down_bps / 1e6, args.up_bps / 1e6, args.rtt_s * 1000))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fmt(v, f="%.1f"):
    return "-" if v is None else f % v


def table(args, result):
    lines = []
    sc = args.scenario
    lines.append("%s: down %g / up %g Mbit/s (L2), base RTT %g ms, %g s loaded" % (
        sc, args.down_bps / 1e6, args.up_bps / 1e6, args.rtt_s * 1000, args.duration))
    hdr = "%-14s %-7s %8s %8s %8s %8s %9s" % ("discipline", "probe", "idle p50", "load p50", "load p90",
                                               "load p99", "induced")
    lines.append(hdr)
    for disc, r in result["disciplines"].items():
        for k in r["phases"]["loaded"]["latency"]:
            i, l = r["phases"]["idle"]["latency"][k], r["phases"]["loaded"]["latency"][k]
            lines.append("%-14s %-7s %8s %8s %8s %8s %9s" % (
                disc, k.replace("udp_", "UDP "), fmt(i.get("median"), "%.2f"), fmt(l.get("median"), "%.2f"),
                fmt(l.get("p90"), "%.2f"), fmt(l.get("p99"), "%.2f"),
                fmt(r["induced_ms"].get(k, {}).get("median"), "%+.2f")))
    lines.append("goodput = TCP payload, Mbit/s and fraction of the shaped (L2) rate; L2 = frames out of the shaper")
    lines.append("%-14s %9s %7s %7s %9s %7s %7s  %s" % ("discipline", "down", "of rate", "L2", "up", "of rate", "L2",
                                                       "drops down/up"))
    for disc, r in result["disciplines"].items():
        g = r["phases"]["loaded"].get("goodput", {})
        dm = r["daemon"]["loaded"]
        gd, gu = g.get("down", {}), g.get("up", {})
        lines.append("%-14s %9s %7s %7s %9s %7s %7s  %s/%s" % (
            disc, fmt(gd.get("total")), fmt(gd.get("of_shaped"), "%.3f"), fmt(gd.get("l2_of_shaped"), "%.3f"),
            fmt(gu.get("total")), fmt(gu.get("of_shaped"), "%.3f"), fmt(gu.get("l2_of_shaped"), "%.3f"),
            fmt((dm.get("downstream") or {}).get("drops"), "%d"), fmt((dm.get("upstream") or {}).get("drops"), "%d")))
    for disc, r in result["disciplines"].items():
        if "bbr" in r:
            b = r["bbr"]
            lines.append("%-14s Jain (first 20 s) %s, (last 5 s) %s; max 100 ms: goodput %s Mbit/s = %s of rate, "
                         "L2 out %s Mbit/s = %s" % (
                             disc, fmt(b["jain_first_20s"], "%.4f"), fmt(b["jain_last_5s"], "%.4f"),
                             fmt(b["max_100ms_total_mbit"]), fmt(b["max_100ms_of_shaped"], "%.3f"),
                             fmt(b["wire_max_100ms_mbit"]), fmt(b["wire_max_100ms_of_shaped"], "%.3f")))
            lines.append("%-14s max 100 ms of the scheduler's own output (worker clock): %s Mbit/s = %s of rate "
                         "(%d samples)" % (disc, fmt(b.get("sched_max_100ms_mbit")),
                                           fmt(b.get("sched_max_100ms_of_shaped"), "%.3f"), b.get("sched_n_samples", 0)))
        if "staggered" in r:
            s = r["staggered"]
            lines.append("%-14s share of fair (%s Mbit/s): %s" % (disc, fmt(s["fair_share_mbit"]), ", ".join(
                "%s %.2f" % (k, v) for k, v in s["share_of_fair"].items() if v is not None)))
        for name, v in sorted((r.get("subscribers") or {}).items()):
            lines.append("%s subscriber %s: " % (disc, name) + ", ".join(
                "%s sent %s of its %g Mbit/s plan (goodput %s Mbit/s)" % (
                    d, fmt(v[d].get("of_plan"), "%.3f"), v[d]["plan_mbit"], fmt(v[d]["goodput_mbit"], "%.1f"))
                for d in ("down", "up")))
        for ph, v in (r.get("l4s") or {}).items():
            q, t = v["scalable_queueing"], v.get("tin") or {}
            lines.append("%-14s l4s %s: scalable %s of rate (queueing p50 %s / p99 %s ms, CE %s)%s; tin: ECT(1) %s, "
                         "step marks %s, COBALT marks %s, drops %s, sojourn p50 %s / p99 %s ms" % (
                             disc, ph, fmt(v["scalable_of_rate"], "%.3f"), fmt(q["p50_ms"], "%.2f"),
                             fmt(q["p99_ms"], "%.2f"), fmt(q["ce_fraction"], "%.3f"),
                             ", cubic %s" % fmt(v.get("cubic_of_rate"), "%.3f") if ph == "both" else "",
                             fmt(t.get("ect1_packets"), "%d"), fmt(t.get("step_marks"), "%d"),
                             fmt(t.get("ecn_mark"), "%d"), fmt(t.get("drops"), "%d"),
                             fmt((t.get("sojourn") or {}).get("p50_ms"), "%.2f"),
                             fmt((t.get("sojourn") or {}).get("p99_ms"), "%.2f")))
        if "hosts" in r:
            lines.append("%-14s %s" % (disc, ", ".join(
                "%s %.1f Mbit/s (%.1f %%)" % (h, v["mbit"], 100 * (v["share"] or 0)) for h, v in r["hosts"].items())))
    for disc, r in result["disciplines"].items():
        parts = []
        for d in ("downstream", "upstream"):
            x = (r["daemon"]["loaded"].get(d) or {})
            sj = x.get("sojourn") or {}
            tins = ", ".join("%s p99 %s" % (t["name"], fmt((t.get("sojourn") or {}).get("p99_ms"), "%.2f"))
                             for t in (x.get("tins") or []) if (t.get("sojourn") or {}).get("packets"))
            sp = x.get("sparse_sojourn") or {}
            parts.append("%s p50 %s / p99 %s ms [%s], sparse flows p99 %s ms, stalls written off %s ms" % (
                d, fmt(sj.get("p50_ms"), "%.2f"), fmt(sj.get("p99_ms"), "%.2f"), tins,
                fmt(sp.get("p99_ms"), "%.2f"), fmt((x.get("lag_skipped_us") or 0) / 1000.0, "%.1f")))
        lines.append("%-14s shaper sojourn (loaded phase): %s" % (disc, "; ".join(parts)))
    lines.append("bed CPU in the loaded phase: " + ", ".join(
        "%s busy %.0f %% steal %.0f %% (worst 100 ms: %s ms stolen, worker waited %s ms)" % (
            disc, r["health"]["busy_pct"], r["health"]["steal_pct"],
            fmt(r["health"].get("max_steal_ms_per_100ms"), "%.0f"),
            fmt(r["health"].get("max_worker_runqueue_wait_ms_per_100ms"), "%.1f"))
        for disc, r in result["disciplines"].items()))
    for disc, r in result["disciplines"].items():
        h = r.get("health", {})
        if h.get("disturbed"):
            lines.append("WARNING %s: the bed was disturbed in the loaded phase: %.0f %% CPU steal (worst 100 ms: %s ms), "
                         "worker kept waiting up to %s ms per 100 ms, others: %s" % (
                             disc, h["steal_pct"], fmt(h.get("max_steal_ms_per_100ms"), "%.0f"),
                             fmt(h.get("max_worker_runqueue_wait_ms_per_100ms"), "%.0f"),
                             ", ".join("%s(%d) %.0f %%" % (x["comm"], x["pid"], x["cpu_pct_of_one_core"])
                                       for x in h["foreign"]) or "-"))
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--shaperd", default=None, help="default: build-bed/src/shaperd, then build/src/shaperd")
    ap.add_argument("--down", type=parse_rate, help="downstream (WAN->LAN) rate, e.g. 100mbit")
    ap.add_argument("--up", type=parse_rate, help="upstream (LAN->WAN) rate, e.g. 20mbit")
    ap.add_argument("--rtt", type=parse_time, help="base RTT from the delay line, e.g. 40ms")
    ap.add_argument("--duration", type=float, help="seconds of load (after the idle lead-in)")
    ap.add_argument("--idle", type=float, help="seconds of idle probes before the load")
    ap.add_argument("--settle", type=float, default=None,
                    help="seconds after the (last) flow start before the loaded phase (default 2, rrul 3)")
    ap.add_argument("--stagger", type=float, default=3.0, help="staggered: seconds between starts")
    ap.add_argument("--out", default=None, help="directory for SCENARIO.json and SCENARIO.png")
    ap.add_argument("--disciplines", default=None, help="default cake,fifo; l4s: cake+l4s,cake")
    ap.add_argument("--l4s-step", default=None, help="l4s_step of the +l4s disciplines (default: shaperd's)")
    ap.add_argument("--flows", type=int, default=None)
    ap.add_argument("--fifo-limit", type=int, default=1000, help="packets in the bloated FIFO")
    ap.add_argument("--probe-interval", type=parse_time, default=None)
    ap.add_argument("--prefix", default="rr", help="bed prefix (namespaces <p>cli/<p>srv)")
    ap.add_argument("--keep", action="store_true", help="keep the raw files")
    ap.add_argument("--load-cpus", default="auto",
                    help="CPUs (taskset list) for iperf3, irtt and fping, 'any', or 'auto' (every CPU but "
                         "shaperd's worker, lcore 1)")
    ap.add_argument("--rt-priority", type=int, default=50,
                    help="shaperd's dataplane.rt_priority (SCHED_FIFO for the worker; 0 = off)")
    ap.add_argument("--probe-rt", type=int, default=10,
                    help="run fping and irtt under SCHED_FIFO at this priority (0 = off)")
    ap.add_argument("--nice", type=int, default=0, help="run shaperd under nice -n N")
    ap.add_argument("--rrul-marks", default="BE,CS1,CS5,EF",
                    help="rrul: the DSCP of each upload/download pair (BE, CS1, CS5, EF)")
    ap.add_argument("--shared-server", action="store_true",
                    help="hosts: both hosts upload to the same server address (default: one server each)")
    args = ap.parse_args()

    rc = preflight("run.py", BED_TOOLS)
    if rc is not None:
        return rc
    d = SCENARIOS[args.scenario]
    if args.disciplines is None:
        args.disciplines = "cake+l4s,cake" if args.scenario == "l4s" else "cake,fifo"
    args.down_bps = args.down or parse_rate(d["down"])
    args.up_bps = args.up or parse_rate(d["up"])
    args.rtt_s = args.rtt or parse_time(d["rtt"])
    args.duration = args.duration or d["duration"]
    args.idle = args.idle if args.idle is not None else d["idle"]
    if args.settle is None:
        args.settle = 3.0 if args.scenario == "rrul" else 2.0
        args.settle = min(args.settle, args.duration / 3)
    if args.scenario == "staggered":
        n = args.flows or 4
        if args.stagger * (n - 1) + args.settle + 1 > args.duration:
            raise SystemExit("staggered: --duration %g too short for %d starts %g s apart" % (
                args.duration, n, args.stagger))
    shaperd = args.shaperd
    if not shaperd:
        for c in ("build-bed/src/shaperd", "build/src/shaperd"):
            if os.access(os.path.join(ROOT, c), os.X_OK):
                shaperd = os.path.join(ROOT, c)
                break
    if not shaperd or not os.access(shaperd, os.X_OK):
        raise SystemExit("run.py: no shaperd (build it, or give --shaperd)")
    out = args.out or os.path.join(ROOT, "build-bed", "results")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="shaper_bed_")

    result = {"scenario": args.scenario, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "params": {"down_mbit": args.down_bps / 1e6, "up_mbit": args.up_bps / 1e6,
                         "rtt_ms": args.rtt_s * 1000, "duration_s": args.duration, "idle_s": args.idle,
                         "settle_s": args.settle, "fifo_limit": args.fifo_limit,
                         "flows": args.flows, "shaperd": shaperd,
                         "note": "goodput = TCP payload at the receiver; of_shaped = goodput / configured L2 rate"},
              "disciplines": {}}
    rc = 0
    for disc in args.disciplines.split(","):
        disc = disc.strip()
        bed = Bed(args.prefix, shaperd, tmp, disc.replace("/", "-").replace("+", "-"))
        bed.pin_cpus = None if args.load_cpus == "any" else args.load_cpus
        if args.load_cpus == "auto":
            bed.pin_cpus = load_cpus()
        bed.nice = args.nice
        bed.rt_priority = args.rt_priority
        bed.probe_rt = args.probe_rt
        cfg = {"upstream": direction_cfg(disc, args.up_bps, "upstream", args.scenario, args.rtt_s, args.fifo_limit,
                                         args.l4s_step),
               "downstream": direction_cfg(disc, args.down_bps, "downstream", args.scenario, args.rtt_s,
                                           args.fifo_limit, args.l4s_step)}
        if args.scenario == "subscribers" and disc.split("/")[0] == "cake":
            cfg["subscribers"] = {"file": subscribers_file(args, tmp, disc), "active": 8}
            bed.subscribers = True
        log("%s: %s" % (disc, json.dumps(cfg)))
        try:
            bed.up()
            bed.start_daemon(cfg)
            log("%s: bed %s up, shaperd bridging" % (disc, bed.pfx))
            raw = run_scenario(args, disc, bed, tmp)
            final = bed.stop_daemon()
            log("%s: run done, shaperd stopped (exit %s)" % (disc, bed.daemon_rc))
            r = analyse(args, raw)
            r["config"] = cfg
            r["series"] = series(raw)
            r["daemon"]["exit"] = {
                "rc": bed.daemon_rc,
                "mbufs_in_use": final.get("mbufs_in_use") if final else None,
                "directions": {k: dir_summary(v) for k, v in (final or {}).get("directions", {}).items()}}
            if bed.daemon_rc != 0:
                log("%s: shaperd exit code %s" % (disc, bed.daemon_rc))
                rc = 1
            result["disciplines"][disc] = r
        except Exception as e:
            log("%s: %s" % (disc, e))
            try:
                log(open(bed.log_file).read()[-2000:])
            except (OSError, AttributeError):
                pass
            rc = 1
            raise
        finally:
            bed.down()
    jpath = os.path.join(out, args.scenario + ".json")
    with open(jpath, "w") as f:
        json.dump(result, f, indent=1)
    png = plot(args, result, os.path.join(out, args.scenario + ".png"))
    print(table(args, result))
    print("results: %s%s" % (jpath, (", plot: " + png) if png else ""))
    if args.keep:
        print("raw files: %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
