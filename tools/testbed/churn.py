#!/usr/bin/python3
"""Constant connection churn for the namespace bed: short HTTP-like
downloads, each on a new TCP connection.

    churn.py serve ADDR PORT
    churn.py fetch ADDR PORT SECONDS PARALLEL SEED OUT.json [T0]

`serve` answers each connection's request line (a byte count) with that
many bytes and closes it, as a web server does for one object. `fetch` runs
PARALLEL fetchers for SECONDS; each opens a connection, asks for an object
of a size drawn (seeded) from a web-like mix (10 kB to 2 MB, most of them
small), reads it to the end and starts the next. Every connection is a new
handshake and a new flow to the shaper, so a controller fed by passive RTT
sees many short flows and few long ones. OUT.json holds the bytes received
per 0.1 s from T0 (a Unix time; default the start) as [[t_start, t_end,
bytes], ...] (the form of run.py's flow sums), and the number of objects
fetched.
"""
import json
import random
import socket
import socketserver
import sys
import threading
import time

SIZES = [(10_000, 40), (50_000, 25), (200_000, 20), (800_000, 10), (2_000_000, 5)]  # bytes, weight
BIN = 0.1
CHUNK = bytes(65536)


class Object(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(32)
        try:
            n = int(line)
        except ValueError:
            return
        while n > 0:
            k = min(n, len(CHUNK))
            self.wfile.write(CHUNK[:k])
            n -= k


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def serve(addr, port):
    with Server((addr, port), Object) as srv:
        srv.serve_forever()


def fetch(addr, port, seconds, parallel, seed, out, t0):
    end = time.time() + seconds
    bins, objects, lock = {}, [0], threading.Lock()
    sizes = [s for s, w in SIZES for _ in range(w)]

    def fetcher(k):
        rnd = random.Random(seed * 1000 + k)
        while time.time() < end:
            want = rnd.choice(sizes)
            try:
                s = socket.create_connection((addr, port), timeout=5)
            except OSError:
                time.sleep(0.05)
                continue
            with s:
                s.sendall(b"%d\n" % want)
                got = 0
                while True:
                    try:
                        b = s.recv(262144)
                    except OSError:
                        break
                    if not b:
                        break
                    got += len(b)
                    i = int((time.time() - t0) / BIN)
                    with lock:
                        bins[i] = bins.get(i, 0) + len(b)
            if got == want:
                with lock:
                    objects[0] += 1

    threads = [threading.Thread(target=fetcher, args=(k,), daemon=True) for k in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 10)
    sums = [[round(i * BIN, 3), round((i + 1) * BIN, 3), b] for i, b in sorted(bins.items())]
    with open(out, "w") as f:
        json.dump({"sums": sums, "objects": objects[0]}, f)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
        return 0
    if len(sys.argv) >= 8 and sys.argv[1] == "fetch":
        t0 = float(sys.argv[8]) if len(sys.argv) > 8 else time.time()
        fetch(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]),
              int(sys.argv[6]), sys.argv[7], t0)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
