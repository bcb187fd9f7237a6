#!/usr/bin/python3
"""docs_check finds each kind of drift it is there for (suite 'config').

usage: docs_check_planted.py CHECK_DOCS TEST_CONFIG_KEYS SOURCE_ROOT

Copies the tracked files of SOURCE_ROOT to a temporary tree, checks that
check_docs.py passes on the copy as it is, then plants one error of each
kind in turn (a key's default, a drop reason, a path outside the tree, a
top-level key in shaper.json(5), an option in a SYNOPSIS, a command in an
access level's row, a restart key, a word of how the project is made, a
preset, a version) and checks that check_docs.py fails on it, naming the
file. Each plant is undone before the next.

Exit 0 = every plant found, 1 = one was missed (or the copy did not pass).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (what, file, pattern, replacement, a word the report must hold)
PLANTS = [
    ("a key's default", "docs/configuration.md",
     r"(\| `burst` \| integer 1\.\.256:[^\n]*\| )32 \|", r"\g<1>64 |", "burst"),
    ("a drop reason", "docs/ARCHITECTURE.md", r"\| `ack_filter` \| cake \|[^\n]*\n", "",
     "ack_filter"),
    ("a path outside the tree", "docs/testing.md", r"\A", "See ../shared/design for more.\n\n",
     "docs/testing.md"),
    ("a top-level key", "man/shaper.json.5", r"\bfail_open\b", "fail_opened", "fail_open"),
    ("an option in a SYNOPSIS", "man/shapectl.8", r"\.RB \[ \\-\\-json \]\n", "", "--json"),
    ("a command's access level", "docs/configuration.md",
     r"(\| `operator` \| also `stats\.reset`, )`subscribers\.list`, ", r"\1", "subscribers.list"),
    ("a restart key", "docs/configuration.md", r"\| `lcores\.workers` \| the workers and their queues \|\n",
     "", "lcores"),
    ("a word of how it is made", "README.md", r"\A", "Written by the lead in round 3.\n\n",
     "README.md"),
    ("a preset", "docs/configuration.md", r"\| `container\.json` \|[^\n]*\n", "",
     "container.json"),
    ("a version", "NEWS.md", r"(?m)^## \S+", "## 9.9.9", "NEWS.md"),
]


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
    return [f for f in out.stdout.decode().split("\0") if f]


def run(check, keys, tree):
    p = subprocess.run([sys.executable, check, "--keys", keys, tree], capture_output=True,
                       text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    check, keys, root = sys.argv[1:]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="shaper_docs_planted_") as tree:
        for f in tracked(root):
            src = os.path.join(root, f)
            if not os.path.isfile(src):
                continue
            dst = os.path.join(tree, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
        rc, out = run(check, keys, tree)
        if rc != 0:
            print("FAIL the copy of the tree does not pass as it is:\n" + out)
            return 1
        print("ok   the copy passes as it is")
        for what, rel, pat, repl, word in PLANTS:
            path = os.path.join(tree, rel)
            with open(path) as fh:
                orig = fh.read()
            planted, n = re.subn(pat, repl, orig, count=1)
            if n == 0 or planted == orig:
                print("FAIL %s: the pattern no longer matches %s (update the plant)" % (what, rel))
                failures += 1
                continue
            with open(path, "w") as fh:
                fh.write(planted)
            rc, out = run(check, keys, tree)
            with open(path, "w") as fh:
                fh.write(orig)
            found = [ln for ln in out.splitlines() if word in ln]
            if rc != 0 and found:
                print("ok   %s in %s: %s" % (what, rel, found[0].strip()[:150]))
            else:
                print("FAIL %s in %s not found (exit %d):\n%s" % (what, rel, rc, out[-800:]))
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
