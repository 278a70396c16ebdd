"""Which recordings a set of trace directories holds, so that a folder above several
separate recordings is not merged into one by mistake (issue 30: pointed at the
folder above two recordings, every node appeared twice over "33 s traced").

A CTF trace (a directory with a `metadata` file) belongs to one LTTng **session**:
its metadata's `env` names the `hostname`, the session (`trace_name`) and the
session's creation time (`trace_creation_datetime`, wall clock). A session's
per-uid, per-pid and kernel traces share the three. Sessions are one
**recording** when:

- a manifest says so: `roscope record`'s `roscope-manifest.json` or ros2sim's
  `manifest.json` (with its `hosts`) in a directory above all of them;
- or they ran on different hosts and were created within `SAME_RECORDING_S` of
  each other (several hosts recorded at once; one host records one session).

Two sessions of one host without such a manifest, or sessions created further
apart, are separate recordings. Traces without an `env` (not LTTng's) are left
to the loader. Reading only the metadata (`_core.Trace.traces`), no events.

- `sessions(paths)`: the sessions, each with its traces;
- `separate(paths)`: the recordings as lists of sessions when there are several,
  else [] (what `roscope` refuses without `--merge`).
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from roscope import _core
from roscope import manifest as _manifest

if TYPE_CHECKING:
    import datetime as dt

#: Sessions of different hosts created this close together are one recording.
SAME_RECORDING_S = 600

_ENV = re.compile(r"\benv\s*\{(.*?)\}", re.S)
_FIELD = re.compile(r"(\w+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;]+);")


class Session:
    """One LTTng session: its host, name and creation time (as its metadata's `env` has
    them), and its trace directories."""

    def __init__(self, hostname: str, name: str, created: str, traces: list[str] | None = None):
        self.hostname, self.name, self.created = hostname, name, created
        self.traces = [] if traces is None else traces

    def __repr__(self) -> str:
        return f"Session({self.hostname!r}, {self.name!r}, {self.created!r}, {self.traces!r})"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.hostname, self.name, self.created)

    def created_at(self) -> dt.datetime | None:
        import datetime as dt  # here: only a folder of several sessions compares their times

        try:
            return dt.datetime.strptime(self.created, "%Y%m%dT%H%M%S%z")
        except ValueError:
            return None

    def label(self) -> str:
        """Where it is: the directory its traces share, with its host and session."""
        top = os.path.commonpath(self.traces) if self.traces else "?"
        for part in ("/ust/", "/kernel"):  # the session's directory, above LTTng's layout
            if part in top + "/":
                top = top[: (top + "/").index(part)]
        return f"{top} (host {self.hostname}, session {self.name}, created {self.created})"


def _env(tsdl: str) -> dict[str, str]:
    m = _ENV.search(tsdl)
    if not m:
        return {}
    return {k: v.strip().strip('"') for k, v in _FIELD.findall(m.group(1))}


def sessions(paths: Sequence[str]) -> list[Session]:
    """The LTTng sessions of the CTF traces under `paths`, in the order found; traces
    whose metadata has no hostname or session name are left out."""
    out: dict[tuple, Session] = {}
    for _rel, d, tsdl in _core.Trace(list(paths)).traces():
        env = _env(tsdl)
        if not env.get("hostname") or not env.get("trace_name"):
            continue
        s = Session(env["hostname"], env["trace_name"], env.get("trace_creation_datetime", ""))
        out.setdefault(s.key, s).traces.append(d)
    return list(out.values())


def _manifest_covers(group: list[Session]) -> bool:
    """A roscope or ros2sim manifest in a directory above every trace of `group`."""
    dirs = [t for s in group for t in s.traces]
    top = os.path.commonpath(dirs)
    found = [m for m, d in _manifest.find([top]) if isinstance(d, dict)]
    d = top
    for _ in range(4):
        sim = os.path.join(d, "manifest.json")
        if os.path.isfile(sim):
            try:
                with open(sim) as f:
                    if isinstance(json.load(f).get("hosts"), list):
                        found.append(sim)
            except (OSError, ValueError, AttributeError):
                pass
        d = os.path.dirname(d)
    return bool(found)


def separate(paths: Sequence[str]) -> list[list[Session]]:
    """The separate recordings under `paths` (each a list of sessions) when there are
    several, else []."""
    ss = sessions(paths)
    if len(ss) < 2 or _manifest_covers(ss):
        return []
    import datetime as dt  # here, as in Session.created_at

    groups: list[list[Session]] = []
    for s in sorted(ss, key=lambda s: (s.created_at() is None, s.created_at() or dt.datetime.min, s.hostname)):
        g = next((g for g in groups if _together(g, s)), None)
        if g is None:
            groups.append([s])
        else:
            g.append(s)
    return groups if len(groups) > 1 else []


def _together(group: list[Session], s: Session) -> bool:
    """`s` is part of the recording `group`: another host, created close to the group's sessions."""
    t = s.created_at()
    if t is None or any(g.hostname == s.hostname for g in group):
        return False
    return all(g.created_at() is not None and abs((g.created_at() - t).total_seconds()) <= SAME_RECORDING_S
               for g in group)
