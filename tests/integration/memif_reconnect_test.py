#!/usr/bin/python3
"""shaperd's net_memif client ports follow their server through restarts.

dpdk-testpmd is the memif server of both ports (io forwarding between its
two, a first burst sent on each at start: the frames go round through
shaperd's bridge and back); shaperd is the client of both. shaperd starts
first, with no server there: it must run with its links down and connect
once the server comes. Then the server is stopped and started CYCLES
times: each time shaperd's links must come up again, frames must cross
its bridge again in both directions, and each port's `reconnects` counter
must have moved (a server that dies on its own while shaperd connects is
started again, at most SERVER_RESTARTS_MAX times: see there). At the end
shaperd exits 0, every frame it received is
accounted for (sent, dropped under a reason, or queued) and no mbuf is
left in use.

DPDK 22.11's memif client connects only when its port starts; without
shaperd's restart of a port that is down (src/shaperd.c, reconnect_port)
the links stay down after the first departure and this test fails there.

usage: memif_reconnect_test.py SHAPERD [CYCLES]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import check_accounting, request, start_shaperd  # noqa: E402

LINK_TIMEOUT_S = 20.0  # a restart every second, a worker that may wait behind others
# DPDK 22.11's memif server can panic when a client's connection closes
# while it sets the channel up ("Error adding fd ... epoll_ctl" in its
# interrupt thread): shaperd's port restarts close such connections. A
# server that dies so is started again, as its supervisor would, and
# shaperd must reconnect to the new one; more than this many is a failure.
SERVER_RESTARTS_MAX = 3
FLOW_TIMEOUT_S = 10.0
MIN_FRAMES = 1000      # frames each direction must carry after a reconnect

fails = 0


def check(good, what):
    global fails
    print(("ok   " if good else "FAIL ") + what, flush=True)
    fails += 0 if good else 1
    return good


def main():
    shaperd = sys.argv[1]
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    testpmd = shutil.which("dpdk-testpmd")
    if testpmd is None:
        print("skip: dpdk-testpmd is not installed (Debian's dpdk package)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_memif_")
    tag = "shaper-mr-%d" % os.getpid()
    socks = {r: "/run/%s-%s.sock" % (tag, r) for r in ("lan", "wan")}

    def server(n):
        """testpmd as the memif server of both sockets, on CPU 0 (shaperd's worker has CPU 1)."""
        log = open(os.path.join(tmp, "testpmd-%d.log" % n), "w")
        return subprocess.Popen(
            [testpmd, "--lcores=0@0,1@0", "--no-huge", "-m", "512", "--no-pci",
             "--file-prefix=%s-tp" % tag, "--log-level=lib.eal:warning",
             "--vdev=net_memif0,role=server,socket=%s" % socks["lan"],
             "--vdev=net_memif1,role=server,socket=%s" % socks["wan"],
             "--", "--auto-start", "--tx-first", "--forward-mode=io",
             "--total-num-mbufs=4096"],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)

    def stop_server(p):
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        shutil.rmtree("/var/run/dpdk/%s-tp" % tag, ignore_errors=True)

    cfg = {
        "ports": {r: "net_memif%d,role=client,socket=%s" % (i, socks[r])
                  for i, r in enumerate(("lan", "wan"))},
        "upstream": {"discipline": "cake", "bandwidth": "100mbit"},
        "downstream": {"discipline": "cake", "bandwidth": "100mbit"},
        "lcores": {"workers": [1]},
    }
    d, sock, stats_path = start_shaperd(shaperd, tmp, "mr", cfg, lcores="0@1,1@1")
    if d is None:
        check(False, "shaperd starts with no memif server there")
        sys.exit(1)
    tp = None

    def stats():
        return request(sock, "stats", timeout=5)

    server_deaths = []

    def wait_links(what, n):
        """Both links up; returns the server then running (None if not up)."""
        nonlocal tp
        end = time.monotonic() + LINK_TIMEOUT_S
        t0 = time.monotonic()
        while time.monotonic() < end and d.proc.poll() is None:
            if tp.poll() is not None:
                with open(os.path.join(tmp, "testpmd-%d.log" % n)) as f:
                    why = [ln.strip() for ln in f if "PANIC" in ln or "Error" in ln]
                server_deaths.append("%s: exit %s (%s)" % (what, tp.returncode,
                                                          "; ".join(why[-2:]) or "no message"))
                print("note %s: the memif server died on its own: %s" %
                      (what, server_deaths[-1]), flush=True)
                shutil.rmtree("/var/run/dpdk/%s-tp" % tag, ignore_errors=True)
                if not check(len(server_deaths) <= SERVER_RESTARTS_MAX,
                             "the memif server died at most %d times (%d)" %
                             (SERVER_RESTARTS_MAX, len(server_deaths))):
                    return False
                n += 100  # a log of its own
                tp = server(n)
                end = time.monotonic() + LINK_TIMEOUT_S
            try:
                st = stats()
                if st["ports"]["lan"]["link_up"] and st["ports"]["wan"]["link_up"]:
                    return check(True, "%s: both links up after %.1f s" %
                                 (what, time.monotonic() - t0))
            except (OSError, ValueError, KeyError, RuntimeError):
                pass
            time.sleep(0.1)
        return check(False, "%s: both links up within %.0f s (shaperd %s)" %
                     (what, LINK_TIMEOUT_S, "running" if d.proc.poll() is None
                      else "exited %s" % d.proc.returncode))

    def wait_frames(what):
        """Frames cross the bridge both ways (wan tx: upstream, lan tx: downstream)."""
        before = stats()["ports"]
        end = time.monotonic() + FLOW_TIMEOUT_S
        while time.monotonic() < end:
            now = stats()["ports"]
            up = now["wan"]["tx_packets"] - before["wan"]["tx_packets"]
            down = now["lan"]["tx_packets"] - before["lan"]["tx_packets"]
            if up >= MIN_FRAMES and down >= MIN_FRAMES:
                return check(True, "%s: frames cross again (%d up, %d down)" % (what, up, down))
            time.sleep(0.2)
        return check(False, "%s: %d frames each way within %.0f s (got %d up, %d down)" %
                     (what, MIN_FRAMES, FLOW_TIMEOUT_S, up, down))

    try:
        time.sleep(2.0)
        st = stats()
        check(d.proc.poll() is None and not st["ports"]["lan"]["link_up"]
              and not st["ports"]["wan"]["link_up"],
              "with no server, shaperd runs and its links are down")
        for n in range(cycles + 1):
            what = "server start %d of %d" % (n + 1, cycles + 1)
            before = stats()["ports"]
            tp = server(n)
            if not wait_links(what, n) or not wait_frames(what):
                break
            after = stats()["ports"]
            moved = {r: after[r]["reconnects"] - before[r]["reconnects"] for r in after}
            check(all(v >= 1 for v in moved.values()),
                  "%s: each port was restarted to reconnect (%s)" % (what, json.dumps(moved)))
            stop_server(tp)
            tp = None
            time.sleep(0.5)
            if not check(d.proc.poll() is None, "%s: shaperd outlives its server's exit" % what):
                break
    finally:
        if tp is not None:
            stop_server(tp)
        rc = d.stop()
    check(rc == 0, "shaperd exits 0 (got %s)" % rc)
    try:
        with open(stats_path) as f:
            ex = json.load(f)
    except (OSError, ValueError):
        ex = None
    if check(ex is not None, "shaperd wrote its exit counters"):
        check(check_accounting(ex, "at exit"), "the accounting identity holds at exit")
        check(ex.get("mbufs_in_use") == 0, "0 mbufs in use at exit (got %s)" %
              ex.get("mbufs_in_use"))
    if fails:
        d.dump()
        print("logs in %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
