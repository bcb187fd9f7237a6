#!/usr/bin/python3
"""shaper performance benchmark: one command.

1. The I/O ceiling: dpdk-testpmd io forwarding from net_pcap
   (rx_pcap=FILE,infinite_rx=1) into net_null0,no-rx=1 on one forwarding
   lcore, pps from its port counters (interactive 'show port stats all' once a
   second) over the real elapsed steady interval after warm-up.
2. shaperd on the same vdevs and the same lcore layout (-l 0,1, one worker on
   lcore 1; pcap port = LAN, null port = WAN, so upstream carries the load),
   per mode: fifo, cake diffserv4 triple-isolate unlimited, fq_codel, cake
   shaped at 5gbit and at 1gbit. Rates come from shaperd's control socket
   (ports.lan.rx = processed, directions.upstream.tx = delivered, drops by
   reason) over the same steady interval.
3. Optionally (--callgrind) the scheduler alone: sched_bench under
   valgrind --tool=callgrind, instructions per packet per mode and flow count,
   and CAKE's per-function profile; and what passive RTT (the default
   dataplane.passive_rtt) adds to CAKE's: sched_bench --rtt over two-way TCP
   traffic with timestamps (gen_pcap.py --rtt).
Every figure is repeated --runs times (ceiling and modes interleaved, so
the machine's noise hits all alike); the table shows medians and the spread.

usage:
  bench.py                       full run, writes docs/PERFORMANCE.md
  bench.py --smoke               CI: tiny pcaps, 1 run, 2 s per mode; checks that
                                 the harness works, not the thresholds
  bench.py --callgrind-only      only the instruction counts
  bench.py --callgrind-rtt       only passive RTT's instruction counts (a minute;
                                 prints the table, leaves docs/PERFORMANCE.md)
Exit codes: 0 ok, 1 harness failure (a mode moved no packets, shaperd failed,
mbufs leaked), 77 skipped (dpdk-testpmd or shaperd missing).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import gen_pcap  # noqa: E402
import shaperlib  # noqa: E402
from shaperlib import Control, ControlError, eal_args, shaperd_argv, start_logged, write_config  # noqa: E402

CAKE4 = {"discipline": "cake", "diffserv": "diffserv4", "isolation": "triple-isolate"}
MODES = {
    "fifo": ({"discipline": "fifo", "bandwidth": "unlimited"},
             "fifo pass-through (1000-packet limit)"),
    "cake": (dict(CAKE4, bandwidth="unlimited"),
             "cake diffserv4 triple-isolate, unlimited"),
    "cake_nortt": (dict(CAKE4, bandwidth="unlimited"),
                   "the same with dataplane.passive_rtt off"),
    "fq_codel": ({"discipline": "fq_codel", "bandwidth": "unlimited"},
                 "fq_codel defaults, unlimited"),
    "cake_5gbit": (dict(CAKE4, bandwidth="5gbit"),
                   "cake diffserv4 triple-isolate, shaped at 5gbit"),
    "cake_1gbit": (dict(CAKE4, bandwidth="1gbit"),
                   "cake diffserv4 triple-isolate, shaped at 1gbit"),
    # The same CAKE per subscriber (docs/subscribers.md): every LAN host of the
    # traffic a subscriber with a plan of SUBS_PLAN each way, the link at
    # SUBS_LINK, so that no plan binds (the net_null port takes all): every
    # frame goes through its subscriber's CAKE and the busy-subscriber heap,
    # and the row compares with "cake" on the same traffic.
    "subs": (dict(CAKE4, bandwidth="unlimited"),
             "cake diffserv4 triple-isolate per subscriber, each LAN host one"),
}
SUBS_PLAN, SUBS_LINK = "10gbit", "100gbit"
SHAPED_BPS = {"cake_5gbit": 5e9, "cake_1gbit": 1e9}
# Settings of the dataplane block a mode changes (passive RTT's A/B in the same run).
MODE_DATAPLANE = {"cake_nortt": {"passive_rtt": False}}

# (traffic key, size, flows, modes). The ceiling is measured for every traffic.
FULL_PLAN = [
    ("64B-10k", "64", 10000, ["fifo", "cake", "cake_nortt", "fq_codel", "subs"]),
    ("imix-10k", "imix", 10000, ["fifo", "cake", "fq_codel", "cake_5gbit", "cake_1gbit"]),
    ("1518B-10k", "1518", 10000, ["cake", "cake_5gbit"]),
    ("64B-10", "64", 10, ["cake"]),
    ("64B-1k", "64", 1000, ["cake"]),
    ("64B-100k", "64", 100000, ["cake"]),
    ("64B-20k-10kh", "64", 20000, ["cake", "subs"]),
]
# LAN hosts of a traffic when not gen_pcap's default (flows / 10, at most 1000).
TRAFFIC_HOSTS = {"64B-20k-10kh": 10000}
SMOKE_PLAN = [
    ("64B-100", "64", 100, ["fifo", "cake", "fq_codel", "subs"]),
    ("imix-100", "imix", 100, ["cake_5gbit"]),
]
CG_MODES = ["fifo", "fq_codel", "cake", "cake_5gbit"]
CG_FLOWS = [10, 1000, 10000, 100000]
# Passive RTT's cost (key, flows, share of flows with timestamps), CAKE4 unlimited;
# a None share is the one-way 64B traffic of the wall-clock runs (no timestamps).
RTT_PLAN = [("rtt-10", 10, 1.0), ("rtt-1k", 1000, 1.0), ("rtt-10k", 10000, 1.0),
            ("rtt-10k-ts50", 10000, 0.5), ("rtt-100k", 100000, 1.0), ("64B-10k", 10000, None)]
RTT_BUDGET = 0.10  # passive RTT's budget: at most 10 % on top of the fast path

failures = []
warnings = []


def warn(msg):
    log("WARN " + msg)
    warnings.append(msg)


def log(msg):
    print(msg, flush=True)


def fail(msg):
    log("FAIL " + msg)
    failures.append(msg)


# --------------------------------------------------------------- machine facts

def tsc_hz():
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
        m = re.search(r"tsc: Detected ([0-9.]+) MHz", out)
        if m:
            return float(m.group(1)) * 1e6, "dmesg (tsc: Detected)"
    except (OSError, subprocess.SubprocessError):
        pass
    with open("/proc/cpuinfo") as f:
        m = re.search(r"cpu MHz\s*:\s*([0-9.]+)", f.read())
    return float(m.group(1)) * 1e6, "/proc/cpuinfo cpu MHz"


def machine_facts(shaperd):
    facts = {}
    try:
        ls = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for key in ("Model name", "CPU(s)", "Thread(s) per core", "Hypervisor vendor",
                    "L2 cache", "L3 cache"):
            m = re.search(r"^%s:\s*(.+)$" % re.escape(key), ls, re.M)
            if m:
                facts[key] = m.group(1).strip()
    except OSError:
        pass
    facts["kernel"] = platform.release()
    try:
        facts["dpdk"] = subprocess.run(["pkg-config", "--modversion", "libdpdk"],
                                       capture_output=True, text=True).stdout.strip()
    except OSError:
        facts["dpdk"] = "?"
    if shaperd:
        try:
            facts["shaperd"] = subprocess.run([shaperd, "--version"], capture_output=True,
                                              text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        facts["commit"] = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "src", "include"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            facts["commit"] += " (src/include modified in the work tree)"
    except OSError:
        pass
    hz, src = tsc_hz()
    facts["tsc_hz"] = hz
    facts["tsc_src"] = src
    facts["date"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M %Z").strip()
    return facts


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def busy_others():
    """Other processes using CPU right now (a hint of how noisy the run is)."""
    try:
        out = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu"], capture_output=True,
                             text=True).stdout.splitlines()[1:8]
    except OSError:
        return ""
    mine = {"python3", "ps", "shaperd", "dpdk-testpmd", "valgrind", "callgrind-amd64-",
            "sched_bench"}
    busy = []
    for line in out:
        parts = line.split(None, 1)
        if len(parts) == 2 and float(parts[0]) >= 10 and parts[1] not in mine:
            busy.append("%s %s%%" % (parts[1], parts[0]))
    return ", ".join(busy)


# ------------------------------------------------------------------- traffic

def make_pcap(workdir, size, flows, packets=None, ts_share=None, hosts=None):
    """size "rtt": gen_pcap's --rtt traffic with ts_share of the flows timestamped."""
    packets = packets or gen_pcap.default_packets(flows)
    tag = size if size != "rtt" else "rtt%g" % ts_share
    if hosts:
        tag += "-h%d" % hosts
    path = os.path.join(workdir, "t-%s-%d-%d.pcap" % (tag, flows, packets))
    meta = path + ".json"
    gen_mtime = os.path.getmtime(gen_pcap.__file__)
    if os.path.exists(meta) and os.path.getmtime(meta) > gen_mtime and os.path.exists(path):
        with open(meta) as f:
            return json.load(f)
    if size == "rtt":
        info = gen_pcap.generate_rtt(path, flows=flows, packets=packets, seed=1,
                                     ts_share=ts_share)
    else:
        info = gen_pcap.generate(path, flows=flows, size=size, packets=packets, seed=1,
                                 hosts=hosts)
    with open(meta, "w") as f:
        json.dump(info, f)
    return info


