"""Network devices for tests."""
import subprocess


def make_veth(a, b):
    """A veth pair a <-> b, both up, without IPv6 (no router solicitations or
    DAD frames of the kernel's own on the wire)."""
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True,
                   capture_output=True)
    for n in (a, b):
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % n, "w") as f:
            f.write("1")
        subprocess.run(["ip", "link", "set", n, "up"], check=True, capture_output=True)
