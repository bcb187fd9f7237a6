#!/usr/bin/python3
"""Autorate on the namespace bed: a kernel tbf "modem" with a big
buffer on the WAN side of shaperd, whose rate changes under RRUL load.

    autorate.py [--shaperd PATH] [--down 100mbit] [--up 20mbit] [--rtt 40ms]
                [--buffer 1mb] [--phase 20] [--modes fixed95,auto] [--out DIR]
                [--ack-filter ack-filter-aggressive] [--low 0.5] [--min-share 0.1]
                [--path-step 25ms [--step-every 15]] [--tune '{"path_checks": 0}']
                [--low-down 0.1 --low-up 1] [--load both|down|up|churn] [--no-timestamps]
                [--base-share 0.5] [--server-modem] [--far-queue 2mbit]

Modems: downstream, a tbf in a bridge namespace between the server and
shaperd's WAN port (server -> modem -> WAN port -> shaperd -> LAN; bed.sh's
"modem": on the server's own eth0, --server-modem, the server's TCP small
queues would keep it nearly empty, as they do not at the far end of a real
line); upstream, a tbf on the WAN veth the daemon sends into
(its af_packet port with qdisc_bypass=0, so the qdisc is not skipped). Base
RTT from the daemon's delay line, as in run.py. For each mode, in the same
invocation: idle probes, then 4 TCP uploads + 4 downloads (BE, CS1, CS5, EF)
with ICMP/UDP probes for 3 phases of --phase seconds: the modem at its rate,
at --low of it (half by default; tc qdisc change), and back. Modes: fixed95
(CAKE at 95 % of the modem's nominal rate) and auto (CAKE with "bandwidth":
{"min": --min-share (10 %), "max": the nominal rate}); both with ack-filter-aggressive upstream
(--ack-filter). The daemon's rate and WAN-side RTT are read from
its control socket every 200 ms.

Reported per mode: goodput as a share of the modem's rate per phase and
direction (the steady first phase, the last 2/3 of the low phase, the last
half of the recovery), induced latency (probe RTT minus the idle median) per
phase, how long after the drop the induced latency's 1-s median is back
under 10 ms and under 15 ms, and how long after the recovery the downloads' 1-s goodput is
back at 0.9 of the new rate. DIR/autorate.json and DIR/autorate.png (rate,
RTT and goodput over time). Needs what run.py needs, and tc.

Other scenarios: --low-down / --low-up give each modem its own share in the
low phase (asymmetric: the downstream falls, the upstream stays); --load
up (or down) runs only the 4 uploads (downloads), the probes still cross
both directions; --load churn runs --churn (16) fetchers of short
HTTP-like downloads instead (churn.py: objects of 10 kB to 2 MB, each on a
new connection, so the controller is fed by many short flows); --idle 10
--base-share 0.5 lets the rate decay towards half the nominal rate before
the load (idle then load: the steady phase shows how fast it comes back);
--no-timestamps turns TCP timestamps off in the client's
namespace (net.ipv4.tcp_timestamps=0, as Windows' default), so only
handshake and sequence samples time the flows.

A far-end server's own queue (--far-queue 2mbit): one more download, from
port 5299, whose server sits behind its own uplink of that rate with a
--buffer queue it fills (its samples grow to seconds); the downstream modem
becomes an HTB tree in the modem namespace (the line, that flow's class,
the rest), and that flow's goodput is left out of the downloads'. The
controller should not take its queue for the line's (the lowest rise of an
interval over all flows ignores it).

Path steps (--path-step): the modems keep their rate, and every
--step-every seconds of the load the path's delay steps up by --path-step
and back, as a satellite handover or a reroute does. The bed's path delay
is shaperd's own delay line (`emulate`; this kernel has no netem), changed
live with config.set; the step is on the upstream half of the path, the
only part of the WAN path the bed can delay (frames shaperd sends to the
WAN), so it lengthens every WAN-side RTT sample and the upstream one-way
delay; the downstream one-way delay does not move. Reported over the whole
load: the rate held (mean and lowest) and what the shaper sent, as shares of
the modem's rate, and the induced latency less the step in force. Modes
default to auto only. The simulator has the same scenario on both halves
(tests/sim/test_autorate.c, test_path_steps).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bed_run  # noqa: E402  (the bed, probes and flows of the other scenarios)


def tc_modem(bed, where, op, rate_bps, buffer_bytes, burst=None):
    """add/change the tbf modem: 'srv' on the server's eth0, 'wan' on the WAN veth.
    burst: the token bucket in bytes (default 4 ms of line rate, at least 16000)."""
    burst = burst or max(16000, int(rate_bps / 8 / 250))
    dev = bed.pfx + "wan0" if where == "wan" else "wan" if bed.modem else "eth0"
    argv = ["tc", "qdisc", op, "dev", dev, "root", "tbf",
            "rate", "%dkbit" % (rate_bps // 1000), "burst", str(burst), "limit", str(buffer_bytes)]
    if where == "srv":
        argv = ["ip", "netns", "exec", bed.pfx + "mdm" if bed.modem else bed.srv] + argv
    subprocess.run(argv, check=True)


FAR_PORT = 5299  # --far-queue: the one download whose server's own queue grows


def tc_modem_far(bed, op, rate_bps, far_bps, buffer_bytes):
    """The downstream modem as an HTB tree in the modem namespace: the line (1:1) at rate_bps,
    one flow's class (1:10, server port FAR_PORT) held to far_bps with its own buffer_bytes
    queue, as if its server sat behind its own slow uplink; the rest (1:20) shares the line."""
    ns = ["ip", "netns", "exec", bed.pfx + "mdm", "tc"]
    cls = [("1:", "1:1", rate_bps, rate_bps), ("1:1", "1:10", far_bps, far_bps),
           ("1:1", "1:20", max(rate_bps - far_bps, 8000), rate_bps)]
    if op == "add":
        subprocess.run(ns + ["qdisc", "add", "dev", "wan", "root", "handle", "1:", "htb",
                             "default", "20"], check=True)
    for parent, cid, rate, ceil in cls:
        subprocess.run(ns + ["class", op, "dev", "wan", "parent", parent, "classid", cid, "htb",
                             "rate", "%dkbit" % (rate // 1000), "ceil", "%dkbit" % (ceil // 1000)],
                       check=True, stderr=subprocess.DEVNULL)
    if op == "add":
        for cid in ("1:10", "1:20"):
            subprocess.run(ns + ["qdisc", "add", "dev", "wan", "parent", cid, "bfifo", "limit",
                                 str(buffer_bytes)], check=True)
        subprocess.run(ns + ["filter", "add", "dev", "wan", "parent", "1:", "protocol", "ip",
                             "prio", "1", "u32", "match", "ip", "sport", str(FAR_PORT), "0xffff",
                             "flowid", "1:10"], check=True)


class ChurnLoad:
    """Short HTTP-like downloads, each on a new connection (churn.py): the
    downstream load of --load churn, with the same interface as run.py's Flow."""

    def __init__(self, parallel, seed=1):
        self.name, self.direction = "churn", "down"
        self.parallel, self.seed = parallel, seed
        self.sums, self.objects = [], 0

    def start(self, bed, port, duration, t0, rtt_s, tmp):
        script = os.path.join(HERE, "churn.py")
        self.file = os.path.join(tmp, "%s.churn.json" % bed.name)
        bed.ns("srv", [sys.executable, script, "serve", bed_run.SRV_ADDR, str(port)])
        bed_run.Flow._wait_server(bed, port)
        self.proc = bed.ns("cli", [sys.executable, script, "fetch", bed_run.SRV_ADDR, str(port),
                                   "%g" % duration, str(self.parallel), str(self.seed), self.file,
                                   repr(t0)])

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        try:
            j = json.load(open(self.file))
        except (OSError, ValueError):
            bed_run.log("churn: no results")
            return
        self.sums = [tuple(x) for x in j["sums"]]
        self.objects = j["objects"]


