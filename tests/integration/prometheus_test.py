#!/usr/bin/python3
"""Integration: Debian's real Prometheus server scrapes shaperd's /metrics.

shaperd runs on net_pcap vdevs (--no-huge) with "metrics": {"listen": PORT}
(a bare port: 127.0.0.1). The LAN port replays its pcap forever
(infinite_rx), so the upstream counters keep moving; the WAN port reads a
pcap of N_DOWN frames once. Both transmit into net_pcap's drop sink.

Asserted directly over HTTP: GET /metrics is 200 with the 0.0.4 text
content type and shaper_up 1; HEAD is 200 without a body; another path is
404; POST /metrics is 405. shaperd has no HTTP thread (the control thread
serves it).
Asserted through Prometheus's own query API (/api/v1/query), with a 1 s
scrape interval: the target is up, shaper_up == 1, shaper_build_info has
the protocol, upstream shaper_direction_receive_packets_total increases
between two scrapes, and the downstream one equals the pcap's frame count.

Skips (77) if not root or if prometheus is not installed
(tools/install-deps.sh installs it).

usage: prometheus_test.py SHAPERD
"""
import json
import os
import shutil
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (Control, Proc, check, check_accounting, failures, ip_frame,  # noqa: E402
                       shaperd_argv, write_pcap)  # noqa: E402

if os.geteuid() != 0:
    print("SKIP: needs root (DPDK vdevs)")
    sys.exit(77)
PROMETHEUS = shutil.which("prometheus")
if PROMETHEUS is None:
    print("SKIP: prometheus is not installed (tools/install-deps.sh installs it)")
    sys.exit(77)

SHAPERD = sys.argv[1]
N_UP, N_DOWN = 64, 40


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, method="GET"):
    """(status, content type, body); HTTP errors are answers here, not exceptions."""
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


class Prom:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def query(self, q):
        """The instant vector of q as [(labels, timestamp, value)], [] on any error."""
        url = self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                rep = json.load(r)
        except (OSError, ValueError):
            return []
        if rep.get("status") != "success" or rep["data"]["resultType"] != "vector":
            return []
        return [(s["metric"], float(s["value"][0]), float(s["value"][1]))
                for s in rep["data"]["result"]]

    def wait_value(self, q, pred, timeout):
        """The first sample of q that satisfies pred, polling until timeout; else None."""
        end = time.time() + timeout
        while time.time() < end:
            for sample in self.query(q):
                if pred(sample):
                    return sample
            time.sleep(0.25)
        return None


def test_direct(mport):
    base = "http://127.0.0.1:%d" % mport
    status, ctype, body = http(base + "/metrics")
    check(status == 200, "GET /metrics: 200 (got %d)" % status)
    check(ctype.startswith("text/plain; version=0.0.4"),
          "GET /metrics: Content-Type text/plain; version=0.0.4 (got %r)" % ctype)
    check("\nshaper_up 1\n" in body and "# TYPE shaper_direction_receive_packets_total counter"
          in body, "GET /metrics: body has shaper_up 1 and the direction counters")
    status, ctype, body = http(base + "/metrics", method="HEAD")
    check(status == 200 and body == "", "HEAD /metrics: 200 without a body")
    status, _, _ = http(base + "/")
    check(status == 404, "GET /: 404 (got %d)" % status)
    status, _, _ = http(base + "/metricsx")
    check(status == 404, "GET /metricsx: 404 (got %d)" % status)
    status, _, _ = http(base + "/metrics", method="POST")
    check(status == 405, "POST /metrics: 405 (got %d)" % status)


def test_threads(pid):
    """The endpoint runs on the control thread: no thread of libmicrohttpd's own
    (it would be named MHD-single or MHD-listen)."""
    names = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    check(not any(n.startswith("MHD") for n in names) and
          all(n.startswith(("shaperd", "rte", "eal", "telemetry", "dpdk")) for n in names),
          "no HTTP server thread in shaperd (threads: %s)" % ", ".join(sorted(names)))


