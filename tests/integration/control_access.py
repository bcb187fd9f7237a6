#!/usr/bin/python3
"""Integration: control access levels on a real shaperd (net_null vdevs).

The main socket (level admin, mode 0666) and a second, read-only one
(control.sockets, level user). As root and as nobody (setpriv), through
shapectl: reads work for everyone; config.set and stats.reset from nobody,
and from root on the read-only socket, are refused with permission_denied
naming the command and the level needed, change nothing, and are logged
with the peer's uid, at most 5 lines per 10 s however many are refused.
Root on the admin socket changes the configuration, and so does nobody
holding the admin group ("users") as a supplementary group (SO_PEERGROUPS).

usage: control_access.py SHAPERD SHAPECTL
"""
import grp
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import NOBODY, Proc, check, failures, shaperd_argv, write_config  # noqa: E402

SHAPERD, SHAPECTL = sys.argv[1], sys.argv[2]


def ctl(sock, args, nobody=False, groups=None):
    who = NOBODY if nobody else []
    if groups is not None:
        who = [a for a in NOBODY if a != "--clear-groups"] + ["--groups=" + groups]
    cmd = who + [SHAPECTL, "--socket", sock] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def denied(rc, err, cmd, need, has):
    return (rc == 1 and "permission_denied" in err and cmd in err and
            "needs access level " + need in err and "has level " + has in err)


def upstream_bandwidth(sock):
    rc, out, _ = ctl(sock, ["--json", "get", "upstream"])
    return json.loads(out)["upstream"]["bandwidth"] if rc == 0 else None


def flood_as_nobody(sock, n):
    """n config.set requests on one connection as uid 65534; how many were denied."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(sock)
            req = {"cmd": "config.set", "args": {"direction": "upstream",
                                                 "settings": {"bandwidth": "1mbit"}}}
            s.sendall(b"".join(json.dumps(dict(req, id=i)).encode() + b"\n" for i in range(n)))
            buf = b""
            while buf.count(b"\n") < n:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            replies = [json.loads(l) for l in buf.split(b"\n") if l]
            ok = [r.get("error", {}).get("code") == "permission_denied" for r in replies]
            code = 0 if len(ok) == n and all(ok) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status) == 0


def main():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("SKIP: needs root (DPDK vdevs) and setpriv to connect as nobody")
        sys.exit(77)
    try:
        grp.getgrnam("users")
    except KeyError:
        print("SKIP: needs the group \"users\" (base-passwd) as an admin group")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_access_")
    os.chmod(tmp, 0o755)  # nobody must reach the sockets
    admin, ro = os.path.join(tmp, "run", "shaper.sock"), os.path.join(tmp, "run", "ro.sock")
    cfg = {
        "ports": {"lan": "net_null0,no-rx=1", "wan": "net_null1,no-rx=1"},
        "upstream": {"discipline": "fifo", "bandwidth": "50mbit"},
        "downstream": {"discipline": "fifo"},
        # Anyone may connect to either; what they may do is up to their level.
        "control": {"socket": admin, "mode": "0666", "admin_group": "users",
                    "sockets": [{"path": ro, "mode": "0666"}]},
        "dataplane": {"idle_sleep": "100us"},
    }
    path = write_config(os.path.join(tmp, "shaper.json"), cfg)
    d = Proc("shaperd", shaperd_argv(SHAPERD, path, prefix="access%d" % os.getpid(), mem_mb=256))
    start = time.monotonic()
    try:
        if not check(d.wait_line("control socket %s (level user)" % ro, 30),
                     "shaperd listens on both sockets"):
            return
        # Reads: everyone, on either socket.
        for sock in (admin, ro):
            for who in (False, True):
                rc, _, err = ctl(sock, ["stats"], nobody=who)
                check(rc == 0, "%s reads stats on %s (%r)" % ("nobody" if who else "root",
                                                              os.path.basename(sock), err))
        rc, out, _ = ctl(admin, ["version"], nobody=True)
        check(rc == 0 and "shaperd" in out, "nobody reads the version")
        # Writes: refused for nobody (the default level) and on the read-only socket.
        rc, _, err = ctl(admin, ["set", "upstream", "bandwidth", "20mbit"], nobody=True)
        check(denied(rc, err, "config.set", "admin", "user"),
              "nobody's config.set: permission_denied, exit 1 (%r)" % err.strip())
        rc, _, err = ctl(admin, ["reset"], nobody=True)
        check(denied(rc, err, "stats.reset", "operator", "user"),
              "nobody's stats.reset: permission_denied (%r)" % err.strip())
        rc, _, err = ctl(ro, ["set", "upstream", "bandwidth", "20mbit"])
        check(denied(rc, err, "config.set", "admin", "user"),
              "root's config.set on the read-only socket: permission_denied (%r)" % err.strip())
        bw = upstream_bandwidth(admin)
        check(bw == "50Mbit", "nothing refused changed the bandwidth (%s)" % bw)
        # Root on the admin socket may change it.
        rc, _, err = ctl(admin, ["set", "upstream", "bandwidth", "20mbit"])
        check(rc == 0, "root's config.set on the admin socket (%r)" % err.strip())
        bw = upstream_bandwidth(admin)
        check(bw == "20Mbit", "root changed the bandwidth (%s)" % bw)
        rc, _, err = ctl(admin, ["reset"])
        check(rc == 0, "root resets the counters (%r)" % err.strip())
        # The admin group as a supplementary group of an otherwise unprivileged user.
        users = str(grp.getgrnam("users").gr_gid)
        rc, _, err = ctl(admin, ["set", "upstream", "bandwidth", "30mbit"], groups=users)
        check(rc == 0 and upstream_bandwidth(admin) == "30Mbit",
              "nobody in the admin group \"users\" changes the bandwidth (%r)" % err.strip())
        rc, _, err = ctl(ro, ["set", "upstream", "bandwidth", "20mbit"], groups=users)
        check(denied(rc, err, "config.set", "admin", "user"),
              "but not on the read-only socket (%r)" % err.strip())
        rc, _, err = ctl(admin, ["set", "upstream", "bandwidth", "20mbit"])
        check(rc == 0, "root sets it back (%r)" % err.strip())
        # A flood of refusals is answered in full but logged only a few times.
        check(flood_as_nobody(admin, 200), "200 config.set as nobody: 200 permission_denied")
        check(upstream_bandwidth(admin) == "20Mbit", "the flood changed nothing")
        elapsed = time.monotonic() - start
        time.sleep(0.2)
        refused = [l for l in d.lines if "shaperd: control: refused" in l]
        check(any(re.search(r"refused config\.set from uid 65534 \(pid \d+\) on %s: needs "
                            r"level admin, has user" % re.escape(admin), l) for l in refused),
              "the log names the command, the peer's uid and the socket")
        check(any("refused config.set from uid 0 " in l and ro in l for l in refused),
              "root's refusal on the read-only socket is logged with uid 0")
        limit = 5 * (1 + int(elapsed // 10) + 1)
        check(len(refused) <= limit,
              "%d refusals logged in %.1f s for 203 refused (at most %d)"
              % (len(refused), elapsed, limit))
    finally:
        rc = d.stop()
        if failures:
            d.dump()
    check(rc == 0, "shaperd exits 0 on SIGTERM (%d)" % rc)
    check(not os.path.exists(admin) and not os.path.exists(ro), "both sockets removed")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")
