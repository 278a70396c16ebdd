"""Text for people and JSON for machines, safe whatever a trace holds: control
characters shown visibly (`escape`, `cell`, `TextOut`, `names`: the names that exist, for
an error saying a selection matched nothing) and values made JSON-ready
(`clean`). Every verb's output and the report go through these (the CLI's
`commands._common` hands them to the verbs)."""
from __future__ import annotations

import math
import re
import sys

# C0 and C1 controls, DEL, and the Unicode bidirectional overrides/isolates
# (which reorder what the terminal shows).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _esc(m: re.Match) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    o = ord(c)
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}"


def escape(s) -> str:
    """`s` as text with every control character shown visibly (ESC -> ``\\x1b``)."""
    s = str(s)
    return _CONTROL.sub(_esc, s) if _CONTROL.search(s) else s


def cell(v, width: int) -> str:
    """A table cell: '-' for None, escaped, cut to `width` characters with '…'."""
    s = "-" if v is None else escape(v)
    return s if len(s) <= width else s[: width - 1] + "…"


def names(values, limit: int = 20) -> str:
    """The names that exist, for an error saying a selection matched nothing: the
    first `limit`, escaped and comma-separated, then ', ... (N in all)'."""
    vals = [escape(v) for v in values if v is not None]
    more = f", ... ({len(vals):,} in all)" if len(vals) > limit else ""
    return ", ".join(vals[:limit]) + more


class TextOut:
    """Wraps a text stream: .write() escapes control characters other than newlines."""

    def __init__(self, out=None):
        self.out = out or sys.stdout

    def write(self, s: str) -> int:
        if _CONTROL_BUT_NEWLINE.search(s):
            s = _CONTROL_BUT_NEWLINE.sub(_esc, s)
        return self.out.write(s)

    def flush(self) -> None:
        self.out.flush()


def clean(v):
    """A JSON-ready copy of `v`: NaN/inf -> None, numpy and Decimal -> int/float,
    tuples -> lists, datetimes -> ISO text, pandas NA/NaT -> None."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if _instance(v, "decimal", "Decimal"):
        if not v.is_finite():
            return None
        return int(v) if v == v.to_integral_value() else float(v)
    if _instance(v, "datetime", "datetime", "date", "time"):
        return v.isoformat()
    if hasattr(v, "tolist") and hasattr(v, "dtype"):  # numpy scalar or array
        return clean(v.tolist())
    if type(v).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def _instance(v, module: str, *types: str) -> bool:
    """isinstance(v, (module.type, ...)), without importing `module` (for `clean`: a value
    of its types exists only once something imported it; the CLI starts without them)."""
    m = sys.modules.get(module)
    return m is not None and isinstance(v, tuple(getattr(m, t) for t in types))
