#!/usr/bin/python3
"""Load-test shaperd with pktgen-dpdk and measure what it really delivers.

pktgen (memif servers, or real NICs) sends into shaperd's LAN port and
receives from its WAN port (upstream). This script drives pktgen over its Lua
socket (-G, one-line chunks) and measures with its own clock and DPDK's live
port counters, read through pktgen's telemetry socket, never pktgen's
once-a-second display counters. Every run:

  1. starts a fresh pktgen and a fresh shaperd (unless --no-shaperd) and
     waits for both links;
  2. calibrates pktgen's rate: pktgen's "rate" is a percent of the link speed
     it believed at start (10G when the link was still down, 100G for memif
     after), so the script sets a guess, measures the packets really sent for
     a second and scales the percent until the offer is the one asked for;
  3. warms up, then measures: offered = frame bytes pktgen's port 0 got onto
     the link, delivered = frame bytes pktgen's port 1 received (no FCS, as
     shaperd counts them with "overhead": "raw");
  4. stops, lets the queue drain, stops shaperd and reads its exit counters:
     every frame shaperd took in is sent or dropped under a named reason, and
     no mbuf is left in use.

The measured interval is cut into one-second windows. pktgen's median second
must offer at least half the asked overload (else pktgen or the host could not
keep up, and the run fails). shaperd owes the rate only while it holds a
backlog and has its CPU: on these 2-core VMs the hypervisor takes tens to
hundreds of ms now and then, a stalled pktgen lets the queue run dry and a
stalled shaperd writes the time off (lag_skipped). The delivered rate over the
whole interval is checked against the rate times the part of the time shaperd
owed it (its backlogged_us less lag_skipped_us), and in the median second it
must have owed it at least 99 % of the time (--min-owed): a shaper that drops
its own queue empty is not excused. The table shows both errors.

  loadtest.py --shaperd build/src/shaperd --pktgen PATH/pktgen \\
      --run cake:1gbit:64 --run cake:100mbit:1518 --seconds 10

--mix adds a run that replays a pcap (IMIX 7:4:1, DSCP spread over the
diffserv4 tins) in pktgen's pcap mode through an unshaped CAKE and checks each
tin's share of what it sent.
"""
import argparse
import json
import math
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from shaperlib import (favour_session, request, shape_per_subscriber, shaperd_argv,  # noqa: E402
                       start_logged, stop_process, units, write_config, write_pcap)

# pktgen's sizes count the 4-byte FCS; memif and shaperd do not.
FCS = 4
LUA_PORT = 22022
SUBS_PAGE = 2000  # subscribers per subscribers.list page (about 480 bytes each)


def parse_rate(text):
    """A rate as the config writes it -> bit/s (whole bytes/s, as shaperd keeps it)."""
    return units.parse_rate(text) * 8


def log(msg):
    print("loadtest: " + msg, flush=True)


