#!/usr/bin/python3
"""Integration: a plan per unknown address through a real shaperd.

shaperd on net_pcap vdevs with subscribers and `"unknown": {"download":
"1mbit", ...}`: one subscriber (plan 2 Mbit/s) and four addresses no
subscriber owns (three IPv4, one IPv6 whose frames come from two addresses
of one /64) under a 6 Mbit/s link, all backlogged from the WAN side's
pcap (UDP). `unknown_addresses` is 2 per worker, so not every unknown
address finds a slot: those that do are shaped at 1 Mbit/s each, the rest
share the link's own CAKE. Over a window of shaperd's own clock
(subscribers.list's time_ns), each of the link's children (the subscriber,
each listed address, and the link's own entry if an address shares it) got
its max-min share of the link within 3 % (or short of it by as much as a
worker wrote off of the window: lag_skipped_us, its machine's stalls):
- the subscriber min(its plan, the level);
- each unknown address listed (a row of its own, "unknown": true, named
  by its /32 or /64) its 1 Mbit/s; the IPv6 /64's two addresses are one
  row;
- with one worker exactly two are listed; with two, as many as the
  steering put on each worker's two slots (each address on one worker
  only: never listed twice);
- the link's own entry (the unlisted ones, if any) the level: it competes
  as one more child of the link, and nothing is shaped twice;
- subscribers.metrics (Prometheus' source, open to the user level), read
  just after: its top-N rows name no address (c1 alone), and the link
  node's bytes are at least what the subscriber, the addresses and the
  link's own entry had sent by the list before it;
- at exit every frame is accounted for.

usage: subscribers_unknown_test.py SHAPERD [--workers N]
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
LINK_MBIT, PLAN_MBIT, UNKNOWN_MBIT = 6, 2, 1
SUB_ADDR = "100.64.0.1"
# Unknown addresses: each a list of the LAN addresses its frames go to (one /32, or one /64).
UNKNOWN = {
    "100.64.9.1/32": ["100.64.9.1"],
    "100.64.9.2/32": ["100.64.9.2"],
    "100.64.9.3/32": ["100.64.9.3"],
    "2001:db8:0:9::/64": ["2001:db8:0:9::1", "2001:db8:0:9::2"],
}
# Few enough frames that, dealt to two workers at once, the half each steers to the other
# fits the steering ring (8192): a frame dropped there shortens a backlog. Low rates, so that
# they last: all frames arrive at once when the ports start, and under ASan beside another
# test the window has ended up to 7.2 s after that.
FRAME = 1500
BACKLOG_S = 11
WINDOW_S = 2.5


def water_level(ceilings, total):
    """The level L of a max-min split of total: sum(min(c, L)) = total (inf if all fit)."""
    left, n = float(total), len(ceilings)
    for i, c in enumerate(sorted(ceilings)):
        if c * (n - i) >= left:
            return left / (n - i)
        left -= c
    return float("inf")


def skipped_us(c):
    """Each worker's stalls written off so far (lag_skipped_us): time in which
    its machine, not the shaper, kept it from sending (lag_limit)."""
    st = c.result("stats", {"direction": "downstream", "shards": True})
    return [sh["lag_skipped_us"] for sh in st["directions"]["downstream"]["shards"]]


def near(got, want, lost):
    """got within 3 % of want, or short of it by what its worker may have written off."""
    return -0.03 - lost < got / want - 1 < 0.03


def main():
    tmp = tempfile.mkdtemp(prefix="shaper_subs_unk_")
    # Each backlog lasts BACKLOG_S at the most it may get: an unlisted address alone on the
    # link's rest (the /64's two addresses: half each). All of it fits the buffer (memlimit),
    # and no AQM drop shortens it (an RTT of an hour: CoDel's target is far above any delay).
    rest = LINK_MBIT - PLAN_MBIT - UNKNOWN_MBIT * 2
    per = {SUB_ADDR: PLAN_MBIT}
    for addrs in UNKNOWN.values():
        for a in addrs:
            per[a] = rest / len(addrs) * 1.2
    counts = {a: int(mbit * 1e6 * BACKLOG_S / 8 / FRAME) for a, mbit in per.items()}
    frames = []
    for k in range(max(counts.values())):
        for a in sorted(per):
            if k < counts[a]:
                src = "2001:db8:ffff::1" if ":" in a else "192.0.2.1"
                frames.append(ip_frame(src, a, 1000 + (k & 1), 5000, FRAME))
    subs = {
        "link": {"download": "%dmbit" % LINK_MBIT, "upload": "%dmbit" % LINK_MBIT},
        "subscribers": [{"id": "c1", "download": {"max": "%dmbit" % PLAN_MBIT},
                         "upload": {"max": "1mbit"}, "addresses": [SUB_ADDR]}],
    }
    with open(os.path.join(tmp, "plans.json"), "w") as f:
        json.dump(subs, f)
    cfg = {
        "ports": pcap_ports_with(tmp, frames, WORKERS),
        "downstream": {"discipline": "cake", "memlimit": "96mb", "rtt": "interplanetary",
                       "bandwidth": "%dmbit" % LINK_MBIT},
        "upstream": {"discipline": "cake", "bandwidth": "%dmbit" % LINK_MBIT},
        "subscribers": {"file": os.path.join(tmp, "plans.json"), "active": 8,
                        "unknown": {"download": "%dmbit" % UNKNOWN_MBIT, "upload": "1mbit"},
                        "unknown_addresses": 2},
        "dataplane": {"rt_priority": 50, "idle_sleep": "20us"},
    }
    lcores = worker_lcores(cfg, WORKERS)
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, "subs_unk", cfg, lcores=lcores,
                                        mem_mb=1024, timeout=30)
    if d is None:
        check(False, "shaperd started with a plan per unknown address")
        return 1
    try:
        with Control(sock, timeout=20) as c:
            time.sleep(1.0)
            skip_a = skipped_us(c)
            a = c.result("subscribers.list")
            time.sleep(WINDOW_S)
            b = c.result("subscribers.list")
            skip_b = skipped_us(c)
            m = c.result("subscribers.metrics", {"top": 10})
    finally:
        d.stop()
    dt = (b["time_ns"] - a["time_ns"]) / 1e9
    # The most any worker wrote off of the window: a shortfall it may excuse.
    lost = max(y - x for x, y in zip(skip_a, skip_b)) / 1e6 / dt

    def sent(rows):
        return {r["id"]: r["download"]["bytes"] for r in rows}

    before, after = sent(a["subscribers"]), sent(b["subscribers"])
    got = {i: (after[i] - before.get(i, 0)) * 8 / dt / 1e6 for i in after}
    link = (b["link"]["download"]["bytes"] - a["link"]["download"]["bytes"]) * 8 / dt / 1e6
    rows = {r["id"]: r for r in b["subscribers"]}
    listed = sorted(i for i, r in rows.items() if r.get("unknown"))
    print("figure: %s; the link's own entry %.3f Mbit/s, over %.2f s of shaperd's clock "
          "(plan %d, unknown plan %d, link %d, %d worker(s); at most %.2f %% written off)" % (
              ", ".join("%s %.3f" % kv for kv in sorted(got.items())), link, dt, PLAN_MBIT,
              UNKNOWN_MBIT, LINK_MBIT, WORKERS, lost * 100))
    # The link's children: c1, each listed address, and the link's own entry if it has traffic.
    level = water_level([PLAN_MBIT] + [UNKNOWN_MBIT] * len(listed)
                        + ([LINK_MBIT] if len(listed) < len(UNKNOWN) else []), LINK_MBIT)
    want_c1 = min(PLAN_MBIT, level)
    check(near(got.get("c1", 0), want_c1, lost),
          "c1 got %.3f Mbit/s, min(its plan %d, the link's level %.3f) within 3 %%"
          % (got.get("c1", 0), PLAN_MBIT, level))
    check(all(i in UNKNOWN for i in listed), "every unknown row is one of ours: %s" % listed)
    check(len(listed) == len(set(listed)), "no unknown address listed twice: %s" % listed)
    if WORKERS == 1:
        check(len(listed) == 2, "two unknown addresses hold the two slots: %s" % listed)
    else:
        check(2 <= len(listed) <= min(len(UNKNOWN), 2 * WORKERS),
              "the unknown addresses hold 2..%d slots: %s" % (2 * WORKERS, listed))
    check(b.get("unknown_count") == len(listed), "unknown_count %s is the rows' %d"
          % (b.get("unknown_count"), len(listed)))
    for i in listed:
        check(near(got[i], min(UNKNOWN_MBIT, level), lost),
              "%s got %.3f Mbit/s, the unknown plan %d within 3 %%" % (i, got[i], UNKNOWN_MBIT))
        check(rows[i]["node"] == "link" and rows[i]["download"]["qlen"] > 0,
              "%s: under the link, still backlogged (%d queued)"
              % (i, rows[i]["download"]["qlen"]))
    if len(listed) < len(UNKNOWN):
        check(near(link, level, lost) and b["link"]["download"]["qlen"] > 0,
              "the link's own entry (the %d unlisted, %d queued) got %.3f Mbit/s, the link's "
              "level %.3f within 3 %%" % (len(UNKNOWN) - len(listed),
                                          b["link"]["download"]["qlen"], link, level))
    check([r["id"] for r in m["subscribers"]] == ["c1"],
          "subscribers.metrics ranks c1 alone (no address at the user level): %s"
          % [r["id"] for r in m["subscribers"]])
    link_node = [n for n in m["nodes"] if n["node"] == "link"]
    by_list = sum(r["download"]["bytes"] for r in b["subscribers"]) + b["link"]["download"]["bytes"]
    check(len(link_node) == 1 and link_node[0]["download"]["bytes"] >= by_list,
          "the link node's bytes in subscribers.metrics (%s) hold all the list had (%d)"
          % (link_node[0]["download"]["bytes"] if link_node else None, by_list))
    with open(stats_path) as f:
        check_accounting(json.load(f), "at exit")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
