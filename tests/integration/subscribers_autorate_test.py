#!/usr/bin/python3
"""Integration: autorate steers the link that the subscribers share.

shaperd on net_pcap vdevs with subscribers and downstream autorate. Two
subscribers, plans of 6 and 8 Mbit/s, under a link of 10 Mbit/s; the WAN
side's pcap holds a backlog for both (UDP: no RTT samples). Autorate starts
at 10 Mbit/s and, with `no_samples: decay` and `decay` 20 %, moves within a
second to its `base` of 3 Mbit/s: the rate the subscribers' allocation
splits must follow it. Over a window of 3 s on shaperd's own clock
(subscribers.list's time_ns), read once the rate has settled at the base:
- autorate's rate (stats) is its base;
- the two subscribers together got that rate within 3 %, and each its fair
  half of it within 5 % (both plans lie above the half): a link left at its
  configured 10 Mbit/s would give them their plans, 14 Mbit/s together;
- at exit every frame is accounted for.

usage: subscribers_autorate_test.py SHAPERD [--workers N]
With --workers 2 the frames reach both workers and are steered to the one
that shapes each subscriber; the controller runs on the first and the
shards share its rate.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (check, check_accounting, failures, ip_frame,  # noqa: E402
                       pcap_ports_with, worker_lcores, workers_option)
from shaperlib.control import Control  # noqa: E402
from shaperlib.daemon import start_shaperd  # noqa: E402

ARGS, WORKERS = workers_option(sys.argv[1:])
SHAPERD = ARGS[0]
PLANS = {"c1": (6, "100.64.0.1"), "c2": (8, "100.64.0.2")}  # id: (plan Mbit/s, address)
LINK_MBIT, BASE_MBIT = 10, 3
FRAME = 1000
BACKLOG_S = 8.0  # at the base rate, per subscriber: it outlasts the test
WINDOW_S = 3.0


def main():
    tmp = tempfile.mkdtemp(prefix="shaper_subs_ar_")
    count = int(BASE_MBIT * 1e6 / 2 * BACKLOG_S / 8 / FRAME)
    frames = []
    for k in range(count):
        for cid, (_, addr) in sorted(PLANS.items()):
            frames.append(ip_frame("192.0.2.1", addr, 1000 + (k & 1), 5000, FRAME))
    subs = {
        "link": {"download": "%dmbit" % LINK_MBIT, "upload": "%dmbit" % LINK_MBIT},
        "subscribers": [
            {"id": cid, "download": {"max": "%dmbit" % mbit}, "upload": {"max": "1mbit"},
             "addresses": [addr]}
            for cid, (mbit, addr) in sorted(PLANS.items())
        ],
    }
    with open(os.path.join(tmp, "plans.json"), "w") as f:
        json.dump(subs, f)
    cfg = {
        "ports": pcap_ports_with(tmp, frames, WORKERS),
        # memlimit: room for the whole backlog (ECN-less UDP: oceanic keeps COBALT's drops
        # from emptying it within the test).
        "downstream": {"discipline": "cake", "memlimit": "32mb", "rtt": "oceanic",
                       "bandwidth": {"min": "1mbit", "max": "%dmbit" % LINK_MBIT,
                                     "base": "%dmbit" % BASE_MBIT, "no_samples": "decay",
                                     "decay": 20}},
        "upstream": {"discipline": "cake", "bandwidth": "%dmbit" % LINK_MBIT},
        "subscribers": {"file": os.path.join(tmp, "plans.json"), "active": 4},
        "dataplane": {"rt_priority": 50, "idle_sleep": "20us"},
    }
    lcores = worker_lcores(cfg, WORKERS)
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, "subs_ar", cfg, lcores=lcores,
                                        mem_mb=768, timeout=30)
    if d is None:
        check(False, "shaperd started with subscribers and autorate")
        return 1
    try:
        with Control(sock, timeout=20) as c:
            time.sleep(2.0)  # 20 % an interval: the base within a second
            a = c.result("subscribers.list")
            time.sleep(WINDOW_S)
            b = c.result("subscribers.list")
            st = c.result("stats")
            dt = (b["time_ns"] - a["time_ns"]) / 1e9
            ar = st["directions"]["downstream"]["rtt"]["autorate"]
            check(ar["rate"] * 8 == BASE_MBIT * 1000000,
                  "autorate's rate %.3f Mbit/s is its base %d (why: %s)"
                  % (ar["rate"] * 8 / 1e6, BASE_MBIT, ar["why"]))
            before = {s["id"]: s["download"]["bytes"] for s in a["subscribers"]}
            got = {s["id"]: (s["download"]["bytes"] - before[s["id"]]) * 8 / dt / 1e6
                   for s in b["subscribers"]}
            for s in b["subscribers"]:
                check(s["download"]["qlen"] > 0, "%s: still backlogged (%d queued)"
                      % (s["id"], s["download"]["qlen"]))
            total = sum(got.values())
            print("figure: %s Mbit/s over %.2f s of shaperd's clock, %.3f together (autorate's "
                  "rate %d, plans %s, link configured %d)" % (
                      ", ".join("%s %.3f" % kv for kv in sorted(got.items())), dt, total,
                      BASE_MBIT, "/".join(str(p[0]) for _, p in sorted(PLANS.items())),
                      LINK_MBIT))
            check(abs(total / BASE_MBIT - 1) < 0.03,
                  "the subscribers together got %.3f Mbit/s, autorate's %d within 3 %%"
                  % (total, BASE_MBIT))
            for cid, v in sorted(got.items()):
                check(abs(v / (BASE_MBIT / 2) - 1) < 0.05,
                      "%s got %.3f Mbit/s, half of autorate's rate within 5 %%" % (cid, v))
    finally:
        d.stop()
    with open(stats_path) as f:
        check_accounting(json.load(f), "at exit")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
