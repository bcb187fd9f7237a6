#!/usr/bin/python3
"""Integration: two workers shape one link together.

Each port is a net_pcap vdev with two rx and two tx queues, so shaperd runs
two shards per direction, one per worker. Every pcap queue carries frames of
every LAN host, so software steering must move about half of them to the
other worker. 16 LAN hosts each send two TCP flows up and receive two down,
all dumped at once, so both directions stay backlogged for ~2 s at 8 Mbit/s.

Checked, for one worker and then for two on the same input:
  - the shaped total (tx bytes over a window, from the daemon's own
    snapshots) is the configured rate within 2 %, and two workers deliver
    the same as one;
  - every frame is accounted for at exit (identity, mbufs back, the output
    pcaps hold exactly the frames sent, each from the input);
two workers only:
  - each LAN host's flows, both directions, are on one shard (from `flows`),
    and both shards carry hosts;
  - frames were steered both ways between the workers, and each shard's own
    counters satisfy the identity (steering term included);
  - hosts get equal shares across the shards (CAKE dual-host isolation in
    each shard, the link split by active hosts): every host's bytes in the
    window within 10 % of the mean, from the output pcaps' tx timestamps.

usage: shards_test.py SHAPERD
"""
import collections
import json
import os
import socket
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (Control, accounting_errors, check, check_accounting, failures,  # noqa: E402
                     ip_frame, read_pcap, start_shaperd, write_pcap)

SHAPERD = sys.argv[1]
HOSTS = 16
FLOWS = 2           # per host and direction
FRAMES = 60         # per flow
SIZE = 1000
RATE = 8000000      # bit/s, each direction
NEW_RATE = 4000000  # after config.set, in the third run
SERVER = "198.51.100.1"
WINDOW = (0.4, 1.6)  # seconds after the first frame went out: everyone still backlogged


