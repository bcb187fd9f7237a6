#!/usr/bin/python3
"""Passive RTT against ping through the same path, on the namespace bed.

usage: e2e_rtt_ping.py SHAPERD [SECONDS]

shaperd shapes CAKE at 100/20 Mbit/s and delays each direction by 20 ms in its
delay line (40 ms emulated round trip). Through it, a TCP request/response
exchange (100 bytes every 20 ms; both ends set TCP_NODELAY and TCP_QUICKACK,
so every segment is answered at once, as in an interactive session) and an
ICMP ping every 50 ms. shaperd times the TCP flow from its timestamps:
downstream's `rtt` is the part beyond the WAN port (the client's request to
the server's answer), upstream's the LAN side (the answer to the client's
ACK); both together are the round trip a ping sees. Over the same window,
their means (exact: the histograms' sums over their counts) must add up to
the ping's mean within 1 ms (the median is printed too; a mean against a mean,
as a stall of the VM lifts the pings and the TCP samples in flight alike), and each side must hold one sample per 2-3
exchanges (the table times one segment per direction at a time: with a 40 ms
round trip and a request every 20 ms, the first request after each echo). Exit 0 = met, 1 = missed, 77 = not root or a tool missing.
"""
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "tools", "testbed")))
import run as bed_run  # noqa: E402

PERIOD = 0.020  # s between requests
PORT = 5399

SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
c, _ = s.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    d = c.recv(4096)
    if not d:
        break
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    c.sendall(d)
"""

CLIENT = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
end, period, n = time.monotonic() + float(sys.argv[3]), float(sys.argv[4]), 0
nxt = time.monotonic()
while time.monotonic() < end:
    c.sendall(b"x" * 100)
    got = 0
    while got < 100:
        d = c.recv(4096)
        if not d:
            sys.exit("server closed")
        got += len(d)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)  # ACK the answer now
    n += 1
    nxt += period
    time.sleep(max(0.0, nxt - time.monotonic()))
print(n)
"""


def rtt_of(st, d):
    return st.get("directions", {}).get(d, {}).get("rtt", {})


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    shaperd = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    rc = bed_run.preflight("e2e_rtt_ping", ("fping", "irtt", "ip", "taskset", "chrt"), "SKIP: ")
    if rc is not None:
        return rc
    py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    tmp = tempfile.mkdtemp(prefix="shaper_rtt_ping_")
    bed = bed_run.Bed("rp", shaperd, tmp, "rtt_ping")
    bed.rt_priority, bed.probe_rt = 50, 10
    bed.pin_cpus = bed_run.load_cpus()
    fails = 0
    try:
        bed.up()
        cfg = {d: bed_run.direction_cfg("cake", rate, d, "rrul", 0.040, 1000)
               for d, rate in (("upstream", 20e6), ("downstream", 100e6))}
        bed.start_daemon(cfg)
        # The server's answer is half of what the WAN side times: it runs under
        # SCHED_FIFO as the client does, so its wake-up is not the machine's.
        srv = bed.ns("srv", [py, "-c", SERVER, bed_run.SRV_ADDR, str(PORT)], probe=True)
        time.sleep(0.3)
        t0 = time.time()
        total = seconds + 4
        probes = bed_run.Probes(bed, tmp, 0.05, total, udp_tos=())
        probes.start()
        out = open(os.path.join(tmp, "client.out"), "w")
        cli = bed.ns("cli", [py, "-c", CLIENT, bed_run.SRV_ADDR, str(PORT), str(total),
                             str(PERIOD)], out=out, err=out, probe=True)
        time.sleep(2.0)  # connected, the flow's first samples taken
        a, ta = bed.ctl("stats"), time.time() - t0
        time.sleep(seconds)
        b, tb = bed.ctl("stats"), time.time() - t0
        cli.wait(timeout=30)
        lat = probes.wait(t0)
        srv.kill()
        pings = sorted(r for t, r in lat["icmp"] if r is not None and ta <= t < tb)
        sides = {}
        for d, part in (("downstream", "wan"), ("upstream", "lan")):
            ra, rb = rtt_of(a, d), rtt_of(b, d)
            n = rb.get("samples", 0) - ra.get("samples", 0)
            mean = (rb.get("sum_us", 0) - ra.get("sum_us", 0)) / 1e3 / n if n > 0 else None
            sides[part] = (n, mean, rb.get("part"))
        exchanges = (tb - ta) / PERIOD
        print("window %.1f s: %d pings, ~%.0f exchanges" % (tb - ta, len(pings), exchanges))
        for part, (n, mean, shown) in sides.items():
            print("passive %s side (%s): %d samples, mean %s ms" % (
                part, shown, n, "%.3f" % mean if mean is not None else "-"))
            # One sample in flight per direction: the next request after an echo is
            # timed, one per 40-60 ms of the 40 ms round trip and 20 ms period.
            ok = shown == part and exchanges / 3 <= n <= exchanges / 2 * 1.1
            print("%s %s side: one sample per 2-3 exchanges (%.0f..%.0f)" % (
                "ok  " if ok else "FAIL", part, exchanges / 3, exchanges / 2 * 1.1))
            fails += not ok
        if pings and all(m is not None for _, m, _ in sides.values()):
            med, mean = pings[len(pings) // 2], sum(pings) / len(pings)
            passive = sides["wan"][1] + sides["lan"][1]
            print("ping: median %.3f ms, mean %.3f, min %.3f, max %.3f; passive (WAN %.3f + "
                  "LAN %.3f) %.3f ms: %+.3f ms from the ping's median" % (
                      med, mean, pings[0], pings[-1], sides["wan"][1], sides["lan"][1],
                      passive, passive - med))
            # Means on both sides: a stall of the VM (tens of ms) lifts the pings and the
            # TCP samples in flight alike, where a median and a mean would part.
            ok = abs(passive - mean) <= 1.0
            print("%s passive RTT's mean %.3f ms within 1 ms of the ping's mean %.3f ms "
                  "(%+.3f ms)" % ("ok  " if ok else "FAIL", passive, mean, passive - mean))
            fails += not ok
        else:
            print("FAIL no pings or no passive samples in the window")
            fails += 1
    finally:
        bed.down()
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
