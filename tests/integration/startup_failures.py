#!/usr/bin/python3
"""Integration: shaperd's start-up failures end cleanly.

Each way start-up can fail (a missing or bad port, a device or socket
already in use, too little memory for the mbuf pools, a bad lcore list, a
missing socket directory, a config file, a file it names (subscribers,
the fail-open program) or a socket directory others may write, capture (dataplane.pdump) without hugepages) must end with exit 1,
one line that says what and why, no control socket left behind, and, when
SHAPERD is the ASan build, no LeakSanitizer or AddressSanitizer report
(detect_leaks=1 is set here, whatever the caller gave). No suppressions
are needed: on these paths DPDK's EAL frees what it took with malloc (its
own memory comes from its memseg lists, not malloc), and a leak planted in
shaperd's EAL-failure path is reported here.

usage: startup_failures.py SHAPERD
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import Proc, check, failures, shaperd_argv  # noqa: E402

SHAPERD = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="shaper_startup_")
PREFIX = "startup%d" % os.getpid()
PORTS = {"lan": "net_null0,no-rx=1", "wan": "net_null1,no-rx=1"}


def sanitizer_env():
    env = dict(os.environ)
    opts = [o for o in env.get("ASAN_OPTIONS", "").split(":")
            if o and not o.startswith(("detect_leaks", "exitcode"))]
    # A distinct exit code: a leak must not pass as the expected exit 1.
    env["ASAN_OPTIONS"] = ":".join(opts + ["detect_leaks=1", "exitcode=23"])
    return env


def write_config(name, cfg, mode=0o644):
    path = os.path.join(TMP, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    os.chmod(path, mode)
    return path


def config(sock, **over):
    cfg = {"ports": dict(PORTS), "upstream": {"discipline": "fifo"},
           "downstream": {"discipline": "fifo"}, "control": {"socket": sock},
           "dataplane": {"idle_sleep": "100us"}}
    cfg.update(over)
    return cfg


def fails(what, cfg_path, want, lcores="0,1", sock=None, prefix=None):
    argv = shaperd_argv(SHAPERD, cfg_path, prefix=prefix or "%s_%d" % (PREFIX, fails.n),
                        lcores=lcores, mem_mb=256)
    fails.n += 1
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=sanitizer_env())
    out = p.stdout + p.stderr
    ours = [l for l in p.stderr.splitlines() if l.startswith("shaperd:")]
    sanitizer = [l for l in out.splitlines() if "Sanitizer" in l]
    good = check(p.returncode == 1, "%s: exit 1 (%d)" % (what, p.returncode))
    good &= check(len(ours) == 1 and want in ours[0],
                  "%s: one line saying %r (%s)" % (what, want, ours))
    good &= check(not sanitizer, "%s: no sanitizer report %s" % (what, sanitizer[:3]))
    if sock is not None:
        good &= check(not os.path.exists(sock), "%s: no socket left at %s" % (what, sock))
    if not good:
        print("--- output:\n" + out[-6000:])


fails.n = 0


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (DPDK vdevs)")
        sys.exit(77)
    os.chmod(TMP, 0o755)
    sock = os.path.join(TMP, "run", "shaper.sock")

    # Found in the config, before EAL.
    fails("missing port", write_config("noport", config(sock, ports={"wan": "net_null1"})),
          "ports.lan")
    fails("control socket directory missing",
          write_config("nodir", config(os.path.join(TMP, "no", "such", "s.sock"))),
          "is missing, and so is")
    path = write_config("writable", config(sock), mode=0o666)
    fails("config file others may write", path, "is writable by others (mode 0666)")
    # The files it names, as much as the file itself.
    subs = os.path.join(TMP, "subscribers-file.json")
    with open(subs, "w") as f:
        json.dump({"subscribers": []}, f)
    os.chmod(subs, 0o664)
    fails("subscriber file its group may write",
          write_config("subs", config(sock, subscribers={"file": subs})),
          "refusing the configuration: subscribers.file: %s is writable by group" % subs)
    # af_packet ports load the tc object beside fail_open.program
    prog, tc_prog = os.path.join(TMP, "failopen.bpf.o"), os.path.join(TMP, "failopen_tc.bpf.o")
    for p, mode in ((prog, 0o644), (tc_prog, 0o666)):
        with open(p, "w"):
            pass
        os.chmod(p, mode)
    fails("fail-open program others may write",
          write_config("prog", config(sock, ports={
              "wan": "net_af_packet0,iface=shaper-nosuch0",
              "lan": "net_af_packet1,iface=shaper-nosuch1"},
              fail_open={"enabled": True, "program": prog})),
          "fail_open.program: %s is writable by others" % tc_prog)
    opendir = os.path.join(TMP, "open")
    os.mkdir(opendir)
    os.chmod(opendir, 0o777)
    fails("socket directory others may write",
          write_config("opendir", config(os.path.join(opendir, "s.sock"))),
          "refusing the control socket")
    with open(os.path.join(TMP, "file.sock"), "w"):
        pass
    fails("socket path taken by a file",
          write_config("file", config(os.path.join(TMP, "file.sock"))),
          "exists and is not a socket")

    # Found after EAL: the socket bound before must be gone again.
    fails("bad device string",
          write_config("baddev", config(sock, ports={"wan": "net_null1,no-rx=1",
                                                     "lan": "net_bogus0"})),
          "ports.lan: cannot attach device", sock=sock)
    fails("interface that does not exist",
          write_config("noiface", config(sock, ports={
              "wan": "net_af_packet0,iface=shaper-nosuch0", "lan": "net_null0,no-rx=1"})),
          "ports.wan: cannot attach device", sock=sock)
    fails("too little memory for the mbuf pools",
          write_config("nomem", config(sock, dataplane={"mbufs": 4000000})),
          "cannot create the upstream pool", sock=sock)
    fails("capture without hugepages",
          write_config("pdump", config(sock, dataplane={"pdump": True})),
          "dataplane.pdump: dpdk-dumpcap cannot attach to a process started with --no-huge",
          sock=sock)
    fails("too few lcores", write_config("onelcore", config(sock)),
          "worker lcore(s) needed", lcores="0", sock=sock)
    fails("worker lcore not in the list",
          write_config("badlcore", config(sock, lcores={"workers": [3]})),
          "lcores.workers[0]: lcore 3 is not an enabled worker lcore", sock=sock)
    fails("lcore list EAL refuses", write_config("ealbad", config(sock)),
          "EAL initialisation failed", lcores="0,4096", sock=sock)

    # In use by a running daemon: its socket path, and its EAL file prefix.
    # (Its config is one anyone may write: --no-strict-modes lets it start.)
    ok_path = write_config("running", config(sock), mode=0o666)
    d = Proc("shaperd", shaperd_argv(SHAPERD, ok_path, prefix=PREFIX, mem_mb=256)
             + ["--no-strict-modes"])
    try:
        if check(d.wait_line("bridging", 30), "a first daemon runs with --no-strict-modes"):
            check(d.wait_line("warning: --no-strict-modes", 1), "and warns that it does")
            fails("socket path in use", write_config("same", config(sock)),
                  "another daemon is listening there")
            other = os.path.join(TMP, "other.sock")
            fails("EAL instance in use", write_config("other", config(other)),
                  "EAL initialisation failed", prefix=PREFIX, sock=other)
            check(os.path.exists(sock), "the first daemon's socket is untouched")
    finally:
        rc = d.stop()
        if failures:
            d.dump()
    check(rc == 0, "the first daemon exits 0 (%d)" % rc)
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")