class RatePoller(threading.Thread):
    """The daemon's bandwidth per direction and WAN-side RTT, every step seconds."""

    def __init__(self, bed, t0, step=0.2):
        super().__init__(daemon=True)
        self.bed, self.t0, self.step = bed, t0, step
        self.samples, self.stop_ev = [], threading.Event()

    def run(self):
        while not self.stop_ev.wait(self.step):
            st = self.bed.ctl("stats")
            if not st:
                continue
            d = st.get("directions", {})
            dn, up = d.get("downstream", {}), d.get("upstream", {})
            iv = dn.get("rtt", {}).get("interval", {})
            # The rate the controller held, and what the shaper sent by its own
            # clock: (time_ns, tx_bytes, lag_skipped_us) of each direction, the
            # poller's own timing (a busy neighbour can delay it) does not enter.
            self.samples.append((time.time() - self.t0,
                                 dn.get("bandwidth", 0) * 8 / 1e6,
                                 up.get("bandwidth", 0) * 8 / 1e6,
                                 iv.get("median_us", 0) / 1e3,
                                 dn.get("time_ns", 0), dn.get("tx_bytes", 0),
                                 up.get("time_ns", 0), up.get("tx_bytes", 0),
                                 dn.get("lag_skipped_us", 0), up.get("lag_skipped_us", 0),
                                 dn.get("backlogged_us", 0), up.get("backlogged_us", 0)))

    def stop(self):
        self.stop_ev.set()
        self.join(timeout=5)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None


