"""The accounting identity of a `stats` result or of shaperd's exit report."""
import json

from .checks import check


def accounting_errors(stats):
    """Where a `stats` result (or shaperd's --stats-file report) breaks
    received + held_at_reset == sent + dropped + queued, per direction, summed
    here from the terms (not taken from the daemon's own "unaccounted");
    [] if it holds everywhere. A missing accounting object is an error too."""
    errs = []
    dirs = stats.get("directions", {})
    if not dirs:
        return ["no directions in the statistics"]
    for name, d in sorted(dirs.items()):
        a = d.get("accounting")
        if a is None:
            errs.append("%s: no accounting object" % name)
            continue
        dropped, queued = sum(a["dropped"].values()), sum(a["queued"].values())
        lhs, rhs = a["received"] + a["held_at_reset"], a["sent"] + dropped + queued
        if lhs != rhs or a["unaccounted"] != lhs - rhs:
            errs.append("%s: received %d + held %d != sent %d + dropped %d + queued %d %s"
                        " (unaccounted %d)" % (name, a["received"], a["held_at_reset"], a["sent"],
                                              dropped, queued, json.dumps(a["queued"]),
                                              a["unaccounted"]))
    return errs


def check_accounting(stats, label):
    """check() that the accounting identity holds in stats (see accounting_errors)."""
    errs = accounting_errors(stats)
    terms = "; ".join("%s %d = %d sent + %d dropped + %d queued" % (
        n, d["accounting"]["received"] + d["accounting"]["held_at_reset"], d["accounting"]["sent"],
        sum(d["accounting"]["dropped"].values()), sum(d["accounting"]["queued"].values()))
        for n, d in sorted(stats.get("directions", {}).items()) if "accounting" in d)
    return check(not errs, "%s: accounting identity holds (%s) %s" % (label, terms, "; ".join(errs)))
