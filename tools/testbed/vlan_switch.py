#!/usr/bin/python3
"""The switch of the namespace bed's "stick" mode (bed.sh up PREFIX stick), in
user space: the bed's kernels may have neither 802.1Q interfaces nor a
VLAN-filtering bridge nor tc's vlan action, so this forwards between access
ports (untagged) and one trunk port (tagged), as a switch in front of a bridge
on a stick does.

usage: vlan_switch.py run TRUNK PORT:VID [PORT:VID ...]
       vlan_switch.py inject TRUNK N

run: a frame from an access port goes onto the trunk tagged with the port's
VID; a frame from the trunk goes, untagged, to the access port of its VID
(the kernel hands packet sockets the tag as metadata, PACKET_AUXDATA; a tag
left in the frame is read too); other frames are dropped. Nothing goes from
one access port to another: only the trunk's far end joins the VLANs.
inject: sends N frames tagged with VLAN 300 and N untagged onto TRUNK (frames
a bridge on a stick must drop), then exits.
"""
import select
import socket
import struct
import sys

ETH_P_ALL = 3
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 1 << 4
AUX = struct.Struct("IIIHHHH")  # struct tpacket_auxdata


def open_port(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((ifname, 0))
    s.setblocking(False)
    return s


def frames(s):
    """What s has received (not what was sent on it): (frame, vid or None)."""
    while True:
        try:
            data, anc, _, addr = s.recvmsg(65536, socket.CMSG_SPACE(AUX.size))
        except BlockingIOError:
            return
        if addr[2] == PACKET_OUTGOING:
            continue
        vid = None
        for level, kind, blob in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(blob) >= AUX.size:
                status, _, _, _, _, tci, _ = AUX.unpack_from(blob)
                if status & TP_STATUS_VLAN_VALID:
                    vid = tci & 0x0FFF
        if vid is None and len(data) >= 18 and data[12:14] in (b"\x81\x00", b"\x88\xa8"):
            vid = struct.unpack_from("!H", data, 14)[0] & 0x0FFF
            data = data[:12] + data[16:]
        yield data, vid


def send(s, frame):
    try:
        s.send(frame)
    except OSError:
        pass  # a full queue drops, as a switch does


def run(trunk_name, access):
    trunk = open_port(trunk_name)
    ports = {}
    for spec in access:
        name, vid = spec.split(":")
        ports[int(vid)] = open_port(name)
    vid_of = {s.fileno(): vid for vid, s in ports.items()}
    poll = select.poll()
    for s in [trunk] + list(ports.values()):
        poll.register(s.fileno(), select.POLLIN)
    while True:
        for fd, _ in poll.poll():
            if fd == trunk.fileno():
                for frame, vid in frames(trunk):
                    if vid in ports:
                        send(ports[vid], frame)
            else:
                tag = struct.pack("!HH", 0x8100, vid_of[fd])
                for frame, vid in frames(ports[vid_of[fd]]):
                    if vid is None:
                        send(trunk, frame[:12] + tag + frame[12:])


def inject(trunk_name, n):
    s = open_port(trunk_name)
    s.setblocking(True)
    body = b"\xff" * 6 + b"\x02\x00\x00\x00\x03\x00"
    for _ in range(n):
        s.send(body + struct.pack("!HH", 0x8100, 300) + b"\x88\xb5" + b"\x00" * 46)
        s.send(body + b"\x88\xb5" + b"\x00" * 46)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "inject":
        inject(sys.argv[2], int(sys.argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
