"""What the Python test scripts share: the ok/FAIL check list, a child
process whose output a thread collects (shown when a test fails), a control
socket client, and the check of the accounting identity."""
import codecs
import json
import os
import signal
import socket
import struct
import subprocess
import threading
import time

failures = []

# Run a command as nobody (uid/gid 65534, no supplementary groups); util-linux's setpriv.
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)
    return cond


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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(timeout=5)
        return rc

    def dump(self):
        print("--- %s output:" % self.name)
        for l in self.lines[-40:]:
            print("    " + l)


class Control:
    """A control socket connection: one JSON request line, one reply line."""

    def __init__(self, path, timeout=10):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""
        self.next_id = 1

    def call(self, cmd, args=None):
        rid = self.next_id
        self.next_id += 1
        req = {"id": rid, "cmd": cmd}
        if args is not None:
            req["args"] = args
        self.s.sendall(json.dumps(req).encode() + b"\n")
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise IOError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        rep = json.loads(line)
        if rep.get("id") != rid:
            raise IOError("reply id %r for request %d" % (rep.get("id"), rid))
        return rep

    def close(self):
        self.s.close()


def accounting_errors(stats):
    """Where a `stats` result (or shaperd's --stats-file report) breaks
    received + held_at_reset == sent + dropped + queued, per direction, summed
    here from the terms (not taken from the daemon's own "unaccounted");
    [] if it holds everywhere. A missing accounting object is an error too."""
    errs = []
    dirs = stats.get("directions", {})
    if not dirs:
        return ["no directions in the statistics"]
    for name, d in sorted(dirs.items()):
        a = d.get("accounting")
        if a is None:
            errs.append("%s: no accounting object" % name)
            continue
        dropped, queued = sum(a["dropped"].values()), sum(a["queued"].values())
        lhs, rhs = a["received"] + a["held_at_reset"], a["sent"] + dropped + queued
        if lhs != rhs or a["unaccounted"] != lhs - rhs:
            errs.append("%s: received %d + held %d != sent %d + dropped %d + queued %d %s"
                        " (unaccounted %d)" % (name, a["received"], a["held_at_reset"], a["sent"],
                                              dropped, queued, json.dumps(a["queued"]),
                                              a["unaccounted"]))
    return errs


def check_accounting(stats, label):
    """check() that the accounting identity holds in stats (see accounting_errors)."""
    errs = accounting_errors(stats)
    terms = "; ".join("%s %d = %d sent + %d dropped + %d queued" % (
        n, d["accounting"]["received"] + d["accounting"]["held_at_reset"], d["accounting"]["sent"],
        sum(d["accounting"]["dropped"].values()), sum(d["accounting"]["queued"].values()))
        for n, d in sorted(stats.get("directions", {}).items()) if "accounting" in d)
    return check(not errs, "%s: accounting identity holds (%s) %s" % (label, terms, "; ".join(errs)))


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def ip_frame(src, dst, sport, dport, size, tos=0, proto=17):
    """An Ethernet frame of size bytes: IPv4 or IPv6 (by src's form), UDP (17)
    or TCP (6, an ACK), tos as the DSCP/ECN byte, zero payload."""
    v6 = ":" in src
    l4_len = 8 if proto == 17 else 20
    plen = max(0, size - 14 - (40 if v6 else 20) - l4_len)  # no smaller than the headers
    if proto == 17:
        l4 = struct.pack("!HHHH", sport, dport, l4_len + plen, 0)
    else:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 1, 5 << 4, 0x10, 65535, 0, 0)
    if v6:
        ip = struct.pack("!IHBB16s16s", 6 << 28 | tos << 20, l4_len + plen, proto, 64,
                         socket.inet_pton(socket.AF_INET6, src),
                         socket.inet_pton(socket.AF_INET6, dst))
        eth_type = b"\x86\xdd"
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + l4_len + plen, 0, 0x4000, 64, proto, 0,
                         socket.inet_aton(src), socket.inet_aton(dst))
        ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
        eth_type = b"\x08\x00"
    return bytes.fromhex("020000000002" "020000000001") + eth_type + ip + l4 + bytes(plen)


def write_pcap(path, frames):
    """A µs pcap of frames, 1 µs apart."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1, i, len(fr), len(fr)))
            f.write(fr)


def start_shaperd(shaperd, tmp, name, cfg, lcores="0,1", mem_mb=512, env=None, huge_dir=None,
                  prefix=None, eal=()):
    """shaperd on cfg with its control socket at tmp/name.sock and its exit
    counters in tmp/name_stats.json; returns (Proc, socket path, stats path),
    once the socket answers (the Proc is stopped if it never does). Without
    huge_dir (a hugetlbfs mount) it runs --no-huge with mem_mb of memory.
    lcores: an EAL -l list, or a --lcores map such as "0@0,1@1,2@1" for more
    lcores than the machine has CPUs. eal: more EAL options."""
    sock = os.path.join(tmp, name + ".sock")
    cfg = dict(cfg, control={"socket": sock})
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    stats = os.path.join(tmp, name + "_stats.json")
    mem = ["--no-huge", "-m", str(mem_mb)] if huge_dir is None else ["--huge-dir", huge_dir]
    mem += list(eal)
    d = Proc("shaperd", [shaperd] + mem + [
        "--no-pci", "--file-prefix=" + (prefix or "%s_%d" % (name, os.getpid())),
        "--lcores" if "@" in lcores else "-l", lcores,
        "--log-level=lib.eal:warning", "--", "-c", path, "--stats-file", stats], env=env)
    if not d.wait_line("control socket", 60):
        d.stop()
        d.dump()
        return None, sock, stats
    return d, sock, stats


def make_veth(a, b):
    """A veth pair a <-> b, both up, without IPv6 (no router solicitations or
    DAD frames of the kernel's own on the wire)."""
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True,
                   capture_output=True)
    for n in (a, b):
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % n, "w") as f:
            f.write("1")
        subprocess.run(["ip", "link", "set", n, "up"], check=True, capture_output=True)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def slope(ts, ys):
    """Least-squares slope of ys over ts (per unit of ts)."""
    n = len(ts)
    if n < 2:
        return 0.0
    mt, my = sum(ts) / n, sum(ys) / n
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den if den else 0.0


def percentile(xs, p):
    """The p-th percentile (nearest rank) of xs."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))]


def asan_build(binary):
    """True if binary was built with AddressSanitizer (it links libasan)."""
    try:
        out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, text=True).stdout
    except OSError:
        return False
    return "libasan" in out
