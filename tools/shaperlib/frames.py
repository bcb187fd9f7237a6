"""Ethernet/IP test frames and pcap files."""
import socket
import struct


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
