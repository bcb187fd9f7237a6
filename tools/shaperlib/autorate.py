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
