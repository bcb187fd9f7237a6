#!/usr/bin/python3
"""Integration: reloading and saving the configuration of a running shaperd
(net_pcap vdevs).

1. Mid-stream, the file's upstream bandwidth is edited and shaperd gets a
   SIGHUP: config.get shows the new rate, the output rate follows it, and
   no frame is lost (every frame leaves, in order; the exit counters'
   identity holds with no drop).
2. A file that also changes a port's device: the reload names
   ports.wan.device (log, config.reload's reply, shapectl) and applies
   nothing, not even the bandwidth it also changes.
3. A file that does not load: refused naming the JSON path; the daemon
   carries on. A file made group-writable after start: refused by
   config.reload and SIGHUP (StrictModes, as at start), naming the file and
   its group; the daemon carries on.
4. `shapectl reload` applies the file; `shapectl set ... --save` writes the
   running settings to the file (same mode, the other keys kept, the file
   still passes --check-config).

usage: reload_test.py SHAPERD SHAPECTL
"""
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (Control, check, check_accounting, failures, numbered_frame,  # noqa: E402
                       read_pcap, start_shaperd, write_pcap)

SHAPERD, SHAPECTL = sys.argv[1], sys.argv[2]
N_PKTS = 10000
FRAME = 1000


def edit(path, change):
    """Rewrite the config file with change(cfg) applied, keeping its mode."""
    with open(path) as f:
        cfg = json.load(f)
    change(cfg)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


def shapectl(sock, *args):
    p = subprocess.run([SHAPECTL, "--socket", sock] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=30)
    return p.returncode, p.stdout


def up_bandwidth(c):
    return c.result("config.get", {"direction": "upstream"})["upstream"]["bandwidth"]


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (hugepage-less EAL still wants /var/run/dpdk)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_reload_")
    lan_in, empty = os.path.join(tmp, "lan_in.pcap"), os.path.join(tmp, "empty.pcap")
    out = os.path.join(tmp, "wan_out.pcap")
    write_pcap(lan_in, [numbered_frame(i, FRAME) for i in range(N_PKTS)])
    write_pcap(empty, [])
    wan = "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (empty, out)
    cfg = {
        "comment": "kept by config.save",
        "ports": {"lan": "net_pcap0,rx_pcap=%s,tx_pcap=%s/lan_out.pcap" % (lan_in, tmp),
                  "wan": wan},
        # A queue that holds the whole burst: the shaper itself drops nothing.
        "upstream": {"discipline": "fifo", "limit": 20000, "bandwidth": "80mbit"},
        "downstream": {"discipline": "cake", "bandwidth": "100mbit"},
        # As control_live: the worker must not wait behind the test on a 2-core box.
        "dataplane": {"rt_priority": 50, "idle_sleep": "20us"},
    }
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, "reload", cfg, timeout=20,
                                        prefix="reload_%d" % os.getpid())
    if d is None:
        check(False, "shaperd started")
        sys.exit(1)
    try:
        run(d, sock, stats_path, tmp, cfg, wan, out)
    finally:
        if d.proc.poll() is None:  # a check raised: never leave the daemon running
            d.stop(30)
    if failures:
        d.dump()
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


