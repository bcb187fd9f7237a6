#!/usr/bin/python3
"""The Grafana dashboard (tools/grafana/shaper-dashboard.json) against the daemon.

Checks that it is valid JSON with the shape Grafana imports (a title, panels
with unique ids, grid positions and targets), that every shaper_* name in its
queries is a family src/control/metrics.c writes (so a renamed metric cannot
leave a panel silently empty), and, where promtool is installed (Debian's
prometheus package), that every query parses as PromQL once the Grafana
variables are replaced by what Grafana would put there.

usage: check_dashboard.py DASHBOARD METRICS_C
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import check, failures  # noqa: E402

dash_path, metrics_c = sys.argv[1], sys.argv[2]


try:
    with open(dash_path) as f:
        dash = json.load(f)
except ValueError as e:
    print("FAIL %s is not valid JSON: %s" % (dash_path, e))
    sys.exit(1)
check(True, "valid JSON")
check(isinstance(dash.get("title"), str) and dash["title"], "has a title")
panels = dash.get("panels", [])
check(len(panels) > 0, "has panels (%d)" % len(panels))
ids = [p.get("id") for p in panels]
check(len(set(ids)) == len(ids) and None not in ids, "panel ids are unique")
check(all(set(p.get("gridPos", {})) >= {"h", "w", "x", "y"} for p in panels),
      "every panel has a grid position")

with open(metrics_c) as f:
    families = set(re.findall(r'"(shaper_[a-z0-9_]+)"', f.read()))
check(len(families) > 40, "%d families found in %s" % (len(families), metrics_c))

exprs = []
for p in panels:
    if p.get("type") == "row":
        continue
    targets = p.get("targets", [])
    check(len(targets) > 0, "panel %r has queries" % p.get("title"))
    for t in targets:
        exprs.append((p.get("title"), t.get("expr", "")))
for var in dash.get("templating", {}).get("list", []):
    if isinstance(var.get("query"), dict):
        exprs.append(("variable " + var["name"], var["query"].get("query", "")))

used = set()
for title, e in exprs:
    for name in re.findall(r"\bshaper_[a-z0-9_]+", e):
        used.add(name)
        check(name in families, "%s: %s is a metric shaperd writes" % (title, name))
for must in ["shaper_up", "shaper_port_up", "shaper_drops_total", "shaper_qdisc_backlog_bytes",
             "shaper_tin_avg_delay_seconds", "shaper_direction_transmit_bytes_total",
             "shaper_node_bytes_total", "shaper_node_drops_total", "shaper_node_rtt_seconds",
             "shaper_subscriber_bytes_total", "shaper_subscriber_drops_total",
             "shaper_subscriber_rtt_seconds"]:
    check(must in used, "the dashboard shows %s" % must)

promtool = shutil.which("promtool")
if promtool is None:
    print("note: promtool not installed, PromQL syntax not checked")
else:
    # As recording rules, promtool parses every expression.
    subst = {"$__rate_interval": "1m", "$__range": "1h", "$instance": ".*"}
    rules = []
    for i, (title, e) in enumerate(exprs):
        if e.startswith("label_values("):
            continue  # a Grafana function, not PromQL
        for k, v in subst.items():
            e = e.replace(k, v)
        check("$" not in e, "%s: no Grafana variable left in %r" % (title, e))
        rules.append({"record": "dashboard:q%d" % i, "expr": e})
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
    p = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    check(p.returncode == 0, "promtool parses all %d queries%s"
          % (len(rules), "" if p.returncode == 0 else ": " + (p.stdout + p.stderr).strip()))

print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