def host(i):
    return "10.0.%d.%d" % (i // 200, i % 200 + 1)


def with_seq(frame, seq):
    """The TCP frame with its sequence number set (IPv4, no options)."""
    return frame[:38] + struct.pack("!I", seq) + frame[42:]


def frames_for(direction):
    """Every flow's frames, numbered in their TCP sequence field, interleaved
    across flows (as the hosts would send them)."""
    flows = []
    for h in range(HOSTS):
        for f in range(FLOWS):
            if direction == "upstream":
                fr = ip_frame(host(h), SERVER, 40000 + f, 443, SIZE, proto=6)
            else:
                fr = ip_frame(SERVER, host(h), 443, 40000 + f, SIZE, proto=6)
            flows.append([with_seq(fr, k) for k in range(FRAMES)])
    return [fl[k] for k in range(FRAMES) for fl in flows]


def out_of_order(got):
    """Frames whose TCP sequence is not above the last one of their flow."""
    last, bad = {}, 0
    for _, b in got:
        key, seq = b[26:38], struct.unpack("!I", b[38:42])[0]
        bad += key in last and seq <= last[key]
        last[key] = seq
    return bad


def lan_host(frame, direction):
    """The LAN host of an IPv4 frame: the source going up, the destination coming down."""
    ip = frame[14 + 12:14 + 16] if direction == "upstream" else frame[14 + 16:14 + 20]
    return socket.inet_ntoa(ip)


def config(tmp, name, workers, inputs):
    q = lambda role, files: ",".join(  # noqa: E731
        ["rx_pcap=%s" % f for f in files] +
        ["tx_pcap=%s/%s_%s_out%d.pcap" % (tmp, name, role, i) for i in range(workers)])
    direction = {"discipline": "cake", "bandwidth": "%dbit" % RATE, "overhead": "raw",
                 "diffserv": "besteffort", "rtt": "10s", "memlimit": "64mb",
                 # a worker descheduled for a few ms (a 2-core VM) catches up instead of
                 # writing the time off: the rate is what this test measures
                 "lag_limit": "50ms"}
    return {
        "ports": {"lan": "net_pcap0," + q("lan", inputs["upstream"][:workers]),
                  "wan": "net_pcap1," + q("wan", inputs["downstream"][:workers])},
        "upstream": dict(direction, isolation="dual-srchost"),
        "downstream": dict(direction, isolation="dual-dsthost"),
        "lcores": {"workers": list(range(1, workers + 1))},
        # Both workers share CPU 1 (the machine has two): napping when idle lets
        # each run whenever it has work, instead of time-slicing two busy pollers.
        "dataplane": {"idle_sleep": "50us"},
    }


def split_files(tmp, frames, direction, parts):
    """The frames over `parts` queue files, alternately: every file has every host."""
    paths = []
    for i in range(parts):
        p = os.path.join(tmp, "%s_in%d_of%d.pcap" % (direction, i, parts))
        write_pcap(p, frames[i::parts])
        paths.append(p)
    return paths


def shaped_rate(samples, start=None):
    """Bits per second over the window, summed over the shards: each shard's
    bytes between its snapshots nearest the window's edges, over its own
    clock (the shards publish up to 10 ms apart). The window counts from the
    first frame out, or from start (a worker time in ns)."""
    if start is None:
        start = min((t for snap in samples for t, b in snap if b > 0), default=None)
    if start is None:
        return 0.0
    total = 0.0
    for i in range(len(samples[0])):
        series = [snap[i] for snap in samples]
        lo = min(series, key=lambda s: abs(s[0] - start - WINDOW[0] * 1e9))
        hi = min(series, key=lambda s: abs(s[0] - start - WINDOW[1] * 1e9))
        total += (hi[1] - lo[1]) * 8e9 / (hi[0] - lo[0]) if hi[0] > lo[0] else 0.0
    return total


def run(tmp, name, workers, inputs, frames, set_rate=False):
    cfg = config(tmp, name, workers, inputs)
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, name, cfg,
                                        # main lcore on CPU 0, the workers on CPU 1
                                        lcores=",".join(["0@0"] + ["%d@1" % (i + 1) for i in range(workers)]),
                                        mem_mb=1024)
    if d is None:
        check(False, "%s: shaperd started" % name)
        return None
    ctl = Control(sock)
    samples = {"upstream": [], "downstream": []}
    flows, shard_stats, change = None, None, None
    # until every frame is out (the third run drains at half the rate after the change)
    t_end = time.monotonic() + (5.5 if set_rate else 3.5)
    while time.monotonic() < t_end:
        st = ctl.call("stats", {"shards": True})["result"]
        for dn in samples:
            # each shard's counters with its worker's clock at that snapshot
            samples[dn].append([(x["time_ns"], x["tx_bytes"]) for x in st["directions"][dn]["shards"]])
        if flows is None and st["directions"]["upstream"]["tx_packets"] > 200:
            flows = ctl.call("flows", {"top": 1000})["result"]
            shard_stats = ctl.call("stats", {"shards": True})["result"]
            if set_rate:
                for dn in samples:
                    rep = ctl.call("config.set", {"direction": dn, "settings": {
                        "bandwidth": "%dbit" % NEW_RATE}})
                    check("result" in rep, "%s %s: config.set bandwidth %d bit/s: %s" % (
                        name, dn, NEW_RATE, rep.get("error")))
                change = max(t for t, _ in samples["upstream"][-1])
        time.sleep(0.05)
    ctl.close()
    rc = d.stop()
    check(rc == 0, "%s: shaperd exits 0 (every mbuf back in its pool)" % name)
    if rc != 0:
        d.dump()
    with open(stats_path) as f:
        final = json.load(f)
    check_accounting(final, "%s at exit" % name)
    check(final.get("mbufs_in_use") == 0, "%s: mbufs in use at exit %s" % (name, final.get("mbufs_in_use")))
    out = {}
    for dn, role in (("upstream", "wan"), ("downstream", "lan")):
        got = []
        for i in range(workers):
            got += read_pcap(os.path.join(tmp, "%s_%s_out%d.pcap" % (name, role, i)))
        dd = final["directions"][dn]
        drops = sum(dd["drop_reasons"].values())
        check(len(got) == dd["tx_packets"] and dd["rx_packets"] == len(frames[dn]),
              "%s %s: %d frames in, %d out in the pcaps = tx %d, %d dropped (%s)" % (
                  name, dn, dd["rx_packets"], len(got), dd["tx_packets"], drops,
                  {k: v for k, v in dd["drop_reasons"].items() if v}))
        want = collections.Counter(frames[dn])
        extra = collections.Counter(b for _, b in got) - want
        check(not extra, "%s %s: every frame out is one that came in (%d not)" % (
            name, dn, sum(extra.values())))
        check(out_of_order(got) == 0, "%s %s: every flow's frames in order (%d not)" % (
            name, dn, out_of_order(got)))
        if change is not None:
            rate = shaped_rate(samples[dn], start=change)
            check(abs(rate / NEW_RATE - 1) <= 0.02 and not (set(dd["drop_reasons"]) and
                  any(v for k, v in dd["drop_reasons"].items() if k != "aqm")),
                  "%s %s: after config.set the shards shape %.3f Mbit/s together (set %.3f, "
                  "within 2 %%), no drop but the AQM's %s" % (name, dn, rate / 1e6, NEW_RATE / 1e6,
                                                 {k: v for k, v in dd["drop_reasons"].items() if v}))
            out[dn] = {"rate": rate, "pcap": got}
            continue
        rate = shaped_rate(samples[dn])
        check(abs(rate / RATE - 1) <= 0.02, "%s %s: shaped total %.3f Mbit/s over %.1f-%.1f s "
              "(configured %.3f, within 2 %%)" % (name, dn, rate / 1e6, WINDOW[0], WINDOW[1], RATE / 1e6))
        out[dn] = {"rate": rate, "pcap": got}
    out["flows"], out["shard_stats"] = flows, shard_stats
    return out


