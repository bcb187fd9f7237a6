"""The ok/FAIL check list of a test script, and small statistics."""

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
    """The p-th percentile (nearest rank) of xs."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))]
