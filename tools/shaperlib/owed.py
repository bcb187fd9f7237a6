#!/usr/bin/python3
"""The shaper's own rate while it owed it, read from its control socket.

    owed.py SOCKET DIRECTION MBIT     one check: prints "ok ..." or "FAIL ...",
                                      exits non-zero on FAIL

Two `stats` reads of DIRECTION: the bytes it sent in the time it held frames
to send (backlogged_tx_bytes) over that time less the stalls it wrote off
(backlogged_us - lag_skipped_us), against MBIT, within 1 %. A sender off its
CPU leaves the queue empty, which is not the shaper's time, so the second
read waits (up to MAX_SPAN_S after the first) until the shaper has owed the
rate for MIN_OWED_S: the load must test the shaper for that long, whatever
its neighbours take. Both figures are shaperd's, over its own clock.
"""
import json
import socket
import sys
import time

MIN_OWED_S = 2.0
MAX_SPAN_S = 4.5
BOUND = 0.01


def stats(path, direction):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b'{"id":1,"cmd":"stats","args":{"direction":"%s"}}\n' % direction.encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)["result"]["directions"][direction]


def owed(a, b):
    """(seconds owed, bytes sent in them, seconds written off) between two reads."""
    skipped = (b["lag_skipped_us"] - a["lag_skipped_us"]) / 1e6
    ran = (b["backlogged_us"] - a["backlogged_us"]) / 1e6 - skipped
    return ran, b["backlogged_tx_bytes"] - a["backlogged_tx_bytes"], skipped


def check(path, direction, want_bps, label=None):
    a = stats(path, direction)
    t0 = time.monotonic()
    while True:
        time.sleep(0.25)
        b = stats(path, direction)
        ran, sent, skipped = owed(a, b)
        if ran >= MIN_OWED_S or time.monotonic() - t0 >= MAX_SPAN_S:
            break
    span = (b["time_ns"] - a["time_ns"]) / 1e9
    rate = sent * 8 / ran if ran > 0 else 0.0
    err = rate / want_bps - 1
    good = abs(err) <= BOUND and ran >= MIN_OWED_S
    print(("ok   " if good else "FAIL ") +
          "%s: %.3f Mbit/s sent over the %.3f s of %.3f s it owed the %g Mbit/s rate "
          "(%+.2f %%, bound %g %%; owed at least %g s; %.1f ms written off)" %
          (label or "shaped %s" % direction, rate / 1e6, ran, span, want_bps / 1e6, err * 100,
           BOUND * 100, MIN_OWED_S, skipped * 1e3), flush=True)
    return good


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    time.sleep(1.0)  # the sender's queue built
    return 0 if check(argv[0], argv[1], float(argv[2]) * 1e6,
                      argv[3] if len(argv) > 3 else None) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
