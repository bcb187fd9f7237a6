#!/usr/bin/python3
"""Integration: soak. Mixed traffic (IPv4/IPv6, UDP/TCP, four DSCPs, 64..1514
bytes) pours in both ways from net_pcap infinite_rx, far above the shaped
rate, while `config.set` changes rate, rtt, diffserv and discipline of both
directions every second (cake, fq_codel and fifo in turn; downstream also
runs the WAN emulator). Several times a second `stats` is read and:
  - received + held_at_reset = sent + dropped + queued in every snapshot,
  - no counter moves backwards (one stats.reset, after the first cycle,
    keeps what is queued as held_at_reset),
  - mbufs in use minus queued (what the drivers hold: the worker takes both
    in the same snapshot) stays flat, as does the DPDK heap sampled at the
    same point of the settings cycle, and RSS: the slopes are printed and
    bounded so that one mbuf, or one heap allocation, leaked per change
    would fail.
At exit the identity holds with nothing queued and every mbuf is back.

usage: soak_test.py SHAPERD [SECONDS]   (60 in CI; 600 for the long soak)
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (Control, accounting_errors, asan_build, check, check_accounting,  # noqa: E402
                     failures, ip_frame, rss_kb, slope, start_shaperd, write_pcap)

SHAPERD = sys.argv[1]
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 60
SAMPLES_PER_CHANGE = 4

# One settings cycle: every discipline, diffserv mode and a spread of rates and rtts.
CYCLE = [
    {"discipline": "cake", "bandwidth": "50mbit", "rtt": "100ms", "diffserv": "diffserv3", "memlimit": "4mb"},
    {"discipline": "cake", "bandwidth": "20mbit", "rtt": "20ms", "diffserv": "diffserv4", "memlimit": "2mb"},
    {"discipline": "fq_codel", "bandwidth": "30mbit", "limit": 2000},
    {"discipline": "cake", "bandwidth": "80mbit", "rtt": "300ms", "diffserv": "besteffort", "memlimit": "4mb"},
    {"discipline": "fifo", "bandwidth": "10mbit", "limit": 500},
    {"discipline": "cake", "bandwidth": "5mbit", "rtt": "50ms", "diffserv": "diffserv8", "memlimit": "1mb"},
    {"discipline": "fq_codel", "bandwidth": "60mbit", "limit": 1000},
    {"discipline": "fifo", "bandwidth": "40mbit", "limit": 3000},
]


def mixed(side):
    """Frames from the LAN (side 0) or the WAN (side 1) host: 16 flows, 4 DSCPs."""
    a, b = ("10.0.0.1", "10.0.1.1") if side == 0 else ("10.0.1.1", "10.0.0.1")
    a6, b6 = ("fd00::1", "fd01::1") if side == 0 else ("fd01::1", "fd00::1")
    frames = []
    for i in range(64):
        src, dst = (a6, b6) if i % 4 == 3 else (a, b)
        frames.append(ip_frame(src, dst, 1000 + i % 16, 80, [64, 200, 576, 1000, 1514][i % 5],
                               tos=[0x00, 0xb8, 0x88, 0x20][i % 4], proto=6 if i % 3 == 0 else 17))
    return frames


def monotonic_counters(st):
    """{name: value} of every counter that may only grow."""
    out = {}
    for p, v in st["ports"].items():
        for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_missed", "rx_errors",
                  "tx_errors", "rx_nombuf", "link_changes", "reconnects"):
            out["ports.%s.%s" % (p, k)] = v[k]
    for d, v in st["directions"].items():
        for k in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_retries", "drops",
                  "packets", "bytes", "overlimits", "ecn_mark", "lag_skips"):
            out["%s.%s" % (d, k)] = v[k]
        for k, n in v["drop_reasons"].items():
            out["%s.drop_reasons.%s" % (d, k)] = n
        for k in ("received", "sent"):
            out["%s.accounting.%s" % (d, k)] = v["accounting"][k]
    return out


def held(st):
    """mbufs out of the pools but not queued: what the drivers hold (both directions)."""
    return sum(v["mbufs_in_use"] - sum(v["accounting"]["queued"].values())
               for v in st["directions"].values())


def helper_self_test(st):
    """accounting_errors must notice a broken identity, else every check of it is void."""
    check(accounting_errors(st) == [], "the helper passes a real snapshot")
    bad = json.loads(json.dumps(st))
    bad["directions"]["upstream"]["accounting"]["sent"] += 1
    check(len(accounting_errors(bad)) == 1, "the helper catches one packet too many sent")
    bad = json.loads(json.dumps(st))
    bad["directions"]["downstream"]["accounting"]["queued"]["tx_pending"] -= 1
    check(len(accounting_errors(bad)) == 1, "the helper catches one packet missing from a queue")
    bad = json.loads(json.dumps(st))
    del bad["directions"]["upstream"]["accounting"]
    check(len(accounting_errors(bad)) == 1, "the helper refuses stats without accounting")


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (hugepage-less EAL still wants /var/run/dpdk)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_soak_")
    write_pcap(os.path.join(tmp, "up.pcap"), mixed(0))
    write_pcap(os.path.join(tmp, "down.pcap"), mixed(1))
    start = dict(CYCLE[0])
    cfg = {
        # No tx_pcap: net_pcap frees what it sends.
        "ports": {"lan": "net_pcap0,rx_pcap=%s/up.pcap,infinite_rx=1" % tmp,
                  "wan": "net_pcap1,rx_pcap=%s/down.pcap,infinite_rx=1" % tmp},
        "upstream": start,
        "downstream": dict(start, emulate={"delay": "5ms", "loss": 1, "limit": 1000}),
        # Room for the largest limits of the cycle (config.set checks the pool).
        "dataplane": {"mbufs": 16383, "idle_sleep": "20us"},
    }
    env = None
    if asan_build(SHAPERD):
        # ASan keeps freed memory in quarantine (256 MB by default): RSS would
        # grow until that is full. A small one keeps RSS meaningful.
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS"), "quarantine_size_mb=4") if x)
    print("soak: %d s, settings changed every second through a cycle of %d%s" % (
        SECONDS, len(CYCLE), " (ASan build: ASAN_OPTIONS=%s)" % env["ASAN_OPTIONS"] if env else ""),
        flush=True)
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, "soak", cfg, mem_mb=1024, env=env)
    if not check(d is not None, "shaperd started"):
        sys.exit(1)
    ctl = Control(sock)
    samples = []  # (t, held mbufs, in use, rss KB)
    heap_at_cycle = []  # (change number, heap bytes) at the start of each cycle
    ident_errs, backwards, set_errs = [], [], []
    prev, n_snap = None, 0
    reset_ok, held_at_reset = None, None
    t0 = time.monotonic()
    try:
        change = 0
        while time.monotonic() - t0 < SECONDS:
            step = CYCLE[change % len(CYCLE)]
            if change % len(CYCLE) == 0:
                st = ctl.call("stats")["result"]
                heap_at_cycle.append((change, st["memory"]["heap_bytes"]))
            for dname in ("upstream", "downstream"):
                rep = ctl.call("config.set", {"direction": dname, "settings": step})
                if not rep["ok"]:
                    set_errs.append("change %d %s %s: %s" % (change, dname, json.dumps(step), rep["error"]))
            if change == len(CYCLE):
                # Once, with the queues full: counters restart from what is queued.
                reset_ok = ctl.call("stats.reset")["ok"]
                prev, held_at_reset = None, None
            tick = t0 + change + 1
            for k in range(SAMPLES_PER_CHANGE):
                time.sleep(max(0.0, t0 + change + (k + 1) / SAMPLES_PER_CHANGE * 0.95 - time.monotonic()))
                st = ctl.call("stats")["result"]
                n_snap += 1
                if n_snap == 1:
                    helper_self_test(st)
                ident_errs += ["change %d: %s" % (change, e) for e in accounting_errors(st)]
                if held_at_reset is None and change >= len(CYCLE):
                    held_at_reset = {n: v["accounting"]["held_at_reset"] for n, v in st["directions"].items()}
                cur = monotonic_counters(st)
                if prev is not None:
                    backwards += ["change %d: %s %d -> %d" % (change, k2, prev[k2], v)
                                  for k2, v in cur.items() if v < prev.get(k2, 0)]
                prev = cur
                samples.append((time.monotonic() - t0, held(st),
                                sum(v["mbufs_in_use"] for v in st["directions"].values()),
                                rss_kb(d.proc.pid)))
            time.sleep(max(0.0, tick - time.monotonic()))
            change += 1
        final = ctl.call("stats")["result"]
    finally:
        ctl.close()
        rc = d.stop(timeout=60)
    check(rc == 0, "shaperd exits 0 on SIGTERM (got %d)" % rc)
    check(not set_errs, "%d config.set changes per direction all applied %s" % (change, set_errs[:3]))
    check(not ident_errs, "received = sent + dropped + queued in all %d snapshots %s" % (n_snap, ident_errs[:3]))
    check(reset_ok is True and held_at_reset and all(n > 0 for n in held_at_reset.values()),
          "stats.reset under load kept the queued packets as held_at_reset %s" % held_at_reset)
    check(not backwards, "no counter moved backwards in %d snapshots %s" % (n_snap, backwards[:5]))
    for dname, v in final["directions"].items():
        a = v["accounting"]
        print("     %s: received %d, sent %d, dropped %d %s" % (
            dname, a["received"], a["sent"], sum(a["dropped"].values()),
            json.dumps({k: n for k, n in a["dropped"].items() if n})))
        check(a["sent"] > 0 and sum(a["dropped"].values()) > 0, "%s moved and dropped traffic" % dname)

    # Slopes after the first cycle (pages and pools warm), per settings change.
    warm = [s for s in samples if s[0] >= len(CYCLE)]
    ts = [s[0] for s in warm]
    held_slope = slope(ts, [s[1] for s in warm])
    in_use_slope = slope(ts, [s[2] for s in warm])
    rss_slope = slope(ts, [s[3] for s in warm])
    print("     mbufs in use: %d..%d, slope %+.2f per change; held by drivers %d..%d, slope %+.3f per change"
          % (min(s[2] for s in warm), max(s[2] for s in warm), in_use_slope,
             min(s[1] for s in warm), max(s[1] for s in warm), held_slope))
    print("     RSS %d..%d KB, slope %+.2f KB per change" % (
        min(s[3] for s in warm), max(s[3] for s in warm), rss_slope))
    heaps = [h for n, h in heap_at_cycle]
    heap_slope = slope([n for n, h in heap_at_cycle[1:]], heaps[1:]) if len(heaps) > 2 else 0.0
    print("     DPDK heap at %d cycle starts: %d..%d bytes (first %d, last %d), slope %+.2f bytes per change"
          % (len(heaps), min(heaps), max(heaps), heaps[0], heaps[-1], heap_slope))
    check(abs(held_slope) < 0.25, "mbufs held outside the queues flat: %+.3f per change (a leak of one"
          " mbuf per change is +1)" % held_slope)
    check(len(heaps) > 2 and abs(heap_slope) < 8, "DPDK heap flat across %d cycles: %+.2f bytes per change"
          " (an allocation leaked per change is >= 64)" % (len(heaps), heap_slope))
    check(abs(rss_slope) < 64, "RSS flat: %+.2f KB per change (bound 64 KB)" % rss_slope)

    with open(stats_path) as f:
        ex = json.load(f)
    check_accounting(ex, "at exit")
    check(all(sum(v["accounting"]["queued"].values()) == 0 for v in ex["directions"].values()),
          "nothing queued at exit")
    check(ex["mbufs_in_use"] == 0, "every mbuf back in the pools at exit (%d in use)" % ex["mbufs_in_use"])
    if failures:
        d.dump()
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("all checks passed")


if __name__ == "__main__":
    main()
