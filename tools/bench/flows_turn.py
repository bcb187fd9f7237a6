#!/usr/bin/python3
"""What a `flows` request costs the worker under load.

shaperd forwards a pcap of FLOWS flows (net_pcap infinite_rx on the LAN
port, net_null on the WAN port) through CAKE shaped at RATE, so the
scheduler holds a backlog in every flow. The worker's longest turn
(`turn_max_ns` in stats, reset before each phase) is read over two phases
of SECONDS each: quiet, and with `shapectl flows --top 1000` asked in a
loop. Prints both, the ratio, and how many flows requests were answered.

usage: flows_turn.py [--build build] [--flows 8192] [--rate 1gbit]
                     [--seconds 5] [--requests 200] [--json FILE]
Root is not needed (--no-huge). Exit 0 when measured, 1 on a failure, 77
when shaperd is missing. Run it on a quiet machine: the figures are times.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_pcap  # noqa: E402


def ctl(shapectl, sock, *args):
    r = subprocess.run([shapectl, "--socket", sock, "--json"] + list(args),
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("shapectl %s: %s" % (" ".join(args), r.stderr.strip()))
    return json.loads(r.stdout) if r.stdout.strip() else {}


def turn_max(shapectl, sock):
    st = ctl(shapectl, sock, "stats", "upstream")
    d = st.get("directions", st).get("upstream", st)
    return int(d["turn_max_ns"]), int(d["control_max_ns"]), int(d.get("qlen", 0) or 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--flows", type=int, default=8192)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    shaperd = os.path.join(args.build, "src", "shaperd")
    shapectl = os.path.join(args.build, "tools", "shapectl")
    if not (os.access(shaperd, os.X_OK) and os.access(shapectl, os.X_OK)):
        print("SKIP: build shaperd and shapectl first")
        return 77
    tmp = tempfile.mkdtemp(prefix="flows_turn_")
    proc = None
    try:
        pcap = os.path.join(tmp, "t.pcap")
        packets = args.flows * 4
        gen_pcap.generate(pcap, flows=args.flows, size="1518", packets=packets, seed=1)
        sock = os.path.join(tmp, "ctl.sock")
        cfg = {
            "ports": {"lan": "net_pcap0,rx_pcap=%s,infinite_rx=1" % pcap,
                      "wan": "net_null0,no-rx=1"},
            "upstream": {"discipline": "cake", "bandwidth": args.rate,
                         "diffserv": "diffserv4", "memlimit": "64mb"},
            "downstream": {"discipline": "fifo"},
            "control": {"socket": sock, "mode": "0600"},
            "lcores": {"workers": [1]},
            # infinite_rx holds the whole pcap in the LAN port's pool
            "dataplane": {"mbufs": {"upstream": packets + 40000}, "idle_sleep": "0us"},
        }
        cfg_path = os.path.join(tmp, "c.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        proc = subprocess.Popen(
            [shaperd, "--no-huge", "-m", "1024", "--no-pci", "-l", "0,1",
             "--file-prefix=flowsturn%d" % os.getpid(), "--log-level=lib.eal:warning",
             "--", "-c", cfg_path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(300):
            if os.path.exists(sock) or proc.poll() is not None:
                break
            time.sleep(0.1)
        if not os.path.exists(sock):
            out = proc.communicate(timeout=10)[0] if proc.poll() is not None else ""
            print("FAIL: the control socket never appeared\n" + out)
            return 1
        time.sleep(2.0)  # fill the backlog
        res = {"flows": args.flows, "rate": args.rate, "seconds": args.seconds}
        for phase in ("quiet", "flows"):
            ctl(shapectl, sock, "reset")
            t_end = time.monotonic() + args.seconds
            asked = 0
            shown = 0
            while time.monotonic() < t_end:
                if phase == "flows":
                    fl = ctl(shapectl, sock, "flows", "upstream", "--top", "1000")
                    shown = max(shown, len(fl.get("flows", fl.get("upstream", []))
                                       if isinstance(fl, dict) else fl))
                    asked += 1
                else:
                    time.sleep(0.1)
            tmax, cmax, qlen = turn_max(shapectl, sock)
            res[phase] = {"turn_max_us": tmax / 1000.0, "control_max_us": cmax / 1000.0,
                          "requests": asked, "flows_shown": shown, "qlen": qlen}
            print("%-6s longest worker turn %8.1f us, longest control slice %7.1f us "
                  "(flows requests %d, flows shown %d, qlen %d)"
                  % (phase, tmax / 1000.0, cmax / 1000.0, asked, shown, qlen), flush=True)
        # The longest slice per request, one request at a time: the max above
        # is one sample that a hypervisor steal can make; this is the spread.
        per = []
        for _ in range(args.requests):
            ctl(shapectl, sock, "reset")
            ctl(shapectl, sock, "flows", "upstream", "--top", "1000")
            per.append(turn_max(shapectl, sock)[1] / 1000.0)
        per.sort()
        pick = lambda p: per[min(len(per) - 1, int(p * len(per)))]  # noqa: E731
        res["per_request_control_max_us"] = {"median": pick(0.5), "p90": pick(0.9),
                                             "p99": pick(0.99), "max": per[-1],
                                             "requests": len(per)}
        print("per request (%d): longest control slice median %.1f us, p90 %.1f, p99 %.1f, "
              "max %.1f" % (len(per), pick(0.5), pick(0.9), pick(0.99), per[-1]), flush=True)
        q, f = res["quiet"]["turn_max_us"], res["flows"]["turn_max_us"]
        res["ratio"] = f / q if q else None
        print("ratio flows/quiet %.2f" % res["ratio"] if q else "ratio n/a")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(res, fh, indent=1)
        return 0
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
