"""The guest bed: a Debian 12 guest in QEMU with two emulated PCI NICs whose
backends are tap devices in the namespace bed's client and server namespaces:

  netns <pfx>cli                  QEMU guest (systemd, shaperd)                 netns <pfx>srv
  eth0 10.99.0.1/24 ==tap== virtio-net-pci 00:04.0 [LAN]  e1000e 00:05.0 [WAN] ==tap== eth0 10.99.0.2/24

The image is built from Debian's packages (tools/vmbed/image.sh, mmdebstrap)
and cached under the build tree, keyed by the script and the packages it
holds; each guest boots a qcow2 overlay of it, so the image stays as built.
The bed drives the guest through the QEMU guest agent on a virtio-serial
port (run() executes a command and returns its exit status and output); a
host directory is shared read-only over 9p (tag "bed") for the package and
the files the guest needs. The serial console goes to console.log.

TCG (-accel tcg,thread=multi -cpu max) unless told otherwise: KVM guests hang
in early boot on the machines this was built on.
"""
import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VMBED = os.path.join(HERE, "..", "vmbed")

# What the bed runs on the host: Debian package -> a program it provides.
HOST_PACKAGES = {
    "qemu-system-x86": "qemu-system-x86_64",
    "qemu-utils": "qemu-img",
    "mmdebstrap": "mmdebstrap",
    "e2fsprogs": "mkfs.ext4",
    "iproute2": "ip",
    "iputils-ping": "ping",
    "iperf3": "iperf3",
    "ethtool": "ethtool",
}

LAN_PCI = "0000:00:04.0"
WAN_PCI = "0000:00:05.0"
CLI_IP, SRV_IP = "10.99.0.1", "10.99.0.2"
CLI_IP6, SRV_IP6 = "fd99::1", "fd99::2"


class BedError(RuntimeError):
    """The bed cannot start or lost its guest; the message says what is missing."""


def log(msg):
    print("vmbed: %s" % msg, flush=True)


def ensure_host_packages():
    """Install the host's missing packages with apt-get (root); BedError naming
    them if that fails."""
    missing = [p for p in HOST_PACKAGES if shutil.which(HOST_PACKAGES[p]) is None and
               subprocess.run(["dpkg-query", "-W", "-f", "${Status}", p], capture_output=True,
                              text=True).stdout != "install ok installed"]
    if not missing:
        return
    log("installing %s" % " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing,
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] +
                           missing, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise BedError("the guest bed needs the Debian packages %s and apt-get could not install "
                       "them: %s" % (" ".join(missing), r.stderr.strip()[-400:]))


