#!/usr/bin/python3
"""Traffic pcaps for the shaper benchmarks (python3 stdlib only).

A pcap holds P packets of N flows spread over M LAN hosts and S remote
servers, with a DSCP mix that reaches every diffserv4 tin, TCP and UDP,
IPv4 and IPv6. Every flow appears at least once, flows are interleaved
(each flow gets P/N packets, then the whole sequence is shuffled), and the
same seed always gives the same bytes.

Sizes are frame lengths as DPDK counts them, without the 4-byte FCS:
  64    60-byte frames (64 B on the wire with FCS)
  1518  1514-byte frames
  imix  7:4:1 of 60 / 590 / 1514 (64 / 594 / 1518 with FCS)
An IPv6 header does not fit a 60-byte frame: IPv6 frames use the smallest
legal size instead (62 B UDP, 74 B TCP), so a "64" pcap averages slightly
above 60 B (the benchmark reports bytes as counted, not nominal sizes).

Frames of one flow and size are identical (fixed TCP sequence numbers): the
scheduler never reads them. IPv4 header checksums are valid; L4 checksums
are zero.

With --rtt the pcap is instead the traffic passive RTT times (the cost
figure in docs/PERFORMANCE.md, "Passive RTT"): TCP conversations in both directions, every segment an
ACK carrying the timestamp option (a --ts-share of the flows; the others
carry 6 data bytes, timed by sequence/ACK matching), at the smallest frame
that holds it (66 B IPv4, 86 B IPv6; 60/80 B without timestamps). Frames
from the LAN host go to the router's MAC 02:5e:00:00:00:01; frames coming
back have it as their source (sched_bench tells the directions apart by
it). Time is modelled at --pps packets/s (the pcap timestamps): each end's
TSval is its own 1 kHz clock from a random base, each TSecr echoes the
newest TSval the end has received, sequence and ACK numbers advance with
the data, so every flow has new values to record and echoes to match.

usage: gen_pcap.py -o FILE [--flows N] [--hosts M] [--servers S]
                   [--size 64|1518|imix] [--packets P] [--seed X]
                   [--ipv6-share F] [--udp-share F] [--ect-share F]
       gen_pcap.py -o FILE --rtt [--flows N] [--packets P] [--seed X]
                   [--ipv6-share F] [--udp-share F] [--ts-share F] [--pps R]
"""
import argparse
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from shaperlib.pcap import write_pcap  # noqa: E402

# DSCP values and weights. Tins under diffserv4 (tc-cake): 0 Best Effort,
# CS1/LE Bulk, AF1x-AF4x/CS2/CS3 Video, CS4/CS5/EF/CS6/CS7 Voice.
DSCP_MIX = [
    (0, 50),   # BE          -> Best Effort
    (8, 8),    # CS1         -> Bulk
    (1, 2),    # LE          -> Bulk
    (10, 4),   # AF11        -> Best Effort (diffserv4 maps AF1x to BE)
    (18, 5),   # AF21        -> Video
    (24, 4),   # CS3         -> Video
    (34, 10),  # AF41        -> Video
    (32, 3),   # CS4         -> Voice
    (40, 3),   # CS5         -> Voice
    (46, 9),   # EF          -> Voice
    (48, 2),   # CS6         -> Voice
]

SIZES = {
    "64": [(60, 1)],
    "1518": [(1514, 1)],
    "imix": [(60, 7), (590, 4), (1514, 1)],
}

ETH_HLEN = 14
IP4_HLEN = 20
IP6_HLEN = 40
TCP_HLEN = 20
UDP_HLEN = 8


def ip_checksum(hdr):
    s = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return (~s) & 0xFFFF


def min_frame(v6, tcp):
    return ETH_HLEN + (IP6_HLEN if v6 else IP4_HLEN) + (TCP_HLEN if tcp else UDP_HLEN)


