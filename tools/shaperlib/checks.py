"""The ok/FAIL check list of a test script, and small statistics."""

import math

failures = []


def check(cond, msg):
    """Print ok or FAIL with msg; a failure is remembered in failures."""
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)
    return cond


def slope(ts, ys):
    """Least-squares slope of ys over ts (per unit of ts)."""
    n = len(ts)
    if n < 2:
        return 0.0
    mt, my = sum(ts) / n, sum(ys) / n
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den if den else 0.0


def percentile(xs, p):
    """The p-th percentile of xs by nearest rank: the smallest value with at least p %
    of xs at or below it; None for no values."""
    xs = sorted(xs)
    if not xs:
        return None
    # the rank rounded to 1e-9 first: 28 % of 25 is the 7th value, not the 8th
    rank = math.ceil(round(p * len(xs) / 100.0, 9))
    return xs[max(0, min(len(xs) - 1, rank - 1))]
