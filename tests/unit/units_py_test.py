#!/usr/bin/python3
"""The tools' unit parser (tools/shaperlib/units.py) against the daemon's
(src/config/units.c, through units_oracle): for every input as a rate, a
size and a time, both accept it with the same value or both refuse it with
the same message.

The inputs: every string literal of tests/unit/test_units.c (the C
parser's own cases), every unit of each table in three cases after numbers
at the edges (0, fractions, halves that round, a value just under and over
each limit, a subnormal, an overflow), strtod's other forms (exponents, hex,
inf, nan, signs, spaces) and a seeded draw of strings over an alphabet of
digits, points, the units' letters and a few others (non-ASCII included).

usage: units_py_test.py UNITS_ORACLE
"""
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from shaperlib import units  # noqa: E402

KINDS = {"rate": units.parse_rate, "size": units.parse_size, "time": units.parse_time}
RANDOM_STRINGS = 20000


def literals_of_c_test():
    with open(os.path.join(HERE, "test_units.c"), encoding="utf-8") as f:
        text = f.read()
    out = set()
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text):
        s = m.group(1)
        if "\\" not in s:  # the inputs: no escapes (messages with \" are outputs)
            out.add(s)
    return out


def edge_inputs():
    numbers = ["0", "00", "1", "1.", ".5", "0.5", "1.5", "2.5", "0.4999999999999999",
               "0.49999999999999994", "999", "999.999", "1000", "124.99", "125", "7.999",
               "8", "0.001", "0.0001", "12.5", "280", "1024", "65535", "4294967296",
               "1152921504606846976", "9200000000000000000", "9199999999999999999",
               "73600000000000000000", "1150000000000000000", "1149999999999999999",
               "9.2", "0." + "0" * 320 + "1", "0." + "0" * 300 + "1", "1" + "0" * 310,
               "1" + "0" * 400, "0" * 50 + "1", "123456789.123456789"]
    suffixes = set()
    for table in (units.RATE_UNITS, units.SIZE_UNITS, units.TIME_UNITS):
        for u in table:
            suffixes.update({u, u.upper(), u.capitalize(), u[:-3] + u[-3:].capitalize()})
    suffixes.update({"", "B", "Bps", "KBps", "kBps", "MBPS", "mbps", "KiBps", "kibPS", "x",
                     "xyz", "kbit ", " kbit", "kbit\t", "k bit", "mbit.", ".mbit", "bits",
                     "mbits", "kilobit", "\u212abit", "m\u00e9", "\u00b5s", "e", "e3", "E+2"})
    out = {n + s for n in numbers for s in suffixes}
    out.update({"unlimited", "UNLIMITED", "Unlimited", "unlimited ", " unlimited", "unlimit",
                "", " ", " 1mbit", "\t1ms", "-1mbit", "+1mbit", "-0ms", "1e3mbit", "1E3kb",
                "1e+3ms", "1e-3s", "1ems", "1e", "1e+", "1.5e", "0x10mbit", "0X1Ams", "0x",
                "0xmb", "0x.8s", "0x.gs", "0xgb", "inf", "infmbit", "INFINITY", "nan", "nanms",
                "nan(1)s", ".", ".mbit", "..5ms", "1..5ms", "1.5.5ms", "1,5ms", "\u0661ms",
                "\u0661\u0660mbit", "\uff11ms", "1\u00a0ms", "\u00a01ms", "k", "mbit"})
    return out


def random_inputs(rng):
    alphabet = list("0123456789" * 3 + "..." + "bitkmgpsunceBKMGTIx-+ e") + \
        ["\u212a", "\u00e9", "\u0661", " ", "\t"]
    out = set()
    while len(out) < RANDOM_STRINGS:
        n = rng.randint(1, 10)
        # mostly a number first, as real input is
        head = "".join(rng.choice("0123456789.") for _ in range(rng.randint(0, 4)))
        out.add(head + "".join(rng.choice(alphabet) for _ in range(n)))
    return out


def python_answer(kind, text):
    try:
        return "ok %d" % KINDS[kind](text)
    except units.UnitError as e:
        return "err %s" % e


def main():
    oracle = sys.argv[1]
    inputs = literals_of_c_test() | edge_inputs() | random_inputs(random.Random(20261202))
    inputs = sorted(s for s in inputs if "\n" not in s and "\0" not in s)
    queries = [(kind, s) for s in inputs for kind in KINDS]
    feed = "".join("%s %s\n" % q for q in queries).encode("utf-8")
    out = subprocess.run([oracle], input=feed, stdout=subprocess.PIPE, check=True,
                         timeout=60).stdout.decode("utf-8").split("\n")
    if out[-1] == "":
        out.pop()
    if len(out) != len(queries):
        print("FAIL: the oracle answered %d lines for %d queries" % (len(out), len(queries)))
        return 1
    bad = []
    accepted = {k: 0 for k in KINDS}
    for (kind, s), want in zip(queries, out):
        got = python_answer(kind, s)
        if got != want:
            bad.append("%s %r: units.c %r, units.py %r" % (kind, s, want, got))
        elif want.startswith("ok"):
            accepted[kind] += 1
    print("%d inputs, each as a rate, a size and a time; units.c accepts %s" %
          (len(inputs), ", ".join("%d %ss" % (n, k) for k, n in accepted.items())))
    for line in bad[:30]:
        print("FAIL: " + (line if len(line) < 400 else line[:400] + "..."))
    if bad:
        print("FAIL: %d of %d answers differ" % (len(bad), len(queries)))
        return 1
    print("ok: units.py answers as units.c does, value for value and message for message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
