#!/usr/bin/python3
"""Integration: passive RTT through a real shaperd on af_packet ports over two
veth pairs. A pcap of one TCP flow with timestamps (IPv4, LAN host L and
remote R: R echoes each of L's TSvals 90 ms after it, L echoes R's 40 ms
after that) is replayed by its timestamps, each side into its own port. The
daemon's WAN-side RTT (downstream stats) and LAN-side RTT (upstream), and
the flow's own RTT in `flows`, must equal the replay's timing: the mean of
the samples within 5 ms of the gaps the replayer actually left (they include
its own scheduling delays, which the pcap's timing does not; the margin is
for a stalled worker, whose late poll shortens or lengthens one sample), and
the histogram holding those gaps bucket by bucket (two may stray); the
flow's own last sample in `flows` within 10 ms of its gap.

usage: rtt_replay.py SHAPERD SHAPECTL   (root; 77 = skipped otherwise)
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (Proc, check, failures, make_veth, read_pcap, shaperd_argv,  # noqa: E402
                       write_config, write_pcap)

SHAPERD, SHAPECTL = sys.argv[1], sys.argv[2]
WAN_RTT, LAN_RTT, ROUNDS, PERIOD = 0.090, 0.040, 12, 0.25
L_IP, R_IP, L_PORT, R_PORT = "10.9.0.2", "198.51.100.7", 40001, 443
PFX = "rt%d" % (os.getpid() % 100000)


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def tcp_frame(from_lan, seq, ack, tsval, tsecr, payload=0):
    """Ethernet/IPv4/TCP with NOP NOP TS, ACK set; checksums right."""
    src, dst = (L_IP, R_IP) if from_lan else (R_IP, L_IP)
    sp, dp = (L_PORT, R_PORT) if from_lan else (R_PORT, L_PORT)
    opts = struct.pack("!BBBBII", 1, 1, 8, 10, tsval, tsecr)
    data = bytes(payload)
    tcp = struct.pack("!HHIIBBHHH", sp, dp, seq, ack, (20 + len(opts)) // 4 << 4, 0x18, 65535,
                      0, 0) + opts + data
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    mac_l, mac_r = b"\x02\0\0\0\0\x02", b"\x02\0\0\0\0\x07"
    eth = (mac_r + mac_l) if from_lan else (mac_l + mac_r)
    return eth + b"\x08\x00" + ip + tcp


def make_trace():
    """(time, from_lan, frame): the flow as a capture at the bridge would show it."""
    out, lseq, rseq = [], 1000, 90000
    for i in range(ROUNDS):
        t = i * PERIOD
        out.append((t, True, tcp_frame(True, lseq, rseq, 1000 + i, 5000 + i - 1 if i else 0, 200)))
        lseq += 200
        out.append((t + WAN_RTT, False, tcp_frame(False, rseq, lseq, 5000 + i, 1000 + i, 300)))
        rseq += 300
        out.append((t + WAN_RTT + LAN_RTT, True, tcp_frame(True, lseq, rseq, 1000 + i, 5000 + i)))
    return out


def write_trace(path, trace):
    write_pcap(path, [fr for _, _, fr in trace], [round(t * 1e6) for t, _, _ in trace])


def read_trace(path, lan_src):
    """The frames back with their times; the direction from the source address."""
    return [(t, fr[26:30] == socket.inet_aton(lan_src), fr) for t, fr in read_pcap(path)]


def shapectl(sock, *args):
    r = subprocess.run([SHAPECTL, "--socket", sock, "--json"] + list(args), capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 0, "shapectl %s: exit %d %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return json.loads(r.stdout) if r.returncode == 0 else {}


def within(got_us, want_s, tol_s, what):
    check(abs(got_us / 1e6 - want_s) <= tol_s,
          "%s: %.2f ms, replayed %.2f ms (tolerance %.1f ms)" % (what, got_us / 1e3, want_s * 1e3, tol_s * 1e3))


def bucket_lo(seconds):
    """Lower edge (us) of the daemon's half-octave histogram bucket (src/rtt/rtt.c)."""
    v = int(seconds * 1e9) // 100000
    if v <= 1:
        return v * 100
    m = v.bit_length() - 1
    return 100 * ((1 << m) + (((v >> (m - 1)) & 1) << (m - 1)))


def same_histogram(rtt, gaps, what):
    """The histogram holds the replayed gaps, bucket by bucket (a gap within 0.5 ms of an
    edge may fall either side)."""
    got = {b[0]: b[2] for b in rtt.get("histogram_us", [])}
    lo, hi = {}, {}
    for g in gaps:
        a, b = bucket_lo(g - 0.0005), bucket_lo(g + 0.0005)
        if a == b:
            lo[a] = lo.get(a, 0) + 1
        for k in {a, b}:
            hi[k] = hi.get(k, 0) + 1
    # A stall of the worker (a stolen vCPU) may move a sample or two to another bucket.
    misplaced = sum(max(0, got.get(k, 0) - hi.get(k, 0)) for k in got)
    check(misplaced <= 2 and sum(got.values()) == len(gaps),
          "%s: histogram %s holds the replayed gaps (buckets %s), %d misplaced (at most 2)"
          % (what, got, hi, misplaced))


