#!/usr/bin/python3
"""Autorate against a fixed 95 % setting behind a changing modem: the
short version of tools/testbed/autorate.py, with the criteria below.

usage: e2e_autorate.py SHAPERD [OUTDIR] [WORKERS]

With WORKERS (2): autorate alone on that many workers sharing the link
(shard 0's controller steers the share group's rate from every shard's
samples), held to the same criteria; the fixed setting is not run.

Kernel tbf "modems" with 1 MB buffers (100/20 Mbit/s) on the WAN side of
shaperd, RRUL (4 TCP up, 4 down) and ICMP probes; the modems halve after
--phase seconds and recover after two. One attempt, both modes in the same
invocation. Asserted, for autorate ("bandwidth": {"min", "max"}), first of
the controller itself, from shaperd's own figures (the rate poller's
`stats`: the rate it held, and the bytes the shaper sent over its own clock,
`time_ns`, so neither iperf3's pace nor the poller's timing on a busy
machine enters):
- steady modem: the rate held (mean of the samples) >= 0.90 of the modem's,
  each direction, and over the time the shaper held a queue (`backlogged_us`
  less its stalls) it sent >= 0.95 of the rate it held (measured 1.00-1.02
  with a niced CPU hog beside it, 95-99 % of the phase backlogged); what it
  sent of the modem's rate over the whole phase also depends on the senders'
  pace on a busy machine (0.88-0.99 seen) and is held only to >= 0.50;
- modem halved: the rate held >= 0.70 of the halved modem's (a controller
  that cuts to its minimum holds 0.2);
- after the modem recovers, the rate held back at 0.9 of it within 10 s
  (a controller that never raises stays at about half), and the shaper's
  delivery judged as in the steady phase;
then of what users see:
- steady: induced latency median <= 5 ms; TCP goodput over what the shaper
  sent in the same phase >= 0.85 down and >= 0.75 up (a full frame carries
  0.956 of its bytes as payload; up, the downloads' ACKs take about a tenth
  more); a stalled machine lowers goodput and what the shaper sent alike;
- after the modem halves, the 1-s median of the induced latency is back
  under 10 ms within 3 s.
The upstream runs CAKE's ack-filter-aggressive, as CAKE advises for a link
this asymmetric (the downloads' ACKs, by estimate 4000 a second of 66
bytes, take about a tenth of 20 Mbit/s).
And for the fixed setting, in the same run: the low phase stays bloated
(induced latency median >= 100 ms), which is what autorate is for.
Exit 0 = met, 1 = missed, 77 = not root or a tool missing.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import check, check_goodput_of_sent, failures, run_autorate  # noqa: E402
PHASE = 10


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="shaper_autorate_e2e_")
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    extra = ["--workers", str(workers), "--modes", "auto"] if workers > 1 else []
    rc, res = run_autorate(sys.argv[1], out, ["--phase", str(PHASE), "--prefix", "ae"] + extra)
    if res is None:
        return rc

    auto, fixed = res["auto"], res.get("fixed95")

    def share(ph, key):
        v = auto["phases"][ph].get(key)
        return v if v is not None else -1.0

    def owed_check(ph, d, name):
        # The shaper's delivery: over the time it held a queue (less stalls), it
        # sent the rate it held. What it sent of the modem's rate over the whole
        # phase is the senders' pace too (two workers and the TCP endpoints on
        # two cores: 0.879 in a run whose owed rate was the held one): held only
        # to a bound stolen time does not cross (the load ran at all).
        owed = auto["phases"][ph].get("owed_sent_%s_of_held" % d)
        if owed is not None:
            check(owed >= 0.95,
                  "autorate, %s: over the time it held a %s queue the shaper sent %.3f of the "
                  "rate it held (>= 0.95; %.0f %% of the phase backlogged)"
                  % (ph, name, owed,
                     100 * (auto["phases"][ph].get("backlogged_%s_share" % d) or 0)))
        else:
            print("note %s: the %s queue was held under 0.1 s of the phase: the load did not "
                  "fill the rate, so no verdict on its delivery" % (ph, name))
        check(share(ph, "sent_%s_of_modem" % d) >= 0.50,
              "autorate, %s: the shaper sent %.3f of the %s modem's rate by its clock (>= 0.50: "
              "the load ran)" % (ph, share(ph, "sent_%s_of_modem" % d), name))

    # The controller itself: the rate it held and what the shaper sent over
    # its own clock, as shares of the modem's rate.
    for d, name in (("down", "download"), ("up", "upload")):
        check(share("steady", "held_%s_of_modem" % d) >= 0.90,
              "autorate, steady: %s rate held at %.3f of the modem (>= 0.90)"
              % (name, share("steady", "held_%s_of_modem" % d)))
        owed_check("steady", d, name)
        check(share("low", "held_%s_of_modem" % d) >= 0.70,
              "autorate, modem halved: %s rate held at %.3f of the halved modem (>= 0.70)"
              % (name, share("low", "held_%s_of_modem" % d)))
        back = auto.get("held_%s_back_to_0.9_s" % d)
        check(back is not None and back <= 10.0,
              "autorate: %s rate back at 0.9 of the modem %s s after it recovered (<= 10)"
              % (name, back))
        owed_check("recovered", d, name)
    # TCP's goodput against what the shaper sent in the same phase (a stall
    # of the machine lowers both alike): what drops upstream of the
    # receiver cost TCP, and what the frames carry.
    st = auto["phases"]["steady"]
    check_goodput_of_sent(st, "autorate, steady")
    ind = st["induced_median_ms"]
    check(ind is not None and ind <= 5.0,
          "autorate, steady: induced latency median %s ms (<= 5)" % ("%.2f" % ind if ind is not None else ind))
    back = auto["latency_back_under_10ms_s"]
    check(back is not None and back <= 3.0,
          "autorate: induced latency under 10 ms %s s after the modem halved (<= 3)" % back)
    if fixed is not None:
        low = fixed["phases"]["low"]["induced_median_ms"]
        check(low is not None and low >= 100.0,
              "fixed 95 %%, same run: induced latency median %s ms in the low phase (>= 100: "
              "bloated)" % ("%.1f" % low if low is not None else low))
    print("plot: %s" % os.path.join(out, "autorate.png"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
