"""The units of budgets: durations (stored in ns), rates (Hz), shares (fractions 0..1)
and counts; parsing them from a budgets file ("5 ms", "20 Hz", "10 %"), showing them
("5.000 ms", "20.00 Hz", "10.00 %"), and the limits of the pytest assertion API
(`ms(50)`, `us(200)`, `s(1)`, `ns(10)`, `hz(20)`, `pct(10)`).
"""
from __future__ import annotations

import math
import re

from roscope import numbers

#: The kinds of value a measure has.
DURATION, RATE, SHARE, COUNT = "duration", "rate", "share", "count"

_DURATION_UNITS = {"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
_RATE_UNITS = {"hz": 1, "khz": 1e3}
_NUMBER = re.compile(r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\d\s.][^\s]*)?\s*\Z")
#: The largest number a budget holds (before its unit: 1e15 ns is 11.6 days).
_MAX = 1e15
_EXAMPLES = {DURATION: "e.g. 5 ms, 250 us, 1.5 s", RATE: "e.g. 20 Hz", SHARE: "e.g. 10 %", COUNT: "e.g. 0"}


class UnitError(ValueError):
    """A value of a budgets file that is not a number with the right unit."""


def parse(value, kind: str) -> float:
    """`value` (a YAML scalar) as a number of `kind`'s base unit (ns, Hz, fraction, count).
    A duration, rate or share needs its unit; a count is a whole number without one."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise UnitError(f"expected a {kind} ({_EXAMPLES[kind]}), got {value!r}")
    if isinstance(value, (int, float)):
        if kind != COUNT:
            raise UnitError(f"{value!r} has no unit: write it with one ({_EXAMPLES[kind]})")
        number, unit = float(value), ""
    else:
        m = _NUMBER.match(str(value))
        if not m:
            raise UnitError(f"{value!r} is not a {kind} ({_EXAMPLES[kind]})")
        d = numbers.decimal(m.group(1))   # the one number grammar (roscope.numbers)
        number, unit = (math.inf if d is None or abs(d) > _MAX else float(d)), (m.group(2) or "")
    if not math.isfinite(number) or number < 0 or number > _MAX:
        raise UnitError(f"{value!r}: a {kind} is a finite number from 0 to {_MAX:g}")
    if kind == COUNT:
        if unit or number != int(number):
            raise UnitError(f"{value!r}: a count is a whole number without a unit")
        return int(number)
    if not unit:
        raise UnitError(f"{value!r} has no unit: write it with one ({_EXAMPLES[kind]})")
    if kind == DURATION:
        if unit not in _DURATION_UNITS:
            raise UnitError(f"{value!r}: unknown duration unit {unit!r} (ns, us, ms, s)")
        return number * _DURATION_UNITS[unit]
    if kind == RATE:
        if unit.lower() not in _RATE_UNITS:
            raise UnitError(f"{value!r}: unknown rate unit {unit!r} (Hz, kHz)")
        return number * _RATE_UNITS[unit.lower()]
    if unit != "%":
        raise UnitError(f"{value!r}: a share is written in % (e.g. 10 %)")
    if number > 100:
        raise UnitError(f"{value!r}: a share is at most 100 %")
    return number / 100


def show(value, kind: str) -> str:
    """`value` (base unit) for people: ms with 3 decimals, Hz and % with 2, counts whole."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if kind == DURATION:
        return f"{value / 1e6:.3f} ms"
    if kind == RATE:
        return f"{value:.2f} Hz"
    if kind == SHARE:
        return f"{100 * value:.2f} %"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.3f}"


def text(value, kind: str) -> str:
    """`value` (base unit) as a budgets file writes it (parsed back by `parse`)."""
    if kind == DURATION:
        return f"{value / 1e6:g} ms"
    if kind == RATE:
        return f"{value:g} Hz"
    if kind == SHARE:
        return f"{100 * value:g} %"
    return str(int(value))


class Quantity(float):
    """A limit of the assertion API: a number in its kind's base unit (ns, Hz, fraction)."""

    kind = COUNT

    def __new__(cls, value: float, kind: str):
        q = super().__new__(cls, value)
        q.kind = kind
        return q

    def __repr__(self) -> str:
        return show(float(self), self.kind)


def ns(v: float) -> Quantity:
    return Quantity(v, DURATION)


def us(v: float) -> Quantity:
    return Quantity(v * 1e3, DURATION)


def ms(v: float) -> Quantity:
    return Quantity(v * 1e6, DURATION)


def s(v: float) -> Quantity:
    return Quantity(v * 1e9, DURATION)


def hz(v: float) -> Quantity:
    return Quantity(v, RATE)


def pct(v: float) -> Quantity:
    return Quantity(v / 100, SHARE)
