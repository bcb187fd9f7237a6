#!/usr/bin/python3
"""Integration: AF_XDP with fail-open refuses an interface with rx queues
shaperd does not serve.

The fail-open XDP program hands a frame to the AF_XDP socket of the queue
it came on; shaperd has sockets on its own queues only, so a frame on any
other queue would pass to the bridge unshaped while shaperd runs. On veths
made with 4 queues, shaperd with one worker must exit 1 with one line
naming the interface, its 4 queues, the queue served and the fix, and
leave no XDP program on it; on veths with 1 queue it starts and bridges.

usage: failopen_queues.py SHAPERD
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import Proc, asan_build, check, failures, shaperd_argv  # noqa: E402

SHAPERD = sys.argv[1]
TAG = "shq%d" % (os.getpid() % 1000000)


def ip(*args, check_rc=True):
    return subprocess.run(["ip"] + list(args), check=check_rc, capture_output=True, text=True)


def make_veth(a, b, queues):
    """A veth pair a <-> b with this many rx and tx queues each, up, without IPv6."""
    q = ["numrxqueues", str(queues), "numtxqueues", str(queues)]
    ip("link", "add", a, *q, "type", "veth", "peer", "name", b, *q)
    for n in (a, b):
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % n, "w") as f:
            f.write("1")
        ip("link", "set", n, "up")


def config(tmp, name, wan, lan):
    cfg = {"ports": {"wan": "net_af_xdp0,iface=%s,force_copy=1" % wan,
                     "lan": "net_af_xdp1,iface=%s,force_copy=1" % lan},
           "upstream": {"discipline": "fifo"}, "downstream": {"discipline": "fifo"},
           "control": {"socket": os.path.join(tmp, name + ".sock")},
           "dataplane": {"idle_sleep": "100us"},
           "fail_open": {"enabled": True}}
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def xdp_attached(ifname):
    return " xdp" in ip("-d", "link", "show", ifname).stdout


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (veths, XDP)")
        sys.exit(77)
    if not os.path.exists(os.path.join(os.path.dirname(SHAPERD), "failopen.bpf.o")):
        print("SKIP: no failopen.bpf.o beside %s (built without clang's BPF target)" % SHAPERD)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="shaper_fo_queues_")
    names = [TAG + s for s in ("m0", "m1", "l0", "l1", "w0", "w1")]
    try:
        make_veth(names[0], names[1], 4)
        make_veth(names[2], names[3], 1)
        make_veth(names[4], names[5], 1)
        multi, lan, wan = names[0], names[2], names[4]

        # 4 queues, 1 worker: refused before any program is attached.
        argv = shaperd_argv(SHAPERD, config(tmp, "multi", multi, lan),
                            prefix=TAG + "a", mem_mb=256)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        ours = [l for l in p.stderr.splitlines() if l.startswith("shaperd:")]
        want = ("fail_open: ports.wan: %s has 4 rx queues and shaperd's AF_XDP sockets serve "
                "queue 0 only (1 worker)" % multi)
        good = check(p.returncode == 1, "4 rx queues: exit 1 (%d)" % p.returncode)
        good &= check(len(ours) == 1 and want in ours[0]
                      and "ethtool -L %s rx 1" % multi in ours[0]
                      and "lcores.workers 4 workers" in ours[0],
                      "4 rx queues: one line naming the interface, its queues and the fix (%s)"
                      % ours)
        good &= check(not xdp_attached(multi), "4 rx queues: no XDP program left on %s" % multi)
        if not good:
            print("--- output:\n" + (p.stdout + p.stderr)[-4000:])

        # 1 queue each: it starts, bridges, and stops cleanly. Under ASan, the PMD's own
        # leak of the program it loads is suppressed (lsan-af_xdp.supp), which needs whole
        # stacks to see which library allocated.
        env = None
        if asan_build(SHAPERD):
            env = dict(os.environ)
            env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS"), "fast_unwind_on_malloc=0") if x)
            env["LSAN_OPTIONS"] = ":".join(x for x in (env.get("LSAN_OPTIONS"), "suppressions=" + os.path.join(
                os.path.dirname(os.path.abspath(__file__)), "lsan-af_xdp.supp")) if x)
        d = Proc("shaperd", shaperd_argv(SHAPERD, config(tmp, "single", wan, lan),
                                         prefix=TAG + "b", mem_mb=256), env=env)
        try:
            check(d.wait_line("bridging", 30), "1 rx queue: shaperd starts and bridges")
            check(not any("rx queues" in l for l in d.lines), "1 rx queue: no queue complaint")
        finally:
            rc = d.stop()
        check(rc == 0, "1 rx queue: shaperd exits 0 (%d)" % rc)
        if failures:
            d.dump()
    finally:
        for n in names[0::2]:
            ip("link", "del", n, check_rc=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")
