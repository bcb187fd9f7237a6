#!/usr/bin/python3
"""A scalable (L4S) test sender over UDP, and its echo.

    scalable.py echo --bind ADDR:PORT [--duration S]
    scalable.py send --to ADDR:PORT --duration S --out FILE [--ecn ect1|ect0]
                     [--size BYTES] [--t0 UNIX_TIME]

The kernels of the bed have no DCTCP or Prague congestion control, so this is
the sender the bed's L4S runs use. It marks every packet ECT(1) and keeps a
window of packets in flight, clocked by the echo's replies. The echo returns
each packet's sequence number, send time and the ECN field it arrived with.
The response is DCTCP's, as RFC 9331 asks of a scalable sender: alpha, the
moving average of the marked fraction (gain 1/16), is updated once a round
trip, and a round with a mark cuts the window by alpha/2; otherwise the window
grows by one packet a round trip (doubling each round in slow start, which the
first mark ends). A loss gets the classic response, half the window once a
round trip (RFC 9331, section 4.3); a silence longer than the retransmission
timeout drops the window to 2. Nothing is retransmitted: the payload is
filler, the figures are its delivery and its delay.

Packets are paced, as RFC 9331 and TCP Prague ask of a scalable sender (and
as Linux paces TCP): at twice the window per smoothed RTT in slow start, 1.2
times after it. Without pacing, every late batch of echoes (a sender or echo
kept off its CPU) comes back as a burst that crosses a sub-millisecond step
at once, and the marks say nothing about the rate.

--ecn ect0 sends the same sender as an ECT(0) (classic ECN) flow, for
comparison. The sender writes FILE as JSON: per 100 ms bin (from --t0, wall
clock) the payload bytes echoed, packets echoed and CE-marked; every RTT
sample (send time and ms); the window's trace; and the totals.
"""
import argparse
import json
import math
import select
import socket
import struct
import sys
import time

ECN = {"ect1": 0x01, "ect0": 0x02}
CE = 0x03
DATA = struct.Struct("!IQ")  # seq, send time (ns, the sender's monotonic clock)
ECHO = struct.Struct("!IQB")  # seq, send time, the ECN field as it arrived
GAIN = 1.0 / 16
REORDER = 3  # packets echoed beyond a missing one before it counts as lost
BIN = 0.1


def addr(s):
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("%r is not ADDR:PORT" % s)
    return host, int(port)


