"""Recording names and their claims: one state file per active recording,
``$XDG_STATE_HOME/roscope/record/<name>.json``, created only if absent (the name's
claim). It records the processes involved (the recording roscope, perf, the
command) by identity, so that `record stop` and `record recover` find them again."""
from __future__ import annotations

import json
import os
from pathlib import Path

from roscope.files import claim_file
from roscope.processes.identity import same_process
from roscope.record.manifest import json_text
from roscope.record.options import RecordError


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    d = Path(base) / "roscope" / "record"
    d.mkdir(parents=True, exist_ok=True)
    return d


def state_path(name: str) -> Path:
    return state_dir() / f"{name}.json"


def read_state(path: Path) -> dict | None:
    try:
        s = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(s, dict) and isinstance(s.get("name"), str) and s["name"] and isinstance(s.get("output", ""), str) \
        and all(s.get(k) is None or isinstance(s[k], dict) for k in ("owner", "child", "perf")) \
        and (s.get("members") is None or isinstance(s["members"], list))
    return s if ok else None


def state_files() -> list[tuple[Path, dict | None]]:
    """Every state file, read (None where it cannot be)."""
    return [(f, read_state(f)) for f in sorted(state_dir().glob("*.json"))]


def is_roscope_recorder(argv: list[str]) -> bool:
    """Whether a command line is a roscope that records: `roscope record` or `roscope watch`."""
    return ("record" in argv or "watch" in argv) and any("roscope" in a for a in argv)


def owner_alive(state: dict) -> bool:
    """The roscope that owns the recording still runs (same process, still 'roscope record'
    or 'roscope watch')."""
    return same_process(state.get("owner"), is_roscope_recorder)


def detached(state: dict) -> bool:
    """A start/stop recording after its setup: no roscope process owns it until 'stop'
    (state files of older versions, without a mode, are such recordings)."""
    return state.get("mode", "start/stop") == "start/stop" and not state.get("owner")


def check_name(name: str) -> None:
    """A recording name becomes a file name and an LTTng session name."""
    if not name or "/" in name or name.startswith(".") or any(ord(c) < 32 for c in name):
        raise RecordError(f"--name {name!r} is not usable: give a name without '/', control "
                          f"characters or a leading '.'")


def name_taken(name: str, path: Path) -> RecordError:
    other = read_state(path) or {}
    where = f" (recording into {other['output']})" if other.get("output") else ""
    if other and detached(other):
        return RecordError(f"a recording named {name} is already active{where} (state in {path}); "
                           f"stop it with 'roscope record stop --name {name}', or choose another --name")
    if other and not owner_alive(other):
        return RecordError(f"a recording named {name}{where} was left by a roscope record that is no "
                           f"longer running (state in {path}); finish it with 'roscope record recover'")
    return RecordError(f"a recording named {name} is already active{where} (state in {path}); "
                       f"choose another --name")


def claim(name: str, state: dict) -> Path:
    """Creates the state file of `name` only if absent (roscope.files.claim_file: link(2) of a complete file): the
    name's claim. Returns its path; a RecordError saying who holds the name otherwise."""
    path = state_path(name)
    try:
        claim_file(path, json_text(state))
    except FileExistsError:
        raise name_taken(name, path) from None
    return path
