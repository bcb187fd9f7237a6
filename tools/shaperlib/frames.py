"""Ethernet/IP test frames (pcap.py writes them to files)."""
import socket
import struct


def ip_checksum(b):
    """The Internet checksum of b (RFC 1071): 0 over a header that carries a right one."""
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
        ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
        eth_type = b"\x08\x00"
    return bytes.fromhex("020000000002" "020000000001") + eth_type + ip + l4 + bytes(plen)


def numbered_frame(seq, size, tos=0):
    """A UDP/IPv4 frame 10.0.0.1:4000 -> 10.0.0.2:5000 of size bytes, its
    number seq in the IP id (low 16 bits) and the payload's first 4 bytes,
    where order checks read it back."""
    payload = struct.pack("!I", seq) + bytes(size - 14 - 20 - 8 - 4)
    udp = struct.pack("!HHHH", 4000, 5000, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    return bytes.fromhex("020000000002" "020000000001" "0800") + ip + udp