class Flow:
    __slots__ = ("v6", "tcp", "src", "dst", "sport", "dport", "dscp", "ecn", "smac", "dmac",
                 "host", "server")


def host_addr(i, v6):
    """LAN host i: 10.a.b.c / fd00::i."""
    i += 1
    if v6:
        return bytes.fromhex("fd000000000000000000") + struct.pack("!HI", 0, i)
    return bytes([10, (i >> 16) & 0xFF, (i >> 8) & 0xFF, i & 0xFF])


def server_addr(i, v6):
    """Remote server i: 198.18.0.0/15 / 2001:db8::/32."""
    i += 1
    if v6:
        return bytes.fromhex("20010db8000000000000") + struct.pack("!HI", 0, i)
    return bytes([198, 18 + ((i >> 16) & 1), (i >> 8) & 0xFF, i & 0xFF])


def make_flows(n, hosts, servers, rng, ipv6_share, udp_share, ect_share):
    dscps = [d for d, _ in DSCP_MIX]
    weights = [w for _, w in DSCP_MIX]
    flows = []
    used = set()
    for i in range(n):
        f = Flow()
        f.host = i % hosts
        f.server = rng.randrange(servers)
        f.v6 = rng.random() < ipv6_share
        f.tcp = rng.random() >= udp_share
        f.dscp = rng.choices(dscps, weights)[0]
        f.ecn = 2 if rng.random() < ect_share else 0  # ECT(0) or Not-ECT
        f.src = host_addr(f.host, f.v6)
        f.dst = server_addr(f.server, f.v6)
        # Distinct 5-tuples: ephemeral source port, a few well-known destinations.
        while True:
            f.sport = rng.randrange(1024, 65536)
            f.dport = rng.choice((443, 80, 53, 123, 8080, 3478, 5060, 22))
            key = (f.src, f.dst, f.sport, f.dport, f.tcp)
            if key not in used:
                used.add(key)
                break
        f.smac = bytes([0x02, 0x00]) + struct.pack("!I", f.host + 1)
        f.dmac = bytes([0x02, 0x5E, 0x00, 0x00, 0x00, 0x01])  # the WAN router
        flows.append(f)
    return flows


def build_frame(f, length):
    length = max(length, min_frame(f.v6, f.tcp))
    l3len = length - ETH_HLEN
    tos = (f.dscp << 2) | f.ecn
    if f.tcp:
        # PSH|ACK data segment.
        l4 = struct.pack("!HHIIBBHHH", f.sport, f.dport, 1000, 2000, 5 << 4, 0x18, 65535, 0, 0)
        proto = 6
    else:
        l4len = l3len - (IP6_HLEN if f.v6 else IP4_HLEN)
        l4 = struct.pack("!HHHH", f.sport, f.dport, l4len, 0)
        proto = 17
    if f.v6:
        plen = l3len - IP6_HLEN
        vtf = (6 << 28) | (tos << 20)
        l3 = struct.pack("!IHBB", vtf, plen, proto, 64) + f.src + f.dst
        eth = f.dmac + f.smac + b"\x86\xdd"
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, l3len, 0, 0x4000, 64, proto, 0, f.src, f.dst)
        l3 = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
        eth = f.dmac + f.smac + b"\x08\x00"
    hdr = eth + l3 + l4
    return hdr + bytes(length - len(hdr))


ROUTER_MAC = bytes([0x02, 0x5E, 0x00, 0x00, 0x00, 0x01])
TCP_ACK, TCP_PSH = 0x10, 0x08
RTT_DATA = 6  # data bytes of a segment without timestamps (fills a 60-byte IPv4 frame)