def deb_dependencies(deb):
    """The package names a .deb depends on and recommends (first of each
    alternative, versions dropped): what the image's apt cache must hold."""
    out = subprocess.run(["dpkg-deb", "-f", deb, "Depends", "Recommends"], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        _, _, rel = line.partition(":")
        for item in rel.split(","):
            name = item.split("|")[0].split("(")[0].strip()
            if name:
                names.add(name)
    return sorted(names)


def package(src, out_dir, version=None):
    """The Debian package of the tree at src (tools/build-deb.sh, without its
    unit run; as version instead of debian/changelog's when given), built
    into out_dir unless the one there is of the same tree: the committed
    files and the changes to tracked files, less the tests, the beds and the
    docs. Its path."""
    # What the package is not built from does not rebuild it: the tests (off
    # in a nocheck build), the beds' Python and the docs.
    keep = ["--", ".", ":(exclude)tests", ":(exclude)tools/vmbed", ":(exclude)tools/shaperlib",
            ":(exclude)tools/testbed", ":(exclude)tools/pktgen", ":(exclude)tools/*.py",
            ":(exclude)docs/*.md"]
    tree = subprocess.run(["git", "-C", src, "ls-files", "-s"] + keep,
                          capture_output=True).stdout
    diff = subprocess.run(["git", "-C", src, "diff", "HEAD", "--binary"] + keep,
                          capture_output=True).stdout
    key = hashlib.sha256(tree + diff + (version or "").encode()).hexdigest()[:16] if tree else None
    stamp = os.path.join(out_dir, "tree.key")
    debs = lambda: sorted((os.path.join(out_dir, f) for f in os.listdir(out_dir)  # noqa: E731
                           if f.startswith("shaper_") and f.endswith(".deb")),
                          key=os.path.getmtime)
    os.makedirs(out_dir, exist_ok=True)
    if key and os.path.exists(stamp) and open(stamp).read() == key and debs():
        return debs()[-1]
    log("building the package from the tree (tools/build-deb.sh %s)" % out_dir)
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck")
    r = subprocess.run(["nice", "-n", "19", "bash", os.path.join(src, "tools", "build-deb.sh"),
                        out_dir] + (["--version", version] if version else []), env=env)
    if r.returncode != 0 or not debs():
        raise BedError("the package could not be built (tools/build-deb.sh %s)" % out_dir)
    if key:
        with open(stamp, "w") as f:
            f.write(key)
    return debs()[-1]


def image(cache_dir, packages):
    """The cached image for these packages (built if missing): a dict with
    root.img, vmlinuz and initrd.img paths and the seconds the build took (0
    when it came from the cache)."""
    script = os.path.join(VMBED, "image.sh")
    h = hashlib.sha256(open(script, "rb").read())
    h.update(" ".join(sorted(packages)).encode())
    key = h.hexdigest()[:16]
    d = os.path.join(cache_dir, "image-" + key)
    files = {n: os.path.join(d, n) for n in ("root.img", "vmlinuz", "initrd.img")}
    built = 0.0
    if not all(os.path.exists(f) for f in files.values()):
        log("building the guest image %s (mmdebstrap; once per package set)" % key)
        t0 = time.monotonic()
        r = subprocess.run(["nice", "-n", "19", "bash", script, d,
                            os.path.join(cache_dir, "apt-cache")] + list(packages))
        if r.returncode != 0:
            raise BedError("the guest image could not be built (tools/vmbed/image.sh %s)" % d)
        built = time.monotonic() - t0
        # Older images of other package sets are not kept.
        for old in os.listdir(cache_dir):
            if old.startswith("image-") and old != "image-" + key:
                shutil.rmtree(os.path.join(cache_dir, old), ignore_errors=True)
    files["built_s"] = built
    return files


def _ip(*args, check=True):
    return subprocess.run(["ip"] + list(args), check=check, capture_output=True, text=True)


class Agent:
    """The QEMU guest agent's socket: JSON commands, one reply each."""

    def __init__(self, path):
        self.path = path
        self.s = None
        self.buf = b""
        self.stale = False

    def _connect(self):
        if self.s is None:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.connect(self.path)
            self.buf = b""

    def _reply(self, deadline):
        while True:
            # The agent may send 0xff (guest-sync-delimited) before its reply.
            self.buf = self.buf.lstrip(b"\xff")
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                line = line.strip(b"\xff")
                if line.strip():
                    try:
                        return json.loads(line)
                    except ValueError:
                        continue
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the guest agent")
            self.s.settimeout(left)
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("guest agent socket closed")
            self.buf += chunk

    def sync(self, timeout):
        """Wait until the agent in the guest answers (it starts late in the
        guest's boot); False if it did not within timeout seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self._connect()
                sid = int(time.time() * 1000) % 1000000000
                self.s.sendall(json.dumps({"execute": "guest-sync-delimited",
                                           "arguments": {"id": sid}}).encode() + b"\n")
                end = min(deadline, time.monotonic() + 3)
                while True:
                    rep = self._reply(end)
                    if rep.get("return") == sid:
                        return True
            except (TimeoutError, OSError, ConnectionError):
                if self.s is not None:
                    self.s.close()
                    self.s = None
                time.sleep(0.5)
        return False

    def call(self, cmd, args=None, timeout=30):
        """One command and its reply; BedError if the agent does not answer
        within timeout seconds or the channel breaks. A reply that comes late
        would answer the next command instead, so after a timeout the next
        call first resynchronises (guest-sync-delimited drops what was left)."""
        req = {"execute": cmd}
        if args is not None:
            req["arguments"] = args
        try:
            if self.stale and not self.sync(min(timeout, 15)):
                raise TimeoutError("no answer to guest-sync-delimited")
            self.stale = False
            self._connect()
            self.s.sendall(json.dumps(req).encode() + b"\n")
            rep = self._reply(time.monotonic() + timeout)
        except (TimeoutError, OSError, ConnectionError, ValueError) as e:
            self.stale = True
            self.close()
            raise BedError("the guest agent did not answer %s within %.0f s (%s)" %
                           (cmd, timeout, e or type(e).__name__))
        if "error" in rep:
            raise BedError("guest agent: %s: %s" % (cmd, rep["error"].get("desc", rep["error"])))
        return rep.get("return")

    def close(self):
        if self.s is not None:
            self.s.close()
            self.s = None


class QMP:
    """QEMU's monitor (QMP) socket."""

    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.monotonic() > deadline:
                    raise BedError("QEMU's monitor socket %s did not appear" % path)
                time.sleep(0.1)
        self.f = self.s.makefile("rwb")
        json.loads(self.f.readline())  # the greeting
        self.call("qmp_capabilities")

    def call(self, cmd, args=None):
        req = {"execute": cmd}
        if args is not None:
            req["arguments"] = args
        self.f.write(json.dumps(req).encode() + b"\n")
        self.f.flush()
        while True:
            rep = json.loads(self.f.readline())
            if "event" in rep:
                continue
            if "error" in rep:
                raise BedError("QMP %s: %s" % (cmd, rep["error"]))
            return rep.get("return")

    def close(self):
        self.s.close()


class Guest:
    """One guest on its own namespaces and taps (names start with pfx, at
    most 8 characters), its files in run_dir."""

    def __init__(self, img, run_dir, pfx="vmb", smp=2, mem_mb=2048, lan_queues=2,
                 accel="tcg,thread=multi", cpu="max", wan_nic="e1000e", rss=False):
        """wan_nic "e1000e" (one queue pair) or "virtio" (lan_queues pairs,
        as the LAN port); rss gives the virtio NICs QEMU's RSS (rss=on)."""
        self.img, self.run_dir, self.pfx = img, run_dir, pfx[:8]
        self.smp, self.mem_mb, self.lan_queues = smp, mem_mb, lan_queues
        self.wan_nic, self.rss = wan_nic, rss
        self.accel, self.cpu = accel, cpu
        self.cli, self.srv = self.pfx + "cli", self.pfx + "srv"
        self.tap_lan, self.tap_wan = self.pfx + "tl", self.pfx + "tw"
        self.share = os.path.join(run_dir, "share")
        os.makedirs(self.share, exist_ok=True)
        self.console = os.path.join(run_dir, "console.log")
        self.proc = None
        self.agent = None
        self.qmp = None
        self.boot_s = None

    # -- the host side
    def _namespaces_down(self):
        for ns in (self.cli, self.srv):
            _ip("netns", "del", ns, check=False)
        for t in (self.tap_lan, self.tap_wan):
            _ip("link", "del", t, check=False)

    def _taps(self):
        self._namespaces_down()
        _ip("tuntap", "add", "dev", self.tap_lan, "mode", "tap", "multi_queue")
        _ip("tuntap", "add", "dev", self.tap_wan, "mode", "tap",
            *(["multi_queue"] if self.wan_nic == "virtio" else []))
        for ns in (self.cli, self.srv):
            _ip("netns", "add", ns)

    def _taps_into_namespaces(self):
        """Once QEMU holds the taps: each into its namespace as eth0, with the
        namespace bed's addresses."""
        for tap, ns, ip4, ip6 in ((self.tap_lan, self.cli, CLI_IP, CLI_IP6),
                                  (self.tap_wan, self.srv, SRV_IP, SRV_IP6)):
            _ip("link", "set", tap, "netns", ns)
            _ip("-n", ns, "link", "set", tap, "name", "eth0")
            _ip("-n", ns, "addr", "add", ip4 + "/24", "dev", "eth0")
            _ip("-n", ns, "-6", "addr", "add", ip6 + "/64", "dev", "eth0", "nodad")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", "eth0", "up")
            # Frames leave with finished checksums and no GSO, as from a NIC.
            subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off",
                            "gso", "off", "tso", "off"], capture_output=True)

    def in_ns(self, side, argv, **kw):
        """subprocess.run(argv) in the client ("cli") or server ("srv") namespace."""
        ns = self.cli if side == "cli" else self.srv
        return subprocess.run(["ip", "netns", "exec", ns] + list(argv), **kw)

    def popen_ns(self, side, argv, **kw):
        ns = self.cli if side == "cli" else self.srv
        return subprocess.Popen(["ip", "netns", "exec", ns] + list(argv), **kw)

    # -- the guest
    def start(self, boot_timeout=240):
        """Boot the guest: returns once its agent answers; BedError (with the
        console's tail) otherwise."""
        os.makedirs(self.share, exist_ok=True)
        disk = os.path.join(self.run_dir, "disk.qcow2")
        if os.path.exists(disk):
            os.unlink(disk)
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                        os.path.abspath(self.img["root.img"]), disk], check=True)
        qmp_path = os.path.join(self.run_dir, "qmp.sock")
        qga_path = os.path.join(self.run_dir, "qga.sock")
        for p in (qmp_path, qga_path, self.console):
            if os.path.exists(p):
                os.unlink(p)
        self._taps()
        q = self.lan_queues
        rss = ",rss=on" if self.rss else ""
        argv = [
            "qemu-system-x86_64", "-name", "shaperbox",
            "-accel", self.accel, "-cpu", self.cpu, "-smp", str(self.smp),
            "-m", str(self.mem_mb), "-nographic", "-no-user-config", "-nodefaults",
            "-S", "-qmp", "unix:%s,server=on,wait=off" % qmp_path,
            "-kernel", self.img["vmlinuz"], "-initrd", self.img["initrd.img"],
            "-append", "root=/dev/vda rw console=ttyS0 quiet edd=off systemd.show_status=0",
            "-serial", "file:" + self.console,
            "-drive", "file=%s,if=virtio,format=qcow2,cache=unsafe" % disk,
            "-virtfs", "local,path=%s,mount_tag=bed,security_model=none,readonly=on" %
            self.share,
            "-chardev", "socket,path=%s,server=on,wait=off,id=qga0" % qga_path,
            "-device", "virtio-serial-pci",
            "-device", "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0",
            "-netdev", "tap,id=lan,ifname=%s,script=no,downscript=no,vhost=off,queues=%d" %
            (self.tap_lan, q),
            "-device", "virtio-net-pci,id=lan-nic,netdev=lan,mq=on,vectors=%d,addr=0x4,romfile=,"
            "mac=52:54:00:5a:00:04%s" % (2 * q + 2, rss),
        ]
        if self.wan_nic == "virtio":
            argv += ["-netdev", "tap,id=wan,ifname=%s,script=no,downscript=no,vhost=off,"
                     "queues=%d" % (self.tap_wan, q),
                     "-device", "virtio-net-pci,id=wan-nic,netdev=wan,mq=on,vectors=%d,addr=0x5,"
                     "romfile=,mac=52:54:00:5a:00:05%s" % (2 * q + 2, rss)]
        else:
            argv += ["-netdev", "tap,id=wan,ifname=%s,script=no,downscript=no,vhost=off" %
                     self.tap_wan,
                     "-device", "e1000e,id=wan-nic,netdev=wan,addr=0x5,romfile=,"
                     "mac=52:54:00:5a:00:05"]
        self.qemu_log = open(os.path.join(self.run_dir, "qemu.log"), "w")
        self.proc = subprocess.Popen(argv, stdout=self.qemu_log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        try:
            qmp = QMP(qmp_path)
        except BedError:
            self.stop()
            raise BedError("QEMU did not start: %s" % self._tail(os.path.join(self.run_dir,
                                                                                "qemu.log")))
        # QEMU opened the taps before its monitor answered; now they can move.
        self._taps_into_namespaces()
        t0 = time.monotonic()
        qmp.call("cont")
        self.qmp = qmp
        self.agent = Agent(qga_path)
        if not self.agent.sync(boot_timeout):
            tail = self._tail(self.console)
            self.stop()
            raise BedError("the guest did not answer on its agent channel within %d s; "
                           "console:\n%s" % (boot_timeout, tail))
        self.boot_s = time.monotonic() - t0
        return self.boot_s

    def reboot(self, boot_timeout=600):
        """Reboot the guest as an operator would (`systemctl reboot`; QEMU
        boots the same disk again): the seconds until its agent answers
        from the new boot (its kernel's boot_id changed)."""
        boot_id = lambda: self.run("cat /proc/sys/kernel/random/boot_id", timeout=20,  # noqa
                                   check=True)[1].strip()
        before = boot_id()
        t0 = time.monotonic()
        try:
            self.agent.call("guest-exec", {"path": "/bin/systemctl", "arg": ["reboot"]},
                            timeout=30)
        except BedError:
            pass  # the agent may go before it answers
        deadline = t0 + boot_timeout
        while time.monotonic() < deadline:
            self.agent.close()
            if self.agent.sync(max(1.0, min(30.0, deadline - time.monotonic()))):
                self.agent.stale = False
                try:
                    if boot_id() != before:
                        return time.monotonic() - t0
                except BedError:
                    pass  # the old agent went while answering
            time.sleep(1)
        raise BedError("the guest did not come back from its reboot within %d s; console:\n%s"
                       % (boot_timeout, self._tail(self.console)))

    @staticmethod
    def _tail(path, n=30):
        try:
            with open(path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no %s)" % path

    def run(self, cmd, timeout=120, check=False, name=None):
        """Run a shell command in the guest (as root): (exit status, stdout,
        stderr). With check, BedError on a non-zero status.

        The command runs under the guest's timeout(1), which after timeout
        seconds kills its whole process group (apt, dpkg and their children
        too) so that the agent returns what it printed until then: BedError
        naming the step (name, or the command) with the tail of its output.
        If even that does not come back (a process left holding its output,
        the agent or the guest stuck), the host gives up 20 s later: BedError
        with the guest's processes, if it can still list them, and the
        console's tail. The caller stops the guest."""
        name = name or cmd
        if self.proc is None or self.proc.poll() is not None:
            raise BedError("the guest is not running (step: %s); console:\n%s" %
                           (name, self._tail(self.console)))
        t0 = time.monotonic()
        deadline = t0 + timeout + 20
        budget = lambda: max(5.0, min(30.0, deadline - time.monotonic()))  # noqa: E731
        pid = self.agent.call("guest-exec", {
            "path": "/usr/bin/timeout",
            "arg": ["-k", "5", "%d" % max(1, round(timeout)), "/bin/sh", "-c", cmd],
            "capture-output": True}, timeout=budget())["pid"]
        pause = 0.05
        while True:
            st = self.agent.call("guest-exec-status", {"pid": pid}, timeout=budget())
            if st.get("exited"):
                break
            if time.monotonic() > deadline:
                try:
                    _, ps, _ = self.run("ps --ppid 2 -p 2 -N -o pid,pgid,stat,etime,args --forest"
                                        " | tail -30",
                                        timeout=10)
                except BedError as e:
                    ps = "(cannot list them: %s)\n" % e
                raise BedError("step %r: no result from the guest %.0f s after its %d s limit "
                               "(its output is lost); the guest's processes:\n%sconsole:\n%s" %
                               (name, time.monotonic() - t0 - timeout, timeout, ps,
                                self._tail(self.console, 15)))
            time.sleep(pause)
            pause = min(pause * 1.5, 0.5)
        out = base64.b64decode(st.get("out-data", "")).decode(errors="replace")
        err = base64.b64decode(st.get("err-data", "")).decode(errors="replace")
        rc = st.get("exitcode", -st.get("signal", 1))
        if rc in (124, 137) and time.monotonic() - t0 >= timeout:
            tail = "".join((out + err).splitlines(True)[-25:])
            raise BedError("step %r timed out after %d s (stopped in the guest); it printed:\n%s"
                           % (name, timeout, tail or "(nothing)\n"))
        if check and rc != 0:
            raise BedError("guest command failed (exit %s): %s\n%s%s" % (rc, name, out, err))
        return rc, out, err

    def set_link(self, port, up):
        """The carrier of the guest's "lan" or "wan" NIC, as a cable pulled
        and plugged back would set it (QMP set_link on the NIC: the guest's
        driver reads it from the device's status). Taking the host's tap
        down would not do: QEMU's tap backend does not pass the tap's
        carrier on to the NIC."""
        self.qmp.call("set_link", {"name": port + "-nic", "up": bool(up)})

    def stop(self):
        """Power the guest off (QMP quit) and take the namespaces and taps down."""
        if self.agent is not None:
            self.agent.close()
        if self.proc is not None and self.proc.poll() is None:
            if self.qmp is not None:
                try:
                    self.qmp.s.settimeout(10)
                    self.qmp.call("quit")
                except (OSError, ValueError, BedError):
                    pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._namespaces_down()
