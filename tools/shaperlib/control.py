"""shaperd's control socket: one JSON request line, one reply line
(docs/control-protocol.md)."""
import json
import socket


class ControlError(IOError):
    """The daemon answered a request with an error (result() only)."""


class Control:
    """A control socket connection."""

    def __init__(self, path, timeout=10):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        try:
            self.s.connect(path)
        except OSError:
            self.s.close()
            raise
        self.buf = b""
        self.next_id = 1

    def call(self, cmd, args=None):
        """The whole reply ({"id", "ok", "result" or "error"}) to one request."""
        rid = self.next_id
        self.next_id += 1
        req = {"id": rid, "cmd": cmd}
        if args is not None:
            req["args"] = args
        self.s.sendall(json.dumps(req).encode() + b"\n")
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise IOError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        rep = json.loads(line)
        if rep.get("id") != rid:
            raise IOError("reply id %r for request %d" % (rep.get("id"), rid))
        return rep

    def result(self, cmd, args=None):
        """The result of one request; ControlError if the daemon refused it."""
        rep = self.call(cmd, args)
        if "error" in rep:
            raise ControlError("control: %s" % rep["error"])
        return rep["result"]

    def close(self):
        self.s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def request(path, cmd, args=None, timeout=10):
    """One request on a connection of its own: the result, or ControlError
    (refused) or OSError (no daemon, closed, timed out)."""
    with Control(path, timeout) as c:
        return c.result(cmd, args)
