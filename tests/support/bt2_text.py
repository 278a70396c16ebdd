"""Events as babeltrace2's text output prints them (the `babeltrace2` command, not its Python
bindings): an oracle for tests that compare a few event kinds' fields."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

_LINE = re.compile(r"^\[(\d+)\] \S+ (\S+): (.*)$")
_FIELD = re.compile(r"(\w+) = (\"(?:[^\"\\]|\\.)*\"|0x[0-9A-Fa-f]+|-?\d+)")


def bt2_events(path: Path, names: set[str]):
    """(ts, name, fields) for events named in `names`, from babeltrace2's text output."""
    proc = subprocess.Popen(["babeltrace2", "--clock-cycles", "--no-delta", str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        m = _LINE.match(line)
        if not m or m.group(2) not in names:
            continue
        fields = {}
        for k, v in _FIELD.findall(m.group(3)):
            if v.startswith('"'):
                fields[k] = v[1:-1]
            else:
                fields[k] = int(v, 16) if v.startswith("0x") else int(v)
        yield int(m.group(1)), m.group(2), fields
    assert proc.wait() == 0
