"""pcap files (the classic format, Ethernet frames): the one writer and
reader of the project's tools and tests.

    write_pcap(path, frames)                  # 1 µs apart from time 0
    write_pcap(path, frames, times_us=[...])  # each frame's time in µs
    with PcapWriter(path) as w:               # frame by frame
        w.add(frame, t_us)
    read_pcap(path)                           # [(time in s, frame bytes)]

A frame is bytes (a scapy packet: bytes(p)). Files are little-endian with
µs timestamps, as DPDK's net_pcap reads them; read_pcap also takes the ns
variant net_pcap writes.
"""
import struct

MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535

_FILE_HEADER = struct.Struct("<IHHiIII")
_RECORD_HEADER = struct.Struct("<IIII")


def file_header(snaplen=SNAPLEN):
    """The 24-byte header of a µs Ethernet pcap (version 2.4)."""
    return _FILE_HEADER.pack(MAGIC_US, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET)


def record(frame, t_us):
    """One frame's record: its 16-byte header (time t_us, whole µs) and the frame."""
    sec, usec = divmod(int(t_us), 1000000)
    return _RECORD_HEADER.pack(sec, usec, len(frame), len(frame)) + frame


class PcapWriter:
    """Frames appended one at a time; a context manager that closes the file."""

    def __init__(self, path, snaplen=SNAPLEN):
        self.f = open(path, "wb")
        self.f.write(file_header(snaplen))
        self.frames = 0
        self.bytes = 0

    def add(self, frame, t_us=None):
        """Append frame at t_us (whole µs; default: 1 µs after the one before)."""
        self.f.write(record(frame, self.frames if t_us is None else t_us))
        self.frames += 1
        self.bytes += len(frame)

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def write_pcap(path, frames, times_us=None):
    """Write frames to path; times_us gives each frame's time (whole µs),
    else frame i is at i µs. Returns the number of frames written."""
    with PcapWriter(path) as w:
        if times_us is None:
            for fr in frames:
                w.add(fr)
        else:
            for fr, t in zip(frames, times_us, strict=True):
                w.add(fr, t)
        return w.frames


def read_pcap(path):
    """[(time in s, frame bytes)] of a pcap (µs or ns timestamps)."""
    out = []
    with open(path, "rb") as f:
        magic, = struct.unpack("<I", f.read(24)[:4])
        div = 1e9 if magic == MAGIC_NS else 1e6
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            sec, frac, caplen, _ = _RECORD_HEADER.unpack(h)
            out.append((sec + frac / div, f.read(caplen)))
    return out
