#!/usr/bin/python3
"""Integration: shaperd on net_pcap vdevs (--no-huge) bridges a pcap of mixed
frames (IPv4, IPv6 with extension headers, VLAN and QinQ tags, ARP, LLDP,
IPv6 ND, PPPoE, malformed IP headers, sizes 60..1514) from each side to the
other, byte for byte, and its exit counters agree: rx == tx + drops, and
every mbuf is back in the pool.

usage: pcap_bridge.py SHAPERD
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (check, check_accounting, failures, read_pcap, shaperd_argv,  # noqa: E402
                       write_config, write_pcap)

try:
    from scapy.all import (ARP, Dot1Q, Dot1AD, Ether, ICMP, ICMPv6ND_NS, IP, IPv6,
                           IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting,
                           PPPoE, PPP, Raw, TCP, UDP)
except ImportError:
    print("SKIP: python3-scapy is not installed")
    sys.exit(77)

SHAPERD = sys.argv[1]


def pad_to(pkt, size):
    """Pad a frame with payload bytes to exactly size bytes (if it is smaller)."""
    raw = bytes(pkt)
    if len(raw) < size:
        raw += bytes(random.getrandbits(8) for _ in range(size - len(raw)))
    return Ether(raw)


def mixed_frames(side, n_rounds=12):
    """A deterministic mix of frames; side 0 = LAN host, 1 = WAN host."""
    random.seed(1234 + side)
    a, b = ("10.1.0.%d" % (side + 1)), ("10.1.0.%d" % (2 - side))
    a6, b6 = "fd00::%d" % (side + 1), "fd00::%d" % (2 - side)
    mac_a, mac_b = "02:00:00:00:00:%02x" % (side + 1), "02:00:00:00:00:%02x" % (2 - side)
    e = Ether(src=mac_a, dst=mac_b)
    frames = []
    for r in range(n_rounds):
        size = random.choice([60, 61, 64, 99, 128, 511, 512, 1000, 1499, 1513, 1514])
        frames += [
            pad_to(e / IP(src=a, dst=b, tos=(r * 4) & 0xff) / TCP(sport=1000 + r, dport=80, flags="A"), size),
            pad_to(e / IP(src=a, dst=b, tos=0xb8 | (r & 3)) / UDP(sport=5000 + r, dport=53), size),
            pad_to(e / IP(src=a, dst=b) / ICMP(), random.randint(60, 1514)),
            pad_to(e / IPv6(src=a6, dst=b6, tc=r * 8) / TCP(sport=2000 + r, dport=443), size),
            pad_to(e / IPv6(src=a6, dst=b6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting() / UDP(sport=7, dport=9), size),
            pad_to(e / IPv6(src=a6, dst=b6) / IPv6ExtHdrFragment(offset=0, m=1, id=r) / UDP(sport=8, dport=9), size),
            pad_to(e / Dot1Q(vlan=100 + r) / IP(src=a, dst=b) / UDP(sport=6000, dport=6001), size),
            pad_to(e / Dot1AD(vlan=7) / Dot1Q(vlan=200) / IPv6(src=a6, dst=b6) / UDP(), size),
            pad_to(e / PPPoE(sessionid=0x11) / PPP(proto=0x0021) / IP(src=a, dst=b) / UDP(), size),
            pad_to(Ether(src=mac_a, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=a, pdst=b), 60),
            pad_to(Ether(src=mac_a, dst="01:80:c2:00:00:0e", type=0x88cc) / Raw(b"\x02\x07\x04" + bytes(7)), 60),
            pad_to(e / IPv6(src=a6, dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt=b6), 86),
            # Malformed: IHL 15 past the end, total length bogus, truncated TCP.
            pad_to(Ether(bytes(e / IP(src=a, dst=b, ihl=15, len=9999) / Raw(b"junk"))), 60),
            Ether(bytes(e / IP(src=a, dst=b) / TCP())[:14 + 20 + 6] + bytes(20)),
            Ether(bytes(e)[:12] + b"\x08\x00" + bytes(46)),
        ]
    frames.append(pad_to(e / IP(src=a, dst=b) / UDP(sport=1, dport=2), 1514))
    return frames


def run_daemon(tmp, name, direction_cfg, inputs, extra_wait=1.5):
    """Run shaperd on two pcap vdevs until its input is consumed; return exit stats."""
    lan_in, wan_in = inputs
    cfg = {
        "ports": {
            "lan": "net_pcap0,rx_pcap=%s,tx_pcap=%s/%s_lan_out.pcap" % (lan_in, tmp, name),
            "wan": "net_pcap1,rx_pcap=%s,tx_pcap=%s/%s_wan_out.pcap" % (wan_in, tmp, name),
        },
        "upstream": direction_cfg,
        "downstream": direction_cfg,
        "control": {"enabled": False},
    }
    path = write_config(os.path.join(tmp, name + ".json"), cfg)
    stats = os.path.join(tmp, name + "_stats.json")
    cmd = shaperd_argv(SHAPERD, path, stats, prefix="pcapbr_%s_%d" % (name, os.getpid()), mem_mb=256)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # extra_wait counts from "bridging", not from the spawn: on a loaded machine
    # the start-up alone can take longer than the wait.
    head = []
    for line in proc.stdout:
        head.append(line)
        if "bridging" in line:
            break
    time.sleep(extra_wait)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    out = "".join(head) + out
    print(out)
    check(proc.returncode == 0, "%s: shaperd exit code %d" % (name, proc.returncode))
    if not os.path.exists(stats):
        check(False, "%s: shaperd wrote no exit counters" % name)
        return {"directions": {}, "ports": {}, "mbufs_in_use": -1}
    with open(stats) as f:
        st = json.load(f)
    check_accounting(st, "%s at exit" % name)
    return st


def main():
    tmp = tempfile.mkdtemp(prefix="shaper_pcap_")
    lan_frames, wan_frames = mixed_frames(0), mixed_frames(1)
    lan_in, wan_in = os.path.join(tmp, "lan_in.pcap"), os.path.join(tmp, "wan_in.pcap")
    write_pcap(lan_in, [bytes(f) for f in lan_frames])
    write_pcap(wan_in, [bytes(f) for f in wan_frames])
    sizes = [len(bytes(f)) for f in lan_frames + wan_frames]
    print("%d frames, sizes %d..%d" % (len(sizes), min(sizes), max(sizes)))

    # 1. FIFO: every frame out, unchanged and in order.
    st = run_daemon(tmp, "fifo", {"discipline": "fifo"}, (lan_in, wan_in))
    for direction, src, out in (("upstream", lan_frames, "fifo_wan_out.pcap"),
                                ("downstream", wan_frames, "fifo_lan_out.pcap")):
        got = [fr for _, fr in read_pcap(os.path.join(tmp, out))]
        want = [bytes(p) for p in src]
        check(got == want, "fifo %s: %d frames out of %d, byte for byte and in order" % (direction, len(got), len(want)))
        d = st["directions"][direction]
        check(d["rx_packets"] == len(want) and d["tx_packets"] == len(want),
              "fifo %s counters rx=%d tx=%d (want %d)" % (direction, d["rx_packets"], d["tx_packets"], len(want)))
        check(sum(d["drop_reasons"].values()) == 0, "fifo %s: no drops" % direction)
    check(st["ports"]["lan"]["rx_packets"] == len(lan_frames), "lan port rx counter")
    check(st["ports"]["wan"]["tx_packets"] == len(lan_frames), "wan port tx counter")
    check(st["mbufs_in_use"] == 0, "fifo: all mbufs back in the pool")

    # 2. CAKE (unshaped): flows may interleave, but the same bytes come out.
    st = run_daemon(tmp, "cake", {"discipline": "cake"}, (lan_in, wan_in))
    for direction, src, out in (("upstream", lan_frames, "cake_wan_out.pcap"),
                                ("downstream", wan_frames, "cake_lan_out.pcap")):
        if not os.path.exists(os.path.join(tmp, out)):
            check(False, "cake %s: no output (is the cake discipline built?)" % direction)
            continue
        got = sorted(fr for _, fr in read_pcap(os.path.join(tmp, out)))
        want = sorted(bytes(p) for p in src)
        check(got == want, "cake %s: same %d frames out, byte for byte" % (direction, len(want)))
    check(st["mbufs_in_use"] == 0, "cake: all mbufs back in the pool")

    # 3. A slow shaped FIFO stopped mid-stream: what was not sent is counted, nothing leaks.
    st = run_daemon(tmp, "slow", {"discipline": "fifo", "bandwidth": "10kbit", "limit": 40},
                    (lan_in, wan_in), extra_wait=1.0)
    for direction in ("upstream", "downstream"):
        d = st["directions"].get(direction)
        if d is None:
            continue
        drops = sum(d["drop_reasons"].values())
        check(d["rx_packets"] == d["tx_packets"] + drops,
              "slow %s: rx %d == tx %d + dropped %d" % (direction, d["rx_packets"], d["tx_packets"], drops))
        check(d["drop_reasons"]["overflow"] > 0 and d["drop_reasons"]["shutdown"] > 0,
              "slow %s: overflow=%d and shutdown=%d drops are named" % (direction, d["drop_reasons"]["overflow"], d["drop_reasons"]["shutdown"]))
    check(st["mbufs_in_use"] == 0, "slow: all mbufs back in the pool")

    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
