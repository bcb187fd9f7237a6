#!/usr/bin/python3
"""The tools' percentile (tools/shaperlib/checks.py) against its definition:
the smallest value of the list with at least p % of the values at or below
it (the nearest rank), on a seeded draw of lists (ties, one value, unsorted)
at every whole p and at fractions; no values, no percentile.

usage: percentile_py_test.py
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from shaperlib import percentile  # noqa: E402


def by_definition(xs, p):
    xs = sorted(xs)
    for v in xs:
        # integer arithmetic: at least p % of the values at or below v
        if 100 * 1000 * sum(1 for x in xs if x <= v) >= round(p * 1000) * len(xs):
            return v
    return xs[-1]


def main():
    rng = random.Random(20261202)
    bad = 0
    cases = 0
    if percentile([], 50) is not None:
        print("FAIL percentile([], 50) is not None")
        bad += 1
    ps = list(range(0, 101)) + [0.1, 12.5, 33.3, 50.5, 99.9]
    for _ in range(400):
        n = rng.randint(1, 40)
        xs = [rng.randint(0, 9 if rng.random() < 0.5 else 1000) for _ in range(n)]
        for p in ps:
            cases += 1
            got, want = percentile(xs, p), by_definition(xs, p)
            if got != want and bad < 20:
                print("FAIL p%s of %s: %s, nearest rank says %s" % (p, sorted(xs), got, want))
            bad += got != want
    print("%d cases, %d wrong" % (cases, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