def test_prometheus(prom, mport):
    target = 'instance="127.0.0.1:%d"' % mport
    s = prom.wait_value('up{job="shaper"}', lambda s: s[2] == 1, 20)
    check(s is not None, "Prometheus scrapes the target (up{job=\"shaper\"} == 1)")
    s = prom.wait_value("shaper_up{%s}" % target, lambda s: True, 10)
    check(s is not None and s[2] == 1, "shaper_up == 1 through /api/v1/query (got %r)" % (s,))
    s = prom.wait_value("shaper_build_info", lambda s: s[0].get("protocol") == "1", 5)
    check(s is not None, "shaper_build_info{protocol=\"1\"} arrives")
    s = prom.wait_value('shaper_port_up{port="lan"}', lambda s: True, 5)
    check(s is not None and s[2] == 1, "shaper_port_up{port=\"lan\"} == 1")

    # Two scrapes apart, the replayed-forever upstream count must have grown.
    q = 'shaper_direction_receive_packets_total{direction="upstream"}'
    first = prom.wait_value(q, lambda s: s[2] > 0, 10)
    if check(first is not None, "%s arrives and is > 0" % q):
        later = prom.wait_value(q, lambda s: s[1] > first[1] and s[2] > first[2], 10)
        check(later is not None,
              "%s increases between two scrapes (%r then %r)"
              % (q, first[2], later[2] if later else None))
    s = prom.wait_value("rate(%s[5s])" % q, lambda s: s[2] > 0, 10)
    check(s is not None, "rate(%s[5s]) > 0" % q)
    q = 'shaper_direction_receive_packets_total{direction="downstream"}'
    s = prom.wait_value(q, lambda s: s[2] == N_DOWN, 10)
    check(s is not None, "%s == %d, the WAN pcap's frames (last %r)"
          % (q, N_DOWN, prom.query(q)))
    s = prom.wait_value('shaper_drops_total{direction="upstream"}', lambda s: True, 5)
    check(s is not None, "shaper_drops_total by reason arrives")


def main():
    tmp = tempfile.mkdtemp(prefix="prom_")
    mport, pport = free_port(), free_port()
    up = [ip_frame("192.168.1.%d" % (10 + i % 4), "10.0.0.1", 7000 + i, 53, 200)
          for i in range(N_UP)]
    down = [ip_frame("10.0.0.1", "192.168.1.10", 5000, 6000 + i % 3, 500) for i in range(N_DOWN)]
    write_pcap(os.path.join(tmp, "lan_in.pcap"), up)
    write_pcap(os.path.join(tmp, "wan_in.pcap"), down)
    cfg = {
        "ports": {
            # No tx_pcap: net_pcap drops what it is given to send.
            "lan": "net_pcap0,rx_pcap=%s/lan_in.pcap,infinite_rx=1" % tmp,
            "wan": "net_pcap1,rx_pcap=%s/wan_in.pcap" % tmp,
        },
        "upstream": {"discipline": "cake", "bandwidth": "10mbit"},
        "downstream": {"discipline": "cake"},
        "control": {"socket": os.path.join(tmp, "shaper.sock")},
        "metrics": {"listen": str(mport)},
    }
    cfg_path = os.path.join(tmp, "shaper.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    prom_cfg = os.path.join(tmp, "prometheus.yml")
    with open(prom_cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: shaper\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % mport)

    d = Proc("shaperd", shaperd_argv(SHAPERD, cfg_path, os.path.join(tmp, "exit_stats.json"),
                                     prefix="prom_%d" % os.getpid(), mem_mb=256))
    p = None
    try:
        if not check(d.wait_line("control socket", 30), "shaperd started"):
            return
        check(any("metrics on http://127.0.0.1:%d/metrics" % mport in l for l in d.lines),
              "shaperd says where /metrics is (a bare port binds 127.0.0.1)")
        test_direct(mport)
        test_threads(d.proc.pid)
        p = Proc("prometheus", [PROMETHEUS, "--config.file=" + prom_cfg,
                                "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                                "--web.listen-address=127.0.0.1:%d" % pport,
                                "--log.level=warn"])
        prom = Prom(pport)
        end = time.time() + 20
        while time.time() < end and p.proc.poll() is None:
            try:
                with urllib.request.urlopen(prom.base + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        if not check(p.proc.poll() is None and time.time() < end, "prometheus is ready"):
            return
        test_prometheus(prom, mport)
        # After all that scraping, the daemon still answers and stops cleanly.
        check(http("http://127.0.0.1:%d/metrics" % mport)[0] == 200, "still serving")
        ctl = Control(os.path.join(tmp, "shaper.sock"))
        check_accounting(ctl.call("stats")["result"], "live, after the scrapes")
        ctl.close()
    finally:
        if p is not None:
            p.stop()
        rc = d.stop()
        check(rc == 0, "shaperd exits 0 on SIGTERM (got %d)" % rc)
        if os.path.exists(os.path.join(tmp, "exit_stats.json")):
            with open(os.path.join(tmp, "exit_stats.json")) as f:
                check_accounting(json.load(f), "at exit")
        else:
            check(False, "shaperd wrote its exit counters")
        if failures:
            d.dump()
            if p is not None:
                p.dump()
        shutil.rmtree(tmp, ignore_errors=True)


main()
print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