def echo(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    sock.bind(args.bind)
    end = time.monotonic() + args.duration if args.duration else None
    space = socket.CMSG_SPACE(4)
    while end is None or time.monotonic() < end:
        r, _, _ = select.select([sock], [], [], 0.5)
        if not r:
            continue
        data, anc, _, peer = sock.recvmsg(2048, space)
        if len(data) < DATA.size:
            continue
        tos = 0
        for level, kind, val in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS and val:
                tos = val[0]
        seq, ts = DATA.unpack_from(data)
        sock.sendto(ECHO.pack(seq, ts, tos & 3), peer)
    return 0


class Sender:
    def __init__(self, args):
        self.args = args
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECN[args.ecn])
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self.sock.connect(args.to)
        self.sock.setblocking(False)
        self.pad = b"\0" * (args.size - DATA.size)
        self.cwnd, self.ss, self.alpha = 4.0, True, 1.0
        self.next_seq, self.round_end = 0, 0
        self.acked = self.marked = 0  # in the current round trip
        self.recover = -1  # no second loss response before this seq is echoed
        self.out = {}  # seq -> send time (ns), in send order
        self.srtt = None
        self.next_send = 0  # ns (monotonic): the pacer's next departure
        self.t0 = args.t0 if args.t0 else time.time()
        self.bins = {}
        self.rtts = []
        self.trace = []
        self.tot = dict(sent=0, echoed=0, ce=0, lost=0, timeouts=0, cuts=0, loss_cuts=0)

    def bin(self, now_wall):
        k = int((now_wall - self.t0) / BIN)
        return self.bins.setdefault(k, [0, 0, 0])  # bytes, packets, CE

    def gap_ns(self):
        """The pacer's spacing: srtt / (cwnd x ratio); none before the first RTT sample."""
        if self.srtt is None:
            return 0
        return int(self.srtt * 1e6 / (self.cwnd * (2.0 if self.ss else self.args.pace_ca)))

    def send_some(self):
        while len(self.out) < min(int(self.cwnd), self.args.max_cwnd):
            ts = time.monotonic_ns()
            if ts < self.next_send:
                return
            try:
                self.sock.send(DATA.pack(self.next_seq, ts) + self.pad)
            except BlockingIOError:
                return
            except ConnectionRefusedError:  # the echo is not up yet
                return
            self.out[self.next_seq] = ts
            self.next_seq += 1
            self.tot["sent"] += 1
            # A pacer that fell behind (this process off its CPU) catches up one packet, not a burst.
            gap = self.gap_ns()
            self.next_send = max(self.next_send + gap, ts - gap)

    def on_echo(self, seq, ts, ecn):
        now = time.monotonic_ns()
        if self.out.pop(seq, None) is None:
            return  # already counted as lost
        rtt = (now - ts) / 1e6
        self.srtt = rtt if self.srtt is None else 0.875 * self.srtt + 0.125 * rtt
        wall = time.time()
        self.rtts.append((round(wall - self.t0, 4), round(rtt, 3)))
        b = self.bin(wall)
        b[0] += self.args.size
        b[1] += 1
        self.tot["echoed"] += 1
        self.acked += 1
        if ecn == CE:
            self.marked += 1
            b[2] += 1
            self.tot["ce"] += 1
            self.ss = False
        elif self.ss:
            self.cwnd += 1
        else:
            self.cwnd += 1.0 / self.cwnd
        # Packets sent well before this one and still not echoed are lost.
        lost = []
        for s in self.out:  # in send order
            if s >= seq - REORDER:
                break
            lost.append(s)
        for s in lost:
            del self.out[s]
        if lost:
            self.tot["lost"] += len(lost)
            if seq > self.recover:
                self.cwnd = max(2.0, self.cwnd / 2)
                self.ss = False
                self.recover = self.next_seq
                self.tot["loss_cuts"] += 1
        if seq >= self.round_end:
            self.end_round(wall)

    def end_round(self, wall):
        if self.acked:
            frac = self.marked / self.acked
            self.alpha = (1 - GAIN) * self.alpha + GAIN * frac
            if self.marked:
                self.cwnd = max(2.0, self.cwnd * (1 - self.alpha / 2))
                self.tot["cuts"] += 1
        self.trace.append((round(wall - self.t0, 3), round(self.cwnd, 2), round(self.alpha, 4)))
        self.acked = self.marked = 0
        self.round_end = self.next_seq

    def check_timeout(self):
        if not self.out:
            return
        rto = max(0.2, 4 * (self.srtt or 100) / 1e3)
        oldest = next(iter(self.out.values()))
        if (time.monotonic_ns() - oldest) / 1e9 > rto:
            self.tot["lost"] += len(self.out)
            self.tot["timeouts"] += 1
            self.out.clear()
            self.cwnd, self.ss = 2.0, False
            self.round_end = self.next_seq

    def run(self):
        end = time.monotonic() + self.args.duration
        buf = bytearray(64)
        while time.monotonic() < end:
            self.send_some()
            # Window open: until the pacer's next departure; full: until an echo.
            wait = 0.005
            if len(self.out) < min(int(self.cwnd), self.args.max_cwnd):
                wait = min(wait, max(0.0, (self.next_send - time.monotonic_ns()) / 1e9))
            r, _, _ = select.select([self.sock], [], [], wait)
            while r:
                try:
                    n = self.sock.recv_into(buf)
                except (BlockingIOError, ConnectionRefusedError):
                    break
                if n >= ECHO.size:
                    self.on_echo(*ECHO.unpack_from(buf))
                self.send_some()
            self.check_timeout()
        # The last round trip's echoes still on their way count as delivered.
        drain = time.monotonic() + max(0.2, 2 * (self.srtt or 100) / 1e3)
        while self.out and time.monotonic() < drain:
            r, _, _ = select.select([self.sock], [], [], 0.01)
            if r:
                try:
                    n = self.sock.recv_into(buf)
                except (BlockingIOError, ConnectionRefusedError):
                    continue
                if n >= ECHO.size:
                    self.on_echo(*ECHO.unpack_from(buf))

    def result(self):
        bins = [[round(k * BIN, 3), round((k + 1) * BIN, 3)] + v for k, v in sorted(self.bins.items())]
        rt = sorted(r for _, r in self.rtts)
        return {"ecn": self.args.ecn, "size": self.args.size, "t0": self.t0, "totals": self.tot,
                "min_rtt_ms": rt[0] if rt else None,
                "p50_rtt_ms": rt[len(rt) // 2] if rt else None,
                "p99_rtt_ms": rt[min(len(rt) - 1, math.ceil(0.99 * len(rt)) - 1)] if rt else None,
                "bins": bins, "rtt_ms": self.rtts, "cwnd": self.trace}


def send(args):
    s = Sender(args)
    s.run()
    with open(args.out, "w") as f:
        json.dump(s.result(), f)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("echo")
    e.add_argument("--bind", type=addr, required=True)
    e.add_argument("--duration", type=float, default=0, help="seconds to run (0 = until killed)")
    s = sub.add_parser("send")
    s.add_argument("--to", type=addr, required=True)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--ecn", choices=sorted(ECN), default="ect1")
    s.add_argument("--size", type=int, default=1400, help="UDP payload bytes (1400: a 1442-byte frame)")
    s.add_argument("--t0", type=float, default=0, help="wall time the bins count from (default: start)")
    s.add_argument("--max-cwnd", type=int, default=2000, help="packets in flight at most")
    s.add_argument("--pace-ca", type=float, default=1.2,
                   help="pacing rate over cwnd/srtt after slow start (slow start: 2)")
    args = ap.parse_args()
    if args.mode == "send" and args.size < DATA.size:
        ap.error("--size must be at least %d" % DATA.size)
    return echo(args) if args.mode == "echo" else send(args)


if __name__ == "__main__":
    sys.exit(main())