class Pktgen:
    """pktgen under a pseudo-terminal (it refuses to start without one), its
    console saved to a log file, driven through its Lua socket."""

    def __init__(self, binary, eal, logfile, pcap=None, lua_port=LUA_PORT):
        self.logfile = logfile
        self.lua_port = lua_port
        self.prefix = next(a.split("=", 1)[1] for a in eal if a.startswith("--file-prefix="))
        master, slave = pty.openpty()
        argv = [binary] + eal + ["--", "-P", "-G", "-g", "localhost:%d" % lua_port,
                                 "-m", "1.[0-1]"]
        if pcap:
            argv += ["-s", "0:" + pcap]  # pcap mode: port 0 replays this file
        log("starting " + " ".join(argv))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     cwd=os.path.dirname(binary), start_new_session=True)
        os.close(slave)
        favour_session(self.proc.pid)
        self.master = master
        self.out = open(logfile, "wb")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.tel = None

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.out.write(data)
            self.out.flush()

    def alive(self):
        return self.proc.poll() is None

    def wait_ready(self, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.alive():
                raise RuntimeError("pktgen exited (%d); see %s" % (self.proc.returncode,
                                                                   self.logfile))
            try:
                if self.lua("io.write('ready')") == "ready":
                    self.demote_pollers()
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError("pktgen's Lua socket did not answer in %d s; see %s" %
                           (timeout, self.logfile))

    def demote_pollers(self):
        """pktgen's main thread (its CLI, poll() with a zero timeout) and its
        timer thread spin without sleeping, on the main lcore's CPU. Where
        that CPU is also the port lcore's (a 2-core machine), they would take
        two thirds of it and leave the port lcore off the CPU for tens of ms
        at a time; shaperd's transmit ring then fills and its worker stalls.
        Under SCHED_IDLE they run only when the CPU has nothing else to do.
        The Lua socket thread (which runs our commands) and the lcores keep
        their priority."""
        self.demoted = []
        end = time.monotonic() + 5
        while len(self.demoted) < 2 and time.monotonic() < end:
            for tid in map(int, os.listdir("/proc/%d/task" % self.proc.pid)):
                with open("/proc/%d/task/%d/comm" % (self.proc.pid, tid)) as f:
                    comm = f.read().strip()
                if comm == "pktgen" and tid not in self.demoted:
                    os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
                    self.demoted.append(tid)
            time.sleep(0.1)
        log("pktgen: main and timer threads %s under SCHED_IDLE" % self.demoted)

    def lua(self, chunk):
        """Run one line of Lua in pktgen; returns what it io.write()s. A Lua
        error comes back as a RuntimeError (the chunk runs under pcall)."""
        if "\n" in chunk:
            raise ValueError("one line per chunk: pktgen runs socket input line by line")
        wrapped = ("local ok, e = pcall(function() %s end); "
                   "if not ok then io.write('LUAERR ' .. tostring(e)) end; io.flush()" % chunk)
        with socket.create_connection(("127.0.0.1", self.lua_port), timeout=10) as s:
            s.sendall(wrapped.encode() + b"\n")
            s.shutdown(socket.SHUT_WR)
            buf = b""
            while True:
                part = s.recv(65536)
                if not part:
                    break
                buf += part
        text = buf.decode(errors="replace")
        if text.startswith("LUAERR"):
            raise RuntimeError("pktgen Lua: %s (chunk: %s)" % (text[7:], chunk))
        return text

    def telemetry(self, query):
        """DPDK's own telemetry socket of the pktgen process: live counters."""
        try:
            if self.tel is None:
                path = "/var/run/dpdk/%s/dpdk_telemetry.v2" % self.prefix
                self.tel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self.tel.connect(path)
                self.tel.recv(65536)
            self.tel.send(query.encode())
            return json.loads(self.tel.recv(1 << 20))
        except OSError as e:
            if self.alive():
                raise
            raise RuntimeError("pktgen is gone (%s) (its telemetry: %s)" % (self.gone(), e))

    def gone(self):
        """How pktgen ended and the end of its console, for an error message."""
        rc = self.proc.poll()
        how = ("killed by signal %d" % -rc) if rc is not None and rc < 0 else "exit %s" % rc
        try:
            with open(self.logfile, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                tail = f.read().decode(errors="replace")
        except OSError:
            tail = ""
        # the console is a full-screen display: keep the lines that read as text
        lines = [ln for ln in (re.sub(r"\x1b\[[0-9;]*[A-Za-z]", " ", x).strip()
                               for x in tail.splitlines()) if ln][-12:]
        return "%s; the end of %s:\n  %s" % (how, self.logfile, "\n  ".join(lines))

    def port_stats(self, port):
        return self.telemetry("/ethdev/stats,%d" % port)["/ethdev/stats"]

    def link_up(self, port):
        return self.telemetry("/ethdev/link_status,%d" % port)["/ethdev/link_status"].get(
            "status") == "UP"

    def stop(self):
        """Stop pktgen and remove what it leaves behind; returns None, or how it
        had ended on its own before (see gone)."""
        ended = None if self.alive() else self.gone()
        if ended is None:
            try:
                self.lua("pktgen.stop('all')")
            except (OSError, RuntimeError):
                pass
            # pktgen.quit() crashes pktgen 23.06.1 when it comes over the socket
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.tel is not None:
            self.tel.close()
        os.close(self.master)
        self.reader.join(timeout=5)
        self.out.close()
        # its EAL runtime directory (the memif sockets are abstract: no file)
        shutil.rmtree("/var/run/dpdk/" + self.prefix, ignore_errors=True)
        return ended


class Shaperd:
    def __init__(self, binary, shapectl, eal, cfg, tmp, name):
        self.shapectl = shapectl
        self.sock = cfg["control"]["socket"]
        self.cfg_path = os.path.join(tmp, name + ".json")
        self.stats_path = os.path.join(tmp, name + ".exit.json")
        self.log_path = os.path.join(tmp, name + ".log")
        write_config(self.cfg_path, cfg, indent=1)
        self.proc = start_logged(shaperd_argv(binary, self.cfg_path, self.stats_path, eal_argv=eal),
                                 self.log_path)

    def stats(self):
        out = subprocess.run([self.shapectl, "-s", self.sock, "--json", "stats"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise RuntimeError("shapectl stats: " + out.stderr.strip())
        return json.loads(out.stdout)

    def subscribers(self):
        """Every subscriber's counters, {id: (time_ns, counters)}: subscribers.list in pages
        (a reply holds at most 4 MiB), each page's own time_ns kept with its subscribers."""
        out, offset = {}, 0
        while True:
            page = request(self.sock, "subscribers.list", {"offset": offset, "limit": SUBS_PAGE}, timeout=10)
            for x in page["subscribers"]:
                out[x["id"]] = (page["time_ns"], x)
            offset += len(page["subscribers"])
            if not page["subscribers"] or offset >= page["count"]:
                return out

    def wait_links(self, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("shaperd exited (%d); see %s" % (self.proc.returncode,
                                                                    self.log_path))
            if os.path.exists(self.sock):
                try:
                    st = self.stats()
                    if st["ports"]["lan"]["link_up"] and st["ports"]["wan"]["link_up"]:
                        return
                except (RuntimeError, KeyError, ValueError, subprocess.TimeoutExpired):
                    pass
            time.sleep(0.2)
        raise RuntimeError("shaperd's links did not come up in %d s; see %s" %
                           (timeout, self.log_path))

    def stop(self):
        rc = stop_process(self.proc, 20)
        try:
            with open(self.stats_path) as f:
                return rc, json.load(f)
        except (OSError, ValueError):
            return rc, None


def write_mix_pcap(path, flows):
    """IMIX 7:4:1 (64/594/1518 B with FCS) over the four diffserv4 tins; each
    of `flows` UDP flows keeps one size and one DSCP. Returns the number of
    frames per diffserv4 tin name in one pass of the file."""
    from scapy.all import Ether, IP, UDP, Raw  # python3-scapy
    sizes = [64] * 7 + [594] * 4 + [1518]
    # DS bytes: BE, CS1 (Bulk), AF41 (Video), EF (Voice); uneven shares (4:1:2:3
    # flows) so that a tin swapped with another shows
    tins = [(0, "Best Effort")] * 4 + [(32, "Bulk")] + [(136, "Video")] * 2 + [(184, "Voice")] * 3
    frames, per_tin = [], {}
    for i in range(flows):
        tos, tin = tins[i % len(tins)]
        size = sizes[(i * 5) % len(sizes)]
        for _ in range(4):
            p = (Ether(src="02:00:00:00:00:01", dst="02:5e:00:00:00:01") /
                 IP(src="10.0.%d.%d" % (i // 250, i % 250 + 1), dst="198.18.0.1", tos=tos) /
                 UDP(sport=10000 + i, dport=443))
            pad = size - FCS - len(p)
            frames.append(bytes(p / Raw(b"\0" * max(pad, 0))))
            per_tin[tin] = per_tin.get(tin, 0) + 1
    # interleave the flows so a pass is not 4 frames of one flow at a time
    order = [frames[f * 4 + k] for k in range(4) for f in range(flows)]
    write_pcap(path, order)
    return per_tin


def shaper_config(args, disc, rate, sockdir):
    bw = "unlimited" if rate is None else "%dbit" % rate
    direction = {"discipline": disc, "bandwidth": bw, "lag_limit": args.lag_limit}
    if disc == "cake":
        direction.update({"overhead": "raw", "diffserv": args.diffserv})
    return {
        "ports": {"lan": "net_memif0,role=client,socket=/run/shaper-lt-%s-lan.sock" % args.tag,
                  "wan": "net_memif1,role=client,socket=/run/shaper-lt-%s-wan.sock" % args.tag},
        "upstream": direction,
        "downstream": dict(direction, **({"ingress": True} if disc == "cake" else {})),
        "control": {"socket": os.path.join(sockdir, "ctl.sock")},
        "lcores": {"workers": [1]},
        "dataplane": {"idle_sleep": args.idle_sleep},
    }


class Counters:
    """One snapshot: our clock, pktgen's live port counters and shaperd's stats."""

    def __init__(self, pg, sh):
        t0 = time.monotonic()
        self.tx = pg.port_stats(0)
        self.rx = pg.port_stats(1)
        self.t = (t0 + time.monotonic()) / 2
        self.sh = sh.stats() if sh is not None else None


def shaper_time(a, b):
    """shaperd's own figures between two snapshots of its upstream: its clock,
    the time it held a backlog, and the stalls it wrote off (ns)."""
    ua, ub = a.sh["directions"]["upstream"], b.sh["directions"]["upstream"]
    return (ub["time_ns"] - ua["time_ns"],
            (ub["backlogged_us"] - ua["backlogged_us"]) * 1e3,
            (ub["lag_skipped_us"] - ua["lag_skipped_us"]) * 1e3)


def owed_fraction(span, busy, lag):
    """The part of shaperd's time (shaper_time) in which it owed the rate:
    backlogged, less what it wrote off."""
    return max(0.0, busy - lag) / span if span > 0 else 0.0


def windows_of(snaps):
    """Per-second figures between consecutive snapshots."""
    out = []
    for a, b in zip(snaps, snaps[1:]):
        dt = b.t - a.t
        w = {"seconds": dt,
             "offered_bps": (b.tx["obytes"] - a.tx["obytes"]) * 8 / dt,
             "delivered_bps": (b.rx["ibytes"] - a.rx["ibytes"]) * 8 / dt}
        if a.sh is not None:
            span, busy, lag = shaper_time(a, b)
            w["owed"] = owed_fraction(span, busy, lag)
            w["lag_skipped_ms"] = lag / 1e6
        out.append(w)
    return out


def measure(pg, sh, seconds, window=1.0):
    """Counters at the start and end of the measured interval, and every
    `window` seconds between (see check_rate)."""
    snaps = [Counters(pg, sh)]
    n = max(1, round(seconds / window))
    for i in range(1, n + 1):
        time.sleep(max(0.0, snaps[0].t + i * seconds / n - time.monotonic()))
        snaps.append(Counters(pg, sh))
    a, b = snaps[0], snaps[-1]
    dt = b.t - a.t
    m = {
        "seconds": round(dt, 4),
        "offered_pps": (b.tx["opackets"] - a.tx["opackets"]) / dt,
        "offered_bps": (b.tx["obytes"] - a.tx["obytes"]) * 8 / dt,
        "delivered_pps": (b.rx["ipackets"] - a.rx["ipackets"]) / dt,
        "delivered_bps": (b.rx["ibytes"] - a.rx["ibytes"]) * 8 / dt,
        "generator_tx_errors": b.tx["oerrors"] - a.tx["oerrors"],
        "windows": windows_of(snaps),
    }
    if sh is not None:
        up_a, up_b = a.sh["directions"]["upstream"], b.sh["directions"]["upstream"]
        m["drops_per_s"] = {k: (up_b["drop_reasons"][k] - up_a["drop_reasons"][k]) / dt
                            for k in up_b["drop_reasons"]}
        m["shaper_in_bps"] = (b.sh["ports"]["lan"]["rx_bytes"] -
                              a.sh["ports"]["lan"]["rx_bytes"]) * 8 / dt
        m["shaper_out_bps"] = (b.sh["ports"]["wan"]["tx_bytes"] -
                               a.sh["ports"]["wan"]["tx_bytes"]) * 8 / dt
        span, busy, lag = shaper_time(a, b)
        m["lag_skipped_ms"] = lag / 1e6
        m["idle_ms"] = (span - busy) / 1e6
        m["owed"] = owed_fraction(span, busy, lag)
        # transmit attempts that found the WAN ring full (the receiver fell behind)
        m["tx_retries"] = up_b.get("tx_retries", 0) - up_a.get("tx_retries", 0)
        m["worker_turn_max_ms"] = up_b.get("turn_max_ns", 0) / 1e6
        m["tins"] = [{"name": tb["name"], "sent_packets": tb["sent_packets"] - ta["sent_packets"]}
                     for ta, tb in zip(up_a.get("tins", []), up_b.get("tins", []))]
    return m


def calibrate(pg, target_bps, start_pct, probe_s):
    """pktgen's percent -> the percent that puts target_bps of frame bytes on
    the link, from what it really sent (three rounds at most)."""
    pct = start_pct
    for _ in range(3):
        pg.lua("pktgen.set('0', 'rate', %.4f)" % pct)
        time.sleep(0.3)
        a = pg.port_stats(0)
        ta = time.monotonic()
        time.sleep(probe_s)
        b = pg.port_stats(0)
        sent = (b["obytes"] - a["obytes"]) * 8 / (time.monotonic() - ta)
        if sent <= 0:
            raise RuntimeError("pktgen sent nothing at rate %.4f %%" % pct)
        ratio = target_bps / sent
        if abs(ratio - 1) < 0.01:
            break
        pct = min(100.0, pct * ratio)
    return pct


def setup_traffic(pg, size, flows, hosts):
    pg.lua("pktgen.stop('all')")
    pg.lua("pktgen.set_type('0', 'ipv4'); pktgen.set_proto('0', 'udp')")
    pg.lua("pktgen.set('0', 'size', %d); pktgen.set('0', 'count', 0); "
           "pktgen.set('0', 'burst', 32)" % size)
    if flows <= 1:
        pg.lua("pktgen.set_range('0', 'off')")
        pg.lua("pktgen.set_ipaddr('0', 'src', '10.0.0.1/24'); "
               "pktgen.set_ipaddr('0', 'dst', '198.18.0.1')")
        return
    # Range mode steps every field on every packet, all together: H hosts and
    # P source ports make H x P distinct flows only when gcd(H, P) == 1.
    ports = flows // hosts
    if hosts * ports != flows or math.gcd(hosts, ports) != 1:
        raise ValueError("--flows %d with --hosts %d: need flows = hosts x ports with "
                         "gcd(hosts, ports) = 1 (pktgen steps all range fields together)" %
                         (flows, hosts))
    r = "pktgen.range"
    cmds = [
        "%s.pkt_size('0','start',%d); %s.pkt_size('0','min',%d); %s.pkt_size('0','max',%d); "
        "%s.pkt_size('0','inc',0)" % (r, size, r, size, r, size, r),
        "%s.ip_proto('0','udp')" % r,
        "%s.src_ip('0','start','10.0.0.1'); %s.src_ip('0','min','10.0.0.1'); "
        "%s.src_ip('0','max','%s'); %s.src_ip('0','inc','0.0.0.1')" %
        (r, r, r, "10.0.%d.%d" % ((hosts) // 256, (hosts) % 256), r),
        "%s.dst_ip('0','start','198.18.0.1'); %s.dst_ip('0','min','198.18.0.1'); "
        "%s.dst_ip('0','max','198.18.0.1'); %s.dst_ip('0','inc','0.0.0.0')" % (r, r, r, r),
        "%s.src_port('0','start',10000); %s.src_port('0','min',10000); "
        "%s.src_port('0','max',%d); %s.src_port('0','inc',1)" % (r, r, r, 10000 + ports - 1, r),
        "%s.dst_port('0','start',443); %s.dst_port('0','min',443); "
        "%s.dst_port('0','max',443); %s.dst_port('0','inc',0)" % (r, r, r, r),
        "pktgen.set_range('0', 'on')",
    ]
    for c in cmds:
        pg.lua(c)


def subscriber_addr(i):
    """The i-th source host of pktgen's range (1-based): 10.0.0.1, 10.0.0.2, ..."""
    return "10.0.%d.%d" % (i // 256, i % 256)


def subscriber_config(cfg, tmp, tag, n, each_bps):
    """cfg shaping per subscriber: n subscribers, the i-th owning pktgen's i-th
    source host, each with a plan of each_bps per direction; the link (and
    the direction's own bandwidth) at twice their sum, so the plans bind."""
    return shape_per_subscriber(cfg, os.path.join(tmp, tag + "-subscribers.json"),
                                [[subscriber_addr(i)] for i in range(1, n + 1)],
                                "%dbit" % each_bps, "%dbit" % (2 * n * each_bps), indent=1)


def check_subscribers(fails, args, tag, a, b, n, each_bps):
    """Each subscriber's upload over shaperd's clock between two
    subscribers.list replies, against what it is owed: its plan over the time
    between them less what its CAKE wrote off (lag_skipped_us: the worker
    away longer than lag_limit, which is not paid back as a burst), or what
    it was offered if that is less (what arrived, less what its queue grew
    by). pktgen's source range does not spread frames evenly over 10,000
    hosts (at 1.1 times the plans in all, about half of them were offered
    0.89 of the plan and the rest up to 1.35), and the link has room for
    every plan, so the max-min share of each is min(plan, offered)."""
    errs, away, under, owed_bps = [], [], 0, 0.0
    for k, (t, x) in b.items():
        if k not in a:
            continue
        up, up0 = x["upload"], a[k][1]["upload"]
        off = (up["lag_skipped_us"] - up0["lag_skipped_us"]) / 1e6
        frame = up["arrived_bytes"] / up["arrived_packets"] if up["arrived_packets"] else 0
        offered = (up["arrived_bytes"] - up0["arrived_bytes"] - (up["qlen"] - up0["qlen"]) * frame) * 8
        owed = each_bps * ((t - a[k][0]) / 1e9 - off)
        if offered < owed:
            owed, under = offered, under + 1
        errs.append((up["bytes"] - up0["bytes"]) * 8 / owed - 1 if owed > 0 else 0.0)
        away.append(off)
        owed_bps += owed / ((t - a[k][0]) / 1e9)
    errs.sort()
    away.sort()
    if away:
        log("%s: %d of %d subscribers offered less than their plan (owed what they were "
            "offered); time each one's CAKE wrote off of the window: median %.1f ms, most "
            "%.1f ms" % (tag, under, len(away), away[len(away) // 2] * 1e3, away[-1] * 1e3))
    check(fails, len(errs) == n, "%s: subscribers.list lists %d subscribers (want %d)" %
          (tag, len(errs), n))
    if not errs:
        return {}
    worst = max(errs, key=abs)
    tol = 2 * args.tolerance
    check(fails, abs(worst) <= tol,
          "%s: every subscriber at min(its plan, what it was offered) over shaperd's clock: "
          "errors %+.2f .. %+.2f %%, "
          "median %+.2f %% (allowed +-%.1f %%)" % (tag, errs[0] * 100, errs[-1] * 100,
                                                   errs[len(errs) // 2] * 100, tol * 100))
    return {"subscriber_error_min": errs[0], "subscriber_error_max": errs[-1],
            "subscriber_error_median": errs[len(errs) // 2],
            "subscriber_written_off_max_s": away[-1], "subscribers_offered_under_plan": under,
            "subscribers_owed_bps": owed_bps}


def start_pktgen(args, tmp, name, pcap):
    """A fresh pktgen for one run, its memif servers on the run's own sockets.
    One per run, not one for all: when a memif client leaves, DPDK 22.11's
    memif server clears its "connected" flag and unmaps the shared regions
    from its interrupt thread (memif_disconnect), with nothing to hold off a
    port lcore that read the flag a moment before and then touches the ring;
    pktgen polls its ports all the time and can fault there (a memif client
    started and stopped in a loop against pktgen 23.06.1 with DPDK 22.11.11
    did so on its 22nd departure: a segmentation fault in the memif driver,
    under pktgen's port lcore). Each run reads every figure, pktgen's
    included, before shaperd leaves, so a pktgen lost to that race loses
    nothing measured."""
    eal = args.pktgen_eal.split() + ["--file-prefix=pktgen-lt-%s" % args.tag]
    if not args.no_shaperd:
        eal += ["--vdev=net_memif0,role=server,socket=/run/shaper-lt-%s-lan.sock" % args.tag,
                "--vdev=net_memif1,role=server,socket=/run/shaper-lt-%s-wan.sock" % args.tag]
    pg = Pktgen(args.pktgen, eal, os.path.join(tmp, "pktgen-%s.log" % name), pcap)
    try:
        pg.wait_ready()
    except BaseException:
        pg.stop()
        raise
    return pg


def run_one(args, pg, disc, rate, size, tag, tmp, subs=None):
    """One measured run; returns (result dict, list of failures). With subs =
    (n, each_bps): CAKE per subscriber, n source hosts each offered its share
    of the overload, the rate checked as their plans' sum and one by one.
    A run that breaks stops its shaperd before the error goes on: a daemon
    left polling its ports would load the machine for whatever runs next."""
    started = []
    try:
        return measured_run(args, pg, disc, rate, size, tag, tmp, subs, started.append)
    except BaseException:
        for sh in started:
            stop_process(sh.proc, timeout=5)
        raise


def measured_run(args, pg, disc, rate, size, tag, tmp, subs, on_start):
    fails = []
    mix = tag == "mix"
    sh = None
    if not args.no_shaperd:
        cfg = shaper_config(args, "cake" if subs else disc, rate, tmp)
        if subs:
            cfg = subscriber_config(cfg, tmp, tag, *subs)
        sh = Shaperd(args.shaperd, args.shapectl, args.shaperd_eal, cfg, tmp, "shaperd-" + tag)
        on_start(sh)
        sh.wait_links()
    end = time.monotonic() + 20
    while not (pg.link_up(0) and pg.link_up(1)):
        if time.monotonic() > end:
            raise RuntimeError("pktgen's links are not up")
        time.sleep(0.2)
    pg_before = (pg.port_stats(0), pg.port_stats(1))
    if mix:
        pg.lua("pktgen.stop('all'); pktgen.set_range('0', 'off'); pktgen.pcap('0', 'on')")
    else:
        if subs:
            setup_traffic(pg, size, subs[0], subs[0])
        else:
            setup_traffic(pg, size, args.flows, args.hosts)
    target = parse_rate(args.mix_offer) if mix else args.offer * rate
    pg.lua("pktgen.set('0', 'rate', 1.0); pktgen.start('0')")
    # pktgen starts sending a second or more after start(): wait for it
    first = pg.port_stats(0)["opackets"]
    end = time.monotonic() + 15
    while pg.port_stats(0)["opackets"] == first:
        if time.monotonic() > end:
            raise RuntimeError("pktgen did not start sending in 15 s")
        time.sleep(0.1)
    pct = calibrate(pg, target, 1.0, args.probe)
    time.sleep(args.warmup)
    subs_a = sh.subscribers() if subs and sh else None
    m = measure(pg, sh, args.seconds)
    subs_b = sh.subscribers() if subs and sh else None
    pg.lua("pktgen.stop('0')")
    time.sleep(1.0)  # the queue drains (a CAKE queue holds well under a second)
    pg_after = (pg.port_stats(0), pg.port_stats(1))
    gen_sent = pg_after[0]["opackets"] - pg_before[0]["opackets"]
    gen_got = pg_after[1]["ipackets"] - pg_before[1]["ipackets"]
    res = {"discipline": disc, "bandwidth_bps": rate, "frame_size": size,
           "offer_target_bps": target, "pktgen_rate_pct": round(pct, 4)}
    res.update(m)
    if subs_a is not None:
        res.update(check_subscribers(fails, args, tag, subs_a, subs_b, *subs))
    if rate is not None:
        res["error"] = m["delivered_bps"] / rate - 1
    if sh is not None:
        rc, ex = sh.stop()
        res["shaperd_exit"] = rc
        check(fails, rc == 0, "%s: shaperd exits 0 (got %s)" % (tag, rc))
        if ex is not None:
            up = ex["directions"]["upstream"]
            lan_rx = ex["ports"]["lan"]["rx_packets"]
            wan_tx = ex["ports"]["wan"]["tx_packets"]
            drops = sum(up["drop_reasons"].values())
            res["exit"] = {"lan_rx": lan_rx, "wan_tx": wan_tx, "drops": drops,
                           "drop_reasons": up["drop_reasons"],
                           "mbufs_in_use": ex.get("mbufs_in_use"),
                           "generator_sent": gen_sent, "generator_received": gen_got}
            check(fails, gen_sent == lan_rx and gen_got == wan_tx,
                  "%s: pktgen and shaperd count the same frames: sent %d / lan rx %d, "
                  "wan tx %d / received %d" % (tag, gen_sent, lan_rx, wan_tx, gen_got))
            check(fails, lan_rx == wan_tx + drops,
                  "%s: every frame accounted for: lan rx %d = wan tx %d + drops %d (%s)" %
                  (tag, lan_rx, wan_tx, drops, up["drop_reasons"]))
            check(fails, ex.get("mbufs_in_use") == 0,
                  "%s: 0 mbufs in use at exit (got %s)" % (tag, ex.get("mbufs_in_use")))
            check(fails, ex["ports"]["lan"].get("rx_nombuf", 0) == 0,
                  "%s: no mempool exhaustion (rx_nombuf %s)" % (tag, ex["ports"]["lan"].get(
                      "rx_nombuf")))
        else:
            check(fails, False, "%s: shaperd wrote its exit counters" % tag)
    return res, fails


def check(fails, cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        fails.append(msg)
    return cond


def fmt_rate(bps):
    return "%.4f Gbit/s" % (bps / 1e9) if bps >= 1e9 else "%.2f Mbit/s" % (bps / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shaperd", help="shaperd binary (not needed with --no-shaperd)")
    ap.add_argument("--shapectl", help="shapectl binary (default: beside shaperd's build)")
    ap.add_argument("--pktgen", help="pktgen binary")
    ap.add_argument("--build-pktgen", metavar="DIR",
                    help="build pktgen with ../shared/tools/pktgen/build.sh into DIR first")
    ap.add_argument("--run", action="append", metavar="DISC:RATE:SIZE",
                    help="discipline, bandwidth (tc units) and pktgen frame size incl. FCS "
                    "(default: cake at 100mbit and 1gbit with 1518 and 64 B); "
                    "subs:N:PLAN:SIZE shapes N subscribers (pktgen's N source hosts) "
                    "at PLAN each, the link at twice their sum")
    ap.add_argument("--offer", type=float, default=1.1, help="offered load / bandwidth")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured interval")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--probe", type=float, default=1.0, help="seconds per calibration round")
    ap.add_argument("--min-owed", type=float, default=0.99,
                    help="the part of its median second shaperd must hold a backlog and its "
                    "CPU (see check_rate)")
    ap.add_argument("--tolerance", type=float, default=0.01,
                    help="allowed |delivered / bandwidth - 1|")
    ap.add_argument("--flows", type=int, default=1)
    ap.add_argument("--hosts", type=int, default=1, help="source hosts among --flows")
    ap.add_argument("--diffserv", default="diffserv4")
    ap.add_argument("--mix", action="store_true",
                    help="add a run that replays an IMIX/DSCP pcap (pktgen's pcap mode) "
                    "unshaped and checks each diffserv4 tin's share")
    ap.add_argument("--mix-offer", default="200mbit", help="offered load of --mix")
    ap.add_argument("--mix-flows", type=int, default=30)
    ap.add_argument("--lag-limit", default="auto",
                    help="shaperd's lag_limit: how long a stall of its worker may be caught "
                    "up after it instead of written off (auto: one MTU time, >= 250 us)")
    ap.add_argument("--idle-sleep", default="0us", help="shaperd's dataplane.idle_sleep")
    ap.add_argument("--pktgen-eal", default="--lcores=0@0,1@0 --no-huge -m 4096 --no-pci",
                    help="pktgen's EAL options before its ports (memif servers are added)")
    ap.add_argument("--shaperd-eal", default="--lcores=0@1,1@1 --no-huge -m 512 --no-pci",
                    help="shaperd's EAL options")
    ap.add_argument("--no-shaperd", action="store_true",
                    help="shaperd runs elsewhere (two real NICs): measure pktgen's ports "
                    "only; give --pktgen-eal with its -a PCI addresses")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    if args.build_pktgen:
        here = os.path.dirname(os.path.abspath(__file__))
        build = os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "tools",
                                              "pktgen", "build.sh"))
        if not os.path.exists(build):
            log("skip: %s is not there (the repository's ../shared); build pktgen as "
                "tools/pktgen/README.md says and pass --pktgen" % build)
            sys.exit(77)
        out = subprocess.run(["bash", build, args.build_pktgen], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("loadtest: building pktgen failed:\n" + out.stdout + out.stderr)
        args.pktgen = out.stdout.strip().splitlines()[-1]
    if not args.pktgen or not os.access(args.pktgen, os.X_OK):
        sys.exit("loadtest: no pktgen binary (--pktgen or --build-pktgen)")
    if not args.no_shaperd:
        if not args.shaperd:
            sys.exit("loadtest: --shaperd is needed (or --no-shaperd)")
        if not args.shapectl:
            args.shapectl = os.path.join(os.path.dirname(os.path.dirname(
                os.path.abspath(args.shaperd))), "tools", "shapectl")
    runs = args.run or ["cake:100mbit:1518", "cake:100mbit:64", "cake:1gbit:1518",
                        "cake:1gbit:64"]
    plan = []
    for r in runs:
        if r.startswith("subs:"):
            _, n, each, size = r.split(":")
            subs = (int(n), parse_rate(each))
            plan.append(("subs", subs[0] * subs[1], int(size), "subs%s-%s-%sB" % (n, each, size),
                         subs))
            continue
        disc, rate, size = r.split(":")
        plan.append((disc, None if rate == "unlimited" else parse_rate(rate), int(size),
                     "%s-%s-%sB" % (disc, rate, size), None))
    if args.mix:
        plan.append(("cake", None, 64, "mix", None))

    tmp = tempfile.mkdtemp(prefix="shaper-loadtest-")
    favour_session(os.getpid())  # shaperd runs in this session
    args.shaperd_eal = args.shaperd_eal.split() + ["--file-prefix=shaper-lt-%d" % os.getpid()]
    mix_tins, pcap = None, None
    if args.mix:
        pcap = os.path.join(tmp, "mix.pcap")
        mix_tins = write_mix_pcap(pcap, args.mix_flows)
    results, fails = [], []
    for i, (disc, rate, size, name, subs) in enumerate(plan):
        log("run %d/%d: %s" % (i + 1, len(plan), name))
        # A pktgen of its own per run (see start_pktgen): each run's sockets are new.
        args.tag = "%d-%d" % (os.getpid(), i + 1)
        pg = start_pktgen(args, tmp, name, pcap if name == "mix" else None)
        try:
            res, f = run_one(args, pg, disc, rate, size, name, tmp, subs)
        finally:
            ended = pg.stop()
        if ended:
            log("%s: pktgen ended on its own after its counters were read (%s)" % (name, ended))
        res["name"] = name
        results.append(res)
        fails += f
        if name == "mix":
            check_mix(fails, res, mix_tins)
        else:
            check_rate(fails, args, res)
    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "failures": fails}, f, indent=1)
    log("logs in %s" % tmp)
    if fails:
        log("%d check(s) failed" % len(fails))
        sys.exit(1)


def check_rate(fails, args, res):
    """The shaper owes the rate while it holds frames and has its CPU: the
    time it held a backlog (backlogged_us) less the stalls it wrote off
    (lag_skipped_us), both from shaperd, as a fraction of its own clock (so a
    wrong TSC frequency cancels). The delivered rate, on pktgen's side and our
    clock, is checked against rate x that fraction over the whole interval,
    every second of it: on these 2-core VMs the hypervisor takes tens to
    hundreds of ms now and then from either side; a stalled pktgen lets the
    queue run dry (not owed), a stalled shaperd writes the time off (not
    owed), and neither spoils the figure. A shaper that starves itself (drops
    its queue empty) is not excused: in the median second it must have owed
    the rate for at least --min-owed (99 %) of the time."""
    rate = res["bandwidth_bps"]
    name = res["name"]
    floor = (1 + (args.offer - 1) / 2) * rate
    ws = res.get("windows", [])
    med = sorted(w["offered_bps"] for w in ws)[len(ws) // 2] if ws else 0.0
    check(fails, med >= floor,
          "%s: the generator offered %s in its median second, %s over all (asked %s): %s" %
          (name, fmt_rate(med), fmt_rate(res["offered_bps"]), fmt_rate(res["offer_target_bps"]),
           "kept up" if med >= floor else
           "it could not keep up; this run says nothing about the shaper"))
    if "owed" not in res:
        return  # --no-shaperd: nothing to say what was owed
    owed_med = sorted(w["owed"] for w in ws)[len(ws) // 2]
    check(fails, owed_med >= args.min_owed,
          "%s: shaperd held a backlog and its CPU for %.2f %% of its median second (at "
          "least %.0f %%; over all %.2f %%: %.1f ms written off, %.1f ms without a backlog)" %
          (name, owed_med * 100, args.min_owed * 100, res["owed"] * 100,
           res["lag_skipped_ms"], res["idle_ms"]))
    # Subscribers: what they were owed together (check_subscribers), not every plan's sum.
    owed_rate = res.get("subscribers_owed_bps", rate)
    res["owed_error"] = res["delivered_bps"] / (owed_rate * res["owed"]) - 1 if res["owed"] else -1
    check(fails, abs(res["owed_error"]) <= args.tolerance,
          "%s: delivered %s, %+.2f %% of the %s for the %.2f %% of the time it was owed "
          "(allowed +-%.1f %%; %+.2f %% of the setting)" %
          (name, fmt_rate(res["delivered_bps"]), res["owed_error"] * 100,
           "rate" if owed_rate == rate else "subscribers' min(plan, offered), %s," % fmt_rate(owed_rate),
           res["owed"] * 100, args.tolerance * 100, res["error"] * 100))


def check_mix(fails, res, mix_tins):
    total = sum(mix_tins.values())
    sent = {t["name"]: t["sent_packets"] for t in res.get("tins", [])}
    got = sum(sent.values())
    check(fails, got > 0, "mix: the shaper sent packets (%d)" % got)
    for tin, n in sorted(mix_tins.items()):
        want = n / total
        share = sent.get(tin, 0) / got if got else 0
        check(fails, abs(share - want) <= 0.01,
              "mix: tin %s carried %.1f %% of the packets (the pcap has %.1f %%)" %
              (tin, share * 100, want * 100))


def print_table(results):
    print("\n| run | offered | delivered | error | owed: time, error | "
          "drops/s by reason | lag skipped | tx retries |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        drops = ", ".join("%s %.3gk" % (k, v / 1e3) for k, v in sorted(
            r.get("drops_per_s", {}).items()) if v > 0) or "none"
        err = "%+.2f %%" % (r["error"] * 100) if "error" in r else "-"
        clean = ("%.2f %%, %+.2f %%" % (r["owed"] * 100, r["owed_error"] * 100)
                 if "owed_error" in r else "-")
        print("| %s | %s (%.3f Mpps) | %s (%.3f Mpps) | %s | %s | %s | %.1f ms | %d |" %
              (r["name"], fmt_rate(r["offered_bps"]), r["offered_pps"] / 1e6,
               fmt_rate(r["delivered_bps"]), r["delivered_pps"] / 1e6, err, clean, drops,
               r.get("lag_skipped_ms", 0), r.get("tx_retries", 0)))


if __name__ == "__main__":
    main()