# ------------------------------------------------------------------- EAL

EAL_MEM_MB = 2048

class Eal:
    def __init__(self, args):
        self.args = args
        self.n = 0

    def argv(self, tag, mem_mb=EAL_MEM_MB):
        self.n += 1
        self.prefix = "shbench%d_%s%d" % (os.getpid(), tag, self.n)
        # 2 GB: CAKE with 100k flows sizes each direction's pool for 132,768 mbufs
        # (about 330 MB each), which did not fit in 1 GB with the ports' own pools.
        return eal_args(self.prefix, mem_mb=mem_mb, huge=self.args.huge)

    def cleanup(self):
        d = "/var/run/dpdk/" + self.prefix
        if os.path.isdir(d) and self.prefix.startswith("shbench"):
            shutil.rmtree(d, ignore_errors=True)


def stop_process(p, timeout=30):
    return shaperlib.stop_process(p, timeout, signal.SIGINT if p.args[0].endswith("testpmd")
                                  else signal.SIGTERM)


# ------------------------------------------------------------- the ceiling

TESTPMD_PROMPT = "testpmd> "
NIC_STATS_RE = re.compile(r"NIC statistics for port (\d+)\s*#+\s*\n(.*?)\n\s*#{8,}", re.S)


def parse_port_stats(text):
    """Every 'show port stats all' answer in order: [{port: {field: value}}].

    Only the cumulative counters are used (RX-packets, RX-bytes, TX-packets,
    RX-nombuf); the rates are computed from them over our own timestamps."""
    answers = []
    for m in NIC_STATS_RE.finditer(text):
        port = int(m.group(1))
        vals = {k: int(v) for k, v in re.findall(r"([A-Za-z-]+):\s+(\d+)", m.group(2))}
        if not answers or port in answers[-1]:
            answers.append({})
        answers[-1][port] = vals
    return answers