def check_shards(res):
    """Two workers: host placement, steering, per-shard identity, host fairness."""
    flows, ss = res["flows"], res["shard_stats"]
    if not check(flows is not None and ss is not None, "two workers: flows and shard stats taken under load"):
        return
    where = collections.defaultdict(set)
    for dn in ("upstream", "downstream"):
        for f in flows[dn]:
            where[f["src"] if dn == "upstream" else f["dst"]].add(f["shard"])
    split = {h: sorted(s) for h, s in where.items() if len(s) != 1}
    check(len(where) == HOSTS and not split,
          "two workers: %d hosts seen in flows, each on one shard both ways (split: %s)" % (len(where), split))
    per_shard = collections.Counter(next(iter(s)) for s in where.values() if len(s) == 1)
    check(len(per_shard) == 2, "two workers: both shards carry hosts %s" % dict(per_shard))
    for dn in ("upstream", "downstream"):
        shards = ss["directions"][dn].get("shards", [])
        if not check(len(shards) == 2, "%s: stats shows 2 shards" % dn):
            continue
        for s in shards:
            q = s["accounting"]["queued"]["steering"]
            check(s["accounting"]["unaccounted"] == 0 and not accounting_errors({"directions": {"s": s}}),
                  "%s shard %d: its own identity holds (steering term %d)" % (dn, s["shard"], q))
        moved = [(s["steered_out"], s["steered_in"]) for s in shards]
        check(all(s["rx_packets"] > 0 and s["steered_out"] > 0 for s in shards) and
              moved[0] == moved[1][::-1],
              "%s: both workers received and handed frames to the other, each took what the "
              "other handed over ((out, in) per shard: %s)" % (dn, moved))
        total = sum(s["share_rate"] for s in shards)
        check(total <= RATE / 8 * 1.001, "%s: the shards' rates add up to at most the link "
              "(%s bytes/s, link %d)" % (dn, [s["share_rate"] for s in shards], RATE // 8))
    for dn in ("upstream", "downstream"):
        got = res[dn]["pcap"]
        if not got:
            continue
        t0 = min(t for t, _ in got)
        per_host = collections.Counter()
        for t, b in got:
            if WINDOW[0] <= t - t0 < WINDOW[1]:
                per_host[lan_host(b, dn)] += len(b)
        mean = sum(per_host.values()) / HOSTS
        worst = max(abs(per_host[host(h)] / mean - 1) for h in range(HOSTS)) if mean else 1
        check(worst <= 0.10, "%s: every host's share within 10 %% of the mean across shards "
              "(worst %.1f %%)" % (dn, worst * 100))


def main():
    tmp = tempfile.mkdtemp(prefix="shaper_shards_")
    frames = {dn: frames_for(dn) for dn in ("upstream", "downstream")}
    inputs = {dn: split_files(tmp, frames[dn], dn, 1) for dn in frames}
    two = {dn: split_files(tmp, frames[dn], dn, 2) for dn in frames}
    one = run(tmp, "one", 1, inputs, frames)
    res = run(tmp, "two", 2, two, frames)
    if one and res:
        for dn in ("upstream", "downstream"):
            r1, r2 = one[dn]["rate"], res[dn]["rate"]
            check(r1 > 0 and abs(r2 / r1 - 1) <= 0.02,
                  "%s: two workers shape the same total as one (%.3f vs %.3f Mbit/s)" % (dn, r2 / 1e6, r1 / 1e6))
        check_shards(res)
    # A live rate change reaches both shards: the total follows, loss-free and in order.
    run(tmp, "change", 2, two, frames, set_rate=True)
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
