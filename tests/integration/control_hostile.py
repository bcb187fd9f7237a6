#!/usr/bin/python3
"""Integration: no client of the read-only socket or /metrics stalls shaperd.

shaperd (net_null ports, CAKE both ways, so `flows` walks every queue of
the worker) runs with WATCHDOG_USEC and NOTIFY_SOCKET set as systemd sets
them, a datagram socket of this test standing in for systemd. For
HOSTILE_S seconds, on the read-only socket (level user, mode 0666) and on
/metrics:

  - pipeliners: 4 processes, each on one connection writing
    {"cmd":"flows"} and {"cmd":"stats"} lines as fast as they are
    answered (1,000 in flight) and reading every reply;
  - a slow reader: thousands of pipelined stats, its replies read a few
    bytes a second;
  - holders: 250 connections opened and left idle;
  - /metrics: 40 connections, each trickling a GET a byte every 0.3 s,
    and a client scraping in a loop.

Asserted throughout: an admin `stats` on the admin socket answers within
ADMIN_TIMEOUT_S, every time (one every 0.2 s); the gap between WATCHDOG=1
notifications never reaches the watchdog interval; the holders got at most
the user level's slots (the rest refused "busy", naming the limit); the
pipeliners' flows were rate limited (ok ones at most the documented rate,
the rest "busy" with error.retry_ms); no trickled /metrics connection lived
past the request timeout. Then shaperd exits 0 on SIGTERM with the holders
still connected.

usage: control_hostile.py SHAPERD
"""
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import Control, Proc, check, failures, shaperd_argv, write_config  # noqa: E402

WATCHDOG_USEC = 2000000
HOSTILE_S = 15.0
ADMIN_TIMEOUT_S = 2.0
# include/shaper/control.h and docs/control-protocol.md, "Limits".
MAX_CLIENTS, RESERVED_OPERATOR, RESERVED_ADMIN = 256, 32, 32
USER_WALKS_PER_S = 10
METRICS_REQUEST_TIMEOUT_S = 5
N_PIPELINERS, N_HOLDERS, N_TRICKLERS = 4, 250, 40
PIPELINE_WINDOW = 1000  # requests a pipeliner keeps unanswered


# ---- the hostile clients, each a process of its own (python3 THIS --hostile KIND ...) ----

def hostile_pipeliner(path, seconds):
    """flows and stats pipelined as fast as they are answered, WINDOW in flight (few
    enough that the replies waiting never reach the 4 MiB a client may have queued);
    a connection that closes is made again. Counts the replies."""
    counts = {"flows_ok": 0, "stats_ok": 0, "rate_limited": 0, "retry_ms": 0, "other": 0,
              "sent": 0, "connections": 0, "start": time.monotonic()}
    batch = b'{"id":1,"cmd":"flows"}\n{"id":2,"cmd":"stats"}\n' * 50
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            time.sleep(0.05)
            continue
        counts["connections"] += 1
        s.setblocking(False)
        buf, in_flight, out, replies = b"", 0, b"", 0
        while time.monotonic() < end:
            if not out and in_flight < PIPELINE_WINDOW:
                out, in_flight = batch, in_flight + 100
                counts["sent"] += 100
            r, w, _ = select.select([s], [s] if out else [], [], 0.2)
            try:
                if w:
                    out = out[s.send(out):]
                chunk = s.recv(1 << 20) if r else None
            except BlockingIOError:
                continue
            except OSError:
                break
            if chunk == b"":
                break
            if not chunk:
                continue
            buf += chunk
            *lines, buf = buf.split(b"\n")
            in_flight -= len(lines)
            replies += len(lines)
            for line in lines:
                rep = json.loads(line)
                err = rep.get("error") or {}
                if rep.get("ok"):
                    counts["flows_ok" if rep.get("id") == 1 else "stats_ok"] += 1
                elif err.get("code") == "busy" and "rate limited" in err.get("message", ""):
                    counts["rate_limited"] += 1
                    counts["retry_ms"] = max(counts["retry_ms"], err.get("retry_ms", 0))
                else:
                    counts["other"] += 1
        s.close()
        if replies <= 1:
            time.sleep(0.01)  # refused (no slot): again, but not in a tight loop
    counts["end"] = time.monotonic()
    print(json.dumps(counts), flush=True)
    os._exit(0)


def hostile_slow_reader(path, seconds):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(1)
    try:
        s.sendall(b'{"cmd":"stats"}\n' * 5000)
    except OSError:
        pass
    end = time.monotonic() + seconds
    got = 0
    while time.monotonic() < end:
        try:
            chunk = s.recv(16)
            if not chunk:
                break
            got += len(chunk)
        except socket.timeout:
            pass
        except OSError:
            break
        time.sleep(0.2)
    print(json.dumps({"read": got}), flush=True)
    os._exit(0)