class Testpmd:
    """dpdk-testpmd in interactive mode, driven over stdin.

    testpmd writes its prompt unbuffered but the output of commands through
    stdio, which is block-buffered on a pipe: a command has run when the next
    prompt shows; what it printed is complete once testpmd has exited."""

    def __init__(self, cmd, log_path):
        self.log = open(log_path, "w")
        self.text = ""
        self.prompts = 0
        self.eof = False
        self.cv = threading.Condition()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        fd = self.p.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            with self.cv:
                if not chunk:
                    self.eof = True
                    self.cv.notify_all()
                    return
                s = chunk.decode(errors="replace")
                self.log.write(s)
                self.log.flush()
                tail = self.text[-len(TESTPMD_PROMPT):]
                self.text += s
                self.prompts += (tail + s).count(TESTPMD_PROMPT) - tail.count(TESTPMD_PROMPT)
                self.cv.notify_all()

    def wait_prompt(self, n, timeout):
        """Until the n-th prompt: False if testpmd exited or the time ran out."""
        with self.cv:
            return self.cv.wait_for(lambda: self.prompts >= n or self.eof, timeout) \
                and self.prompts >= n

    def command(self, line, timeout=10):
        """Run one command; (time sent, time done) or None."""
        n = self.prompts + 1
        t0 = time.monotonic()
        try:
            self.p.stdin.write((line + "\n").encode())
            self.p.stdin.flush()
        except OSError:
            return None
        if not self.wait_prompt(n, timeout):
            return None
        return t0, time.monotonic()

    def close(self, timeout=30):
        """quit; testpmd's exit code (interrupted, then killed, if it hangs)."""
        try:
            self.p.stdin.write(b"quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            stop_process(self.p)
        self.reader.join(10)
        self.log.close()
        return self.p.returncode


def run_ceiling(args, eal, traffic):
    """testpmd's io forwarding rate: port 1 TX-packets (and port 0 RX-bytes)
    read with 'show port stats all' once a second over the steady interval,
    rates over the real time between the reads.

    Not --stats-period: its loop sleeps 1 s, then prints only if its own
    estimate of the timer frequency has passed, so where EAL's TSC estimate is
    a bit high (KVM: ~2450000 KHz for a 2445.4 MHz TSC) it prints every 2 s,
    and its output is block-buffered into the log anyway."""
    pcap = traffic["path"]
    mbufs = traffic["packets"] + 16384
    cmd = [args.testpmd] + eal.argv("tp") + [
        "--vdev=net_pcap0,rx_pcap=%s,infinite_rx=1" % pcap, "--vdev=net_null0,no-rx=1",
        "--", "-i", "--forward-mode=io", "--nb-cores=1", "--burst=32", "--rxd=1024",
        "--txd=1024", "--total-num-mbufs=%d" % mbufs]
    out_path = os.path.join(args.workdir, "testpmd-%s-%d.log" % (traffic["key"], eal.n))
    name = os.path.basename(pcap)
    tp = Testpmd(cmd, out_path)
    reads = []
    why = None
    try:
        # The first prompt comes after EAL init, the pcap loaded and the ports up.
        if not tp.wait_prompt(1, 60):
            why = "exited during start-up" if tp.eof else "no prompt within 60 s of start"
        elif tp.command("start") is None:
            why = "'start' did not complete"
        else:
            time.sleep(args.warmup)
            t_next = time.monotonic()
            for i in range(int(args.duration) + 1):
                time.sleep(max(0.0, t_next - time.monotonic()))
                t = tp.command("show port stats all")
                if t is None:
                    why = "'show port stats all' #%d did not complete" % (i + 1)
                    break
                reads.append((t[0] + t[1]) / 2)
                t_next = t[0] + 1.0
            if why is None and tp.command("stop") is None:
                why = "'stop' did not complete"
    finally:
        rc = tp.close()
        eal.cleanup()
    text = tp.text
    answers = parse_port_stats(text)
    if why is None and rc != 0:
        why = "exit code %s" % rc
    if why is None and len(answers) != len(reads):
        why = "%d port stats answers parsed for %d reads" % (len(answers), len(reads))
    if why is None and any(sorted(a) != [0, 1] for a in answers):
        why = "ports %s, not 0 (pcap) and 1 (null)" % sorted(answers[0]) if answers else "no ports"
    if why is not None:
        m = re.search(r"^\S.*(?:failed|[Cc]ouldn't|[Cc]annot|[Ee]rror|unrecognized|[Ii]nvalid).*$",
                      text, re.M)
        if m:
            why += "; first error: " + m.group(0).strip()
    if why is None and len(reads) < 2:
        why = "%d reads" % len(reads)
    if why is not None:
        fail("testpmd on %s: %s (rc %s, %d stats reads; log %s)" % (name, why, rc, len(reads),
                                                                    out_path))
        log(text[-2000:])
        return None
    pps = []
    for i in range(1, len(reads)):
        dt = reads[i] - reads[i - 1]
        pps.append((answers[i][1]["TX-packets"] - answers[i - 1][1]["TX-packets"]) / dt)
    dt = reads[-1] - reads[0]
    res = {"pps": (answers[-1][1]["TX-packets"] - answers[0][1]["TX-packets"]) / dt,
           "pps_min": min(pps), "pps_max": max(pps),
           "bps": (answers[-1][0]["RX-bytes"] - answers[0][0]["RX-bytes"]) * 8 / dt,
           "samples": len(pps), "seconds": dt,
           "rx_nombuf": answers[-1][0].get("RX-nombuf", 0)}
    if min(pps) <= 0:
        fail("testpmd on %s forwarded nothing in %d of %d intervals (log %s)" % (
            name, sum(1 for x in pps if x <= 0), len(pps), out_path))
        return None
    return res


# ------------------------------------------------------------------ shaperd

# How long a run waits for the data plane's first statistics snapshot: it is
# published a few ms after the ports come up; until then "stats" answers busy.
SNAPSHOT_WAIT_S = 30


def stats_when_ready(ctl, wait=SNAPSHOT_WAIT_S):
    """The "stats" result, asking again while the daemon answers busy (no
    snapshot yet just after start, or the worker late to answer)."""
    deadline = time.monotonic() + wait
    while True:
        rep = ctl.call("stats")
        if "error" not in rep:
            return rep["result"]
        err = rep["error"]
        code = err.get("code") if isinstance(err, dict) else None
        if code != "busy" or time.monotonic() >= deadline:
            raise ControlError("control: %s" % err)
        time.sleep(0.02)


def sample(ctl):
    st = stats_when_ready(ctl)
    t = time.monotonic()
    lan, wan = st["ports"]["lan"], st["ports"]["wan"]
    up = st["directions"]["upstream"]
    return {"t": t, "rx": lan["rx_packets"], "rx_bytes": lan["rx_bytes"],
            "rx_nombuf": lan.get("rx_nombuf", 0), "rx_missed": lan.get("rx_missed", 0),
            "wan_tx": wan["tx_packets"], "up_rx": up["rx_packets"], "tx": up["tx_packets"],
            "tx_bytes": up["tx_bytes"], "drops": up["drops"],
            "reasons": dict(up["drop_reasons"]), "qlen": up.get("qlen", 0),
            "tx_retries": up.get("tx_retries", 0), "memory_used": up.get("memory_used", 0),
            "memory_limit": up.get("memory_limit", 0)}


def subs_config(cfg, workdir, traffic):
    """Shape cfg per subscriber: gen_pcap's LAN host i (its IPv4 and its IPv6
    address) is subscriber i, plans SUBS_PLAN, the link SUBS_LINK."""
    import ipaddress
    addrs = [[str(ipaddress.ip_address(gen_pcap.host_addr(i, v6))) for v6 in (False, True)]
             for i in range(traffic["hosts"])]
    shaperlib.shape_per_subscriber(cfg, os.path.join(workdir, "subscribers-%d.json" %
                                                     traffic["hosts"]),
                                   addrs, SUBS_PLAN, SUBS_LINK)


def run_shaperd(args, eal, traffic, mode):
    direction, _ = MODES[mode]
    tag = "%s-%s" % (traffic["key"], mode)
    sock = os.path.join(args.workdir, "ctl-%d.sock" % os.getpid())
    if os.path.exists(sock):
        os.unlink(sock)
    cfg = {
        "ports": {"lan": "net_pcap0,rx_pcap=%s,infinite_rx=1" % traffic["path"],
                  "wan": "net_null0,no-rx=1"},
        "upstream": direction,
        "downstream": direction,
        "control": {"enabled": True, "socket": sock, "mode": "0600"},
        "lcores": {"workers": [1]},
        "dataplane": {"burst": 32, "mbufs": traffic["packets"] + args.headroom_mbufs,
                      "idle_sleep": "0us", **MODE_DATAPLANE.get(mode, {})},
    }
    if mode == "subs":
        subs_config(cfg, args.workdir, traffic)
    cfg_path = os.path.join(args.workdir, "shaperd.json")
    write_config(cfg_path, cfg, indent=1)
    exit_json = os.path.join(args.workdir, "exit.json")
    if os.path.exists(exit_json):
        os.unlink(exit_json)
    log_path = os.path.join(args.workdir, "shaperd-%s-%d.log" % (tag, eal.n + 1))
    mem_mb = EAL_MEM_MB
    if mode == "subs":
        # A diffserv4 CAKE per subscriber each way (126 kB each, shaperd
        # --check-config) and rte_lpm's 2^24-entry table (64 MB a direction).
        mem_mb += traffic["hosts"] * 2 * 140 // 1024 + 512
    cmd = shaperd_argv(args.shaperd, cfg_path, exit_json, eal_argv=eal.argv("sd", mem_mb))
    res = None
    p = start_logged(cmd, log_path)
    ctl = None
    try:
        deadline = time.time() + 60
        while ctl is None and time.time() < deadline and p.poll() is None:
            try:
                ctl = Control(sock)
                ctl.result("version")
            except OSError:
                ctl = None
                time.sleep(0.1)
        if ctl is None:
            raise IOError("no control socket after 60 s")
        # Traffic starts once the ports are up.
        s = sample(ctl)
        while s["rx"] == 0 and time.time() < deadline:
            time.sleep(0.05)
            s = sample(ctl)
        samples = [s]
        t_end = s["t"] + args.warmup + args.duration
        while time.monotonic() < t_end + 0.01:
            time.sleep(max(0.0, min(1.0, t_end - time.monotonic() + 0.005)))
            if p.poll() is not None:
                raise IOError("shaperd exited during the run")
            try:
                samples.append(sample(ctl))
            except OSError as e:
                # A dropped control connection is a finding, not a reason to
                # lose the run: note it and reconnect.
                warn("%s: control connection lost mid-run (%s); reconnected" % (tag, e))
                ctl.close()
                ctl = Control(sock)
                samples.append(sample(ctl))
        res = summarize(args, samples, traffic, mode)
    except (OSError, ValueError, KeyError) as e:
        fail("%s: %s" % (tag, e))
    finally:
        if ctl is not None:
            ctl.close()
        rc = stop_process(p)
        eal.cleanup()
    with open(log_path, errors="replace") as f:
        text = f.read()
    exit_stats = {}
    if os.path.exists(exit_json):
        with open(exit_json) as f:
            exit_stats = json.load(f)
    if rc != 0:
        fail("%s: shaperd exited with %s (log %s)\n%s" % (tag, rc, log_path, text[-1500:]))
    if exit_stats.get("mbufs_in_use", 0) != 0:
        fail("%s: %s mbufs in use at exit" % (tag, exit_stats.get("mbufs_in_use")))
    if res is not None:
        res["exit_rc"] = rc
        res["mbufs_in_use"] = exit_stats.get("mbufs_in_use")
        if res["rx_pps"] <= 0 or res["tx_pps"] <= 0:
            fail("%s: no packets (processed %.0f pps, delivered %.0f pps)" % (
                tag, res["rx_pps"], res["tx_pps"]))
    return res


def summarize(args, samples, traffic, mode):
    t0 = samples[0]["t"] + args.warmup
    # The first sample at or after the end of warm-up opens the window.
    start = next(s for s in samples if s["t"] >= t0 - 0.05)
    end = samples[-1]
    dt = end["t"] - start["t"]
    if dt <= 0:
        raise ValueError("measurement window is empty")
    per_s = []
    for a, b in zip(samples, samples[1:]):
        if a["t"] >= start["t"] - 1e-6 and b["t"] - a["t"] > 0:
            per_s.append((b["rx"] - a["rx"]) / (b["t"] - a["t"]))
    reasons = {k: end["reasons"].get(k, 0) - start["reasons"].get(k, 0)
               for k in end["reasons"]}
    res = {
        "rx_pps": (end["rx"] - start["rx"]) / dt,
        "rx_bps": (end["rx_bytes"] - start["rx_bytes"]) * 8 / dt,
        "tx_pps": (end["tx"] - start["tx"]) / dt,
        "tx_bps": (end["tx_bytes"] - start["tx_bytes"]) * 8 / dt,
        "drop_pps": (end["drops"] - start["drops"]) / dt,
        "drops": {k: v / dt for k, v in reasons.items() if v},
        "rx_pps_min_1s": min(per_s) if per_s else 0,
        "stalled_1s": sum(1 for r in per_s if r <= 0),
        "rx_nombuf": end["rx_nombuf"] - start["rx_nombuf"],
        "tx_retries": end["tx_retries"] - start["tx_retries"],
        "max_qlen": max(s["qlen"] for s in samples),
        "memory_used": end["memory_used"], "memory_limit": end["memory_limit"],
        "window_s": dt,
    }
    if mode in SHAPED_BPS:
        res["rate_err"] = res["tx_bps"] / SHAPED_BPS[mode] - 1
    return res


# --------------------------------------------------------------- callgrind

def cg_parse_totals(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    return 0


ANNOT_RE = re.compile(r"^\s*([0-9,]+)\s+\(\s*[0-9.]+%\)\s+(.*?):(\S+)(?:\s+\[(.*)\])?\s*$")


def cg_annotate(path, inclusive):
    out = subprocess.run(["callgrind_annotate", "--inclusive=%s" % ("yes" if inclusive else "no"),
                          "--threshold=100", path], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = ANNOT_RE.match(line)
        if m and m.group(3) not in ("PROGRAM", "TOTALS"):
            rows.append((int(m.group(1).replace(",", "")), m.group(3), m.group(2)))
    return rows


FUNC_DEF_RE = re.compile(r"^([A-Za-z_]\w*)\(")


def source_functions(path, cache={}):
    """line -> enclosing function name, for the project's style (name at column 0)."""
    if path in cache:
        return cache[path]
    starts = []
    try:
        with open(path, errors="replace") as f:
            for i, line in enumerate(f, 1):
                m = FUNC_DEF_RE.match(line)
                if m and not line.rstrip().endswith(";"):
                    starts.append((i, m.group(1)))
    except OSError:
        starts = None
    cache[path] = starts
    return starts


def cg_by_source_function(path):
    """Self Ir per source-level function, inlined code charged to where it is written."""
    names = {}
    files = {}
    cur_fl = cur_src = cur_fn = None
    last = 0
    skip_next_cost = False
    cost = {}

    def ref(table, rest):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", rest.strip())
        if not m:
            return rest.strip()
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2).strip()
        return table.get(m.group(1), "?")

    with open(path) as f:
        for line in f:
            if not line or line[0] == "\n" or line[0] == "#":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                pos = parts[0]
                if pos == "*":
                    ln = last
                elif pos[0] in "+-":
                    ln = last + int(pos)
                else:
                    ln = int(pos)
                last = ln
                if skip_next_cost:
                    skip_next_cost = False
                    continue
                ir = int(parts[1]) if len(parts) > 1 else 0
                key = (cur_src, ln, cur_fn)
                cost[key] = cost.get(key, 0) + ir
                continue
            if line.startswith("fl="):
                cur_fl = cur_src = ref(files, line[3:])
            elif line.startswith("fi=") or line.startswith("fe="):
                cur_src = ref(files, line[3:])
            elif line.startswith("fn="):
                cur_fn = ref(names, line[3:])
                cur_src = cur_fl
            elif line.startswith("cfn="):
                ref(names, line[4:])
            elif line.startswith("cfi=") or line.startswith("cfl="):
                ref(files, line[4:])
            elif line.startswith("calls="):
                skip_next_cost = True
    agg = {}
    for (src, ln, fn), ir in cost.items():
        label = fn
        if src and os.path.exists(src) and os.path.realpath(src).startswith(REPO):
            starts = source_functions(src)
            if starts:
                name = None
                for s, n in starts:
                    if s <= ln:
                        name = n
                    else:
                        break
                if name:
                    label = "%s (%s)" % (name, os.path.relpath(os.path.realpath(src), REPO))
        agg[label] = agg.get(label, 0) + ir
    return sorted(agg.items(), key=lambda kv: -kv[1])


FAST_PATH = ("classify_burst", "sched_enqueue", "sched_dequeue", "sched_enqueue_burst",
             "sched_dequeue_burst", "sched_next_time")


def cg_sched_bench(args, out, pcap, mode, packets, what, extra=()):
    """sched_bench under callgrind (the measured phase only): (its JSON line, total
    instructions, inclusive instructions by function), or None after fail()."""
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
           "--toggle-collect=sb_measure", "--callgrind-out-file=" + out,
           args.sched_bench, "--pcap", pcap, "--packets", str(packets),
           "--dir", json.dumps(MODES[mode][0])] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("callgrind %s: rc %d\n%s" % (what, r.returncode, r.stderr[-1500:]))
        return None
    incl = {}
    for ir, fn, _ in cg_annotate(out, True):
        incl[fn] = max(incl.get(fn, 0), ir)
    return json.loads(r.stdout.strip().splitlines()[-1]), cg_parse_totals(out), incl


def run_callgrind(args, workdir, flows_list, modes, packets):
    if shutil.which("valgrind") is None:
        log("valgrind not found: no instruction counts")
        return None
    results = {}
    profiles = {}
    for flows in flows_list:
        traffic = make_pcap(workdir, "64", flows)
        for mode in modes:
            out = os.path.join(workdir, "callgrind.%s.%d.out" % (mode, flows))
            got = cg_sched_bench(args, out, traffic["path"], mode, packets,
                                 "%s %d flows" % (mode, flows))
            if got is None:
                continue
            info, total, incl = got
            fast = sum(incl.get(fn, 0) for fn in FAST_PATH)
            n = info["offered"]
            results[(mode, flows)] = {
                "total_per_pkt": total / n, "fast_per_pkt": fast / n,
                "classify_per_pkt": incl.get("classify_burst", 0) / n,
                "enq_per_pkt": (incl.get("sched_enqueue", 0) + incl.get("sched_enqueue_burst", 0)) / n,
                "deq_per_pkt": (incl.get("sched_dequeue", 0) + incl.get("sched_dequeue_burst", 0)
                                + incl.get("sched_next_time", 0)) / n,
                "delivered_share": info["delivered"] / n, "packets": n,
            }
            log("callgrind %-10s %6d flows: %7.1f instr/pkt fast path (%.1f with harness)" % (
                mode, flows, fast / n, total / n))
            if mode == "cake" and flows == 10000 or mode == "cake_5gbit" and flows == 10000:
                profiles[mode] = {
                    "symbols": [(fn, ir / n) for ir, fn, _ in cg_annotate(out, False)][:14],
                    "source": [(fn, ir / n) for fn, ir in cg_by_source_function(out)][:16],
                }
    # Native ns/packet (CPU only, no I/O; noisy like everything timed here).
    native = {}
    for flows in flows_list:
        traffic = make_pcap(workdir, "64", flows)
        for mode in modes:
            vals = []
            for _ in range(args.runs):
                r = subprocess.run([args.sched_bench, "--pcap", traffic["path"], "--packets",
                                    str(packets * 5), "--dir", json.dumps(MODES[mode][0])],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    vals.append(json.loads(r.stdout.strip().splitlines()[-1])["ns_per_pkt"])
            if vals:
                native[(mode, flows)] = statistics.median(vals)
    return {"counts": results, "profiles": profiles, "native": native, "packets": packets}


def run_callgrind_rtt(args, workdir, packets):
    """CAKE4 unlimited over RTT_PLAN, without and with sched_bench --rtt."""
    if shutil.which("valgrind") is None:
        log("valgrind not found: no instruction counts")
        return None
    rows = []
    for key, flows, ts_share in RTT_PLAN:
        if ts_share is None:
            traffic = make_pcap(workdir, "64", flows)
        else:
            traffic = make_pcap(workdir, "rtt", flows, ts_share=ts_share)
        runs = {}
        for tap in (False, True):
            out = os.path.join(workdir, "callgrind.rtt.%s.%d.out" % (key, tap))
            runs[tap] = cg_sched_bench(args, out, traffic["path"], "cake", packets,
                                       "%s%s" % (key, " --rtt" if tap else ""),
                                       ["--rtt"] if tap else [])
        if runs[False] is None or runs[True] is None:
            continue
        (base, _, incl0), (info, _, incl) = runs[False], runs[True]
        n0, n = base["offered"], info["offered"]
        rtt = info["rtt"]
        row = {"key": key, "flows": flows, "ts_share": ts_share,
               "mean_len": traffic["mean_len"], "two_way": info["two_way"],
               "cake_per_pkt": sum(incl0.get(fn, 0) for fn in FAST_PATH) / n0,
               "cake_with_tap_per_pkt": sum(incl.get(fn, 0) for fn in FAST_PATH) / n,
               "tap_per_pkt": (incl.get("rtt_observe_burst", 0)
                               + incl.get("rtt_departed", 0)) / n,
               "tcp_share": rtt["tcp_packets"] / n,
               "samples_per_pkt": (rtt["samples_wan"] + rtt["samples_lan"]) / n,
               "no_room_per_pkt": rtt["no_room"] / n, "evictions_per_pkt": rtt["evictions"] / n,
               "packets": n}
        row["share"] = row["tap_per_pkt"] / row["cake_per_pkt"]
        rows.append(row)
        log("callgrind rtt %-13s CAKE %7.1f instr/pkt, tap %6.1f (%.1f %%), samples %.3f/pkt" % (
            key, row["cake_per_pkt"], row["tap_per_pkt"], row["share"] * 100,
            row["samples_per_pkt"]))
    return {"rows": rows, "packets": packets}


def fmt_cg_rtt(cgr):
    out = ["| traffic | CAKE path | + passive RTT | share | TCP packets | samples | "
           "new flows not timed |",
           "|---|---|---|---|---|---|---|"]
    for r in cgr["rows"]:
        if r["ts_share"] is None:
            what = "`%s` one way (%.1f B), no timestamps" % (r["key"], r["mean_len"])
        else:
            what = "`%s`: %d flows both ways, %.0f %% with timestamps (%.1f B)" % (
                r["key"], r["flows"], r["ts_share"] * 100, r["mean_len"])
        out.append("| %s | %.1f | %.1f | %.1f %% | %.0f %% | %.1f %% | %.1f %% |" % (
            what, r["cake_per_pkt"], r["tap_per_pkt"], r["share"] * 100, r["tcp_share"] * 100,
            r["samples_per_pkt"] * 100, r["no_room_per_pkt"] * 100))
    return "\n".join(out)


# ------------------------------------------------------------------ report

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    """(max - min) / median, in percent."""
    if len(xs) < 2:
        return 0.0
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m * 100 if m else 0.0


def aggregate(plan, runs_data, tsc):
    rows = []
    for key, size, flows, modes in plan:
        ceil = [r["ceiling"][key]["pps"] for r in runs_data if r["ceiling"].get(key)]
        ceil_bps = [r["ceiling"][key]["bps"] for r in runs_data if r["ceiling"].get(key)]
        if ceil:
            rows.append({"traffic": key, "mode": "ceiling (testpmd io)", "mpps": med(ceil) / 1e6,
                         "spread": spread(ceil), "gbps": med(ceil_bps) / 1e9, "ratio": 1.0,
                         "ns": 1e9 / med(ceil), "cycles": tsc / med(ceil), "runs": len(ceil),
                         "per_run": [x / 1e6 for x in ceil]})
        for mode in modes:
            rs = [(r["modes"].get((key, mode)), r["ceiling"].get(key)) for r in runs_data]
            rs = [(m, c) for m, c in rs if m]
            if not rs:
                continue
            rx = [m["rx_pps"] for m, _ in rs]
            ratios = [m["rx_pps"] / c["pps"] for m, c in rs if c]
            row = {"traffic": key, "mode": mode, "mpps": med(rx) / 1e6, "spread": spread(rx),
                   "gbps": med([m["rx_bps"] for m, _ in rs]) / 1e9,
                   "ratio": med(ratios) if ratios else float("nan"),
                   "ratio_min": min(ratios) if ratios else float("nan"),
                   "ratio_max": max(ratios) if ratios else float("nan"),
                   "ratio_spread": spread(ratios), "ratios": ratios,
                   "ns": 1e9 / med(rx), "cycles": tsc / med(rx),
                   "tx_mpps": med([m["tx_pps"] for m, _ in rs]) / 1e6,
                   "tx_gbps": med([m["tx_bps"] for m, _ in rs]) / 1e9,
                   "drop_mpps": med([m["drop_pps"] for m, _ in rs]) / 1e6,
                   "drops": {}, "runs": len(rs),
                   "stalls": sum(m["stalled_1s"] for m, _ in rs),
                   "nombuf": sum(m["rx_nombuf"] for m, _ in rs),
                   "max_qlen": max(m["max_qlen"] for m, _ in rs),
                   "mbufs_in_use": max((m.get("mbufs_in_use") or 0) for m, _ in rs)}
            for m, _ in rs:
                for k, v in m["drops"].items():
                    row["drops"].setdefault(k, []).append(v)
            row["drops"] = {k: med(v) / 1e6 for k, v in row["drops"].items()}
            if mode in SHAPED_BPS:
                errs = [m["rate_err"] for m, _ in rs]
                row["rate_err"] = med(errs)
                row["rate_err_min"] = min(errs)
                row["rate_err_max"] = max(errs)
            rows.append(row)
    return rows


def fmt_table(rows):
    hdr = ("| traffic | mode | processed Mpps | spread | Gbit/s | x ceiling (min-max) | ns/pkt | "
           "cycles/pkt | delivered Mpps | delivered Gbit/s | dropped Mpps (by reason) |")
    sep = "|" + "---|" * 11
    out = [hdr, sep]
    for r in rows:
        if r["mode"].startswith("ceiling"):
            out.append("| %s | **%s** | %.2f | %.0f%% | %.2f | 1 | %.1f | %.0f | | | |" % (
                r["traffic"], r["mode"], r["mpps"], r["spread"], r["gbps"], r["ns"],
                r["cycles"]))
            continue
        drops = ", ".join("%s %.2f" % (k, v) for k, v in sorted(r["drops"].items()))
        ratio = "%.2f (%.2f-%.2f)" % (r["ratio"], r["ratio_min"], r["ratio_max"])
        out.append("| %s | %s | %.2f | %.0f%% | %.2f | %s | %.1f | %.0f | %.2f | %.3f | %.2f%s |" % (
            r["traffic"], r["mode"], r["mpps"], r["spread"], r["gbps"], ratio, r["ns"],
            r["cycles"], r["tx_mpps"], r["tx_gbps"], r["drop_mpps"],
            " (%s)" % drops if drops else ""))
    return "\n".join(out)


def fmt_spreads(rows):
    """Per traffic, the ceiling's runs and each mode's ratio runs: how far
    apart runs of the same figure land on this machine."""
    out = []
    for r in rows:
        if r["mode"].startswith("ceiling"):
            out.append("- %s ceiling: %s Mpps over %d run(s), spread %.0f %%" % (
                r["traffic"], ", ".join("%.2f" % x for x in r["per_run"]), r["runs"],
                r["spread"]))
        elif r.get("ratios"):
            out.append("  - %s x ceiling: %s, spread %.0f %%" % (
                r["mode"], ", ".join("%.2f" % x for x in r["ratios"]), r["ratio_spread"]))
    return "\n".join(out)


def fmt_cg(cg):
    if not cg:
        return "(no callgrind run)"
    counts = cg["counts"]
    flows = sorted({f for _, f in counts})
    modes = [m for m in CG_MODES if any((m, f) in counts for f in flows)]
    out = ["| mode | " + " | ".join("%s flows" % f for f in flows) + " | 100k / 10 | "
           "classify | enqueue | dequeue | native ns/pkt (10k) |",
           "|" + "---|" * (len(flows) + 6)]
    for m in modes:
        cells = []
        for f in flows:
            c = counts.get((m, f))
            cells.append("%.0f" % c["fast_per_pkt"] if c else "-")
        a, b = counts.get((m, 10)), counts.get((m, 100000))
        ratio = "%.2fx" % (b["fast_per_pkt"] / a["fast_per_pkt"]) if a and b else "-"
        c10k = counts.get((m, 10000)) or counts.get((m, flows[-1]))
        nat = cg["native"].get((m, 10000))
        out.append("| %s | %s | %s | %.0f | %.0f | %.0f | %s |" % (
            m, " | ".join(cells), ratio, c10k["classify_per_pkt"], c10k["enq_per_pkt"],
            c10k["deq_per_pkt"], "%.0f" % nat if nat else "-"))
    return "\n".join(out)


def fmt_profile(prof, key):
    rows = ["| # | function | instructions/packet |", "|---|---|---|"]
    # The harness's own loop (sb_turn: copying headers in) is not the fast path.
    funcs = [(fn, v) for fn, v in prof[key] if "sched_bench" not in fn and
             not fn.startswith("sb_")]
    for i, (fn, v) in enumerate(funcs[:10], 1):
        rows.append("| %d | `%s` | %.1f |" % (i, fn, v))
    return "\n".join(rows)


def targets(rows, cg, cg_rtt=None):
    def row(traffic, mode):
        return next((r for r in rows if r["traffic"] == traffic and r["mode"] == mode), None)
    out = []
    r = row("64B-10k", "cake")
    if r:
        out.append(("CAKE diffserv4 triple-isolate, 10k flows, 64 B, unlimited >= 0.30 x ceiling",
                    "%.2f x (runs %.2f-%.2f)" % (r["ratio"], r["ratio_min"], r["ratio_max"]),
                    r["ratio"] >= 0.30))
    on, off = row("64B-10k", "cake"), row("64B-10k", "cake_nortt")
    if on and off:
        q = on["mpps"] / off["mpps"]
        out.append(("passive RTT on (the default) keeps >= %.2f of CAKE's 64 B / 10k-flow "
                    "packet rate with it off" % (1 - RTT_BUDGET),
                    "%.3f (%.2f vs %.2f Mpps)" % (q, on["mpps"], off["mpps"]), q >= 1 - RTT_BUDGET))
    for key in ("64B-10k", "64B-20k-10kh"):
        link, subs = row(key, "cake"), row(key, "subs")
        if link and subs:
            q = subs["mpps"] / link["mpps"]
            out.append(("CAKE per subscriber, %d busy subscribers (%s): processed >= 0.7 x "
                        "one CAKE for the link" % (TRAFFIC_HOSTS.get(key, 1000), key),
                        "%.2f x (%.2f vs %.2f Mpps)" % (q, subs["mpps"], link["mpps"]),
                        q >= 0.7))
    r = row("imix-10k", "cake_5gbit")
    if r:
        out.append(("CAKE at 5 Gbit/s (IMIX, 10k flows): processed >= 0.25 x ceiling",
                    "%.2f x (runs %.2f-%.2f)" % (r["ratio"], r["ratio_min"], r["ratio_max"]),
                    r["ratio"] >= 0.25))
        out.append(("CAKE at 5 Gbit/s: delivered within +-1 %",
                    "%.3f Gbit/s, %+.2f %% (runs %+.2f..%+.2f %%)" % (
                        r["tx_gbps"], r["rate_err"] * 100, r["rate_err_min"] * 100,
                        r["rate_err_max"] * 100),
                    abs(r["rate_err_min"]) <= 0.01 and abs(r["rate_err_max"]) <= 0.01))
        out.append(("CAKE at 5 Gbit/s: no stall, no mbuf shortage",
                    "%d empty 1-s samples, rx_nombuf %d, %d mbufs in use at exit, max qlen %d" % (
                        r["stalls"], r["nombuf"], r["mbufs_in_use"], r["max_qlen"]),
                    r["stalls"] == 0 and r["nombuf"] == 0 and r["mbufs_in_use"] == 0))
    r = row("imix-10k", "cake_1gbit")
    if r:
        out.append(("1 Gbit/s on net_null delivered within +-1 %",
                    "%.4f Gbit/s, %+.2f %% (runs %+.2f..%+.2f %%)" % (
                        r["tx_gbps"], r["rate_err"] * 100, r["rate_err_min"] * 100,
                        r["rate_err_max"] * 100),
                    abs(r["rate_err_min"]) <= 0.01 and abs(r["rate_err_max"]) <= 0.01))
    if cg_rtt:
        r = next((x for x in cg_rtt["rows"] if x["key"] == "rtt-10k"), None)
        if r:
            out.append(("passive RTT <= %.0f %% of the CAKE path's instructions/packet "
                        "(64 B TCP with timestamps, 10k flows both ways)" % (RTT_BUDGET * 100),
                        "%.1f %% (%.1f on %.1f)" % (r["share"] * 100, r["tap_per_pkt"],
                                                    r["cake_per_pkt"]),
                        r["share"] <= RTT_BUDGET))
    if cg:
        for m in CG_MODES:
            a, b = cg["counts"].get((m, 10)), cg["counts"].get((m, 100000))
            if a and b:
                q = b["fast_per_pkt"] / a["fast_per_pkt"]
                out.append(("%s: 100k flows <= 1.5 x instructions/packet of 10 flows" % m,
                            "%.2f x (%.0f vs %.0f)" % (q, b["fast_per_pkt"], a["fast_per_pkt"]),
                            q <= 1.5))
    return out


KEEP_MARKER = "<!-- bench.py rewrites everything above this line and keeps what follows -->"


def write_doc(path, facts, args, rows, cg, noise, tgt, traffic_info, cg_rtt=None):
    tsc = facts["tsc_hz"]
    lines = []
    w = lines.append
    w("# Performance")
    w("")
    w("Measured by `tools/bench/bench.py`. Re-run with:")
    w("")
    w("    meson setup build-bench -Dbuildtype=release -Ddebug=true -Db_ndebug=true")
    w("    ninja -C build-bench   # -g only adds line info for the callgrind profile")
    w("    python3 tools/bench/bench.py --callgrind      # ~15 min; rewrites this file")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    for k in ("Model name", "CPU(s)", "Thread(s) per core", "Hypervisor vendor", "kernel", "dpdk",
              "shaperd", "commit", "date"):
        if k in facts:
            w("| %s | %s |" % (k, facts[k]))
    w("| TSC | %.0f MHz (%s) |" % (tsc / 1e6, facts["tsc_src"]))
    w("| EAL | `%s -l 0,1` (main lcore 0, one worker/forwarding lcore 1) |" % (
        "-m %d" % EAL_MEM_MB if args.huge else "--no-huge -m %d" % EAL_MEM_MB))
    w("| runs | %d per figure, %d s warm-up, %d s measured; medians shown |" % (
        args.runs, args.warmup, args.duration))
    w("| noise | load average %s; other busy processes seen: %s |" % (
        noise.get("load", "?"), noise.get("others") or "none"))
    w("")
    w("## Method")
    w("")
    w("- **Traffic** (`tools/bench/gen_pcap.py`, seed 1): N flows over N/10 LAN hosts (2..1000) and "
      "256 servers, 25 % IPv6, 40 % UDP, 20 % ECT(0), DSCP mix over all diffserv4 tins "
      "(BE 54 %, Bulk 10 %, Video 19 %, Voice 17 %). Every flow appears; flows are interleaved. "
      "`64B` = 60-byte frames (IPv6 frames use their minimum, 62/74 B), `1518B` = 1514-byte "
      "frames, `imix` = 7:4:1 of 60/590/1514. `64B-20k-10kh`: 20000 flows over 10000 hosts. " +
      "Mode `subs`: every LAN host a subscriber (plans {}, the link {}: none binds; "
      "docs/subscribers.md, \"Cost per packet\").".format(SUBS_PLAN, SUBS_LINK))
    for t in traffic_info:
        w("  - `%s`: %d packets, mean frame %.1f B" % (t["key"], t["packets"], t["mean_len"]))
    w("- **Ceiling**: `dpdk-testpmd --forward-mode=io --nb-cores=1` from "
      "`net_pcap0,rx_pcap=FILE,infinite_rx=1` to `net_null0,no-rx=1` (interactive mode); after the "
      "warm-up, port 1 TX-packets read with `show port stats all` once a second, the rate over the "
      "elapsed time between the first and the last read (min-max over the 1 s intervals in the "
      "JSON). net_pcap's infinite_rx copies every frame out of mbufs holding "
      "the whole pcap, so the ceiling (and every shaperd figure) includes that copy; it is lower "
      "for bigger pcaps (more flows need more packets).")
    w("- **shaperd**: the same vdevs (pcap = LAN, null = WAN), `lcores.workers [1]`, burst 32, "
      "busy poll, both directions in the mode under test (downstream gets no packets but is "
      "polled, as testpmd polls its second stream). *Processed* = `ports.lan.rx_packets`, "
      "*delivered* = `directions.upstream.tx_packets/tx_bytes`, drops by reason from the control "
      "socket; rates over the measured interval (wall clock of the client; the direction counters "
      "are a snapshot at most 10 ms old, i.e. < 0.4 %% error over %d s)." % args.duration)
    w("- Gbit/s counts frame bytes as DPDK does (no FCS, preamble or IFG). ns and cycles per "
      "packet = 1/processed rate on the one worker core (TSC %.0f MHz), I/O included. "
      "*x ceiling* is per run against that run's ceiling, then the median." % (tsc / 1e6))
    w("- Shaped rates are in frame bytes (no overhead keyword), so the delivered Gbit/s above "
      "should equal the setting.")
    w("")
    w("## Results")
    w("")
    w(fmt_table(rows))
    w("")
    w("`spread` = (max - min) / median of the processed rate over the runs.")
    w("")
    w("The runs behind each median (the ceiling, and each mode's ratio to its run's ceiling):")
    w("")
    w(fmt_spreads(rows))
    w("")
    if warnings:
        w("## Anomalies seen during the run")
        w("")
        for x in warnings:
            w("- " + x)
        w("")
    w("## Targets")
    w("")
    w("| target | measured | met |")
    w("|---|---|---|")
    for name, val, ok in tgt:
        w("| %s | %s | %s |" % (name, val, "yes" if ok else "**no**"))
    w("")
    if cg:
        w("## Instructions per packet (callgrind)")
        w("")
        w("`sched_bench` (tools/bench/sched_bench.c): the frames of the `64B` pcaps in a "
          "loop through `classify_burst` + `sched_enqueue_burst` + `sched_dequeue_burst` (+ `sched_next_time`) "
          "in bursts of 32, as `dir_turn()` does, with a simulated clock; no DPDK. Counts are the "
          "inclusive instructions of those four calls per offered packet over %d measured "
          "packets after a warm-up, from `valgrind --tool=callgrind` (deterministic; the harness's "
          "own copying is excluded). Shaped modes are offered twice their rate." % cg["packets"])
        w("")
        w(fmt_cg(cg))
        w("")
        for key, title in (("cake", "CAKE diffserv4 triple-isolate unlimited, 10k flows"),
                           ("cake_5gbit", "CAKE at 5gbit (2x overload), 10k flows")):
            if key in cg["profiles"]:
                w("### Profile: %s" % title)
                w("")
                w("Self instructions per packet by source function (inlined helpers charged to "
                  "the function they are written in):")
                w("")
                w(fmt_profile(cg["profiles"][key], "source"))
                w("")
                w("By compiled symbol (what `callgrind_annotate` shows):")
                w("")
                w(fmt_profile(cg["profiles"][key], "symbols"))
                w("")
    if cg_rtt:
        w("## Passive RTT (callgrind)")
        w("")
        w("What `dataplane.passive_rtt` (on by default) adds: `sched_bench --rtt` runs "
          "`rtt_observe_burst` after `classify_burst` in each direction's turn and "
          "`rtt_departed` after its dequeue, as `dir_turn()` does, over a table of the "
          "daemon's size; CAKE diffserv4 triple-isolate unlimited in "
          "both directions. Traffic from `gen_pcap.py --rtt` (seed 1): TCP both ways at the "
          "smallest frame that holds the segment, every segment a new TSval of its end's "
          "1 kHz clock echoing the newest one received (flows without timestamps carry 6 data "
          "bytes and are timed by sequence numbers), replayed with the TCP numbers moved on "
          "each cycle. *CAKE path* = `classify_burst` + `sched_enqueue_burst` + "
          "`sched_dequeue_burst` + `sched_next_time` without the tap, *+ passive RTT* = "
          "`rtt_observe_burst` + `rtt_departed`, both inclusive, per packet over %d measured packets; "
          "*samples* and *new flows not timed* per packet." % cg_rtt["packets"])
        w("")
        w(fmt_cg_rtt(cg_rtt))
        w("")
    # Hand-written analysis below the marker survives a re-run.
    tail = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if KEEP_MARKER in old:
            tail = old[old.index(KEEP_MARKER):]
    text = "\n".join(lines) + "\n" + ("\n" + tail if tail else "\n" + KEEP_MARKER + "\n")
    with open(path, "w") as f:
        f.write(text)
    return text


# -------------------------------------------------------------------- main

def find_default(*cands):
    for c in cands:
        p = os.path.join(REPO, c)
        if os.path.exists(p):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shaperd", default=None)
    ap.add_argument("--sched-bench", default=None)
    ap.add_argument("--testpmd", default=shutil.which("dpdk-testpmd"))
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--only", default=None, help="comma list of traffic keys to run")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions")
    ap.add_argument("--callgrind-only", action="store_true")
    ap.add_argument("--callgrind-rtt", action="store_true",
                    help="only passive RTT's instruction counts; prints, writes no doc")
    ap.add_argument("--cg-packets", type=int, default=200000)
    ap.add_argument("--huge", action="store_true", help="use hugepages (no --no-huge)")
    ap.add_argument("--headroom-mbufs", type=int, default=32768,
                    help="mbufs beyond the ones the pcap pins")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--doc", default=os.path.join(REPO, "docs", "PERFORMANCE.md"))
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    args.shaperd = args.shaperd or find_default("build-bench/src/shaperd", "build/src/shaperd")
    args.sched_bench = args.sched_bench or find_default("build-bench/tools/bench/sched_bench",
                                                        "build/tools/bench/sched_bench")
    # Stay off the worker's core: EAL pins lcore 1 itself.
    try:
        os.sched_setaffinity(0, {0})
    except OSError:
        pass
    tmp = None
    if args.workdir is None:
        tmp = tempfile.mkdtemp(prefix="shaper-bench-")
        args.workdir = tmp
    os.makedirs(args.workdir, exist_ok=True)

    if args.smoke:
        args.runs, args.warmup, args.duration = 1, 1, 2
        args.headroom_mbufs = min(args.headroom_mbufs, 16384)
        plan = SMOKE_PLAN
    else:
        plan = FULL_PLAN
    if args.only:
        keep = set(args.only.split(","))
        plan = [p for p in plan if p[0] in keep]

    if args.callgrind_rtt:
        args.callgrind_only, args.no_doc, plan = True, True, []
    if not args.callgrind_only:
        if len(os.sched_getaffinity(0)) < 2 and (os.cpu_count() or 1) < 2:
            log("SKIP: EAL -l 0,1 needs two CPUs")
            return 77
        if not args.testpmd or not os.path.exists(args.testpmd):
            log("SKIP: dpdk-testpmd not found")
            return 77
        if not args.shaperd or not os.path.exists(args.shaperd):
            log("SKIP: shaperd not found (build it, or give --shaperd)")
            return 77
    facts = machine_facts(args.shaperd)
    log("machine: %s, %s CPUs, kernel %s, DPDK %s, TSC %.0f MHz" % (
        facts.get("Model name"), facts.get("CPU(s)"), facts["kernel"], facts.get("dpdk"),
        facts["tsc_hz"] / 1e6))
    noise = {"load": loadavg(), "others": busy_others()}
    log("load %s; busy: %s" % (noise["load"], noise["others"] or "none"))

    traffic = {}
    packets = 2048 if args.smoke else None
    for key, size, flows, _ in plan:
        info = make_pcap(args.workdir, size, flows, packets, hosts=TRAFFIC_HOSTS.get(key))
        info["key"] = key
        traffic[key] = info
        log("traffic %s: %s (%d packets, mean %.1f B)" % (key, info["path"], info["packets"],
                                                          info["mean_len"]))

    eal = Eal(args)
    runs_data = []
    if not args.callgrind_only:
        for run in range(args.runs):
            rd = {"ceiling": {}, "modes": {}}
            for key, size, flows, modes in plan:
                t = traffic[key]
                c = run_ceiling(args, eal, t)
                rd["ceiling"][key] = c
                if c:
                    log("run %d %-10s ceiling    %7.2f Mpps %6.2f Gbit/s" % (
                        run + 1, key, c["pps"] / 1e6, c["bps"] / 1e9))
                for mode in modes:
                    r = run_shaperd(args, eal, t, mode)
                    if r is None:
                        continue
                    rd["modes"][(key, mode)] = r
                    extra = ""
                    if mode in SHAPED_BPS:
                        extra = " rate %+.2f%%" % (r["rate_err"] * 100)
                    log("run %d %-10s %-10s %7.2f Mpps in (%.2fx), %7.2f Mpps / %6.3f Gbit/s "
                        "out, drops %s%s" % (
                            run + 1, key, mode, r["rx_pps"] / 1e6,
                            r["rx_pps"] / c["pps"] if c else float("nan"), r["tx_pps"] / 1e6,
                            r["tx_bps"] / 1e9,
                            {k: round(v / 1e6, 3) for k, v in r["drops"].items()}, extra))
            runs_data.append(rd)
        noise["load"] += " -> " + loadavg()
        noise["others"] = ", ".join(x for x in (noise["others"], busy_others()) if x)

    cg = cg_rtt = None
    if (args.callgrind or args.callgrind_only) and not args.smoke:
        if not args.sched_bench:
            fail("sched_bench not built (ninja -C build-bench)")
        else:
            if not args.callgrind_rtt:
                cg = run_callgrind(args, args.workdir, CG_FLOWS, CG_MODES, args.cg_packets)
            cg_rtt = run_callgrind_rtt(args, args.workdir, args.cg_packets)
    elif args.smoke and args.sched_bench and os.path.exists(args.sched_bench):
        # The scheduler benchmark runs too (natively, briefly).
        t = traffic[plan[0][0]]
        for mode in CG_MODES:
            r = subprocess.run([args.sched_bench, "--pcap", t["path"], "--packets", "20000",
                                "--warmup", "5000", "--dir", json.dumps(MODES[mode][0])],
                               capture_output=True, text=True)
            ok = r.returncode == 0
            if ok:
                info = json.loads(r.stdout.strip().splitlines()[-1])
                ok = info["offered"] >= 20000 and info["delivered"] > 0
                log("sched_bench %-10s %.0f ns/pkt, delivered %d of %d" % (
                    mode, info["ns_per_pkt"], info["delivered"], info["offered"]))
            if not ok:
                fail("sched_bench %s: rc %d %s" % (mode, r.returncode, r.stderr[-500:]))
        # And passive RTT over two-way traffic: it must take samples.
        t = make_pcap(args.workdir, "rtt", 100, packets=4096, ts_share=0.75)
        r = subprocess.run([args.sched_bench, "--pcap", t["path"], "--packets", "20000",
                            "--warmup", "5000", "--rtt"], capture_output=True, text=True)
        info = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None
        if info and info["two_way"] and info["rtt"]["samples_wan"] > 0 and \
                info["rtt"]["samples_lan"] > 0:
            log("sched_bench --rtt   %.0f ns/pkt, %d WAN-side and %d LAN-side samples" % (
                info["ns_per_pkt"], info["rtt"]["samples_wan"], info["rtt"]["samples_lan"]))
        else:
            fail("sched_bench --rtt: rc %d %s %s" % (r.returncode, info, r.stderr[-500:]))

    tsc = facts["tsc_hz"]
    rows = aggregate(plan, runs_data, tsc) if runs_data else []
    if rows:
        log("")
        log(fmt_table(rows))
        log("")
        log(fmt_spreads(rows))
    if cg_rtt:
        log("")
        log(fmt_cg_rtt(cg_rtt))
    if cg:
        log("")
        log(fmt_cg(cg))
        for key in cg["profiles"]:
            log("\nprofile %s (by source function):\n%s" % (
                key, fmt_profile(cg["profiles"][key], "source")))
    tgt = targets(rows, cg, cg_rtt)
    if tgt:
        log("")
        for name, val, ok in tgt:
            log("%-4s %s: %s" % ("ok" if ok else "MISS", name, val))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"facts": facts, "rows": rows, "targets": tgt,
                       "callgrind": {"%s/%d" % k: v for k, v in cg["counts"].items()} if cg else None,
                       "profiles": cg["profiles"] if cg else None,
                       "native": {"%s/%d" % k: v for k, v in cg["native"].items()} if cg else None,
                       "passive_rtt": cg_rtt,
                       "runs": [{"ceiling": r["ceiling"],
                                 "modes": {"%s/%s" % k: v for k, v in r["modes"].items()}}
                                for r in runs_data]}, f, indent=1)
    if not args.smoke and not args.no_doc and not failures and (rows or cg):
        write_doc(args.doc, facts, args, rows, cg, noise, tgt,
                  [traffic[p[0]] for p in plan], cg_rtt)
        log("wrote %s" % args.doc)
    if tmp is not None and not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.smoke and warnings:
        failures.extend(warnings)
    if failures:
        log("\n%d failure(s):\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
