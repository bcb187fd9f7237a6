#!/usr/bin/python3
"""tools/autorate_plot.py on a simulated run: test_autorate writes the fall to
10 % as stats lines (AR_JSONL), the tool plots it to SVG and counts its cuts.
Skipped (77) without matplotlib."""
import os
import re
import subprocess
import sys
import tempfile

sim, tool = sys.argv[1], sys.argv[2]
# The interpreter that has matplotlib: this one, or the system's (Debian's python3-matplotlib).
py = next((p for p in (sys.executable, "/usr/bin/python3")
           if os.path.exists(p) and subprocess.run([p, "-c", "import matplotlib"],
                                                   capture_output=True).returncode == 0), None)
if py is None:
    print("matplotlib is missing: skipped")
    sys.exit(77)
with tempfile.TemporaryDirectory() as d:
    log, svg = os.path.join(d, "fall.jsonl"), os.path.join(d, "fall.svg")
    env = dict(os.environ, AR_DUMP="fall_down_10", AR_JSONL=log)
    subprocess.run([sim], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    out = subprocess.run([py, tool, "-o", svg, log], check=True,
                         capture_output=True, text=True).stdout
    print(out, end="")
    m = re.search(r"downstream: (\d+) points over ([\d.]+) s, (\d+) cuts", out)
    if m is None or int(m.group(1)) < 200 or int(m.group(3)) == 0:
        sys.exit("expected a downstream series with cuts, got: %r" % out)
    head = open(svg, encoding="utf-8").read(400)
    if "<svg" not in head:
        sys.exit("%s is not an SVG" % svg)
    # A wrong suffix is refused.
    r = subprocess.run([py, tool, "-o", os.path.join(d, "x.pdf"), log],
                       capture_output=True, text=True)
    if r.returncode == 0 or "must end in .png or .svg" not in r.stderr:
        sys.exit("a .pdf output was not refused: %r" % r.stderr)
print("ok")