def hostile_holders(path, seconds):
    """N_HOLDERS connections left idle; those refused say so in one line."""
    held, refused, messages = [], 0, set()
    for _ in range(N_HOLDERS):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        held.append(s)
    time.sleep(1.0)  # the daemon has accepted or refused each by now
    for s in held:
        r, _, _ = select.select([s], [], [], 0)
        if r:
            data = s.recv(4096)
            if data:
                rep = json.loads(data.split(b"\n")[0])
                messages.add(rep["error"]["message"])
            refused += 1
    print(json.dumps({"held": len(held) - refused, "refused": refused,
                      "messages": sorted(messages)}), flush=True)
    time.sleep(seconds)  # hold them; the test stops shaperd meanwhile
    os._exit(0)


def hostile_tricklers(port, seconds):
    """GETs a byte every 0.3 s; how long each connection lived (until closed, or seconds)."""
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4000 + b"\r\n\r\n"
    conns = []
    for _ in range(N_TRICKLERS):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        conns.append([s, time.monotonic(), None])
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end and any(c[2] is None for c in conns):
        for c in conns:
            if c[2] is not None:
                continue
            try:
                c[0].send(req[i:i + 1])
                if c[0].recv(4096) == b"":
                    c[2] = time.monotonic() - c[1]
            except BlockingIOError:
                pass
            except OSError:
                c[2] = time.monotonic() - c[1]
        i = (i + 1) % (len(req) - 4)  # never the end of the headers
        time.sleep(0.3)
    lived = [c[2] if c[2] is not None else seconds for c in conns]
    print(json.dumps({"lived": lived}), flush=True)
    os._exit(0)


def hostile_scraper(port, seconds):
    import http.client
    end, n, errors = time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            while time.monotonic() < end:
                c.request("GET", "/metrics")
                c.getresponse().read()
                n += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            time.sleep(0.01)
    print(json.dumps({"scrapes": n, "errors": errors}), flush=True)
    os._exit(0)


HOSTILE = {"pipeliner": hostile_pipeliner, "slow_reader": hostile_slow_reader,
           "holders": hostile_holders, "tricklers": hostile_tricklers,
           "scraper": hostile_scraper}


def spawn(kind, target, seconds):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--hostile", kind,
                             str(target), str(seconds)], stdout=subprocess.PIPE, text=True)


def report(p, timeout=30):
    try:
        out = p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        out = p.communicate()[0]
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


# ---- the test ----

