"""The budgets file (YAML; docs/ci.md, "Budgets reference"): read, checked, and turned
into `Budget`s. Every mistake is one InputError naming the file, the line and the key
(`FILE:LINE: budgets[2].duration.p99: ...`).

    budgets:
      - callback: "/mapper .*plan_path"        # what it selects, and how
        duration: {p99: 2 ms, max: 10 ms}      # measures, each with its limits
      - topic: "^/lidar$"
        rate: {min: 15 Hz, max: 25 Hz}
        latency: {p99: 5 ms}
      - path: {from: "^/(lidar|imu)$", to: "^/fused$"}
        latency: {p99: 50 ms}
        deadline: {over: 30 ms, share: 5 %}
        why: {cpu_wait: 10 %}
      - executor: "^/fusion$"
        utilization: {max: 50 %}
      - lost: 0                                # always on (0) unless given

A callback or topic budget leaves infrastructure (parameter services, /rosout,
/parameter_events, ...: roscope.check.infrastructure) out of what it selects unless it
says `infrastructure: keep`.

The kinds, the measures each takes and how each measure's limits are written are
roscope.check.kinds' (one entry per kind) and roscope.check.limits'.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from roscope import yamlfile
from roscope.check import infrastructure
from roscope.check.kind import Selection
from roscope.check.kinds import KINDS
from roscope.check.limits import FileErrors, Limit, Measure
from roscope.check.units import COUNT
from roscope.errors import InputError

__all__ = ["DEFAULT_LOST", "Budget", "Budgets", "Limit", "Measure", "budget", "load", "parse"]

#: A budgets file is read up to this size (bytes) and this many values (aliases expanded).
MAX_FILE_BYTES = 1 << 20
MAX_VALUES = 100_000


@dataclass(frozen=True)
class Budget:
    """One budget: a subject (`kind`: callback, topic, path, executor, lost) selected by
    `select` (a regular expression) or `path` (its options), and its measures."""
    kind: str
    measures: tuple[Measure, ...]
    select: str | None = None
    path: tuple[tuple[str, object], ...] = ()
    name: str | None = None
    index: int = 0
    line: int = 0
    source: str | None = None
    default: bool = False
    infrastructure: str | None = None   # keep or drop (roscope.check.infrastructure); None: the check's default

    @property
    def path_options(self) -> dict:
        return dict(self.path)

    @property
    def selection(self) -> Selection:
        """What it selects (roscope.check.kinds measure it)."""
        return Selection(self.kind, self.select, self.path, self.infrastructure, self.name, self.default)

    def title(self) -> str:
        """The budget's name, or what it selects."""
        return self.name or KINDS[self.kind].title(self)

    def where(self) -> str:
        """FILE:LINE of the budget (for messages and annotations)."""
        return f"{self.source}:{self.line}" if self.source else f"budget {self.index}"


#: The budget every check has unless the file gives its own `lost`.
DEFAULT_LOST = Budget("lost", (Measure("lost", (Limit("events", "<=", 0, COUNT), Limit("packets", "<=", 0, COUNT))),),
                      name=None, default=True)


def budget(f: FileErrors, index: int, item, line: int, base_dir: str = ".") -> Budget:
    """Budget number `index` of the file, from its mapping."""
    key = f"budgets[{index}]"
    if not isinstance(item, dict):
        raise f.error(line, key, f"expected a mapping with one of {', '.join(KINDS)}, got {item!r}")
    kinds = [k for k in KINDS if k in item]
    if len(kinds) != 1:
        raise f.error(line, key, f"give exactly one of {', '.join(KINDS)} (what the budget is about)"
                      + (f"; found {', '.join(kinds)}" if kinds else ""))
    kind = KINDS[kinds[0]]
    own = tuple(m for m in kind.measures if m != kind.name)   # lost: its key is its measure
    allowed = ("name", kind.name) + own + (("infrastructure",) if kind.infrastructure else ())
    for k in item:
        if k not in allowed:
            other = [kk for kk, kd in KINDS.items() if k in kd.measures]
            hint = f" (a measure of {' or '.join(other)} budgets)" if other else ""
            raise f.error(item.line_of(k), f"{key}.{k}", f"unknown key for a {kind.name} budget{hint}; expected "
                          f"{', '.join(allowed)}")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise f.error(item.line_of("name"), f"{key}.name", f"expected text, got {name!r}")
    infra = item.get("infrastructure")
    if "infrastructure" in item and infra not in infrastructure.CHOICES:
        raise f.error(item.line_of("infrastructure"), f"{key}.infrastructure",
                      f"{infra!r} is not one of {', '.join(infrastructure.CHOICES)} (keep: also select parameter "
                      "services, /rosout, /parameter_events, ...)")
    select, path = kind.parse_subject(f, item, key, base_dir)
    measures = tuple(kind.spec(m).parse(f, item[m], item.line_of(m), f"{key}.{m}") for m in kind.measures if m in item)
    if not measures:
        raise f.error(line, key, f"no measure: give one or more of {', '.join(kind.measures)}")
    return Budget(kind.name, measures, select, path, name, index, line, f.path, infrastructure=infra)


@dataclass
class Budgets:
    """A budgets file: its budgets (the default lost budget added when it has none)."""
    path: str
    budgets: list[Budget] = field(default_factory=list)


def parse(doc, path: str = "<budgets>") -> Budgets:
    """Budgets from a parsed document (a LineMap, as `yamlfile.read(..., lines=True)` gives)."""
    f = FileErrors(path)
    if doc is None:
        raise InputError(f"{path}: empty: a budgets file has `budgets:`, a list of budgets (docs/ci.md)")
    if not isinstance(doc, yamlfile.LineMap):
        raise f.error(getattr(doc, "line", 1), "top level", "expected a mapping with `budgets:` (docs/ci.md)")
    if "budgets" not in doc:   # not a budgets file: nothing of it is quoted (it may be any file)
        raise f.error(doc.line, "top level", "no `budgets:` key: not a budgets file (docs/ci.md)")
    for k in doc:
        if k not in ("budgets", "version"):
            raise f.error(doc.line_of(k), str(k), "unknown key (expected budgets, version)")
    if doc.get("version", 1) != 1:
        raise f.error(doc.line_of("version"), "version", f"{doc['version']!r}: this roscope reads version 1")
    items = doc.get("budgets")
    if not isinstance(items, yamlfile.LineList) or not items:
        raise f.error(doc.line_of("budgets"), "budgets", "expected a non-empty list of budgets")
    base = os.path.dirname(os.path.abspath(path)) if path != "<budgets>" else "."
    out = [budget(f, i, item, items.line_of(i), base) for i, item in enumerate(items)]
    if not any(b.kind == "lost" for b in out):
        out.append(Budget("lost", DEFAULT_LOST.measures, index=len(out), source=path, line=0, default=True))
    return Budgets(path, out)


def load(path) -> Budgets:
    """The budgets file at `path`, read (roscope.yamlfile: UTF-8, at most MAX_FILE_BYTES, aliases
    limited) and checked."""
    path = os.fspath(path)
    doc = yamlfile.read(path, "budgets file", lines=True, max_bytes=MAX_FILE_BYTES, max_values=MAX_VALUES)
    return parse(doc, path)
