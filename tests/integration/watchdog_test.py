#!/usr/bin/python3
"""shaperd speaks systemd's notify protocol (Type=notify, WatchdogSec=).

A unix datagram socket stands in for systemd: NOTIFY_SOCKET and
WATCHDOG_USEC (1 s) are set as systemd sets them. shaperd on net_null
ports must send READY=1 once it bridges, then WATCHDOG=1 about every
0.5 s (half the interval) while its workers turn, never a gap that
would have let systemd kill it, and STOPPING=1 on
SIGTERM, then exit 0. Which worker health withholds the ping is
tests/unit/test_watchdog.c.

usage: watchdog_test.py SHAPERD
"""
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import shaperd_argv, write_config  # noqa: E402

WATCHDOG_USEC = 1000000
WINDOW_S = 5.0


def main():
    shaperd = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="shaper_wd_")
    fails = 0

    def check(good, what):
        nonlocal fails
        print(("ok   " if good else "FAIL ") + what, flush=True)
        fails += 0 if good else 1

    sock_path = os.path.join(tmp, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    cfg = {
        "ports": {"lan": "net_null0,no-rx=1", "wan": "net_null1,no-rx=1"},
        "upstream": {"discipline": "fifo"}, "downstream": {"discipline": "fifo"},
        "control": {"enabled": False},
        "dataplane": {"idle_sleep": "100us"},
    }
    cfg_path = write_config(os.path.join(tmp, "c.json"), cfg)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC=str(WATCHDOG_USEC))
    env.pop("WATCHDOG_PID", None)
    proc = subprocess.Popen(shaperd_argv(shaperd, cfg_path, prefix="wd%d" % os.getpid(), mem_mb=256),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    msgs = []  # (time, message)
    try:
        deadline = time.monotonic() + 30
        ready_at = None
        while time.monotonic() < deadline and proc.poll() is None:
            r, _, _ = select.select([sock], [], [], 0.2)
            if r:
                m = sock.recv(4096).decode()
                msgs.append((time.monotonic(), m))
                if "READY=1" in m.split("\n"):
                    ready_at = time.monotonic()
                    break
        check(ready_at is not None, "READY=1 once bridging")
        if ready_at is None:
            return 1
        end = ready_at + WINDOW_S
        while time.monotonic() < end:
            r, _, _ = select.select([sock], [], [], 0.2)
            if r:
                msgs.append((time.monotonic(), sock.recv(4096).decode()))
        pings = [t for t, m in msgs if "WATCHDOG=1" in m.split("\n")]
        # Fed every 0.5 s (checked each 0.1 s turn of the control loop): 8-10 in
        # 5 s. What matters to systemd is that no gap reaches WatchdogSec.
        n_max = int(WINDOW_S / (WATCHDOG_USEC / 2e6)) + 1
        check(7 <= len(pings) <= n_max, "WATCHDOG=1 %d times in %.0f s (7..%d: fed at half of %d ms)"
              % (len(pings), WINDOW_S, n_max, WATCHDOG_USEC // 1000))
        gaps = [b - a for a, b in zip([ready_at] + pings, pings)]
        check(bool(gaps) and max(gaps) < WATCHDOG_USEC / 1e6,
              "never a gap systemd would kill for (longest %.3f s < %.1f s)"
              % (max(gaps) if gaps else -1, WATCHDOG_USEC / 1e6))
        proc.send_signal(signal.SIGTERM)
        try:
            out = proc.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0]
        while True:
            r, _, _ = select.select([sock], [], [], 0)
            if not r:
                break
            msgs.append((time.monotonic(), sock.recv(4096).decode()))
        check(any("STOPPING=1" in m.split("\n") for _, m in msgs), "STOPPING=1 on SIGTERM")
        check(proc.returncode == 0, "exit code %d" % proc.returncode)
        check("not turned" not in out, "no stalled-worker report")
        if fails:
            print(out)
        return 1 if fails else 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sock.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