class Notify(threading.Thread):
    """systemd's side of NOTIFY_SOCKET: every message with the time it came."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.msgs, self.stop = [], False

    def run(self):
        while not self.stop:
            r, _, _ = select.select([self.sock], [], [], 0.1)
            if r:
                m = self.sock.recv(4096).decode()
                self.msgs.append((time.monotonic(), m.split("\n")))

    def first(self, what):
        return next((t for t, m in self.msgs if what in m), None)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main(shaperd):
    if os.geteuid() != 0:
        print("SKIP: needs root (DPDK vdevs)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_hostile_")
    os.chmod(tmp, 0o755)
    admin, ro = os.path.join(tmp, "run", "shaper.sock"), os.path.join(tmp, "run", "ro.sock")
    mport = free_port()
    cfg = {
        "ports": {"lan": "net_null0,no-rx=1", "wan": "net_null1,no-rx=1"},
        "upstream": {"discipline": "cake", "bandwidth": "100mbit"},
        "downstream": {"discipline": "cake", "bandwidth": "100mbit"},
        "control": {"socket": admin, "mode": "0600",
                    "sockets": [{"path": ro, "mode": "0666", "level": "user"}]},
        "metrics": {"listen": "127.0.0.1:%d" % mport},
        "dataplane": {"idle_sleep": "100us"},
    }
    path = write_config(os.path.join(tmp, "shaper.json"), cfg)
    notify = Notify(os.path.join(tmp, "notify"))
    notify.start()
    env = dict(os.environ, NOTIFY_SOCKET=os.path.join(tmp, "notify"),
               WATCHDOG_USEC=str(WATCHDOG_USEC))
    env.pop("WATCHDOG_PID", None)
    d = Proc("shaperd", shaperd_argv(shaperd, path, prefix="hostile%d" % os.getpid(),
                                     mem_mb=256), env=env)
    hostiles = []
    rc = None
    try:
        if not check(d.wait_line("control socket %s (level user)" % ro, 60),
                     "shaperd listens on both sockets"):
            return
        for _ in range(100):
            if notify.first("READY=1") is not None:
                break
            time.sleep(0.1)
        ready_at = notify.first("READY=1")
        if not check(ready_at is not None, "READY=1 once bridging"):
            return
        with Control(admin, timeout=ADMIN_TIMEOUT_S) as c:
            check(c.result("stats") is not None, "admin stats before the clients come")
        pipeliners = [spawn("pipeliner", ro, HOSTILE_S) for _ in range(N_PIPELINERS)]
        slow = spawn("slow_reader", ro, HOSTILE_S)
        time.sleep(0.5)  # the pipeliners have their slots before the holders take the rest
        holders = spawn("holders", ro, HOSTILE_S + 60)
        tricklers = spawn("tricklers", mport, HOSTILE_S)
        scraper = spawn("scraper", mport, HOSTILE_S)
        hostiles = pipeliners + [slow, holders, tricklers, scraper]
        t0 = time.monotonic()
        lat, fails = [], []
        while time.monotonic() < t0 + HOSTILE_S:
            start = time.monotonic()
            try:
                with Control(admin, timeout=ADMIN_TIMEOUT_S) as c:
                    c.result("stats")
                lat.append(time.monotonic() - start)
            except (OSError, ValueError) as e:
                fails.append("%.1f s in: %s" % (start - t0, e))
            time.sleep(0.2)
        lat.sort()
        check(not fails and len(lat) >= HOSTILE_S / 0.5,
              "admin stats answered %d times within %.0f s while the clients ran (slowest "
              "%.3f s, median %.3f s)%s"
              % (len(lat), ADMIN_TIMEOUT_S, lat[-1] if lat else -1,
                 lat[len(lat) // 2] if lat else -1,
                 "; failed: " + "; ".join(fails[:5]) if fails else ""))
        pings = [t for t, m in notify.msgs if "WATCHDOG=1" in m and t >= ready_at]
        gaps = [b - a for a, b in zip([ready_at] + pings, pings + [time.monotonic()])]
        check(max(gaps) < WATCHDOG_USEC / 1e6,
              "WATCHDOG=1 %d times, never a gap of the watchdog's %.0f s (longest %.3f s)"
              % (len(pings), WATCHDOG_USEC / 1e6, max(gaps)))
        # What each hostile client saw.
        for i, p in enumerate(pipeliners):
            r = report(p)
            print("pipeliner %d: %s" % (i, r), flush=True)
            pipeliners[i] = r
        got = [r for r in pipeliners if r is not None]
        check(len(got) == N_PIPELINERS and all(r["stats_ok"] > 0 for r in got),
              "every pipeliner was served (stats answered)")
        flows_ok = sum(r["flows_ok"] for r in got)
        # A full bucket (a second's worth) at the start, then the rate, over the time
        # any pipeliner ran (the clock is the system's monotonic one in every process).
        span = max(r["end"] for r in got) - min(r["start"] for r in got) if got else 0
        limit = USER_WALKS_PER_S * (1 + span) + 1
        check(0 < flows_ok <= limit,
              "user-level flows rate limited: %d ok in %.1f s on %d connections (at most "
              "%.0f)" % (flows_ok, span, N_PIPELINERS, limit))
        check(sum(r["rate_limited"] for r in got) > 0 and
              all(0 < r["retry_ms"] <= 1000 for r in got if r["rate_limited"]),
              "the rest answered busy \"rate limited\" with retry_ms 1..1000")
        check(sum(r["other"] for r in got) == 0, "no other error to a pipeliner")
        print("slow reader: %s" % report(slow), flush=True)
        tr = report(tricklers)
        lived = tr["lived"] if tr else []
        check(bool(lived) and max(lived) < METRICS_REQUEST_TIMEOUT_S + 3,
              "no trickled /metrics connection outlived the %d s request timeout (longest "
              "%.1f s of %d)" % (METRICS_REQUEST_TIMEOUT_S, max(lived) if lived else -1,
                                 len(lived)))
        print("scraper: %s" % report(scraper), flush=True)
        # The holders are still connected (they sleep on): their count, then the stop.
        holders_out = holders.stdout.readline()
        h = json.loads(holders_out) if holders_out else None
        user_slots = MAX_CLIENTS - RESERVED_OPERATOR - RESERVED_ADMIN
        check(h is not None and h["held"] <= user_slots and
              h["refused"] > 0 and
              any("level user" in m for m in h["messages"]),
              "holders got at most the user level's %d slots, the rest refused busy "
              "naming the level (%s)" % (user_slots, h))
        with Control(admin, timeout=ADMIN_TIMEOUT_S) as c:
            check(c.result("stats") is not None, "admin stats with the holders still there")
    finally:
        rc = d.stop(timeout=20)
        for p in hostiles:
            if p.poll() is None:
                p.kill()
                p.wait()
        notify.stop = True
        out = "\n".join(d.lines)
        check(rc == 0, "shaperd exits 0 on SIGTERM with clients connected (%s)" % rc)
        check("not turned" not in out, "no stalled-worker report")
        check(any("STOPPING=1" in m for _, m in notify.msgs), "STOPPING=1 on SIGTERM")
        if failures:
            d.dump()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--hostile":
        kind, target, seconds = sys.argv[2], sys.argv[3], float(sys.argv[4])
        HOSTILE[kind](int(target) if target.isdigit() else target, seconds)
    main(sys.argv[1])
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")
