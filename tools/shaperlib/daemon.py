"""Running shaperd: its command line, a child whose output a thread collects
(shown when a test fails), and starting and stopping the daemon."""
import codecs
import json
import os
import signal
import subprocess
import threading
import time

from .pcap import write_pcap

# Run a command as nobody (uid/gid 65534, no supplementary groups); util-linux's setpriv.
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def eal_args(prefix, lcores="0,1", mem_mb=512, huge=False, huge_dir=None, eal=()):
    """shaperd's EAL options: no PCI scan, its own --file-prefix (so daemons
    side by side do not share memory), EAL's own logging at warning.
    Memory: --no-huge with mem_mb; huge: hugepages, mem_mb of them; huge_dir:
    the hugepages of that hugetlbfs mount (no -m). lcores: an EAL -l list, or
    a --lcores map such as "0@0,1@1,2@1" for more lcores than CPUs. eal: more
    EAL options."""
    if huge_dir is not None:
        mem = ["--huge-dir", huge_dir]
    elif huge:
        mem = ["-m", str(mem_mb)]
    else:
        mem = ["--no-huge", "-m", str(mem_mb)]
    return mem + list(eal) + [
        "--no-pci", "--file-prefix=" + prefix, "--lcores" if "@" in lcores else "-l", lcores,
        "--log-level=lib.eal:warning"]


def shaperd_argv(shaperd, cfg_path, stats_path=None, eal_argv=None, **eal_kw):
    """shaperd's whole command line: eal_argv (all its EAL options, as a
    list), or eal_args(**eal_kw); then the config file and, if given, where
    it writes its exit counters (--stats-file)."""
    eal = list(eal_argv) if eal_argv is not None else eal_args(**eal_kw)
    return [shaperd] + eal + ["--", "-c", cfg_path] + (["--stats-file", stats_path]
                                                       if stats_path else [])


def pcap_ports(tmp, wan_inputs, lan_inputs):
    """config's ports on net_pcap vdevs: each side one rx queue per input
    pcap (as many as workers) and a tx pcap per queue, tmp/<side>_out<i>.pcap."""
    def side(role, inputs):
        return ",".join(["rx_pcap=%s" % f for f in inputs] +
                        ["tx_pcap=%s/%s_out%d.pcap" % (tmp, role, i) for i in range(len(inputs))])
    return {"lan": "net_pcap0," + side("lan", lan_inputs),
            "wan": "net_pcap1," + side("wan", wan_inputs)}


def pcap_ports_with(tmp, frames, workers):
    """config's ports on net_pcap vdevs, the WAN side receiving frames dealt
    round one pcap per worker's queue (every flow on every queue), the LAN
    side nothing."""
    wan_in = [os.path.join(tmp, "wan_in%d.pcap" % i) for i in range(workers)]
    for i, path in enumerate(wan_in):
        write_pcap(path, frames[i::workers])
    empty = os.path.join(tmp, "empty.pcap")
    write_pcap(empty, [])
    return pcap_ports(tmp, wan_in, [empty] * workers)


def workers_option(argv):
    """(argv less a '--workers N', N or 1): a test's own option."""
    args = list(argv)
    if "--workers" not in args:
        return args, 1
    k = args.index("--workers")
    n = int(args[k + 1])
    del args[k:k + 2]
    return args, n


def worker_lcores(cfg, workers):
    """shaperd's lcores on this 2-CPU machine for this many workers: the
    main lcore and the first worker on CPU 0, the others on CPU 1 (sets
    cfg's lcores.workers when more than one); the --lcores argument."""
    if workers <= 1:
        return "0,1"
    cfg["lcores"] = {"workers": list(range(1, workers + 1))}
    return ",".join(["0@0", "1@0"] + ["%d@1" % (i + 1) for i in range(1, workers)])


def write_config(path, cfg, indent=None):
    with open(path, "w") as f:
        json.dump(cfg, f, indent=indent)
    return path