def run_mode(args, mode, bed, tmp):
    nominal = {"downstream": args.down_bps, "upstream": args.up_bps}
    cfg = {}
    for d in ("upstream", "downstream"):
        c = bed_run.direction_cfg("cake", nominal[d], d, "rrul", args.rtt_s, 1000)
        if d == "upstream":
            c["ack_filter"] = args.ack_filter
        if mode == "auto":
            c["bandwidth"] = {"min": "%dkbit" % round(nominal[d] * args.min_share / 1000),
                              "max": "%dkbit" % (nominal[d] // 1000)}
            if args.base_share is not None:
                c["bandwidth"]["base"] = "%dkbit" % round(nominal[d] * args.base_share / 1000)
            c["bandwidth"].update(args.tune)
        else:
            c["bandwidth"] = "%dkbit" % round(nominal[d] * 0.95 / 1000)
        cfg[d] = c
    if mode == "auto":
        cfg["log"] = {"level": "debug"}  # every decision of the controller, in shaperd's log
    bed.up()
    if args.no_timestamps:
        subprocess.run(["ip", "netns", "exec", bed.cli, "sysctl", "-qw",
                        "net.ipv4.tcp_timestamps=0"], check=True)
    if args.far_queue:
        tc_modem_far(bed, "add", args.down_bps, args.far_queue, args.buffer)
    else:
        tc_modem(bed, "srv", "add", args.down_bps, args.buffer)
    tc_modem(bed, "wan", "add", args.up_bps, args.buffer)
    bed.start_daemon(cfg)
    total = args.idle + 3 * args.phase + 1
    probes = bed_run.Probes(bed, tmp, 0.02, total)
    probes.start()
    t0 = time.time()
    poller = RatePoller(bed, t0)
    poller.start()
    time.sleep(args.idle)
    load_t = time.time() - t0
    flows = []
    if args.load == "churn":
        flows.append(ChurnLoad(args.churn))
    for i, tos in enumerate(("BE", "CS1", "CS5", "EF")):
        if args.load in ("both", "up"):
            flows.append(bed_run.Flow("up%d_%s" % (i + 1, tos), "up", "cubic", tos))
        if args.load in ("both", "down"):
            flows.append(bed_run.Flow("down%d_%s" % (i + 1, tos), "down", "cubic", tos))
    for i, f in enumerate(flows):
        f.start(bed, 5201 + i, 3 * args.phase, t0, args.rtt_s, tmp)
    if args.far_queue:
        # Its own queue grows at the far end; counted apart from the downloads' goodput.
        far = bed_run.Flow("far_BE", "down", "cubic", "BE")
        far.far = True
        far.start(bed, FAR_PORT, 3 * args.phase, t0, args.rtt_s, tmp)
        flows.append(far)
    steps = []
    if args.path_step_s > 0:
        # The upstream half of the path steps up by --path-step and back, every --step-every s.
        base_us = round(args.rtt_s / 2 * 1e6)
        k, up = 1, True
        while load_t + k * args.step_every < load_t + 3 * args.phase - 1:
            at = load_t + k * args.step_every
            time.sleep(max(0.0, at - (time.time() - t0)))
            delay_us = base_us + (round(args.path_step_s * 1e6) if up else 0)
            r = bed.ctl("config.set", {"direction": "upstream",
                                       "settings": {"emulate": {"delay": "%dus" % delay_us}}})
            if r is None:
                raise RuntimeError("config.set upstream emulate.delay %dus was refused" % delay_us)
            steps.append((time.time() - t0, args.path_step_s * 1e3 if up else 0.0))
            k, up = k + 1, not up
    else:
        # The modem falls to --low of its rate after one phase and recovers after two.
        changes = [(load_t + args.phase, args.low_down, args.low_up),
                   (load_t + 2 * args.phase, 1.0, 1.0)]
        for at, share_down, share_up in changes:
            time.sleep(max(0.0, at - (time.time() - t0)))
            if args.far_queue:
                tc_modem_far(bed, "change", int(args.down_bps * share_down), args.far_queue,
                             args.buffer)
            else:
                tc_modem(bed, "srv", "change", int(args.down_bps * share_down), args.buffer)
            tc_modem(bed, "wan", "change", int(args.up_bps * share_up), args.buffer)
    for f in flows:
        f.wait(3 * args.phase + 30)
    lat = probes.wait(t0)
    poller.stop()
    # What fed the controllers by the end (samples by source, autorate's inputs).
    st = bed.ctl("stats") or {}
    fed = {d: {k: v.get(k) for k in ("rtt", "autorate")}
           for d, v in st.get("directions", {}).items()}
    bed.stop_daemon()
    return dict(cfg=cfg, flows=flows, lat=lat, load_t=load_t, rates=poller.samples, steps=steps,
                fed=fed)


def step_at(steps, t):
    """The path step (ms) in force at t: the last change at or before t."""
    ms = 0.0
    for at, v in steps:
        if at <= t:
            ms = v
    return ms


def analyse(args, raw):
    L, P = raw["load_t"], args.phase
    icmp = raw["lat"]["icmp"]
    idle = median([r for t, r in icmp if t < L and r is not None]) or 0.0
    # Less the path step in force (a probe sent just before a change can see
    # either delay: the induced latency is judged by medians).
    steps = raw.get("steps", [])
    induced = [(t, r - idle - step_at(steps, t)) for t, r in icmp if r is not None]
    sums = {d: [] for d in ("up", "down")}
    for f in raw["flows"]:
        if not getattr(f, "far", False):
            sums[f.direction] += f.sums
    modem = {"down": args.down_bps / 1e6, "up": args.up_bps / 1e6}
    # Each phase: its window and the modems' shares of their rates, (down, up).
    low = (args.low_down, args.low_up) if not steps else (1.0, 1.0)
    phases = {"steady": (L + 3, L + P, (1.0, 1.0)), "low": (L + P + P / 3, L + 2 * P, low),
              "recovered": (L + 2 * P + P / 2, L + 3 * P, (1.0, 1.0))}
    if steps:
        # Path steps: the whole load at the modem's one rate.
        phases["whole"] = (L + 3, L + 3 * P, (1.0, 1.0))
    which = {"down": 0, "up": 1}
    out = {"idle_rtt_ms": idle, "phases": {}}
    for name, (a, b, share) in phases.items():
        ph = {"induced_median_ms": median([r for t, r in induced if a <= t < b])}
        for d in ("down", "up"):
            ph["goodput_%s_of_modem" % d] = (bed_run.mbit_in(sums[d], a, b) /
                                             (modem[d] * share[which[d]]))
        out["phases"][name] = ph
    # The controller itself, from the rate poller: the rate it held (mean of
    # the samples) and what the shaper sent over its own clock (time_ns, less
    # the time its worker was not scheduled: a stall is written off, never
    # made up), as shares of the modem's rate in each phase.
    col = {"down": (1, 4, 5, 8), "up": (2, 6, 7, 9)}
    rates = raw["rates"]
    for name, (a, b, share) in phases.items():
        ph = out["phases"][name]
        inside = [s for s in rates if a <= s[0] < b and len(s) > 9]
        for d, (ci, ti, bi, li) in col.items():
            m = modem[d] * share[which[d]]
            ph["held_%s_of_modem" % d] = (sum(s[ci] for s in inside) / len(inside) / m
                                          if inside else None)
            ph["held_%s_lowest_of_modem" % d] = (min(s[ci] for s in inside) / m
                                                 if inside else None)
            sent = None
            if len(inside) >= 2 and inside[-1][ti] > inside[0][ti]:
                ran = ((inside[-1][ti] - inside[0][ti]) / 1e9 -
                       (inside[-1][li] - inside[0][li]) / 1e6)
                sent = (inside[-1][bi] - inside[0][bi]) * 8 / 1e6 / ran / m if ran > 0 else None
            ph["sent_%s_of_modem" % d] = sent
            # What it sent over the time it held a queue (so owed its rate), less
            # the stalls, against the rate it held: the shaper's own delivery,
            # whatever the senders offered. A load that never filled the rate
            # leaves little owed time, and no verdict on the load.
            owed = None
            held = ph["held_%s_of_modem" % d]
            if len(inside) >= 2 and len(inside[0]) > 11 and held:
                ki = 10 if d == "down" else 11
                owed_s = ((inside[-1][ki] - inside[0][ki]) - (inside[-1][li] - inside[0][li])) / 1e6
                ph["backlogged_%s_share" % d] = (
                    (inside[-1][ki] - inside[0][ki]) / 1e6 /
                    ((inside[-1][ti] - inside[0][ti]) / 1e9)) if inside[-1][ti] > inside[0][ti] else None
                if owed_s > 0.1:
                    owed = (inside[-1][bi] - inside[0][bi]) * 8 / 1e6 / owed_s / (held * m)
            ph["owed_sent_%s_of_held" % d] = owed
            # TCP's payload against what the shaper sent in the same phase: a
            # stall of the machine lowers both alike.
            g = ph["goodput_%s_of_modem" % d]
            ph["goodput_%s_of_sent" % d] = g / sent if sent else None
    # How long after the recovery the held rate is back at 0.9 of the modem.
    for d, (ci, _, _, _) in col.items():
        key = "held_%s_back_to_0.9_s" % d
        out[key] = None
        for s in rates:
            if s[0] >= L + 2 * P and s[ci] >= 0.9 * modem[d]:
                out[key] = round(s[0] - (L + 2 * P), 1)
                break
    # Back under 10 (15) ms: the first 1-s window after the drop whose median is.
    drop, rec = L + P, L + 2 * P
    for bound in (10, 15):
        key = "latency_back_under_%dms_s" % bound
        out[key] = None
        t = drop
        while t < rec:
            m = median([r for s, r in induced if t <= s < t + 1])
            if m is not None and m < bound:
                out[key] = round(t + 1 - drop, 1)
                break
            t += 0.2
    out["path_steps"] = [[round(t - L, 2), ms] for t, ms in steps]
    out["churn_objects"] = sum(getattr(f, "objects", 0) for f in raw["flows"])
    out["goodput_back_to_0.9_s"] = None
    t = rec
    while t < L + 3 * P - 1:
        if bed_run.mbit_in(sums["down"], t, t + 1) >= 0.9 * modem["down"]:
            out["goodput_back_to_0.9_s"] = round(t + 1 - rec, 1)
            break
        t += 0.2
    return out


def plot(args, results, raws, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot")
        return
    fig, ax = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    for mode, raw in raws.items():
        L, P = raw["load_t"], args.phase
        ts = [s[0] - L for s in raw["rates"]]
        ax[0].plot(ts, [s[1] for s in raw["rates"]], label="%s: shaper down" % mode)
        ax[0].plot(ts, [s[2] for s in raw["rates"]], label="%s: shaper up" % mode)
        pts = [(t - L, r) for t, r in raw["lat"]["icmp"] if r is not None]
        ax[1].plot([p[0] for p in pts], [p[1] for p in pts], ".", markersize=2, label="%s: ping" % mode)
        for d, name in (("down", "download"), ("up", "upload")):
            sums = [x for f in raw["flows"] if f.direction == d and not getattr(f, "far", False)
                    for x in f.sums]
            if not sums and (d == "up" or any(f.direction == "up" for f in raw["flows"])):
                continue  # the download's line is drawn even when empty, unless uploads ran
            g = bed_run.binned(sums, L, L + 3 * P, 0.5)
            ax[2].plot([x[0] - L for x in g], [x[1] for x in g],
                       label="%s: %s goodput" % (mode, name))
    modem_t = [0, args.phase, args.phase, 2 * args.phase, 2 * args.phase, 3 * args.phase]
    for d, bps in (("down", args.down_bps), ("up", args.up_bps)):
        m = bps / 1e6
        lo = m * ((args.low_down if d == "down" else args.low_up)
                  if args.path_step_s == 0 else 1.0)
        ax[0].plot(modem_t, [m, m, lo, lo, m, m], "k--", linewidth=1, label="modem %s" % d)
    for raw in raws.values():
        for t, ms in raw.get("steps", []):
            for a in ax:
                a.axvline(t - raw["load_t"], color="grey", linestyle=":", linewidth=1)
    ax[0].set_ylabel("rate, Mbit/s")
    ax[1].set_ylabel("ping RTT, ms")
    ax[1].set_yscale("log")
    ax[2].set_ylabel("Mbit/s")
    ax[2].set_xlabel("s from the start of the load")
    for a in ax:
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
    fig.suptitle("autorate vs fixed 95 %%: modem %g/%g Mbit/s, %s buffer%s" % (
        args.down_bps / 1e6, args.up_bps / 1e6, args.buffer,
        ", path steps of +%g ms (dotted)" % (args.path_step_s * 1e3) if args.path_step_s else ""))
    fig.savefig(path, dpi=90)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shaperd", default=None)
    ap.add_argument("--down", type=bed_run.parse_rate, default=bed_run.parse_rate("100mbit"))
    ap.add_argument("--up", type=bed_run.parse_rate, default=bed_run.parse_rate("20mbit"))
    ap.add_argument("--rtt", type=bed_run.parse_time, default=bed_run.parse_time("40ms"))
    ap.add_argument("--buffer", type=int, default=1 << 20, help="modem buffer, bytes")
    ap.add_argument("--phase", type=float, default=20.0, help="seconds per modem phase")
    ap.add_argument("--idle", type=float, default=5.0)
    ap.add_argument("--low", type=float, default=0.5,
                    help="the modem's rate in the second phase, a share of --down/--up")
    ap.add_argument("--low-down", type=float, default=None,
                    help="the downstream modem's share in the second phase (default --low)")
    ap.add_argument("--low-up", type=float, default=None,
                    help="the upstream modem's share in the second phase (default --low)")
    ap.add_argument("--load", choices=["both", "down", "up", "churn"], default="both",
                    help="which TCP flows run: 4 each way (both), only one way, or "
                    "short downloads each on a new connection (churn)")
    ap.add_argument("--far-queue", type=bed_run.parse_rate, default=0,
                    help="one more download whose server sits behind its own uplink of this "
                    "rate with a --buffer queue that it fills (the downstream modem becomes an "
                    "HTB tree; needs the modem namespace)")
    ap.add_argument("--churn", type=int, default=16,
                    help="parallel fetchers of --load churn")
    ap.add_argument("--no-timestamps", action="store_true",
                    help="TCP timestamps off in the client's namespace (Windows' default)")
    ap.add_argument("--min-share", type=float, default=0.1,
                    help="autorate's min, a share of the nominal rate")
    ap.add_argument("--base-share", type=float, default=None,
                    help="autorate's base (where an idle direction decays to), a share of "
                    "the nominal rate (default: start, the nominal rate)")
    ap.add_argument("--server-modem", dest="modem_ns", action="store_false",
                    help="the downstream modem on the server's own eth0, as before the modem "
                    "namespace (its TCP small queues then keep that queue short)")
    ap.add_argument("--modes", default="fixed95,auto")
    ap.add_argument("--ack-filter", default="ack-filter-aggressive",
                    choices=["ack-filter", "ack-filter-aggressive", "no-ack-filter"],
                    help="the upstream's ACK filter, both modes (aggressive: what CAKE "
                    "advises for a link as asymmetric as 100/20)")
    ap.add_argument("--path-step", type=bed_run.parse_time, default=0.0,
                    help="instead of changing the modems' rate: the path delay steps up by "
                    "this much and back (default: no steps)")
    ap.add_argument("--step-every", type=float, default=15.0,
                    help="seconds between path steps (with --path-step)")
    ap.add_argument("--tune", type=json.loads, default={},
                    help="more autorate keys for both directions (auto mode), as JSON, e.g. "
                    "'{\"path_checks\": 0}' (see docs/configuration.md)")
    ap.add_argument("--prefix", default="ar")
    ap.add_argument("--workers", type=int, default=1,
                    help="shaperd's workers (more than one share the link; both on CPU 1)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rc = bed_run.preflight("autorate.py", bed_run.BED_TOOLS + ("tc",))
    if rc is not None:
        return rc
    args.down_bps, args.up_bps, args.rtt_s = args.down, args.up, args.rtt
    args.path_step_s = args.path_step
    args.low_down = args.low if args.low_down is None else args.low_down
    args.low_up = args.low if args.low_up is None else args.low_up
    if args.path_step_s > 0 and "--modes" not in sys.argv:
        args.modes = "auto"
    shaperd = args.shaperd
    for c in ("build-bed/src/shaperd", "build/src/shaperd"):
        if not shaperd and os.access(os.path.join(bed_run.ROOT, c), os.X_OK):
            shaperd = os.path.join(bed_run.ROOT, c)
    if not shaperd:
        raise SystemExit("autorate.py: no shaperd (build it, or give --shaperd)")
    out = args.out or os.path.join(bed_run.ROOT, "build-bed", "results")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="shaper_autorate_")
    results, raws = {}, {}
    for mode in args.modes.split(","):
        bed = bed_run.Bed(args.prefix, shaperd, tmp, mode)
        bed.wan_opts = ",qdisc_bypass=0"  # the upstream modem's tbf must see the frames
        bed.modem = args.modem_ns
        bed.rt_priority, bed.probe_rt = 50, 10
        bed.workers = args.workers
        bed.pin_cpus = bed_run.load_cpus()
        try:
            raws[mode] = run_mode(args, mode, bed, tmp)
        finally:
            bed.down()
        results[mode] = analyse(args, raws[mode])
        results[mode]["config"] = raws[mode]["cfg"]
        results[mode]["rates"] = raws[mode]["rates"]
        results[mode]["fed"] = raws[mode]["fed"]
        # shaperd's log holds the controller's decision lines: keep it beside the figures
        log_file = getattr(bed, "log_file", None)
        if log_file and os.path.exists(log_file):
            shutil.copy(log_file, os.path.join(out, "shaperd-%s.log" % mode))
        print(mode, json.dumps(results[mode], indent=1))
    print("%-8s %-10s %8s %8s %10s" % ("mode", "phase", "down", "up", "induced"))
    for mode, r in results.items():
        for name, ph in r["phases"].items():
            print("%-8s %-10s %8.2f %8.2f %8.1fms" % (mode, name, ph["goodput_down_of_modem"],
                                                    ph["goodput_up_of_modem"], ph["induced_median_ms"] or -1))
        print("%-8s latency under 10 ms %s s after the drop; goodput at 0.9 %s s after the recovery" % (
            mode, r["latency_back_under_10ms_s"], r["goodput_back_to_0.9_s"]))
        for name, ph in r["phases"].items():
            print("%-8s %-10s held %s / %s, shaper sent %s / %s of the modem (down / up)" % (
                mode, name, *["%.3f" % ph[k] if ph.get(k) is not None else None for k in (
                    "held_down_of_modem", "held_up_of_modem", "sent_down_of_modem",
                    "sent_up_of_modem")]))
    with open(os.path.join(out, "autorate.json"), "w") as f:
        json.dump(results, f, indent=1)
    plot(args, results, raws, os.path.join(out, "autorate.png"))
    print("wrote %s/autorate.json and autorate.png" % out)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
