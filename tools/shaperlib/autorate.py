"""The bed's autorate run (tools/testbed/autorate.py) as the e2e tests start it."""
import json
import os
import subprocess
import sys

AUTORATE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "testbed", "autorate.py"))
# The system's python: the bed's plots need its matplotlib.
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def run_autorate(shaperd, out, args, timeout=600):
    """autorate.py --shaperd SHAPERD --out OUT ARGS: (0, its autorate.json), or (77, None)
    when the bed cannot run here (not root, a tool missing), or (1, None) when it failed."""
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([PY, AUTORATE, "--shaperd", os.path.abspath(shaperd), "--out", out] + args,
                       timeout=timeout)
    if r.returncode == 77:
        return 77, None
    if r.returncode != 0:
        print("FAIL autorate.py exited %d" % r.returncode)
        return 1, None
    with open(os.path.join(out, "autorate.json")) as f:
        return 0, json.load(f)


def split_extra(argv):
    """A test's arguments, and after '--' more autorate.py arguments: (argv, extra)."""
    if "--" in argv:
        return argv[:argv.index("--")], argv[argv.index("--") + 1:]
    return argv, []


def check_goodput_of_sent(phase, label, up=True):
    """TCP goodput over what the shaper sent in the same phase of an autorate run, each
    direction (the upload's only with up): a stall of the machine lowers both alike, so the
    ratio reads what drops cost TCP (each a retransmission) and what the frames carry. A
    full frame carries 1448 payload bytes of 1514 (0.956); down little else goes (>= 0.85),
    up the downloads' ACKs take about a tenth of the rate more (>= 0.75); measured 0.93-0.96
    down and 0.84-0.90 up on the bed. Goodput cannot pass what was sent (1.0; the two are read
    over windows up to a poll step apart)."""
    from .checks import check
    top = 1.0
    for d, name, bound in (("down", "download", 0.85), ("up", "upload", 0.75)):
        if d == "up" and not up:
            continue
        v = phase.get("goodput_%s_of_sent" % d)
        check(v is not None and bound <= v <= top,
              "%s: %s goodput %.3f of the modem = %s of what the shaper sent in the phase (%.2f..%.3f)"
              % (label, name, phase.get("goodput_%s_of_modem" % d) or -1,
                 "%.3f" % v if v is not None else None, bound, top))
