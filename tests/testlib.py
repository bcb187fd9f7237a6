"""What the Python test scripts share: the ok/FAIL check list, a child
process whose output a thread collects (shown when a test fails), a control
socket client, and the check of the accounting identity."""
import json
import signal
import socket
import subprocess
import threading
import time

failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)
    return cond


class Proc:
    """A child whose output is collected by a thread (and shown on failure)."""

    def __init__(self, name, argv):
        self.name, self.lines = name, []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, text, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if any(text in l for l in self.lines):
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