def main():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("SKIP: needs root and iproute2")
        return 77
    tmp = tempfile.mkdtemp(prefix="shaper_rtt_")
    pcap = os.path.join(tmp, "flow.pcap")
    write_trace(pcap, make_trace())
    trace = read_trace(pcap, L_IP)
    lan0, lan1, wan0, wan1 = PFX + "l0", PFX + "l1", PFX + "w0", PFX + "w1"
    daemon = None
    try:
        make_veth(lan0, lan1)
        make_veth(wan0, wan1)
        sock = os.path.join(tmp, "ctl.sock")
        cfg = {
            "ports": {"lan": "net_af_packet0,iface=%s" % lan0, "wan": "net_af_packet1,iface=%s" % wan0},
            # Upstream slow enough that the last burst is still queued for `flows`.
            "upstream": {"bandwidth": "2mbit"},
            "downstream": {"bandwidth": "100mbit"},
            "control": {"socket": sock},
            "dataplane": {"idle_sleep": "20us", "rt_priority": 50, "passive_rtt": True},
        }
        path = write_config(os.path.join(tmp, "cfg.json"), cfg)
        daemon = Proc("shaperd", shaperd_argv(SHAPERD, path, prefix=PFX, mem_mb=256))
        if not check(daemon.wait_line("bridging", 30), "shaperd started"):
            daemon.dump()
            return 1
        tx = {}
        for side, dev in ((True, lan1), (False, wan1)):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((dev, 0))
            tx[side] = s
        # Replay by the pcap's clock; note when each frame really left.
        sent = []
        t0 = time.monotonic() + 0.2
        for t, from_lan, fr in trace:
            while time.monotonic() < t0 + t:
                time.sleep(min(0.0005, max(0.0, t0 + t - time.monotonic())))
            tx[from_lan].send(fr)
            sent.append(time.monotonic())
        # The gaps the daemon should have measured: L's data to R's echo, R's to L's.
        wan = [sent[3 * i + 1] - sent[3 * i] for i in range(ROUNDS)]
        lan = [sent[3 * i + 2] - sent[3 * i + 1] for i in range(ROUNDS)]
        # A burst of new data from L queues behind the 2 Mbit/s shaper for `flows`.
        for k in range(20):
            tx[True].send(tcp_frame(True, 50000 + 1400 * k, 0, 2000 + k, 5000 + ROUNDS - 1, 1400))
        flows = shapectl(sock, "flows", "upstream").get("upstream", [])
        time.sleep(0.1)
        st = shapectl(sock, "stats").get("directions", {})
        print("replayed WAN gaps (ms):", ["%.2f" % (x * 1e3) for x in wan])
        print("replayed LAN gaps (ms):", ["%.2f" % (x * 1e3) for x in lan])

        down, up = st.get("downstream", {}).get("rtt", {}), st.get("upstream", {}).get("rtt", {})
        print("downstream rtt:", json.dumps(down))
        print("upstream rtt:", json.dumps(up))
        check(down.get("part") == "wan" and up.get("part") == "lan",
              "downstream shows the WAN side, upstream the LAN side")
        check(down.get("samples") == ROUNDS, "WAN side: %s samples, one per round (%d)" % (down.get("samples"), ROUNDS))
        check(up.get("samples") == ROUNDS, "LAN side: %s samples, one per round (%d)" % (up.get("samples"), ROUNDS))
        if down.get("samples"):
            within(down["sum_us"] / down["samples"], sum(wan) / len(wan), 0.005, "WAN-side mean RTT")
            same_histogram(down, wan, "WAN side")
            iv = down.get("interval", {})
            check(iv.get("samples", 0) >= 1 and min(wan) - 0.015 <= iv["min_us"] / 1e6 and
                  iv["p99_us"] / 1e6 <= max(wan) + 0.015,
                  "WAN side, last interval: min %.2f p99 %.2f ms within the replayed %.2f..%.2f ms "
                  "(+-15 ms: the worker may be stalled)"
                  % (iv.get("min_us", 0) / 1e3, iv.get("p99_us", 0) / 1e3, min(wan) * 1e3, max(wan) * 1e3))
        if up.get("samples"):
            within(up["sum_us"] / up["samples"], sum(lan) / len(lan), 0.005, "LAN-side mean RTT")
            same_histogram(up, lan, "LAN side")
        mine = [f for f in flows if f.get("sport") == L_PORT and f.get("dport") == R_PORT]
        print("flows:", json.dumps(mine))
        if check(len(mine) == 1, "the flow is queued upstream and listed by flows"):
            within(mine[0]["rtt_wan_us"], wan[-1], 0.010, "flows: the flow's last WAN-side RTT")
            within(mine[0]["rtt_lan_us"], lan[-1], 0.010, "flows: the flow's last LAN-side RTT")
        # The human form shows the columns.
        r = subprocess.run([SHAPECTL, "--socket", sock, "stats", "downstream"], capture_output=True,
                           text=True, timeout=30)
        check("rtt (wan side, passive)" in r.stdout, "shapectl stats shows the WAN-side RTT")
        rc = daemon.stop()
        daemon = None
        check(rc == 0, "shaperd exit code %d" % rc)
    finally:
        if daemon is not None:
            daemon.stop()
        for dev in (lan0, wan0):
            subprocess.run(["ip", "link", "del", dev], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
