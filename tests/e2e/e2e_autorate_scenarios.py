#!/usr/bin/python3
"""Autorate in the scenarios a reviewer tries after the plain fall: short
versions of tools/testbed/autorate.py runs, each judged from shaperd's own
figures (the rate it held and what the shaper sent over its own clock, from
`stats`) and the probes' induced latency.

usage: e2e_autorate_scenarios.py SCENARIO SHAPERD [OUTDIR] [-- EXTRA autorate.py ARGS]

Kernel tbf "modems" with 1 MB buffers (100/20 Mbit/s) on the WAN side of
shaperd, ICMP probes every 20 ms; autorate with min 10 %, max the nominal
rate; phases of 10 s: the modems at their rate, changed, and back.

churn      16 fetchers of short HTTP-like downloads (10 kB to 2 MB, each on a
           new connection) and nothing else; the downstream modem halves.
           The controller hears many short flows and few long ones, and the
           modem keeps a queue of slow-start bursts whatever the shaper
           sends. Asserted: low phase held 0.70-1.30 of the halved modem and
           the shaper sent >= 0.70 of it; the induced latency's 1-s median
           under 10 ms within 4 s of the fall, its low-phase median <= 5 ms.
asymmetric RRUL (4 TCP up, 4 down); only the downstream modem falls, to 25 %,
           the upstream keeps its rate. Before the load the line idles 10 s
           with the rate decaying towards a base of half the nominal rate
           (`base`, `no_samples: decay`): idle then load. Asserted: steady
           phase held >= 0.90 each way (back from the base within the
           phase's first 3 s); low phase: down held 0.70-2.0 of its new
           modem, up held >= 0.85 of its unchanged one (not cut for the
           downstream's queue), the shaper sent >= 0.70 / 0.80; the induced
           latency under 15 ms within 5 s of the fall.
upload     four TCP uploads only (the downstream carries their ACKs); the
           upstream modem falls to 25 %. Asserted: low phase up held
           0.70-2.0 of its new modem and the shaper sent >= 0.70 of it; the
           downstream, idle but for ACKs, held >= 0.85 of its modem (not cut
           for the upstream's queue); the induced latency under 15 ms within
           5 s of the fall, low-phase median <= 10 ms.
no_timestamps
           RRUL with TCP timestamps off in the client's namespace (Windows'
           default): only handshakes and sequence/ACK timing feed the
           controllers, and without one-way figures each direction must be
           told its own queue; both modems halve. Asserted: low phase held
           >= 0.70 of the halved modem each way, the shaper sent >= 0.65 of
           it; the induced latency under 10 ms within 3 s of the fall.
far        RRUL and one more download from a server behind its own 2 Mbit/s
           uplink with a 1 MB queue (a far end's queue that grows on one
           flow: its samples reach seconds); the modems keep their rate.
           Asserted, each phase, each way: held >= 0.90 of the modem (that
           flow's rise is not the line's queue), the shaper sent >= 0.80 of
           it; the induced latency's median <= 8 ms, each phase.

Each but far: the rate back at 0.9 of the modem within 10 s of the recovery, in the
direction that fell. Exit 0 = met, 1 = missed, 77 = not root or a tool
missing.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import check, failures, run_autorate, split_extra  # noqa: E402

SCENARIOS = {
    "churn": ["--load", "churn", "--low-down", "0.5", "--low-up", "1"],
    "asymmetric": ["--low-down", "0.25", "--low-up", "1", "--idle", "10", "--base-share", "0.5",
                   "--tune", '{"no_samples": "decay"}'],
    "upload": ["--load", "up", "--low-down", "1", "--low-up", "0.25"],
    "no_timestamps": ["--no-timestamps"],
    "far": ["--far-queue", "2mbit", "--low-down", "1", "--low-up", "1"],
}


def main():
    argv, extra = split_extra(sys.argv[1:])
    if len(argv) < 2 or argv[0] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    sc = argv[0]
    out = argv[2] if len(argv) > 2 else tempfile.mkdtemp(prefix="shaper_arsc_")
    rc, res = run_autorate(argv[1], out, ["--phase", "10", "--modes", "auto", "--prefix", "as"] +
                           SCENARIOS[sc] + extra)
    if res is None:
        return rc
    auto = res["auto"]
    ph = auto["phases"]

    def v(phase, key):
        x = ph[phase].get(key)
        return x if x is not None else -1.0

    def held(phase, d, lo, hi=None):
        x = v(phase, "held_%s_of_modem" % d)
        check(x >= lo and (hi is None or x <= hi),
              "%s, %s phase: %s rate held at %.3f of the modem (%s)"
              % (sc, phase, "download" if d == "down" else "upload", x,
                 ">= %.2f" % lo if hi is None else "%.2f-%.2f" % (lo, hi)))

    def sent(phase, d, lo):
        x = v(phase, "sent_%s_of_modem" % d)
        check(x >= lo, "%s, %s phase: the shaper sent %.3f of the %s modem's rate (>= %.2f)"
              % (sc, phase, x, "download" if d == "down" else "upload", lo))

    def back_under(bound, within):
        t = auto["latency_back_under_%dms_s" % bound]
        check(t is not None and t <= within,
              "%s: induced latency under %d ms %s s after the fall (<= %g)" % (sc, bound, t, within))

    def induced(phase, most):
        x = ph[phase]["induced_median_ms"]
        check(x is not None and x <= most, "%s, %s phase: induced latency median %s ms (<= %g)"
              % (sc, phase, "%.2f" % x if x is not None else x, most))

    fell = {"churn": "down", "asymmetric": "down", "upload": "up", "no_timestamps": "down",
            "far": None}[sc]
    if sc == "churn":
        print("figure: churn fetched %d objects" % auto["churn_objects"])
        check(auto["churn_objects"] >= 300, "churn: %d objects fetched (>= 300: the load ran)"
              % auto["churn_objects"])
        held("low", "down", 0.70, 1.30)
        sent("low", "down", 0.70)
        back_under(10, 4.0)
        induced("low", 5.0)
    elif sc == "asymmetric":
        held("steady", "down", 0.90)
        held("steady", "up", 0.90)
        held("low", "down", 0.70, 2.0)
        held("low", "up", 0.85)
        sent("low", "down", 0.70)
        sent("low", "up", 0.80)
        back_under(15, 5.0)
    elif sc == "no_timestamps":
        fed = auto.get("fed", {})
        ts = sum(((fed.get(d) or {}).get("rtt") or {}).get("sources", {}).get("timestamp", 0)
                 for d in ("upstream", "downstream"))
        check(ts == 0, "no_timestamps: %d samples timed by timestamps (0: none had them)" % ts)
        for d in ("down", "up"):
            held("low", d, 0.70)
            sent("low", d, 0.65)
        back_under(10, 3.0)
    elif sc == "far":
        for p in ("steady", "low", "recovered"):
            for d in ("down", "up"):
                held(p, d, 0.90)
                sent(p, d, 0.80)
            induced(p, 8.0)
    else:
        held("low", "up", 0.70, 2.0)
        sent("low", "up", 0.70)
        held("low", "down", 0.85)
        back_under(15, 5.0)
        induced("low", 10.0)
    if fell is not None:
        back = auto["held_%s_back_to_0.9_s" % fell]
        check(back is not None and back <= 10.0,
              "%s: the %s rate back at 0.9 of the modem %s s after it recovered (<= 10)"
              % (sc, "download" if fell == "down" else "upload", back))
    print("figure: %s: held %s, sent %s (down / up, steady / low / recovered)" % (sc, " ".join(
        "%.3f/%.3f" % (v(p, "held_down_of_modem"), v(p, "held_up_of_modem"))
        for p in ("steady", "low", "recovered")), " ".join(
        "%.3f/%.3f" % (v(p, "sent_down_of_modem"), v(p, "sent_up_of_modem"))
        for p in ("steady", "low", "recovered"))))
    print("plot: %s" % os.path.join(out, "autorate.png"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
