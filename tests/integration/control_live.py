#!/usr/bin/python3
"""Integration: live control of a running shaperd on net_pcap vdevs.

1. A `config.set` of the upstream bandwidth mid-stream changes the measured
   output rate (from the tx pcap's timestamps) and loses or reorders no
   packet (sequence numbers in the payload), for fifo and for cake (ECT
   packets, so CoDel marks instead of dropping).
2. 64 clients hammer `stats` while traffic flows: every reply is correct.
3. A client killed mid-request, and one sending garbage, leave the daemon
   healthy; it still answers and still forwards every packet.

usage: control_live.py SHAPERD
"""
import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import Control as Client, check, check_accounting, failures, start_shaperd  # noqa: E402
from shaperlib import ip_checksum, numbered_frame, read_pcap, units, write_pcap  # noqa: E402

SHAPERD = sys.argv[1]
N_PKTS = 10000
FRAME = 1000


def run(tmp, name, direction_cfg, tos, rate1, rate2):
    print("--- %s: %s then %s" % (name, rate1, rate2), flush=True)
    frames = [numbered_frame(i, FRAME, tos) for i in range(N_PKTS)]
    lan_in, empty = os.path.join(tmp, "lan_in.pcap"), os.path.join(tmp, "empty.pcap")
    write_pcap(lan_in, frames)
    write_pcap(empty, [])
    out = os.path.join(tmp, name + "_wan_out.pcap")
    sock = os.path.join(tmp, name + ".sock")
    cfg = {
        "ports": {
            "lan": "net_pcap0,rx_pcap=%s,tx_pcap=%s/%s_lan_out.pcap" % (lan_in, tmp, name),
            "wan": "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (empty, out),
        },
        "upstream": dict(direction_cfg, bandwidth=rate1),
        "downstream": {"discipline": "fifo"},
        "control": {"socket": sock},
        # The worker must not wait behind this test's 64 client threads on a
        # 2-core box: a stalled shaper loses the time (lag_limit), it does not
        # pay it back. SCHED_FIFO with idle naps, as on the bed.
        "dataplane": {"rt_priority": 50, "idle_sleep": "20us"},
    }
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, name, cfg, prefix="ctllive_%s_%d" % (name, os.getpid()),
                                        timeout=20)
    if d is None:
        check(False, "%s: control socket appeared" % name)
        return

    c = Client(sock)
    time.sleep(0.6)  # phase 1 at rate1
    t_set = time.time()
    rep = c.call("config.set", {"direction": "upstream", "settings": {"bandwidth": rate2}})
    check(rep["ok"], "%s: config.set bandwidth %s accepted: %s" % (name, rate2, rep.get("result", rep.get("error"))))
    rep = c.call("config.set", {"direction": "upstream", "settings": {"bandwidth": "10parsecs"}})
    check(not rep["ok"] and rep["error"]["code"] == "invalid_argument",
          "%s: an invalid config.set is refused (%s)" % (name, rep.get("error", {}).get("message")))
    rep = c.call("config.get", {"direction": "upstream"})
    check(rep["ok"] and rep["result"]["upstream"]["bandwidth"].lower() == rate2.lower(),
          "%s: the refused change left bandwidth at %s" % (name, rep["result"]["upstream"]["bandwidth"]))

    # 64 clients hammer stats while the queue drains; a killed client and a garbage one too.
    errors = []

    def hammer(k):
        try:
            cl = Client(sock)
            last = -1
            for _ in range(25):
                r = cl.call("stats")
                if not r["ok"]:
                    errors.append("client %d: refused: %r" % (k, r.get("error")))
                    break
                up = r["result"]["directions"]["upstream"]
                if up["rx_packets"] < last or up["rx_packets"] > N_PKTS:
                    errors.append("client %d: bad reply %r" % (k, r)[:200])
                last = up["rx_packets"]
            cl.close()
        except Exception as e:  # noqa: BLE001 - any failure is a test failure
            errors.append("client %d: %s" % (k, e))

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(64)]
    for t in threads:
        t.start()
    half = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    half.connect(sock)
    half.sendall(b'{"id": 1, "cmd": "sta')  # killed mid-request
    half.close()
    junk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    junk.connect(sock)
    junk.sendall(os.urandom(70000) + b"\n")
    junk.close()
    for t in threads:
        t.join(60)
    check(not errors, "%s: 64 clients x 25 stats requests all answered correctly %s" % (name, errors[:3]))

    # Wait for the queue to drain.
    deadline = time.time() + 30
    while time.time() < deadline:
        up = c.call("stats", {"direction": "upstream"})["result"]["directions"]["upstream"]
        if up["tx_packets"] + up["drops"] >= N_PKTS:
            break
        time.sleep(0.2)
    check(c.call("version")["ok"], "%s: daemon healthy after the abuse" % name)
    check_accounting(c.call("stats")["result"], "%s live" % name)
    c.close()
    rc = d.stop(30)
    check(rc == 0, "%s: shaperd exit code %d" % (name, rc))
    with open(stats_path) as f:
        check_accounting(json.load(f), "%s at exit" % name)

    pkts = read_pcap(out)
    seqs = [struct.unpack("!I", fr[42:46])[0] for _, fr in pkts]
    check(seqs == list(range(N_PKTS)), "%s: all %d packets out, in order (got %d)" % (name, N_PKTS, len(seqs)))
    if tos & 3:
        ce = sum(1 for _, fr in pkts if fr[15] & 3 == 3)
        check(all(ip_checksum(fr[14:34]) == 0 for _, fr in pkts), "%s: IPv4 checksums valid (%d CE-marked)" % (name, ce))

    def rate(sel):
        if len(sel) < 50:
            return 0.0
        return (len(sel) - 1) * FRAME * 8 / (sel[-1][0] - sel[0][0]) / 1e6

    before = [p for p in pkts[200:] if p[0] < t_set]
    after = [p for p in pkts if p[0] > t_set + 0.1]
    r1, r2 = rate(before), rate(after)
    want1, want2 = (units.parse_rate(r) * 8 / 1e6 for r in (rate1, rate2))
    check(abs(r1 - want1) / want1 < 0.05, "%s: rate before the change %.2f Mbit/s (set %s)" % (name, r1, rate1))
    check(abs(r2 - want2) / want2 < 0.05, "%s: rate after the change %.2f Mbit/s (set %s)" % (name, r2, rate2))


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (hugepage-less EAL still wants /var/run/dpdk)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_ctl_")
    run(tmp, "fifo", {"discipline": "fifo", "limit": 20000}, 0x00, "80mbit", "20mbit")
    run(tmp, "cake", {"discipline": "cake", "memlimit": "128mb"}, 0x02, "80mbit", "20mbit")
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
