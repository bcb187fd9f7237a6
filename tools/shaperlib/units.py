"""Rates, sizes and times as shaperd's configuration writes them.

The grammar is the daemon's own (src/config/units.c, tc's words): a plain
decimal number (no sign, exponent or hex), then a unit, in any case:

    rate  bit kbit mbit gbit tbit, kibit mibit gibit tibit (1024s),
          Bps KBps MBps GBps TBps KiBps MiBps GiBps (bytes: a capital B,
          since tc reads "mbps" as bytes where people mean bits),
          or "unlimited"; at least 1kbit
    size  b, k kb, m mb, g gb (1024s), kbit mbit gbit (of 1024 bits)
    time  s sec secs, ms msec msecs, us usec usecs, ns nsec nsecs

    parse_rate("100mbit")  -> 12500000   bytes/s, rounded down; 0 = unlimited
    parse_size("32mb")     -> 33554432   bytes, to the nearest
    parse_time("30ms")     -> 30000000   ns, to the nearest

What the daemon refuses raises UnitError (a ValueError) with the daemon's
own message; tests/unit/units_py_test.py holds the two side by side.
"""
import math
import re

RATE_UNITS = {
    "bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024.0, "mibit": 1048576.0, "gibit": 1073741824.0, "tibit": 1099511627776.0,
    "bps": 8.0, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8.0 * 1024, "mibps": 8.0 * 1048576, "gibps": 8.0 * 1073741824.0,
}
TIME_UNITS = {
    "s": 1e9, "sec": 1e9, "secs": 1e9, "ms": 1e6, "msec": 1e6, "msecs": 1e6,
    "us": 1e3, "usec": 1e3, "usecs": 1e3, "ns": 1.0, "nsec": 1.0, "nsecs": 1.0,
}
SIZE_UNITS = {
    "b": 1.0, "k": 1024.0, "kb": 1024.0, "m": 1048576.0, "mb": 1048576.0,
    "g": 1073741824.0, "gb": 1073741824.0,
    "kbit": 128.0, "mbit": 131072.0, "gbit": 134217728.0,
}

# The most a value may reach: below 2^63, where the daemon's integers end.
LIMIT = 9.2e18
DBL_MIN = 2.2250738585072014e-308

_NUMBER = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")
_EXPONENT = re.compile(r"[eE][+-]?[0-9]")
_HEX_FLOAT = re.compile(r"0[xX]\.?[0-9a-fA-F]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class UnitError(ValueError):
    """A value the daemon would refuse; str() is the daemon's message."""


def _lower(s):
    return s.translate(_ASCII_LOWER)  # ASCII only, like strcasecmp in the C locale


def _split_number(s):
    """(value, suffix), or None where the daemon sees no plain number first.

    It reads the number as strtod does and then refuses what is not digits
    and a point; strtod's other forms (exponents, hex, inf, nan) refuse too."""
    if _HEX_FLOAT.match(s):
        return None
    m = _NUMBER.match(s)  # no sign, no leading space
    if m is None:
        return None
    if _EXPONENT.match(s, m.end()):
        return None
    text = m.group()
    v = float(text)
    # strtod's ERANGE: overflow, or a result below the normal range
    if math.isinf(v) or (v < DBL_MIN and text.strip("0.") != ""):
        return None
    return v, s[m.end():]


def _llround(x):
    """C's llround for x >= 0: halves away from zero."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def parse_rate(s):
    """A rate -> bytes per second (int, rounded down; 0 = "unlimited")."""
    if _lower(s) == "unlimited":
        return 0
    split = _split_number(s)
    if split is None:
        raise UnitError('"%s" is not a rate (write a number and a unit, e.g. "100mbit" '
                        'or "unlimited")' % s)
    v, suffix = split
    if suffix == "":
        raise UnitError('"%s" has no unit (a bare number is ambiguous: write e.g. "100mbit" '
                        'or "500kbit")' % s)
    scale = RATE_UNITS.get(_lower(suffix))
    # tc's "mbps" is megabytes per second: only the capital B says bytes here.
    if scale is None or (_lower(suffix[-3:]) == "bps" and suffix[-3] != "B"):
        first = _lower(suffix[0])
        if first in "kmgt":
            hint = 'try "%s%sbit"' % (s[:len(s) - len(suffix)], first)
        else:
            hint = "units: bit kbit mbit gbit tbit, or Bps KBps MBps GBps"
        hint = hint[:95]  # the daemon's hint buffer
        raise UnitError('"%s" is not a rate (%s)' % (s, hint))
    bits = v * scale
    if bits / 8.0 >= LIMIT:
        raise UnitError('"%s" is too large a rate' % s)
    if 0 < bits < 1000.0:
        raise UnitError("below the minimum of 1kbit")
    return int(math.floor(bits / 8.0 + 1e-9))


def _parse_quantity(s, noun, units, how, bare, unit_list, too_big):
    split = _split_number(s)
    if split is None:
        raise UnitError('"%s" is not a %s (%s)' % (s, noun, how))
    v, suffix = split
    if suffix == "":
        raise UnitError('"%s" has no unit (%s)' % (s, bare))
    scale = units.get(_lower(suffix))
    if scale is None:
        raise UnitError('"%s" is not a %s (%s)' % (s, noun, unit_list))
    if v * scale >= LIMIT:
        raise UnitError('"%s" is %s' % (s, too_big))
    return _llround(v * scale)


def parse_time(s):
    """A time -> ns (int, to the nearest)."""
    return _parse_quantity(s, "time", TIME_UNITS,
                           'write a number and a unit, e.g. "30ms" or "100us"',
                           'a bare number is ambiguous: write e.g. "30ms" or "100us"',
                           "units: s ms us ns", "too long a time")


def parse_size(s):
    """A size -> bytes (int, to the nearest)."""
    return _parse_quantity(s, "size", SIZE_UNITS,
                           'write a number and a unit, e.g. "32mb" or "1500b"',
                           'write e.g. "1500b", "64kb" or "32mb"',
                           "units: b kb mb gb", "too large a size")
