#!/usr/bin/python3
"""Integration: shapectl against a real shaperd on net_pcap vdevs (--no-huge).

The daemon reads two small pcaps written here (raw bytes, no scapy): 200 UDP
frames upstream (unshaped) and 300 downstream, shaped to 200kbit with a huge
rtt so the backlog stays queued (no AQM drops) while flows are inspected.
Every command is run in human and --json form against real values, then the
error paths with their exit codes: 2 usage, 1 refused, 3 not running,
4 permission denied (socket mode 0600, shapectl run as nobody), 5 timeout
and protocol errors (fake servers). Last, `watch` follows a port's link down
and up (and a flap between two looks) on a second daemon whose WAN port is
net_af_packet on a veth pair.

usage: shapectl_test.py SHAPERD SHAPECTL
"""
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (NOBODY, Proc, check, check_accounting, failures, ip_frame,  # noqa: E402
                     make_veth, shaperd_argv, start_shaperd, write_config, write_pcap)

if os.geteuid() != 0:
    print("SKIP: needs root (DPDK vdevs, and setpriv to run shapectl as nobody)")
    sys.exit(77)

SHAPERD, SHAPECTL = sys.argv[1], sys.argv[2]
N_UP, N_DOWN = 200, 300


# ---- pcap writing -------------------------------------------------------

# ---- running things -----------------------------------------------------

SOCK = None


def run(args, sock=True, env=None, user=None, timeout=30):
    cmd = [SHAPECTL] + (["--socket", SOCK] if sock else []) + list(args)
    if user == "nobody":
        cmd = NOBODY + cmd
    e = dict(os.environ)
    e.pop("SHAPER_SOCKET", None)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def ctl_json(*args):
    rc, out, err = run(["--json"] + list(args))
    if rc != 0:
        check(False, "shapectl --json %s: exit %d: %s" % (" ".join(args), rc, err.strip()))
        return None
    return json.loads(out)


def wait_for(pred, what, timeout=15.0):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    check(False, "timed out waiting for " + what)
    return None


class Daemon(Proc):
    def __init__(self, tmp, cfg):
        path = write_config(os.path.join(tmp, "shaper.json"), cfg)
        super().__init__("shaperd", shaperd_argv(SHAPERD, path, prefix="shapectl_%d" % os.getpid(),
                                                 mem_mb=256))

    def wait_ready(self, timeout=30.0):
        return self.wait_line("control socket", timeout)

    def stop(self):
        return super().stop(timeout=30)


# ---- Prometheus text parsing --------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse_labels(s):
    labels, pos = {}, 0
    while pos < len(s):
        m = LABEL.match(s, pos)
        if m is None:
            raise ValueError("bad labels {%s}" % s)
        labels[m.group(1)] = re.sub(r'\\(.)', lambda x: "\n" if x.group(1) == "n" else x.group(1),
                                    m.group(2))
        pos = m.end()
    return labels


def parse_metrics(text):
    """Returns {(name, frozenset(labels)): value}; raises ValueError on bad format."""
    helps, types, samples, done, current = {}, {}, {}, set(), None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, h = line[7:].partition(" ")
            if name in helps or not h:
                raise ValueError("HELP repeated or empty: " + line)
            helps[name] = h
            continue
        if line.startswith("# TYPE "):
            name, _, t = line[7:].partition(" ")
            if t not in ("counter", "gauge", "histogram") or name in types:
                raise ValueError("bad TYPE: " + line)
            types[name] = t
            continue
        if line.startswith("#") or not line:
            raise ValueError("unexpected line: %r" % line)
        m = SAMPLE.match(line)
        if m is None:
            raise ValueError("not a sample: %r" % line)
        name = m.group(1)
        # A histogram's samples are its family name with _bucket, _sum or _count.
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[:-len(suffix)]) == "histogram":
                name = name[:-len(suffix)]
        if name not in types or name not in helps:
            raise ValueError("sample before its HELP/TYPE: " + line)
        if name != current:
            if name in done:
                raise ValueError("family %s is split" % name)
            if current is not None:
                done.add(current)
            current = name
        key = (m.group(1), frozenset(parse_labels(m.group(2) or "").items()))
        if key in samples:
            raise ValueError("duplicate series: " + line)
        samples[key] = float(m.group(3))
    return samples, types


