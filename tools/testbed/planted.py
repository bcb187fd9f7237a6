#!/usr/bin/env python3
"""Planted scheduler defects against the bed's bufferbloat test: does
tests/e2e/e2e_bufferbloat.py still fail on a broken shaper, now that its
latency tail is judged less the CPU time the hypervisor stole?

Each defect replaces one exact snippet of one file in a copy of the tree
(git-tracked and untracked files; the working tree is never touched),
builds that copy's shaperd, and runs the bufferbloat scenario against it.
A defect the bed must see ("expect": "fail") passes this check only if the
scenario fails; one it cannot see at the bed's rates ("expect": "pass",
with the reason and the unit or sim test that sees it instead) is run and
reported, not judged.

    tools/testbed/planted.py                    # every defect, rrul (~4 min)
    tools/testbed/planted.py --only aqm_off
    tools/testbed/planted.py --list

Needs root, the bed's tools (tools/install-deps.sh) and a quiet machine:
each run is a timed test. Exit 0 when every "fail" defect failed the
scenario and the unmutated build passed it.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from mutate import copy_tree  # noqa: E402

DEFECTS = [
    dict(name="aqm_off", file="src/sched/cobalt.h", expect="fail",
         note="COBALT never signals: every packet takes the no-AQM-state path",
         orig="if ((v->p_drop | v->count) == 0 && sojourn <= p->target) {",
         repl="if (1) {"),
    dict(name="one_queue", file="src/sched/cake.c", expect="fail",
         note="every flow hashed to one queue: a sparse flow waits behind the bulk flows' backlog",
         orig="\t\thash = pkt->flow_hash;\n",
         repl="\t\thash = 0;\n"),
    dict(name="new_to_old", file="src/sched/cake.c", expect="pass",
         note="a new flow joins the old-flows list: it waits one DRR round instead of none, about "
              "1 ms at the bed's rates, under the bounds; test_sparse_flow_delay (sim) sees it",
         orig="cake_list_append(b, CAKE_LIST_NEW, idx);",
         repl="cake_list_append(b, CAKE_LIST_OLD, idx);"),
]


def build(tree, defect):
    if defect is not None:
        path = os.path.join(tree, defect["file"])
        src = open(path).read()
        if src.count(defect["orig"]) != 1:
            sys.exit("planted: %s: the snippet occurs %d times in %s (need exactly 1)" % (
                defect["name"], src.count(defect["orig"]), defect["file"]))
        open(path, "w").write(src.replace(defect["orig"], defect["repl"]))
    bdir = os.path.join(tree, "build")
    if not os.path.isdir(bdir):
        subprocess.run(["meson", "setup", "-Dwerror=false", "-Dbuildtype=debugoptimized", bdir],
                       cwd=tree, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", bdir, "src/shaperd"], check=True, stdout=subprocess.DEVNULL)
    if defect is not None:
        open(path, "w").write(src)  # restored: the next build starts from the unmutated tree
    return os.path.join(bdir, "src", "shaperd")


def run_scenario(shaperd, scenario, out):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "e2e", "e2e_bufferbloat.py"),
                        shaperd, scenario, out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    fails = [line for line in p.stdout.splitlines() if line.startswith("FAIL")]
    return p.returncode, fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated defect names")
    ap.add_argument("--scenario", default="rrul")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for d in DEFECTS:
            print("%-12s %-20s expect %s: %s" % (d["name"], d["file"], d["expect"], d["note"]))
        return 0
    chosen = [d for d in DEFECTS if not a.only or d["name"] in a.only.split(",")]
    tree = tempfile.mkdtemp(prefix="shaper_planted_")
    copy_tree(ROOT, tree)
    bad = 0
    for d in [None] + chosen:
        name = d["name"] if d else "unmutated"
        shaperd = build(tree, d)
        # Each run gets its own copy of the binary: the next build overwrites build/src/shaperd.
        exe = os.path.join(tree, "shaperd-" + name)
        subprocess.run(["cp", shaperd, exe], check=True)
        rc, fails = run_scenario(exe, a.scenario, os.path.join(tree, "out-" + name))
        expect = d["expect"] if d else "pass"
        seen = "failed" if rc == 1 else "passed" if rc == 0 else "exit %d" % rc
        good = (rc == 1) if expect == "fail" else (rc == 0 or d is not None)
        bad += not good
        print("%s %-12s %s %s (%d checks failed)%s" % ("ok  " if good else "BAD ", name, a.scenario, seen,
                                                         len(fails), "" if not d else ": " + d["note"]))
        for f in fails:
            print("       " + f)
    print("# builds and results in %s" % tree)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