def build_tcp_frame(f, up, seq, ack, ts):
    """One segment of flow f (up: from the LAN host); ts = (tsval, tsecr) or None."""
    src, dst, sport, dport = (f.src, f.dst, f.sport, f.dport) if up else \
        (f.dst, f.src, f.dport, f.sport)
    opts = struct.pack("!BBBBII", 1, 1, 8, 10, ts[0], ts[1]) if ts else b""
    data = b"" if ts else bytes(RTT_DATA)
    flags = TCP_ACK | (TCP_PSH if data else 0)
    l4 = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (TCP_HLEN + len(opts)) // 4 << 4,
                     flags, 65535, 0, 0) + opts + data
    tos = (f.dscp << 2) | f.ecn
    if f.v6:
        l3 = struct.pack("!IHBB", (6 << 28) | (tos << 20), len(l4), 6, 64) + src + dst
        et = b"\x86\xdd"
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, IP4_HLEN + len(l4), 0, 0x4000, 64, 6, 0,
                         src, dst)
        l3 = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
        et = b"\x08\x00"
    eth = (f.dmac + f.smac) if up else (f.smac + ROUTER_MAC)
    fr = eth + et + l3 + l4
    return fr + bytes(max(0, 60 - len(fr)))


def generate_rtt(path, flows=10000, hosts=None, servers=256, packets=None, seed=1,
                 ipv6_share=0.25, udp_share=0.0, ts_share=1.0, pps=5e6):
    """The --rtt traffic (see the module doc); returns a dict like generate()."""
    hosts = hosts or default_hosts(flows)
    packets = packets or default_packets(flows)
    if packets < flows:
        raise ValueError("need at least one packet per flow (%d < %d)" % (packets, flows))
    rng = random.Random(seed)
    fl = make_flows(flows, hosts, servers, rng, ipv6_share, udp_share, 0.2)
    # Per flow and end (0 = LAN host, 1 = remote): TS clock base, next sequence
    # number, and the newest TSval / sequence end received from the other end.
    st = []
    for f in fl:
        base = [rng.getrandbits(32), rng.getrandbits(32)]
        isn = [rng.getrandbits(32), rng.getrandbits(32)]
        st.append({"ts": f.tcp and rng.random() < ts_share, "base": base, "seq": isn[:],
                   "heard_ts": [(base[1] - 1) & 0xFFFFFFFF, (base[0] - 1) & 0xFFFFFFFF],
                   "heard_seq": [isn[1], isn[0]]})
    seq = []
    per, extra = divmod(packets, flows)
    for i in range(flows):
        seq.extend([i] * (per + (1 if i < extra else 0)))
    rng.shuffle(seq)
    frames, times = [], []
    n_ts = n_up = 0
    for j, fi in enumerate(seq):
        f, s = fl[fi], st[fi]
        end = rng.randrange(2)  # 0: the LAN host sends (upstream)
        t_us = j * 1e6 / pps
        if f.tcp:
            ts = None
            if s["ts"]:
                tsval = (s["base"][end] + int(t_us // 1000)) & 0xFFFFFFFF
                ts = (tsval, s["heard_ts"][end])
                s["heard_ts"][end ^ 1] = tsval
                n_ts += 1
            fr = build_tcp_frame(f, end == 0, s["seq"][end], s["heard_seq"][end], ts)
            if ts is None:
                s["seq"][end] = (s["seq"][end] + RTT_DATA) & 0xFFFFFFFF
                s["heard_seq"][end ^ 1] = s["seq"][end]
        else:
            fr = build_frame(f, 60)
            if end == 1:
                fr = f.smac + ROUTER_MAC + fr[12:]
        n_up += end == 0
        frames.append(fr)
        times.append(int(t_us))
    write_pcap(path, frames, times)
    total = sum(map(len, frames))
    return {
        "path": path, "flows": flows, "hosts": hosts, "servers": servers, "size": "rtt",
        "packets": packets, "bytes": total, "mean_len": total / packets, "seed": seed,
        "ipv6_share": ipv6_share, "udp_share": udp_share, "ts_share": ts_share,
        "ts_packets": n_ts, "up_packets": n_up, "pps": pps,
    }


def default_hosts(flows):
    return max(2, min(1000, flows // 10)) if flows >= 2 else 1


def default_packets(flows):
    """Enough packets that every flow appears, and at least 32k for a steady mix."""
    return max(32768, flows)


def generate(path, flows=10000, hosts=None, servers=256, size="64", packets=None, seed=1,
             ipv6_share=0.25, udp_share=0.4, ect_share=0.2):
    """Write the pcap; returns a dict describing it (packets, bytes, mean frame length)."""
    if size not in SIZES:
        raise ValueError("size must be one of %s" % ", ".join(SIZES))
    hosts = hosts or default_hosts(flows)
    packets = packets or default_packets(flows)
    if packets < flows:
        raise ValueError("need at least one packet per flow (%d < %d)" % (packets, flows))
    rng = random.Random(seed)
    fl = make_flows(flows, hosts, servers, rng, ipv6_share, udp_share, ect_share)
    # Each flow gets packets // flows packets (the first packets % flows one more).
    seq = []
    per, extra = divmod(packets, flows)
    for i in range(flows):
        seq.extend([i] * (per + (1 if i < extra else 0)))
    rng.shuffle(seq)
    # Sizes follow the mix exactly: a shuffled pattern of the ratio, repeated.
    pattern = []
    for l, w in SIZES[size]:
        pattern.extend([l] * w)
    rng.shuffle(pattern)
    cache = {}
    frames = []
    for j, fi in enumerate(seq):
        l = pattern[j % len(pattern)]
        key = (fi, l)
        fr = cache.get(key)
        if fr is None:
            fr = build_frame(fl[fi], l)
            cache[key] = fr
        frames.append(fr)
    write_pcap(path, frames)  # frame j at j µs
    total = sum(map(len, frames))
    return {
        "path": path, "flows": flows, "hosts": hosts, "servers": servers, "size": size,
        "packets": packets, "bytes": total, "mean_len": total / packets, "seed": seed,
        "ipv6_share": ipv6_share, "udp_share": udp_share, "ect_share": ect_share,
    }


def parse_count(s):
    s = s.lower()
    mult = 1
    if s.endswith("k"):
        mult, s = 1000, s[:-1]
    elif s.endswith("m"):
        mult, s = 1000000, s[:-1]
    return int(float(s) * mult)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--flows", type=parse_count, default=10000)
    ap.add_argument("--hosts", type=parse_count, default=None,
                    help="LAN hosts (default flows/10, 2..1000)")
    ap.add_argument("--servers", type=parse_count, default=256)
    ap.add_argument("--size", choices=sorted(SIZES), default="64")
    ap.add_argument("--packets", type=parse_count, default=None,
                    help="packets in the file (default max(32768, flows))")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ipv6-share", type=float, default=0.25)
    ap.add_argument("--udp-share", type=float, default=None,
                    help="share of UDP flows (default 0.4, with --rtt 0)")
    ap.add_argument("--ect-share", type=float, default=0.2)
    ap.add_argument("--rtt", action="store_true",
                    help="TCP both ways with timestamps (passive RTT's cost)")
    ap.add_argument("--ts-share", type=float, default=1.0,
                    help="--rtt: share of TCP flows with timestamps")
    ap.add_argument("--pps", type=float, default=5e6, help="--rtt: modelled packet rate")
    a = ap.parse_args(argv)
    if a.rtt:
        info = generate_rtt(a.out, a.flows, a.hosts, a.servers, a.packets, a.seed,
                            a.ipv6_share, a.udp_share or 0.0, a.ts_share, a.pps)
    else:
        info = generate(a.out, a.flows, a.hosts, a.servers, a.size, a.packets, a.seed,
                        a.ipv6_share, 0.4 if a.udp_share is None else a.udp_share,
                        a.ect_share)
    print("%(path)s: %(packets)d packets, %(flows)d flows, %(hosts)d hosts, "
          "mean frame %(mean_len).1f B" % info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
