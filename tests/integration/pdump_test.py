#!/usr/bin/python3
"""Integration: capturing with dpdk-dumpcap (dataplane.pdump).

dpdk-dumpcap is a DPDK secondary process: it maps the primary's memory from
the primary's hugepage files, so shaperd runs on hugepages here, not
--no-huge. The test reserves 2 MiB pages (as root), mounts its own hugetlbfs
and gives it to shaperd with --huge-dir, with a --file-prefix that each
dumpcap names too; afterwards it unmounts and puts the page count back.

shaperd bridges two veth pairs (net_af_packet); one dumpcap captures on each
port while frames of several sizes cross both ways. Each pcapng must hold
exactly the frames sent, byte for byte and in order: on the LAN port the
upstream ones as received and the downstream ones as sent, on the WAN port
the other way round. Also: with --in-memory (no multi-process channel)
shaperd refuses dataplane.pdump at start and says why (--no-huge is in
startup_failures.py).

usage: pdump_test.py SHAPERD   (root; 77 = skipped otherwise)
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (Control, Proc, check, check_accounting, failures, ip_frame,  # noqa: E402
                     make_veth, shaperd_argv, start_shaperd)

SHAPERD = sys.argv[1]
PAGES = "/sys/kernel/mm/hugepages/hugepages-2048kB/"
# shaperd took 17 pages of 2 MiB with these pools, each dumpcap 6: room to spare.
NEED_PAGES = 64
TAG = "pd%d" % (os.getpid() % 100000)
PREFIX = "pdump_%d" % os.getpid()
SIZES = [60, 64, 128, 333, 512, 1000, 1400, 1514]
IN, OUT = 1, 2  # pcapng epb_flags direction: inbound, outbound


def read_pages(name):
    with open(PAGES + name) as f:
        return int(f.read())


def persistent_pages():
    """The pool the setting asks for: nr_hugepages counts surplus pages too (pages
    still in use when the pool was lowered, given back when they are freed)."""
    return read_pages("nr_hugepages") - read_pages("surplus_hugepages")


def write_pages(n):
    with open(PAGES + "nr_hugepages", "w") as f:
        f.write(str(n))


def read_pcapng(path):
    """[(interface name, direction, frame)] of a little-endian pcapng file."""
    with open(path, "rb") as f:
        data = f.read()
    names, out, off = [], [], 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or off + blen > len(data):
            raise ValueError("block at %d: length %d past the end (%d)" % (off, blen, len(data)))
        body = data[off + 8:off + blen - 4]
        if btype == 0x0A0D0D0A and struct.unpack_from("<I", body, 0)[0] != 0x1A2B3C4D:
            raise ValueError("not a little-endian pcapng")
        if btype == 1:  # interface description: options after 8 bytes
            names.append(dict(options(body, 8)).get(2, b"").rstrip(b"\0").decode())
        elif btype == 6:  # enhanced packet
            ifid, _, _, caplen, _ = struct.unpack_from("<IIIII", body, 0)
            frame = body[20:20 + caplen]
            flags = dict(options(body, 20 + (caplen + 3) // 4 * 4)).get(2)
            direction = struct.unpack("<I", flags)[0] & 3 if flags else 0
            out.append((names[ifid] if ifid < len(names) else "#%d" % ifid, direction, frame))
        off += blen
    return out


def options(body, off):
    """(code, value) of a block's options from off."""
    while off + 4 <= len(body):
        code, length = struct.unpack_from("<HH", body, off)
        if code == 0:
            break
        yield code, body[off + 4:off + 4 + length]
        off += 4 + (length + 3) // 4 * 4


def frames(up):
    """Distinct UDP frames of each size: upstream from the LAN host, downstream to it."""
    src, dst = ("10.7.0.2", "198.51.100.9") if up else ("198.51.100.9", "10.7.0.2")
    return [ip_frame(src, dst, 4000 + i, 5000 + i, size) for i, size in enumerate(SIZES)]


def send(iface, frs):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for fr in frs:
        s.send(fr)
        time.sleep(0.002)  # one by one, in order, into the veth's queue
    s.close()


