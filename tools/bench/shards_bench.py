#!/usr/bin/python3
"""Scale-out benchmark: processed Mpps with 1 and 2 workers.

shaperd reads a 64-byte pcap of 10k flows from every rx queue of a net_pcap
LAN port (infinite_rx) and sends to a net_null WAN port, CAKE diffserv4
triple-isolate at 10 Gbit/s (so the scheduler works, but the rate never
binds on this machine). With N workers the LAN port has N rx queues, each
replaying its own pcap, and software steering hands the frames of other
shards to their worker (about (N-1)/N of them). Runs alternate 1 and 2
workers (--runs each), so drift hits both alike; medians are printed with
the ratio.

Figures: processed = frames the workers took from the rx queues
(ports.lan.rx_packets), delivered = directions.upstream.tx_packets, both
over the measured window by the daemon's own counters; drops by reason.

usage: shards_bench.py [--shaperd PATH] [--runs 3] [--duration 5]
Run it on a quiet machine: it measures wall-clock rates.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))
import gen_pcap  # noqa: E402
from testlib import Control, start_shaperd  # noqa: E402

DIRECTION = {"discipline": "cake", "bandwidth": "10gbit", "diffserv": "diffserv4",
             "isolation": "triple-isolate"}


def run(shaperd, tmp, workers, pcaps, warmup, duration):
    cfg = {
        "ports": {"lan": "net_pcap0,%s,infinite_rx=1" % ",".join(
                      "rx_pcap=%s" % p for p in pcaps[:workers]),
                  "wan": "net_null0,no-rx=1"},
        "upstream": DIRECTION, "downstream": DIRECTION,
        "lcores": {"workers": list(range(1, workers + 1))},
        "dataplane": {"mbufs": {"upstream": 131072, "downstream": "auto"}, "idle_sleep": "0us"},
    }
    # The main lcore (it sleeps in poll) shares CPU 0 with the second worker.
    lcores = "0@0,1@1" if workers == 1 else "0@0,1@1,2@0"
    d, sock, _ = start_shaperd(shaperd, tmp, "sb%d" % workers, cfg, lcores=lcores, mem_mb=2048)
    if d is None:
        sys.exit("shaperd did not start")
    ctl = Control(sock)

    def snap():
        st = ctl.call("stats", {"direction": "upstream"})["result"]
        up = st["directions"]["upstream"]
        return (time.monotonic(), st["ports"]["lan"]["rx_packets"], up["tx_packets"],
                dict(up["drop_reasons"]))

    time.sleep(warmup)
    a = snap()
    time.sleep(duration)
    b = snap()
    ctl.close()
    rc = d.stop()
    if rc != 0:
        d.dump()
        sys.exit("shaperd exited %d" % rc)
    dt = b[0] - a[0]
    drops = {k: (b[3][k] - a[3].get(k, 0)) / dt / 1e6 for k in b[3] if b[3][k] != a[3].get(k, 0)}
    return {"processed": (b[1] - a[1]) / dt / 1e6, "delivered": (b[2] - a[2]) / dt / 1e6,
            "drops": drops}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shaperd", default=os.path.join(REPO, "build", "src", "shaperd"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--duration", type=float, default=5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="shaper_shards_bench_")
    pcaps = []
    for i in range(2):
        p = os.path.join(tmp, "q%d.pcap" % i)
        gen_pcap.generate(p, flows=10000, size="64", packets=gen_pcap.default_packets(10000),
                          seed=1 + i)
        pcaps.append(p)
    res = {1: [], 2: []}
    for r in range(args.runs):
        for w in (1, 2):
            x = run(args.shaperd, tmp, w, pcaps, args.warmup, args.duration)
            res[w].append(x)
            print("run %d, %d worker(s): processed %.3f Mpps, delivered %.3f Mpps, drops %s" % (
                r + 1, w, x["processed"], x["delivered"],
                {k: round(v, 3) for k, v in x["drops"].items()}), flush=True)
    med = {w: {k: statistics.median(x[k] for x in res[w]) for k in ("processed", "delivered")}
           for w in res}
    print("\n| workers | processed Mpps (median of %d) | delivered Mpps |" % args.runs)
    print("|---|---|---|")
    for w in (1, 2):
        print("| %d | %.3f | %.3f |" % (w, med[w]["processed"], med[w]["delivered"]))
    print("ratio 2/1: processed %.2f, delivered %.2f" % (
        med[2]["processed"] / med[1]["processed"], med[2]["delivered"] / med[1]["delivered"]))
    print(json.dumps({"runs": {str(w): res[w] for w in res}, "median": med}))


if __name__ == "__main__":
    main()
