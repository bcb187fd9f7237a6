#!/usr/bin/python3
"""Plot autorate over time from a log of stats replies, one JSON object a line.

    autorate_plot.py [-o run.png|run.svg] [--title TEXT] LOG [LOG ...]

Collect the log from a running daemon with, for example,

    while sleep 1; do shapectl --json stats; done > autorate.jsonl

Each line is a stats result (or a reply with it under "result"): for each
direction with autorate on, directions.<dir>.rtt.autorate gives the rate,
what the line carried ("line"), the delay it decided on ("delay_us"), the
part taken as a longer path ("path_us") and the last decision's reason
("why"); directions.<dir>.time_ns is the time axis. tests/sim/test_autorate
writes the same shape (AR_JSONL=file AR_DUMP=scenario), with the modelled
modem's rate and queue under "modem" for comparison.

One panel of rates and one of delays per direction; cuts are marked. Needs
matplotlib (Debian: python3-matplotlib). Writes PNG or SVG by the output's
suffix (default autorate.png).
"""
import argparse
import json
import sys

DIRS = ("downstream", "upstream")


def stats_of(obj):
    if isinstance(obj, dict) and "directions" not in obj and isinstance(obj.get("result"), dict):
        return obj["result"]
    return obj


def read(paths):
    """{dir: {"t": [...], "rate": [...], ...}} in Mbit/s, ms and s."""
    series = {d: {k: [] for k in ("t", "rate", "line", "modem", "delay", "path", "queue",
                                  "cut_t", "cut_rate", "path_t", "path_rate")}
              for d in DIRS}
    t0 = None
    seen = {}
    for path in paths:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8")
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                st = stats_of(json.loads(line))
            except ValueError as e:
                sys.exit("%s:%d: not JSON: %s" % (path, n, e))
            for d in DIRS:
                dd = (st.get("directions") or {}).get(d) or {}
                ar = (dd.get("rtt") or {}).get("autorate")
                if ar is None or "time_ns" not in dd:
                    continue
                if t0 is None:
                    t0 = dd["time_ns"]
                s = series[d]
                t = (dd["time_ns"] - t0) / 1e9
                s["t"].append(t)
                s["rate"].append(ar["rate"] * 8 / 1e6)
                s["line"].append(ar.get("line", ar.get("delivered", 0)) * 8 / 1e6)
                s["delay"].append(ar.get("delay_us", 0) / 1e3)
                s["path"].append(ar.get("path_us", 0) / 1e3)
                modem = (st.get("modem") or {}).get(d)
                s["modem"].append(modem["rate"] * 8 / 1e6 if modem else None)
                s["queue"].append(modem["queue_us"] / 1e3 if modem else None)
                # Cuts and path decisions since the last line, by the counters (or the last
                # decision's reason where there are none).
                dec = ar.get("decisions")
                if dec is not None:
                    cuts = dec.get("cut_bloat", 0) + dec.get("cut_standing", 0)
                    paths_ = dec.get("path", 0)
                    last = seen.get(d, (cuts, paths_))
                    cut, pathd = cuts > last[0], paths_ > last[1]
                    seen[d] = (cuts, paths_)
                else:
                    cut = ar.get("why") in ("cut_bloat", "cut_standing")
                    pathd = ar.get("why") == "path"
                if cut:
                    s["cut_t"].append(t)
                    s["cut_rate"].append(ar["rate"] * 8 / 1e6)
                if pathd:
                    s["path_t"].append(t)
                    s["path_rate"].append(ar["rate"] * 8 / 1e6)
        if f is not sys.stdin:
            f.close()
    return {d: s for d, s in series.items() if s["t"]}


def plot(series, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2 * len(series), 1, sharex=True, squeeze=False,
                             figsize=(11, 3.2 * 2 * len(series)))
    row = 0
    for d, s in series.items():
        ax = axes[row][0]
        ax.plot(s["t"], s["rate"], label="rate", color="tab:blue")
        ax.plot(s["t"], s["line"], label="line carried", color="tab:green", alpha=0.6, lw=0.8)
        if any(m is not None for m in s["modem"]):
            ax.plot(s["t"], s["modem"], label="modem", color="black", ls="--", lw=0.8)
        ax.scatter(s["cut_t"], s["cut_rate"], marker="v", color="tab:red", s=12, label="cut",
                   zorder=3)
        ax.scatter(s["path_t"], s["path_rate"], marker="^", color="tab:purple", s=16,
                   label="path", zorder=3)
        ax.set_ylabel("%s Mbit/s" % d)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", fontsize="small")
        ax.grid(alpha=0.3)
        ax = axes[row + 1][0]
        ax.plot(s["t"], s["delay"], label="rise over baseline", color="tab:orange", lw=0.8)
        ax.plot(s["t"], s["path"], label="taken as path", color="tab:purple", lw=0.8)
        if any(q is not None for q in s["queue"]):
            ax.plot(s["t"], s["queue"], label="modem queue", color="black", lw=0.6, alpha=0.6)
        ax.set_ylabel("%s ms" % d)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", fontsize="small")
        ax.grid(alpha=0.3)
        row += 2
    axes[-1][0].set_xlabel("s")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+", metavar="LOG", help="JSON lines, - for stdin")
    ap.add_argument("-o", "--output", default="autorate.png", help=".png or .svg")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    if not a.output.endswith((".png", ".svg")):
        sys.exit("%s: the output must end in .png or .svg" % a.output)
    series = read(a.logs)
    if not series:
        sys.exit("no direction with autorate in %s" % ", ".join(a.logs))
    try:
        plot(series, a.output, a.title)
    except ImportError:
        sys.exit("matplotlib is missing (Debian: apt install python3-matplotlib)")
    for d, s in series.items():
        print("%s: %d points over %.1f s, %d cuts, %d path decisions"
              % (d, len(s["t"]), s["t"][-1] - s["t"][0], len(s["cut_t"]), len(s["path_t"])))
    print("wrote %s" % a.output)


if __name__ == "__main__":
    main()
