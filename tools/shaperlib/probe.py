#!/usr/bin/python3
"""A sequenced UDP probe across the bridge: what a line loses, duplicates or
reorders, in fine grain.

    probe.py echo PORT                     answer every datagram (WAN host)
    probe.py send ADDR PORT INTERVAL_S N   send N probes, print one JSON line

The sender numbers each probe and keeps its own send time; the echo sends it
back as it came. A reply's time is the kernel's receive stamp (SO_TIMESTAMPNS),
not the moment the sender got round to reading it: a sender kept from its CPU
does not lose probes the line carried. A probe is through if its first reply
came within THROUGH_S. The sender's JSON: sent, lost (no reply in time), late
(of those, the ones whose reply did come, later), dups (replies beyond the
first), reordered (first replies of a lower number than one already seen),
dark_ms (the longest run of lost probes, from the send time of the last probe
through before it to that of the first through after it, less one interval: a
sender that fell behind its schedule with nothing lost is not dark) and
rtt_ms percentiles of the probes through.

Used in-process through start_probe() and Echo, or as a script inside a
network namespace (ip netns exec NS probe.py ...). Both take rt: a
SCHED_FIFO priority (chrt) for the sender and the echo, so that they measure
the line and not how long they waited for a CPU behind other work.
"""
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

THROUGH_S = 0.100
HEADER = struct.Struct("!IQ")  # sequence number, send time (ns, the sender's clock)
PAYLOAD = 64


def echo(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind(("0.0.0.0", port))
    print("ready", flush=True)
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(data, peer)


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESPEC = struct.Struct("@qq")


def arrival(anc):
    """When the kernel received a datagram, on time.monotonic()'s clock (now if unstamped)."""
    mono, real = time.monotonic(), time.time()
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
            sec, nsec = TIMESPEC.unpack_from(data)
            return mono - max(real - (sec + nsec / 1e9), 0.0)
    return mono


def summarize(sent_at, first_reply, dups, reordered, interval):
    n = len(sent_at)
    through = sorted(q for q, t in first_reply.items() if t - sent_at[q] <= THROUGH_S)
    ok = set(through)
    lost = n - len(ok)
    late = sum(1 for q, t in first_reply.items() if t - sent_at[q] > THROUGH_S)
    dark = 0.0
    prev = None  # the send time of the last probe through
    run_lost = False
    for q in range(n):
        if q in ok:
            if run_lost:
                start = prev if prev is not None else sent_at[0] - interval
                dark = max(dark, sent_at[q] - start - interval)
            prev, run_lost = sent_at[q], False
        else:
            run_lost = True
    if run_lost:  # lost to the end of the window
        start = prev if prev is not None else sent_at[0] - interval
        dark = max(dark, sent_at[n - 1] - start)
    rtts = sorted((first_reply[q] - sent_at[q]) * 1000.0 for q in through)

    def pct(p):
        return round(rtts[min(len(rtts) - 1, int(p / 100.0 * len(rtts)))], 3) if rtts else None

    return {"sent": n, "lost": lost, "late": late, "dups": dups, "reordered": reordered,
            "dark_ms": round(max(dark, 0.0) * 1000.0, 1),
            "rtt_ms": {"p50": pct(50), "p99": pct(99), "max": pct(100)},
            "lost_seqs": [q for q in range(n) if q not in ok][:200]}


def send(addr, port, interval, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.connect((addr, port))
    s.setblocking(False)
    sent_at = []
    first_reply = {}
    dups = reordered = 0
    highest = -1
    pad = b"\0" * (PAYLOAD - HEADER.size)
    t0 = time.monotonic()
    end = None
    while True:
        now = time.monotonic()
        if len(sent_at) < n:
            due = t0 + len(sent_at) * interval
            if now >= due:
                # behind schedule: send what is due now, numbered at the time it went
                sent_at.append(now)
                try:
                    s.send(HEADER.pack(len(sent_at) - 1, time.monotonic_ns()) + pad)
                except OSError:
                    pass
                continue
            wait = due - now
        else:
            if end is None:
                end = now + THROUGH_S * 3
            if now >= end:
                break
            wait = end - now
        r, _, _ = select.select([s], [], [], max(wait, 0.0))
        if not r:
            continue
        while True:
            try:
                data, anc, _, _ = s.recvmsg(2048, 64)
            except BlockingIOError:
                break
            except ConnectionRefusedError:
                continue  # an ICMP error for an earlier probe
            if len(data) < HEADER.size:
                continue
            q, _ = HEADER.unpack_from(data)
            if q >= len(sent_at):
                continue
            if q in first_reply:
                dups += 1
                continue
            first_reply[q] = arrival(anc)
            if q < highest:
                reordered += 1
            highest = max(highest, q)
    return summarize(sent_at, first_reply, dups, reordered, interval)


def _rt(rt):
    return ["chrt", "-f", str(rt)] if rt else []


class Echo:
    """The echo, run in netns ns until stop()."""

    def __init__(self, ns, port, rt=0):
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns] + _rt(rt) +
                                     [sys.executable, os.path.abspath(__file__), "echo",
                                      str(port)],
                                     stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the probe's echo did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def start_probe(ns, addr, port, interval, n, rt=0):
    """The sender in netns ns; read its result with probe_result()."""
    return subprocess.Popen(["ip", "netns", "exec", ns] + _rt(rt) +
                            [sys.executable, os.path.abspath(__file__), "send", addr, str(port),
                             repr(interval), str(n)],
                            stdout=subprocess.PIPE, text=True)


def probe_result(p, timeout):
    out = p.communicate(timeout=timeout)[0]
    return json.loads(out.strip().splitlines()[-1])


def main(argv):
    if len(argv) >= 2 and argv[0] == "echo":
        echo(int(argv[1]))
        return 0
    if len(argv) >= 5 and argv[0] == "send":
        print(json.dumps(send(argv[1], int(argv[2]), float(argv[3]), int(argv[4]))), flush=True)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
