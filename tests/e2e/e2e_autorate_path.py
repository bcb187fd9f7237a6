#!/usr/bin/python3
"""Autorate when the path's delay steps and the line does not (a satellite
handover, an LTE handover, a reroute): tools/testbed/autorate.py with
--path-step.

usage: e2e_autorate_path.py SHAPERD [OUTDIR] [-- EXTRA autorate.py ARGS]

Kernel tbf "modems" with 1 MB buffers (100/20 Mbit/s) on the WAN side of
shaperd, RRUL (4 TCP up, 4 down) and ICMP probes for 30 s; the modems keep
their rate, and every 5 s the path's delay steps up by 25 ms and back
(shaperd's upstream delay line, changed live through config.set: the bed
has no netem). Autorate runs with min 10 %, max the nominal rate. The
controller first reads a step up as a queue and cuts; after `path_checks`
refractory periods of a flat rise it takes the step into the baseline and
puts the rate back (two runs: the upload held at 0.39-0.44 of the modem for
under a second at each step up, 0.964-0.966 on average; the download, judged
on its one-way delay, which the step does not touch, held 1.000). One that
never absorbs a step (planted with `-- --tune '{"path_checks": 0}'`: the
upload fell to its minimum, held 0.241 on average, sent 0.240) fails three
checks. Asserted over the whole load, from shaperd's own figures
(the rate poller's `stats`, the shaper's bytes over its own clock):
- the rate held, mean >= 0.90 of the modem's and never below 0.25 of it
  (its minimum is 0.10), each direction;
- the shaper sent >= 0.80 of the modem's rate, each direction (a looser
  bound: it also needs TCP to fill the longer path; measured 0.86 / 0.92
  down / up while other jobs loaded the machine);
- the induced latency (probe RTT less the idle RTT and the step in force)
  median <= 5 ms: absorbing the steps did not let a queue stand.
Exit 0 = met, 1 = missed, 77 = not root or a tool missing.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import check, failures, run_autorate, split_extra  # noqa: E402


def main():
    argv, extra = split_extra(sys.argv[1:])
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="shaper_arpath_")
    rc, res = run_autorate(argv[0], out, ["--phase", "10", "--modes", "auto", "--path-step", "25ms",
                                          "--step-every", "5", "--prefix", "ap"] + extra)
    if res is None:
        return rc
    auto = res["auto"]

    whole = auto["phases"]["whole"]
    print("figure: path steps at %s (s from the load, ms)" % auto["path_steps"])

    def v(key):
        x = whole.get(key)
        return x if x is not None else -1.0

    for d, name in (("down", "download"), ("up", "upload")):
        check(v("held_%s_of_modem" % d) >= 0.90,
              "path steps: %s rate held at %.3f of the modem on average (>= 0.90)"
              % (name, v("held_%s_of_modem" % d)))
        check(v("held_%s_lowest_of_modem" % d) >= 0.25,
              "path steps: %s rate never held below %.3f of the modem (>= 0.25)"
              % (name, v("held_%s_lowest_of_modem" % d)))
        check(v("sent_%s_of_modem" % d) >= 0.80,
              "path steps: the shaper sent %.3f of the %s modem's rate by its clock (>= 0.80)"
              % (v("sent_%s_of_modem" % d), name))
    print("figure: TCP goodput %.3f down / %.3f up of the modem (not asserted: the flows' own "
          "pace)" % (v("goodput_down_of_modem"), v("goodput_up_of_modem")))
    ind = whole.get("induced_median_ms")
    check(ind is not None and ind <= 5.0,
          "path steps: induced latency median %s ms, less the step in force (<= 5)"
          % ("%.2f" % ind if ind is not None else ind))
    print("plot: %s" % os.path.join(out, "autorate.png"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