def shape_per_subscriber(cfg, path, addresses, plan, link, indent=None):
    """Make cfg shape per subscriber: subscriber i ("s<i>") owns addresses[i]
    (a list), with a max of plan each way; the link (and each direction's own
    bandwidth) at link; every subscriber may hold a CAKE at once. The
    subscribers file (docs/subscribers.md, "The JSON form") goes to path."""
    subs = [{"id": "s%d" % i, "download": {"max": plan}, "upload": {"max": plan},
             "addresses": list(a)} for i, a in enumerate(addresses)]
    write_config(path, {"link": {"download": link, "upload": link}, "subscribers": subs},
                 indent=indent)
    for d in ("upstream", "downstream"):
        cfg[d] = dict(cfg[d], bandwidth=link)
    cfg["subscribers"] = {"file": path, "active": len(subs)}
    return cfg


class Proc:
    """A child whose output is collected by a thread (and shown on failure)."""

    def __init__(self, name, argv, env=None):
        self.name, self.lines, self.tail = name, [], ""
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        # Chunks, not lines: output without its newline yet (a progress count) shows in tail.
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            *done, rest = (self.tail + dec.decode(chunk, final=not chunk)).split("\n")
            self.lines.extend(l.rstrip("\r") for l in done)
            self.tail = rest
            if not chunk:
                break
        if self.tail:
            self.lines.append(self.tail)
            self.tail = ""

    def wait_line(self, text, timeout):
        """Whether text appears in the output (a line, or the unfinished one) within timeout."""
        end = time.time() + timeout
        while time.time() < end:
            if any(text in l for l in self.lines + [self.tail]):
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return False

    def stop(self, timeout=20):
        rc = stop_process(self.proc, timeout)
        self.reader.join(timeout=5)
        return rc

    def dump(self):
        print("--- %s output:" % self.name)
        for l in self.lines[-40:]:
            print("    " + l)


def stop_process(p, timeout=20, sig=signal.SIGTERM):
    """Signal p (a Popen) to stop, wait up to timeout, then kill it; its exit code."""
    if p.poll() is None:
        p.send_signal(sig)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def favour_session(pid):
    """With autogroup scheduling (kernel.sched_autogroup_enabled), the CPU is
    shared between sessions first and nice only weighs inside a session: a
    `nice -n 19` job in a shell would take half of each core from pktgen's
    and shaperd's poll loops, which a deployment gives their own cores. Raise
    the weight of the session of `pid` (autogroup nice -10, needs root) so
    that a background job stays in the background, as it would under
    systemd's cgroups."""
    path = "/proc/%d/autogroup" % pid
    if not os.path.exists(path):
        return
    try:
        with open(path, "w") as f:
            f.write("-10")
    except OSError as e:
        print("autogroup nice of %d not raised (%s): a busy session beside this test takes "
              "CPU from its poll loops" % (pid, e), flush=True)


def start_logged(argv, log_path, env=None):
    """A child (a Popen) whose output goes to the file log_path, stdin closed."""
    with open(log_path, "w") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)


def start_shaperd(shaperd, tmp, name, cfg, lcores="0,1", mem_mb=512, env=None, huge_dir=None,
                  prefix=None, eal=(), ready="control socket", timeout=60):
    """shaperd on cfg with its control socket at tmp/name.sock and its exit
    counters in tmp/name_stats.json; returns (Proc, socket path, stats path),
    once its output says ready (the Proc is stopped and its output shown if it
    never does, and None returned in its place). Without huge_dir (a
    hugetlbfs mount) it runs --no-huge with mem_mb of memory; lcores and eal
    as in eal_args."""
    sock = os.path.join(tmp, name + ".sock")
    cfg = dict(cfg, control={"socket": sock})
    path = write_config(os.path.join(tmp, name + ".json"), cfg)
    stats = os.path.join(tmp, name + "_stats.json")
    favour_session(os.getpid())  # shaperd runs in this session
    d = Proc("shaperd", shaperd_argv(shaperd, path, stats,
                                     prefix=prefix or "%s_%d" % (name, os.getpid()),
                                     lcores=lcores, mem_mb=mem_mb, huge_dir=huge_dir, eal=eal),
             env=env)
    if not d.wait_line(ready, timeout):
        d.stop()
        d.dump()
        return None, sock, stats
    return d, sock, stats


def asan_build(binary):
    """True if binary was built with AddressSanitizer (it links libasan)."""
    try:
        out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, text=True).stdout
    except OSError:
        return False
    return "libasan" in out


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1