def metric(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


# ---- fake servers for the I/O error paths -------------------------------

def fake_server(path, behaviour):
    """Accept one client and misbehave: 'garbage', 'wrong_id' or 'close'; or
    answer with behaviour itself if it is a dict (a canned result)."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        with conn:
            if isinstance(behaviour, dict):
                req = json.loads(conn.recv(65536).split(b"\n")[0])
                conn.sendall(json.dumps({"id": req["id"], "ok": True,
                                         "result": behaviour}).encode() + b"\n")
            elif behaviour != "close":
                conn.recv(65536)
                conn.sendall(b"this is not json\n" if behaviour == "garbage"
                             else b'{"id":999,"ok":true,"result":{}}\n')
            time.sleep(0.2)
        srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


# ---- the test -----------------------------------------------------------

def test_usage_errors():
    cases = [
        [], ["bogus"], ["stats", "sideways"], ["stats", "upstream", "downstream"],
        ["set", "downstream", "bandwidth"], ["set", "sideways", "bandwidth", "1mbit"],
        ["set"], ["set", "downstream", "ecn", "true", "ecn", "false"],
        ["flows", "--top", "0"], ["flows", "--top", "1001"], ["flows", "--top", "x"],
        ["--timeout", "abc", "version"], ["--timeout", "-1", "version"],
        ["watch", "-n", "0"], ["watch", "--count", "0"], ["version", "extra"],
        ["--nosuch", "version"], ["stats", "--top", "3"], ["reset", "now"],
    ]
    for args in cases:
        rc, out, err = run(args)
        first = err.splitlines()[0] if err else ""
        check(rc == 2 and first.startswith("shapectl: ") and not first.endswith("."),
              "usage error exits 2: shapectl %s -> %d %r" % (" ".join(args), rc, first))


def test_not_running(tmp):
    rc, _, err = run(["--socket", os.path.join(tmp, "nonexistent.sock"), "version"], sock=False)
    check(rc == 3 and "nonexistent.sock" in err and "is shaperd running" in err,
          "missing socket exits 3 and names the path: %r" % err.strip())
    stale = os.path.join(tmp, "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(stale)  # bound, never listening: what a crashed daemon leaves
    rc, _, err = run(["--socket", stale, "stats"], sock=False)
    check(rc == 3 and "stale.sock" in err, "stale socket (refused) exits 3: %r" % err.strip())
    s.close()


def test_io_errors(tmp):
    hang = os.path.join(tmp, "hang.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(hang)
    s.listen(4)  # connects succeed, nobody ever answers
    t0 = time.time()
    rc, _, err = run(["--socket", hang, "--timeout", "0.5", "stats"], sock=False)
    dt = time.time() - t0
    check(rc == 5 and "no answer within 0.5 s" in err and dt < 3,
          "no reply: exits 5 after the timeout (%.2f s): %r" % (dt, err.strip()))
    s.close()
    for behaviour, want in (("garbage", "protocol error"), ("wrong_id", "another request"),
                            ("close", "closed the connection")):
        path = os.path.join(tmp, behaviour + ".sock")
        t = fake_server(path, behaviour)
        rc, _, err = run(["--socket", path, "version"], sock=False)
        check(rc == 5 and want in err, "%s reply exits 5: %r" % (behaviour, err.strip()))
        t.join(timeout=5)


def test_requeues_measured(tmp):
    """The tc-style lines show the measured tx_retries as requeues, not a literal 0."""
    path = os.path.join(tmp, "stats.sock")
    t = fake_server(path, {"ports": {}, "directions": {"upstream": {
        "discipline": "fifo", "bandwidth": 0, "bytes": 5000, "packets": 5, "drops": 0,
        "overlimits": 3, "backlog": 1000, "qlen": 1, "tx_retries": 7, "drop_reasons": {}}}})
    rc, out, err = run(["--socket", path, "stats"], sock=False)
    t.join(timeout=5)
    check(rc == 0 and "(dropped 0, overlimits 3 requeues 7)" in out
          and re.search(r"^ backlog \S+ 1p requeues 7$", out, re.M) is not None
          and "requeues 0" not in out, "requeues shows tx_retries: %r" % out)


def test_version():
    rc, out, err = run(["version"])
    check(rc == 0 and re.search(r"^shaperd \S+ \(protocol 1\)$", out, re.M) is not None
          and out.startswith("shapectl "), "version (human): %r" % out)
    v = ctl_json("version")
    check(v is not None and v.get("protocol") == 1 and v.get("name") == "shaperd"
          and isinstance(v.get("version"), str), "version --json: %r" % v)
    rc, out, _ = run(["-V"], sock=False)
    check(rc == 0 and out.startswith("shapectl "), "shapectl -V works without a daemon")
    rc, out, _ = run(["--help"], sock=False)
    check(rc == 0 and all(("  %d  " % n) in out for n in range(6)) and "watch" in out,
          "--help lists every command and exit codes 0..5")


def test_stats():
    st = wait_for(lambda: (lambda s: s if s and s["directions"]["upstream"]["tx_packets"] == N_UP
                           and s["directions"]["downstream"]["rx_packets"] == N_DOWN else None)(
        ctl_json("stats")), "all frames read and upstream forwarded")
    if st is None:
        return
    up, down = st["directions"]["upstream"], st["directions"]["downstream"]
    check(up["rx_packets"] == N_UP and up["tx_packets"] == N_UP and up["drops"] == 0,
          "upstream rx == tx == %d frames in the pcap" % N_UP)
    check(up["rx_bytes"] == N_UP * 200, "upstream rx_bytes %d" % up["rx_bytes"])
    check(down["rx_packets"] == N_DOWN, "downstream rx_packets == %d" % N_DOWN)
    check(down["backlog"] > 0 and down["qlen"] > 0 and down["tx_packets"] < N_DOWN,
          "downstream still queued at 200kbit (backlog %d)" % down["backlog"])
    check(st["ports"]["lan"]["rx_packets"] == N_UP and st["ports"]["wan"]["tx_packets"] == N_UP
          and st["ports"]["wan"]["rx_packets"] == N_DOWN, "port counters match the pcaps")
    check(down["bandwidth"] == 25000 and up["bandwidth"] == 0, "bandwidth in bytes/s")
    check([t["name"] for t in down["tins"]] == ["Bulk", "Best Effort", "Video", "Voice"]
          and len(up["tins"]) == 3, "diffserv4 / diffserv3 tins in display order")
    check(sum(t["sent_packets"] for t in up["tins"]) == N_UP, "upstream tins account for every frame")
    check("tx_failed" not in up["drop_reasons"] and up["drops"] == sum(up["drop_reasons"].values()),
          "drop reasons: only counted ones (no tx_failed), drops is their sum")

    rc, out, err = run(["stats"])
    check(rc == 0, "stats (human) exits 0")
    check(re.search(r"^upstream \(lan -> wan\): cake bandwidth unlimited$", out, re.M) is not None
          and re.search(r"^downstream \(wan -> lan\): cake bandwidth 200Kbit$", out, re.M) is not None,
          "a header line per direction with discipline and tc-style bandwidth")
    check(" Sent %d bytes %d pkt (dropped 0, overlimits" % (N_UP * 200, N_UP) in out,
          "upstream Sent line")
    check(re.search(r"^\s+Bulk\s+Best Effort\s+Video\s+Voice$", out, re.M) is not None,
          "diffserv4 tin header")
    for row in ("thresh", "target", "interval", "pk_delay", "av_delay", "sp_delay", "backlog",
                "pkts", "bytes", "way_inds", "way_miss", "way_cols", "drops", "marks",
                "ack_drop", "sp_flows", "bk_flows", "un_flows", "max_len", "quantum"):
        check(len(re.findall(r"^  %s\s" % row, out, re.M)) == 2, "tin row %s for both directions" % row)
    down_thresh = re.findall(r"^  thresh .*$", out, re.M)
    check(len(down_thresh) == 2 and down_thresh[1].split()[2] == "200Kbit",
          "downstream Best Effort thresh 200Kbit: %r" % down_thresh)
    pkts = re.findall(r"^  pkts\s+(.*)$", out, re.M)
    check(pkts and sum(int(x) for x in pkts[0].split()) == N_UP, "upstream pkts row sums to %d" % N_UP)
    check(re.search(r"^lan\s+net_pcap\d\s+up \d+M\s+%d\s" % N_UP, out, re.M) is not None, "port table row (with link up)")

    one = ctl_json("stats", "upstream")
    check(one is not None and list(one["directions"]) == ["upstream"], "stats upstream: one direction")


def test_flows():
    fl = ctl_json("flows")
    check(fl is not None and fl["upstream"] == [] and len(fl["downstream"]) == 4,
          "flows: the 4 downstream UDP flows are queued, upstream none")
    fl = ctl_json("flows", "downstream", "--top", "2")
    ok = fl is not None and list(fl) == ["downstream"] and len(fl["downstream"]) == 2
    if ok:
        for f in fl["downstream"]:
            ok &= (f["src"] == "10.0.0.1" and f["dst"].startswith("192.168.1.1") and f["proto"] == 17
                   and 5000 <= f["sport"] <= 5003 and f["dport"] == 6000 and f["backlog_bytes"] > 0
                   and f["packets"] * 1000 == f["backlog_bytes"])
        ok &= fl["downstream"][0]["backlog_bytes"] >= fl["downstream"][1]["backlog_bytes"]
    check(ok, "flows downstream --top 2: addresses, ports and backlog from the pcap: %r" % fl)
    rc, out, _ = run(["flows", "--top", "1000", "downstream"])
    check(rc == 0 and "downstream: 4 queued flows" in out
          and re.search(r"^\s+udp\s+10\.0\.0\.1\s+500[0-3]\s+192\.168\.1\.1[0-3]\s+6000\s+Best Effort\s+\d+\s+\d+b\s", out, re.M)
          is not None, "flows (human) table, tin by name")
    # Below the operator level (nobody, through the "others" bits): networks, no ports.
    os.chmod(SOCK, 0o666)
    try:
        rc, out, err = run(["--json", "flows", "downstream"], user="nobody")
        fl = json.loads(out).get("downstream") if rc == 0 else None
        check(fl and all(f["src"] == "10.0.0.0/24" and f["dst"] == "192.168.1.0/24"
                         and f["sport"] is None and f["dport"] is None and f["backlog_bytes"] > 0
                         for f in fl),
              "flows at level user: addresses cut to /24, no ports (%r %s)" % (fl, err.strip()))
        rc, out, _ = run(["flows", "downstream"], user="nobody")
        check(rc == 0 and re.search(r"^\s+udp\s+10\.0\.0\.0/24\s+-\s+192\.168\.1\.0/24\s+-\s+Best Effort",
                                    out, re.M) is not None and "192.168.1.1" not in out,
              "flows (human) at level user: networks, ports as -")
    finally:
        os.chmod(SOCK, 0o600)


def test_metrics():
    rc, out, err = run(["metrics"])
    if not check(rc == 0, "metrics exits 0"):
        return
    try:
        samples, types = parse_metrics(out)
    except ValueError as e:
        check(False, "metrics parse as Prometheus text: %s" % e)
        return
    check(True, "metrics parse as Prometheus text (%d series)" % len(samples))
    check(all(n.startswith("shaper_") for n in types), "every metric has the shaper_ prefix")
    check(all((t == "counter") == n.endswith("_total") for n, t in types.items()),
          "counters and only counters end in _total")
    check(metric(samples, "shaper_up") == 1, "shaper_up 1")
    check(any(n == "shaper_build_info" and dict(l).get("protocol") == "1" for n, l in samples),
          "shaper_build_info with the protocol")
    check(metric(samples, "shaper_direction_receive_packets_total", direction="upstream") == N_UP
          and metric(samples, "shaper_direction_receive_packets_total", direction="downstream") == N_DOWN,
          "direction receive counters match the pcaps")
    check(metric(samples, "shaper_port_receive_packets_total", port="lan") == N_UP,
          "port counter with port label")
    check(metric(samples, "shaper_port_up", port="lan") == 1
          and metric(samples, "shaper_port_link_changes_total", port="wan") == 0,
          "link state: up, no changes")
    check(metric(samples, "shaper_tin_sent_packets_total", direction="downstream", tin="Best Effort") == N_DOWN,
          "tin label \"Best Effort\"")
    check(types.get("shaper_rtt_seconds") == "histogram" and
          metric(samples, "shaper_rtt_seconds_count", direction="downstream", part="wan") is not None and
          metric(samples, "shaper_rtt_seconds_bucket", direction="downstream", part="wan", le="+Inf") ==
          metric(samples, "shaper_rtt_seconds_count", direction="downstream", part="wan"),
          "passive RTT histogram: +Inf bucket equals the count")
    check(metric(samples, "shaper_config_bandwidth_bytes_per_second", direction="downstream") == 25000,
          "bandwidth gauge in bytes per second")
    check(metric(samples, "shaper_tin_target_seconds", direction="upstream", tin="Best Effort") == 0.005,
          "delays in seconds (target 5ms = 0.005)")
    check((metric(samples, "shaper_qdisc_backlog_bytes", direction="downstream") or 0) > 0,
          "backlog gauge")
    turn = metric(samples, "shaper_direction_turn_max_seconds", direction="upstream")
    check(turn is not None and 0 < turn < 1.0,
          "worker's longest turn in seconds (%r: above 0, below 1 s)" % turn)
    check(metric(samples, "shaper_drops_total", direction="downstream", reason="aqm") == 0
          and metric(samples, "shaper_drops_total", direction="upstream", reason="overflow") == 0,
          "drops by reason label")
    check(not any(n == "shaper_drops_total" and dict(l).get("reason") == "tx_failed"
                  for n, l in samples), "no tx_failed series: refused frames are held, never dropped")


def test_set_get():
    def get(direction):
        r = ctl_json("get", direction)
        return r[direction] if r and list(r) == [direction] else {}

    rc, out, err = run(["set", "downstream", "bandwidth", "200mbit"])
    check(rc == 0 and re.search(r"^\s+bandwidth\s+200Mbit$", out, re.M) is not None,
          "set downstream bandwidth 200mbit prints the new settings")
    rc, out, _ = run(["get", "downstream"])
    check(rc == 0 and out.startswith("downstream\n")
          and re.search(r"^\s+bandwidth\s+200Mbit$", out, re.M) is not None, "get downstream shows 200Mbit")
    check(get("downstream").get("bandwidth") == "200Mbit", "get --json downstream bandwidth 200Mbit")
    both = ctl_json("get")
    check(both is not None and list(both) == ["upstream", "downstream"], "get: both directions")

    # The backlog drains at the new rate: nothing lost (rtt interplanetary: no AQM drops).
    st = wait_for(lambda: (lambda s: s if s and s["directions"]["downstream"]["tx_packets"] == N_DOWN
                           else None)(ctl_json("stats", "downstream")), "downstream drain at 200mbit")
    if st:
        d = st["directions"]["downstream"]
        check(d["drops"] == 0 and d["backlog"] == 0 and d["bandwidth"] == 25000000,
              "downstream: all %d frames out, no drops, bandwidth 25000000 B/s" % N_DOWN)

    rc, _, _ = run(["set", "upstream", "overhead", "18"])
    check(rc == 0 and get("upstream").get("overhead") == 18, "set upstream overhead 18 (integer)")
    rc, _, _ = run(["set", "upstream", "overhead", "docsis"])
    g = get("upstream")
    check(rc == 0 and g.get("overhead") == 18 and g.get("mpu") == 64, "set upstream overhead docsis (keyword)")
    rc, _, _ = run(["set", "upstream", "overhead", "-5"])
    check(rc == 0 and get("upstream").get("overhead") == -5, "set upstream overhead -5 (not an option)")
    rc, _, _ = run(["set", "downstream", "ecn", "false"])
    check(rc == 0 and get("downstream").get("ecn") is False, "set downstream ecn false (boolean)")
    rc, out, _ = run(["--json", "set", "downstream", "ecn", "true", "diffserv", "diffserv3", "rtt", "40ms"])
    r = json.loads(out) if rc == 0 else {}
    check(rc == 0 and r.get("downstream", {}).get("ecn") is True
          and r["downstream"].get("diffserv") == "diffserv3" and r["downstream"].get("rtt") == "40ms",
          "set with several pairs, --json result")

    # The emulator's path, live: "emulate.delay" is {"emulate": {"delay": ...}}.
    rc, out, _ = run(["set", "upstream", "emulate.delay", "30ms", "emulate.loss", "0.5"])
    em = get("upstream").get("emulate", {})
    check(rc == 0 and em.get("delay") == "30ms" and em.get("loss") == 0.5
          and em.get("limit") == 10240,
          "set upstream emulate.delay 30ms emulate.loss 0.5: get shows %s" % em)
    rc, out, err = run(["set", "upstream", "emulate.limit", "5"])
    check(rc != 0 and "upstream.emulate.limit: fixed at start" in out + err,
          "set upstream emulate.limit is refused: %s" % (out + err).strip())
    rc, out, err = run(["set", "downstream", "emulate.delay", "5ms"])
    check(rc != 0 and "no emulator" in out + err and "emulate" not in get("downstream"),
          "set downstream emulate.delay: downstream has no emulator: %s" % (out + err).strip())
    rc, _, _ = run(["set", "upstream", "emulate.delay", "1ms", "emulate.loss", "0"])
    check(rc == 0 and get("upstream").get("emulate", {}).get("loss") == 0,
          "set upstream emulate back to 1 ms, no loss")

    rc, out, err = run(["set", "downstream", "bandwidth", "280mbps"])
    check(rc == 1 and out == "" and err.startswith("shapectl: invalid_argument: ")
          and '"280mbps" is not a rate' in err, "refused set exits 1: %r" % err.strip())
    check(get("downstream").get("bandwidth") == "200Mbit", "a refused set changes nothing")
    rc, _, err = run(["set", "downstream", "nosuchkey", "1"])
    check(rc == 1 and "unknown key" in err, "unknown key refused (1): %r" % err.strip())
    rc, _, err = run(["set", "upstream", "mpu", "999"])
    check(rc == 1 and "out of range" in err, "out of range refused (1): %r" % err.strip())


def test_reset():
    rc, out, _ = run(["reset"])
    check(rc == 0 and out == "", "reset exits 0 silently")
    st = wait_for(lambda: (lambda s: s if s and all(
        d["rx_packets"] == 0 and d["tx_packets"] == 0 and d["packets"] == 0
        for d in s["directions"].values()) else None)(ctl_json("stats")), "counters to read 0", 3)
    check(st is not None, "stats after reset: rx/tx/packets 0 in both directions")
    rc, out, _ = run(["--json", "reset"])
    check(rc == 0 and json.loads(out) == {}, "reset --json prints {}")


def test_watch():
    t0 = time.time()
    rc, out, _ = run(["watch", "-n", "0.2", "--count", "3"])
    check(rc == 0 and out.count("shaperd at ") == 3 and "\033[" not in out
          and "200Mbit" in out and "Best Effort" in out and time.time() - t0 < 10,
          "watch --count 3: three frames, no screen clearing on a pipe")
    rc, out, _ = run(["--json", "watch", "-n", "0.1", "--count", "2"])
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 2 and all("directions" in json.loads(l) for l in lines),
          "watch --json: one stats result per line")


def watch_frames(out):
    """The frames of watch's output on a pipe, each from its "shaperd at" line."""
    return ["shaperd at " + f for f in out.split("shaperd at ")[1:]]


def port_row(frame, port):
    """(link, changes) of a port's row in a watch frame, or None."""
    m = re.search(r"^%s +\S+ +(up \d+M|down|-) +(\d+) " % port, frame, re.M)
    return (m.group(1), int(m.group(2))) if m else None


def test_watch_link(tmp):
    """watch shows a port's link going down and up: a second daemon whose WAN port is
    net_af_packet on a veth (its link follows the kernel carrier, which drops when the
    peer goes down; the daemon looks twice a second, so each state is held 1.2 s)."""
    tag = "sc%d" % (os.getpid() % 100000)
    lan, lanp, wan, wanp = tag + "l", tag + "lp", tag + "w", tag + "wp"
    d = None
    try:
        make_veth(lan, lanp)
        make_veth(wan, wanp)
        cfg = {"ports": {"lan": "net_af_packet0,iface=%s" % lan,
                         "wan": "net_af_packet1,iface=%s" % wan},
               "upstream": {"discipline": "fifo"}, "downstream": {"discipline": "fifo"},
               "dataplane": {"idle_sleep": "100us"}}
        d, sock, _ = start_shaperd(SHAPERD, tmp, "watchlink", cfg, mem_mb=256)
        if not check(d is not None, "watch link: a daemon on veths"):
            return
        name = "wan port net_af_packet1: link"
        # Each change seen by the next look.
        w = Proc("watch", [SHAPECTL, "--socket", sock, "watch", "-n", "0.2"])
        check(w.wait_line("shaperd at", 10), "watch: a first frame")
        subprocess.run(["ip", "link", "set", wanp, "down"], check=True)
        check(w.wait_line(name + " down", 10), "watch: reports the WAN link down")
        time.sleep(1.2)
        subprocess.run(["ip", "link", "set", wanp, "up"], check=True)
        check(w.wait_line(name + " up", 10), "watch: reports the WAN link up again")
        time.sleep(0.3)
        rc = w.stop()
        frames = watch_frames("\n".join(w.lines))
        rows = [port_row(f, "wan") for f in frames]
        last = frames[-1] if frames else ""
        check(rc == 0 and rows and rows[0] == ("up 10000M", 0) and ("down", 1) in rows
              and rows[-1] == ("up 10000M", 2) and port_row(last, "lan") == ("up 10000M", 0),
              "watch: the WAN row goes up 0 -> down 1 -> up 2 changes, LAN stays up (rc %d, %s)"
              % (rc, sorted(set(map(str, rows)))))
        events = [l.strip() for l in last.splitlines() if name in l]
        check(len(events) == 2 and events[0].endswith(name + " down")
              and events[1].endswith(name + " up")
              and all(re.match(r"\d\d:\d\d:\d\d  wan port", e) for e in events),
              "watch: the last frame lists both changes, down then up, with the time: %s" % events)
        # A flap between two looks: the state is the same, the counter moved by 2.
        w = Proc("watch", [SHAPECTL, "--socket", sock, "watch", "-n", "4", "--count", "2"])
        check(w.wait_line("shaperd at", 10), "watch -n 4: a first frame")
        subprocess.run(["ip", "link", "set", wanp, "down"], check=True)
        time.sleep(1.2)
        subprocess.run(["ip", "link", "set", wanp, "up"], check=True)
        try:
            w.proc.wait(timeout=15)  # --count 2: the second frame 4 s after the first
        except subprocess.TimeoutExpired:
            pass
        rc = w.stop()
        last = (watch_frames("\n".join(w.lines)) or [""])[-1]
        check(rc == 0 and name + " up, 2 changes since the last look" in last
              and port_row(last, "wan") == ("up 10000M", 4),
              "watch: a flap between two looks shows as 2 changes, the row as up 4 (rc %d)" % rc)
        if failures:
            w.dump()
    finally:
        if d is not None:
            d.stop()
        for n in (lan, wan):
            subprocess.run(["ip", "link", "del", n], capture_output=True)


def test_socket_selection(tmp):
    bogus = os.path.join(tmp, "bogus.sock")
    rc, _, _ = run(["version"], sock=False, env={"SHAPER_SOCKET": SOCK})
    check(rc == 0, "SHAPER_SOCKET replaces the default path")
    rc, _, _ = run(["--socket", SOCK, "version"], sock=False, env={"SHAPER_SOCKET": bogus})
    check(rc == 0, "--socket overrides SHAPER_SOCKET")
    rc, _, err = run(["--socket", bogus, "version"], sock=False, env={"SHAPER_SOCKET": SOCK})
    check(rc == 3 and bogus in err, "--socket overrides SHAPER_SOCKET (the other way)")


def test_permission():
    mode = stat.S_IMODE(os.stat(SOCK).st_mode)
    check(mode == 0o600, "control.mode \"0600\" gives the socket mode %04o" % mode)
    rc, _, err = run(["version"], user="nobody")
    check(rc == 4 and SOCK in err and "permission denied" in err,
          "nobody on a 0600 root socket exits 4: %r" % err.strip())
    os.chmod(SOCK, 0o666)
    rc, _, err = run(["version"], user="nobody")
    check(rc == 0, "the same user gets through once the mode allows it (%r)" % err.strip())
    os.chmod(SOCK, 0o600)


def test_accounting():
    """The identity from --json, and the same terms in the human-readable output."""
    st = ctl_json("stats")
    if st is not None:
        check_accounting(st, "shapectl --json stats")
    rc, out, _ = run(["stats", "downstream"])
    check(rc == 0 and re.search(r"accounting: received \d+ \+ held at reset \d+ = sent \d+ \+ "
                                r"dropped \d+ \+ queued \d+ \(scheduler \d+, swap \d+, emulator \d+,"
                                r" tx pending \d+\), unaccounted 0\n", out) is not None,
          "shapectl stats prints the accounting line")


def main():
    global SOCK
    if shutil.which("setpriv") is None:
        print("SKIP: setpriv (util-linux) is needed to run shapectl as nobody")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shapectl_")
    os.chmod(tmp, 0o755)  # nobody must reach the socket for the permission test
    SOCK = os.path.join(tmp, "run", "shaper.sock")
    down = [ip_frame("10.0.0.1", "192.168.1.%d" % (10 + i % 4), 5000 + i % 4, 6000, 1000)
            for i in range(N_DOWN)]
    up = [ip_frame("192.168.1.10", "10.0.0.1", 7000 + i % 3, 53, 200, tos=0xb8 if i % 2 else 0)
          for i in range(N_UP)]
    write_pcap(os.path.join(tmp, "wan_in.pcap"), down)
    write_pcap(os.path.join(tmp, "lan_in.pcap"), up)
    cfg = {
        "ports": {
            "wan": "net_pcap0,rx_pcap=%s/wan_in.pcap,tx_pcap=%s/wan_out.pcap" % (tmp, tmp),
            "lan": "net_pcap1,rx_pcap=%s/lan_in.pcap,tx_pcap=%s/lan_out.pcap" % (tmp, tmp),
        },
        # a WAN emulator (1 ms) whose path test_set_get changes live
        "upstream": {"discipline": "cake", "emulate": {"delay": "1ms"}},
        # Slow, and an rtt so long that AQM never drops: the queue stays for flows.
        "downstream": {"discipline": "cake", "bandwidth": "200kbit", "diffserv": "diffserv4",
                       "rtt": "interplanetary"},
        "control": {"socket": SOCK, "mode": "0600"},
        # passive RTT on: the /metrics check below reads its histogram
        "dataplane": {"passive_rtt": True},
    }

    # Without a daemon first: usage and connection errors.
    test_usage_errors()
    test_not_running(tmp)
    test_io_errors(tmp)
    test_requeues_measured(tmp)

    d = Daemon(tmp, cfg)
    try:
        if not check(d.wait_ready(), "shaperd printed \"control socket\""):
            return
        os.chmod(os.path.dirname(SOCK), 0o755)
        wait_for(lambda: run(["stats"])[0] == 0, "the first statistics snapshot", 10)
        test_version()
        test_stats()
        test_flows()
        test_metrics()
        test_set_get()
        test_watch()
        test_reset()
        test_socket_selection(tmp)
        test_permission()
        test_accounting()
    finally:
        rc = d.stop()
        print("\n".join(d.lines))
    check(rc == 0, "shaperd exits 0 on SIGTERM (%d)" % rc)
    check(not os.path.exists(SOCK), "shaperd removed its socket")
    rc, _, _ = run(["version"])
    check(rc == 3, "after the daemon stopped: exit 3")
    test_watch_link(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        check(False, "a shapectl run hung: %s" % e)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")