def in_memory_refused(tmp, huge):
    """--in-memory turns off EAL's multi-process channel: start-up fails, naming it."""
    path = os.path.join(tmp, "inmem.json")
    with open(path, "w") as f:
        f.write('{"ports": {"lan": "net_null0,no-rx=1", "wan": "net_null1,no-rx=1"},'
                ' "control": {"enabled": false}, "dataplane": {"pdump": true}}')
    try:
        p = subprocess.run(shaperd_argv(SHAPERD, path, prefix="%s_im" % PREFIX, huge_dir=huge,
                                        eal=["--in-memory"]),
                           capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        check(False, "--in-memory with pdump: shaperd refuses to start (it ran)")
        return
    ours = [l for l in p.stderr.splitlines() if l.startswith("shaperd:")]
    check(p.returncode == 1 and len(ours) == 1 and "dataplane.pdump" in ours[0]
          and "--in-memory" in ours[0],
          "--in-memory with pdump: exit 1 (%d), one line naming the key and the option %s"
          % (p.returncode, ours))


def capture(tmp, huge, lan, lanp, wan, wanp):
    cfg = {"ports": {"lan": "net_af_packet0,iface=%s" % lan, "wan": "net_af_packet1,iface=%s" % wan},
           "upstream": {"discipline": "fifo"}, "downstream": {"discipline": "fifo"},
           "dataplane": {"pdump": True, "idle_sleep": "20us"}}
    # dumpcap, a secondary process, must map shaperd's memory at the same
    # addresses. Left to the kernel, an ASan build's reservation landed where
    # dumpcap already had libraries ("Cannot reserve ... at [0x7f4b...]", 1
    # of 3 CI runs under ASan): a fixed base far from both processes' mmap
    # areas and from ASan's allocator (0x6000_0000_0000).
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, "pdump", cfg, huge_dir=huge, prefix=PREFIX,
                                        eal=["--base-virtaddr=0x500000000000"])
    if not check(d is not None, "shaperd starts on hugepages with dataplane.pdump"):
        return
    caps = {}
    try:
        for port, dev in (("lan", "net_af_packet0"), ("wan", "net_af_packet1")):
            path = os.path.join(tmp, port + ".pcapng")
            p = Proc("dumpcap " + port, ["dpdk-dumpcap", "--file-prefix=" + PREFIX, "-i", dev,
                                         "-w", path])
            caps[port] = (p, path, dev)
            # Printed once the primary has the port's callbacks in place.
            check(p.wait_line("Packets captured", 20), "dumpcap on the %s port attaches" % port)
        up, down = frames(True), frames(False)
        send(lanp, up)
        send(wanp, down)
        ctl = Control(sock)
        for _ in range(100):  # until both directions sent everything (or 5 s)
            st = ctl.call("stats")["result"]
            if all(st["directions"][x]["tx_packets"] >= len(SIZES) for x in ("upstream", "downstream")):
                break
            time.sleep(0.05)
        ctl.close()
        check_accounting(st, "live, after the frames")
        time.sleep(0.3)  # dumpcap drains its ring every few µs when busy
        for port, (p, path, dev) in caps.items():
            rc = p.stop()
            check(rc == 0, "dumpcap on %s exits 0 on SIGTERM (%d)" % (port, rc))
            got = read_pcapng(path) if os.path.exists(path) else []
            ours = [(n, dr, f) for n, dr, f in got if f in up + down]
            rx, tx = (up, down) if port == "lan" else (down, up)
            good = check([f for _, dr, f in ours if dr == IN] == rx
                         and [f for _, dr, f in ours if dr == OUT] == tx
                         and len(ours) == len(rx) + len(tx) and len({n for n, _, _ in ours}) == 1,
                         "%s port: the pcapng holds the %d frames received and the %d sent, byte "
                         "for byte, in order, with their direction, on one interface %s (%d of "
                         "ours, %d others)" % (port, len(rx), len(tx), sorted({n for n, _, _ in ours}),
                                              len(ours), len(got) - len(ours)))
            if not good:
                print("     got %s" % [(n, dr, len(f)) for n, dr, f in got])
                p.dump()
    finally:
        for p, _, _ in caps.values():
            p.stop()
        rc = d.stop()
        check(rc == 0, "shaperd exits 0 (%d)" % rc)
        if os.path.exists(stats_path):
            with open(stats_path) as f:
                st = json.load(f)
            check(st["mbufs_in_use"] == 0, "every mbuf back in the pool at exit")
        if failures:
            d.dump()


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (hugepages, veth pairs)")
        return 77
    if not check(shutil.which("dpdk-dumpcap") is not None,
                 "dpdk-dumpcap is installed (Debian's dpdk-dev; tools/install-deps.sh)"):
        return 1
    if not check(os.path.isdir(PAGES), "the kernel has 2 MiB hugepages"):
        return 1
    tmp = tempfile.mkdtemp(prefix="shaper_pdump_")
    os.chmod(tmp, 0o755)
    huge = os.path.join(tmp, "huge")
    os.mkdir(huge)
    pages_before = persistent_pages()
    lan, lanp, wan, wanp = TAG + "l", TAG + "lp", TAG + "w", TAG + "wp"
    mounted = False
    try:
        # Only what is missing: a box with pages to spare keeps its count.
        extra = max(0, NEED_PAGES - read_pages("free_hugepages"))
        write_pages(pages_before + extra)
        free = read_pages("free_hugepages")
        if free < NEED_PAGES:  # surplus pages still held were counted into the pool
            extra += NEED_PAGES - free
            write_pages(pages_before + extra)
            free = read_pages("free_hugepages")
        if not check(free >= NEED_PAGES, "%d hugepages of 2 MiB free (%d reserved here, %d before)"
                     % (free, extra, pages_before)):
            return 1
        subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", huge], check=True)
        mounted = True
        in_memory_refused(tmp, huge)
        make_veth(lan, lanp)
        make_veth(wan, wanp)
        capture(tmp, huge, lan, lanp, wan, wanp)
    finally:
        for n in (lan, wan):
            subprocess.run(["ip", "link", "del", n], capture_output=True)
        if mounted:  # the page files EAL leaves go with the mount
            check(subprocess.run(["umount", huge]).returncode == 0, "hugetlbfs unmounted")
        write_pages(pages_before)
        for pfx in (PREFIX, PREFIX + "_im"):
            shutil.rmtree("/var/run/dpdk/" + pfx, ignore_errors=True)
        check(persistent_pages() == pages_before, "hugepage setting back to %d" % pages_before)
        # Now and then the kernel frees EAL's last page files some 20-30 s after the
        # unmount (seen on this VM's 6.18 kernel; no process maps them any more): they
        # are surplus then, and leave the pool when freed.
        if read_pages("surplus_hugepages"):
            print("     %d page(s) still held after the unmount, surplus until freed"
                  % read_pages("surplus_hugepages"))
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
