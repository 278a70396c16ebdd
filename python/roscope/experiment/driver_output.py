"""Reading what a driver or a load generator printed, with bounds: whatever it wrote,
roscope reads at most a fixed amount of it.

- ``last_json``: the last non-empty line of a file, read from at most the last
  LAST_LINE_MAX bytes, parsed as JSON nested at most JSON_DEPTH_MAX deep, numbers of
  at most INT_DIGITS_MAX digits kept as integers (longer ones become floats, an
  infinite one is no metric). A longer line, a deeper nesting, anything else is no
  JSON object, with the reason.
- ``tail``: the last TAIL_LINES lines of a log, from its last TAIL_BYTES bytes, each
  cut at TAIL_LINE_CHARS characters (for diagnostics.txt).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

#: The driver's last stdout line is read only if it is at most this long (bytes).
LAST_LINE_MAX = 1 << 20
#: JSON nested deeper than this is not read (arrays and objects inside each other).
JSON_DEPTH_MAX = 64
#: Integers with more digits are read as floats.
INT_DIGITS_MAX = 30
#: What diagnostics.txt shows of a log: its last lines, from its last bytes, each line cut.
TAIL_LINES = 30
TAIL_BYTES = 64 * 1024
TAIL_LINE_CHARS = 2000
#: Strings the driver reports (its status, its reason) are cut at this length.
TEXT_MAX = 1000

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _read_end(path: Path, n: int) -> tuple[bytes, int]:
    """The last `n` bytes of a file (b"" if it cannot be read), and the file's size."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - n))
            return f.read(n), size
    except OSError:
        return b"", 0


def depth(text: str) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings not counted)."""
    d = deepest = 0
    for m in _TOKENS.finditer(text):
        t = m.group(0)
        if t in "[{":
            d += 1
            deepest = max(deepest, d)
        elif t in "]}":
            d -= 1
    return deepest


def last_line(path: Path) -> tuple[str | None, str | None]:
    """(the last non-empty line, None), or (None, why there is none to read)."""
    data, size = _read_end(Path(path), LAST_LINE_MAX + 2)
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    if not lines:
        return None, "no output"
    line = lines[-1]
    starts_inside = len(lines) == 1 and size > len(data) and not data.startswith(b"\n")
    if len(line) > LAST_LINE_MAX or starts_inside:
        return None, f"its last line is longer than {LAST_LINE_MAX} bytes (the file has {size} bytes)"
    return line.decode("utf-8", "replace"), None


def last_json(path: Path) -> tuple[object, str | None]:
    """(the JSON value of the last non-empty line, None), or (None, why it is not read)."""
    line, why = last_line(path)
    if line is None:
        return None, why
    d = depth(line)
    if d > JSON_DEPTH_MAX:
        return None, f"its last line nests JSON {d} deep (at most {JSON_DEPTH_MAX} is read)"
    try:
        return json.loads(line, parse_int=lambda s: int(s) if len(s.lstrip("-")) <= INT_DIGITS_MAX else float(s),
                          parse_constant=float), None
    except (ValueError, RecursionError) as e:
        return None, f"its last line is not JSON ({str(e)[:100]})"


def tail(path: Path, n: int = TAIL_LINES) -> str:
    """The last lines of a log for a person to read ("(none)" if it cannot be read)."""
    data, size = _read_end(Path(path), TAIL_BYTES)
    if size == 0 and not data:
        return "(none)"
    lines = data.decode("utf-8", "replace").splitlines()
    cut = size > len(data)
    out = []
    for i, ln in enumerate(lines[-n:]):
        if cut and i == 0 and len(lines) <= n:   # the end of a line that began before what was read
            out.append(f"[...] {ln[-TAIL_LINE_CHARS:]}")
        elif len(ln) > TAIL_LINE_CHARS:
            out.append(f"{ln[:TAIL_LINE_CHARS]} [... {len(ln) - TAIL_LINE_CHARS} more characters]")
        else:
            out.append(ln)
    if cut:
        out.insert(0, f"[... the first {size - len(data)} bytes are not shown]")
    return "\n".join(out)
