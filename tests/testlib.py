"""What the Python test scripts share: the ok/FAIL check list and a child
process whose output a thread collects (shown when a test fails)."""
import signal
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
