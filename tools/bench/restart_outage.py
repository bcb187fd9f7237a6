#!/usr/bin/python3
"""How long a restart of shaperd cuts the line.

On the namespace bed (tools/testbed/bed.sh, af_packet ports, --no-huge),
the LAN host pings the WAN host every 10 ms through shaperd while shaperd
is stopped (SIGTERM) and started again, RUNS times. For each restart it
prints:
  start->bridging  from exec to the "bridging" line (EAL, pools, ports);
  start->first     from exec to the first echo reply through the new process;
  outage           from the last reply before SIGTERM to the first after;
  lost             echo requests that got no reply.
Then the median and the largest of each. A real NIC adds EAL's PCI probe,
hugepage mapping and link negotiation on both neighbours, none of which
the bed has: treat these figures as the software's part of the outage.

usage: restart_outage.py [--build build] [--runs 5] [--json FILE]
Root. Exit 0 when measured, 1 on failure, 77 without root or tools.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BED = os.path.join(HERE, "..", "testbed", "bed.sh")
PFX = "rso"


def start(shaperd, cfg, log):
    t0 = time.time()
    f = open(log, "w")
    p = subprocess.Popen([shaperd, "--no-huge", "-m", "512", "--no-pci", "-l", "0,1",
                          "--file-prefix=rso%d" % os.getpid(), "--log-level=lib.eal:warning",
                          "--", "-c", cfg], stdout=f, stderr=subprocess.STDOUT)
    for _ in range(300):
        with open(log) as g:
            if "bridging" in g.read():
                return p, t0, time.time()
        if p.poll() is not None:
            break
        time.sleep(0.005)
    raise RuntimeError("shaperd did not start: " + open(log).read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    shaperd = os.path.abspath(os.path.join(args.build, "src", "shaperd"))
    if os.geteuid() != 0 or not shutil.which("ping") or not os.access(shaperd, os.X_OK):
        print("SKIP: needs root, ping and a built shaperd")
        return 77
    tmp = tempfile.mkdtemp(prefix="restart_outage_")
    cfg = os.path.join(tmp, "c.json")
    with open(cfg, "w") as f:
        json.dump({"ports": {"lan": "net_af_packet0,iface=%slan0" % PFX,
                             "wan": "net_af_packet1,iface=%swan0" % PFX},
                   "upstream": {"discipline": "cake", "bandwidth": "100mbit"},
                   "downstream": {"discipline": "cake", "bandwidth": "100mbit"},
                   "control": {"enabled": False},
                   "dataplane": {"idle_sleep": "20us"}}, f)
    subprocess.run(["bash", BED, "up", PFX], check=True, stdout=subprocess.DEVNULL)
    proc = ping = None
    rows = []
    try:
        proc, _, _ = start(shaperd, cfg, os.path.join(tmp, "first.log"))
        for run in range(args.runs):
            out = os.path.join(tmp, "ping%d" % run)
            with open(out, "w") as f:
                ping = subprocess.Popen(["ip", "netns", "exec", PFX + "cli", "ping", "-D", "-n",
                                         "-i", "0.01", "-W", "1", "10.99.0.2"], stdout=f,
                                        stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
            proc, t_exec, t_bridging = start(shaperd, cfg, os.path.join(tmp, "r%d.log" % run))
            time.sleep(1.5)
            ping.send_signal(signal.SIGINT)
            ping.wait(timeout=10)
            ping = None
            text = open(out).read()
            replies = [(float(m.group(1)), int(m.group(2))) for m in
                       re.finditer(r"^\[(\d+\.\d+)\] \d+ bytes from .* icmp_seq=(\d+)", text, re.M)]
            sent = re.search(r"(\d+) packets transmitted, (\d+) received", text)
            before = [t for t, _ in replies if t < t_exec]
            after = [t for t, _ in replies if t >= t_exec]
            if not before or not after:
                raise RuntimeError("run %d: no replies before or after the restart" % run)
            row = {"start_to_bridging_ms": (t_bridging - t_exec) * 1e3,
                   "start_to_first_reply_ms": (after[0] - t_exec) * 1e3,
                   "outage_ms": (after[0] - before[-1]) * 1e3,
                   "lost": int(sent.group(1)) - int(sent.group(2)) if sent else None}
            rows.append(row)
            print("restart %d: start->bridging %6.1f ms, start->first reply %6.1f ms, "
                  "outage %6.1f ms, lost %s" % (run + 1, row["start_to_bridging_ms"],
                                               row["start_to_first_reply_ms"], row["outage_ms"],
                                               row["lost"]), flush=True)
        summary = {}
        for k in ("start_to_bridging_ms", "start_to_first_reply_ms", "outage_ms"):
            v = [r[k] for r in rows]
            summary[k] = {"median": statistics.median(v), "max": max(v)}
        print("median (max): start->bridging %.1f (%.1f) ms, start->first reply %.1f (%.1f) ms, "
              "outage %.1f (%.1f) ms" % (
                  summary["start_to_bridging_ms"]["median"], summary["start_to_bridging_ms"]["max"],
                  summary["start_to_first_reply_ms"]["median"],
                  summary["start_to_first_reply_ms"]["max"],
                  summary["outage_ms"]["median"], summary["outage_ms"]["max"]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"runs": rows, "summary": summary}, f, indent=1)
        return 0
    finally:
        if ping is not None:
            ping.kill()
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)
        subprocess.run(["bash", BED, "down", PFX], stdout=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
