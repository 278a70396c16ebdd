"""The one parser of the numbers a user gives roscope: every duration option of every
verb (`watch --window/--duration`, a `--deadline`'s milliseconds, `record --keep/--rate`,
`load --window`), the `--window START:END` of `stats` and `report`, and the numbers of a
budgets file (`check/units.py`).

A number is written in decimal (`5`, `0.25`, `1e-3`, `+2.`): never `nan`, `inf`, hex or
`1_000`; it is read exactly (`decimal.Decimal`, no float overflow: `1e400` is out of
range, not infinite) and must lie in the option's stated range. Errors say what was given,
the unit and the range (`'-1' is not a number of seconds from 0.001 to 86400`); the CLI
adds the option's name (commands/_common.py's argparse types call these functions where
each option is parsed).
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from roscope.errors import InputError

#: A decimal number: ASCII digits with an optional point and exponent (no nan, inf, hex, `_` or other scripts' digits).
_DECIMAL = re.compile(r"\s*([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,6})?)\s*\Z")
#: Longer texts are no number a user means (and would make Decimal work for nothing).
_MAX_CHARS = 64
NS_PER = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


class NumberError(InputError):
    """A number the user gave is not one, or is out of its range (the message says which)."""


def decimal(text: str) -> Decimal | None:
    """`text` as an exact decimal number, or None if it is not one (`nan`, `inf`, `0x10`, `1_0`, '')."""
    if not isinstance(text, str) or len(text) > _MAX_CHARS:
        return None
    m = _DECIMAL.match(text)
    if not m:
        return None
    try:
        return Decimal(m.group(1))
    except InvalidOperation:   # pragma: no cover (the pattern admits only valid decimals)
        return None


def _shown(x) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def number(text: str, unit: str, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False) -> float:
    """`text` as a number of `unit` (`s`, `ms`, a name such as `events per second`, or what
    the number is, starting with "a ": `a significance level`) in [lo, hi] (an open end with
    `lo_open`/`hi_open`); NumberError otherwise."""
    what = unit if unit.startswith(("a ", "an ")) else f"a number of {_NAMES.get(unit, unit)}"
    d = decimal(text)
    lo_ok = d is not None and (d > Decimal(repr(lo)) if lo_open else d >= Decimal(repr(lo)))
    hi_ok = d is not None and (d < Decimal(repr(hi)) if hi_open else d <= Decimal(repr(hi)))
    if not (lo_ok and hi_ok):
        shown = repr(text) if isinstance(text, str) else repr(text)
        a, b = _shown(lo), _shown(hi)
        span = {(False, False): f"from {a} to {b}", (True, True): f"between {a} and {b}, exclusive",
                (False, True): f"from {a} up to (not including) {b}", (True, False): f"above {a}, up to {b}"}[lo_open, hi_open]
        why = "is not a number" if d is None else "is out of range"
        raise NumberError(f"{shown} {why}: give {what} {span}")
    return float(d)


def duration_ns(text: str, unit: str, lo: float, hi: float, *, lo_open: bool = False) -> int:
    """`number(text, unit, lo, hi)` converted exactly to whole nanoseconds (at least 1 when
    `lo_open`)."""
    number(text, unit, lo, hi, lo_open=lo_open)
    ns = int(decimal(text) * NS_PER[unit])
    if lo_open and ns < 1:
        raise NumberError(f"{text!r} is out of range: give a number of {_NAMES[unit]} of at least 1 ns")
    return ns


#: The largest time from a trace's start that a `--window` may name (seconds: ~31 years).
WINDOW_MAX_S = 1e9


def window(text: str) -> tuple[int, int | None]:
    """`START:END` in seconds from the trace's first event, exact to the ns -> (start ns,
    end ns or None for the trace's end). START empty: 0; END empty: the trace's end.
    0 <= START < END <= WINDOW_MAX_S. One vocabulary for every `--window START:END`
    (`stats`, `flow`, `report`; what `watch --json` prints as stats_window), placed on a
    trace by `window_in`."""
    example = "give START:END in seconds from the trace's start, e.g. 1.5:2 (either side may be empty)"
    if not isinstance(text, str) or text.count(":") != 1:
        raise NumberError(f"{text!r}: {example}")
    parts = text.split(":")
    out: list[int | None] = []
    for side, default in zip(parts, (0, None)):
        if not side.strip():
            out.append(default)
            continue
        d = decimal(side)
        if d is None:
            raise NumberError(f"{text!r}: {side.strip()!r} is not a number; {example}")
        if not 0 <= d <= Decimal(repr(WINDOW_MAX_S)):
            raise NumberError(f"{text!r}: {side.strip()!r} is out of range: a time from 0 to {WINDOW_MAX_S:g} s "
                              "from the trace's start")
        out.append(int(d * NS_PER["s"]))
    a, b = out
    if b is not None and not a < b:
        raise NumberError(f"{text!r}: the window must end after its start")
    return a, b


def window_in(window: tuple[int, int | None], first: int, last: int, *, within: bool = False) -> tuple[int, int]:
    """A `window` (its value: ns from the trace's start, END None for its end) placed on a
    trace whose events span [first, last] ns: (first + START, first + END), END None past
    the last event (last + 1). `within` (a timeline's window, `report`): START must lie
    within the trace (NumberError naming --window otherwise) and END is cut at its end."""
    a, b = window
    if not within:
        return first + a, (first + b if b is not None else last + 1)
    span = last - first
    if a > span:
        raise NumberError(f"--window: the window starts at {a / 1e9:g} s, after the trace's end ({span / 1e9:.3f} s long)")
    return first + a, first + (span if b is None else min(b, span))