def run(d, sock, stats_path, tmp, cfg, wan, out):
    path = os.path.join(tmp, "reload.json")
    mode = stat.S_IMODE(os.stat(path).st_mode)
    c = Control(sock)

    # 1. SIGHUP mid-stream.
    time.sleep(0.5)
    edit(path, lambda x: x["upstream"].update(bandwidth="20mbit"))
    t_hup = time.time()
    d.proc.send_signal(signal.SIGHUP)
    check(d.wait_line("reload (SIGHUP)", 5), "SIGHUP: shaperd logs the reload")
    check(up_bandwidth(c).lower() == "20mbit", "SIGHUP: config.get shows 20Mbit (%s)" % up_bandwidth(c))
    check(any("applied upstream.bandwidth" in l for l in d.lines),
          "SIGHUP: the log names upstream.bandwidth")
    deadline = time.time() + 30
    while time.time() < deadline:
        up = c.result("stats", {"direction": "upstream"})["directions"]["upstream"]
        if up["tx_packets"] + up["drops"] >= N_PKTS:
            break
        time.sleep(0.2)

    # 2. A port's device changed as well: named, and nothing applied.
    edit(path, lambda x: (x["ports"].update(wan=wan.replace("net_pcap1", "net_pcap7")),
                          x["upstream"].update(bandwidth="50mbit")))
    d.proc.send_signal(signal.SIGHUP)
    check(d.wait_line("ports.wan.device has changed", 5),
          "SIGHUP with a new port device: the log names ports.wan.device")
    rep = c.call("config.reload")
    check(not rep["ok"] and rep["error"]["code"] == "restart_required"
          and rep["error"].get("keys") == ["ports.wan.device"],
          "config.reload: restart_required naming ports.wan.device (%s)" % rep.get("error"))
    rc, text = shapectl(sock, "reload")
    check(rc == 1 and "ports.wan.device" in text, "shapectl reload: exit 1, names the key (%d: %s)"
          % (rc, text.strip()))
    check(up_bandwidth(c).lower() == "20mbit", "nothing applied: bandwidth still 20Mbit (%s)"
          % up_bandwidth(c))

    # 3. A file that does not load.
    edit(path, lambda x: (x["ports"].update(wan=wan), x["upstream"].update(bandwidth="50mbps")))
    rc, text = shapectl(sock, "reload")
    check(rc == 1 and "upstream.bandwidth" in text and "nothing was applied" in text,
          "a bad file: refused naming upstream.bandwidth (%s)" % text.strip())
    check(up_bandwidth(c).lower() == "20mbit", "the daemon carries on at 20Mbit")

    # 3b. A file made group-writable after start: refused as a start would refuse it
    # (StrictModes), by config.reload and SIGHUP alike; the daemon carries on.
    edit(path, lambda x: x["upstream"].update(bandwidth="40mbit"))
    os.chmod(path, 0o664)
    rc, text = shapectl(sock, "reload")
    check(rc == 1 and path in text and "is writable by group" in text and "(mode 0664)" in text
          and "nothing was applied" in text,
          "a group-writable file: refused naming the file and its group (%s)" % text.strip())
    d.proc.send_signal(signal.SIGHUP)
    check(d.wait_line("reload (SIGHUP) refused: %s is writable by group" % path, 5),
          "SIGHUP with a group-writable file: refused in the log")
    check(up_bandwidth(c).lower() == "20mbit", "the daemon carries on at 20Mbit (%s)"
          % up_bandwidth(c))
    os.chmod(path, mode)

    # 4. shapectl reload, then set --save.
    edit(path, lambda x: x["upstream"].update(bandwidth="50mbit"))
    rc, text = shapectl(sock, "reload")
    check(rc == 0 and "upstream.bandwidth" in text, "shapectl reload applies (%s)" % text.strip())
    check(up_bandwidth(c).lower() == "50mbit", "config.get shows 50Mbit")
    rc, text = shapectl(sock, "set", "downstream", "bandwidth", "30mbit", "rtt", "20ms", "--save")
    check(rc == 0 and "downstream.bandwidth" in text, "shapectl set --save (%s)" % text.strip())
    with open(path) as f:
        saved = json.load(f)
    check(saved["downstream"].get("bandwidth", "").lower() == "30mbit"
          and saved["downstream"].get("rtt") == "20ms",
          "the file holds the new settings: %s" % saved["downstream"])
    check(saved["comment"] == cfg["comment"] and saved["ports"]["wan"] == wan
          and saved["dataplane"] == cfg["dataplane"] and saved["upstream"]["bandwidth"] == "50mbit",
          "the file's other keys are kept")
    check(stat.S_IMODE(os.stat(path).st_mode) == mode, "the file keeps its mode %o" % mode)
    p = subprocess.run([SHAPERD, "--", "-c", path, "--check-config"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    check(p.returncode == 0, "the saved file passes --check-config: %s" % p.stdout.strip())
    rc, text = shapectl(sock, "reload")
    check(rc == 0 and "nothing changed" in text, "a reload of the saved file changes nothing (%s)"
          % text.strip())
    rc, text = shapectl(sock, "save")
    check(rc == 0 and "already holds" in text, "shapectl save: nothing to write (%s)" % text.strip())

    check_accounting(c.result("stats"), "live")
    c.close()
    rc = d.stop(30)
    check(rc == 0, "shaperd exit code %d" % rc)
    with open(stats_path) as f:
        report = json.load(f)
    check_accounting(report, "at exit")
    up = report["directions"]["upstream"]
    check(up["rx_packets"] == N_PKTS and up["tx_packets"] == N_PKTS and up["drops"] == 0,
          "exit counters: rx %d == tx %d, %d drops (%s)" % (up["rx_packets"], up["tx_packets"],
                                                         up["drops"], up["drop_reasons"]))
    pkts = read_pcap(out)
    seqs = [struct.unpack("!I", fr[42:46])[0] for _, fr in pkts]
    check(seqs == list(range(N_PKTS)), "all %d frames out, in order (got %d)" % (N_PKTS, len(seqs)))
    after = [p for p in pkts if p[0] > t_hup + 0.1]
    if len(after) > 50:
        r = (len(after) - 1) * FRAME * 8 / (after[-1][0] - after[0][0]) / 1e6
        check(abs(r - 20) / 20 < 0.05, "rate after the SIGHUP %.2f Mbit/s (file: 20mbit)" % r)
    else:
        check(False, "frames left after the SIGHUP (%d)" % len(after))


if __name__ == "__main__":
    main()
