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

The same `Budget` is what the pytest assertion API evaluates (roscope.check.api).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from roscope import choices, regex, yamlfile
from roscope.check import infrastructure, units
from roscope.check.units import COUNT, DURATION, RATE, SHARE, UnitError
from roscope.errors import InputError

#: What a budget selects (its subject key), and the measures each takes.
KINDS = ("callback", "topic", "path", "executor", "lost")
#: The budgets whose regular expression may select infrastructure (`infrastructure: keep|drop`).
INFRA_KINDS = ("callback", "topic")
MEASURES = {
    "callback": ("duration", "jitter", "deadline", "why"),
    "topic": ("rate", "latency"),
    "path": ("latency", "deadline", "why"),
    "executor": ("utilization",),
    "lost": ("lost",),
}
#: Statistics a duration's budget may limit (upper bounds); paths also have quartiles.
STATS = ("min", "mean", "std", "p50", "p90", "p99", "max")
PATH_STATS = ("min", "mean", "std", "p25", "p50", "p75", "p90", "p99", "max")
#: The parts of `why` a share budget may limit: of a callback's runs (roscope.sched.run_sched)
#: and of a path's flows (roscope.sched.flow_sched); cpu_wait = waiting for a CPU, in all.
WHY_PARTS = {
    "callback": ("on_cpu", "cpu_wait", "blocked", "unknown"),
    "path": ("on_cpu", "cpu_wait", "runnable", "wakeup", "blocked", "queued", "transport", "unknown"),
}
#: The options of a path (roscope.flow.FlowRequest's, and roscope.response_time's).
PATH_KEYS = ("from", "to", "definition", "end", "case", "implicit", "fallback", "exclude", "uncertain", "deps",
             "all_paths")
#: The words each path key may take: roscope.choices', as `roscope flow`'s options.
PATH_CHOICES = {"definition": choices.DEFINITIONS, "end": choices.CHOSEN_ENDS, "case": choices.CASES,
                "implicit": choices.IMPLICIT_MODES, "fallback": choices.FALLBACK_RULES,
                "uncertain": choices.UNCERTAIN_MODES}
#: The comparisons a limit may make.
OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
       "==": lambda a, b: a == b}
#: A budgets file is read up to this size (bytes) and this many values (aliases expanded).
MAX_FILE_BYTES = 1 << 20
MAX_VALUES = 100_000


@dataclass(frozen=True)
class Limit:
    """One limit of a measure: the measured `stat` must be `op` `value` (in `kind`'s base
    unit: ns, Hz, fraction, count). A budgets file has <= and >=; the assertion API also
    <, > and ==."""
    stat: str
    op: str
    value: float
    kind: str
    line: int = 0

    def holds(self, measured: float) -> bool:
        return OPS[self.op](measured, self.value)

    def margin(self, measured: float) -> float:
        """How far the measured value is inside the limit (negative: outside; for ==, minus
        the distance)."""
        if self.op == "==":
            return -abs(measured - self.value)
        return self.value - measured if self.op in ("<=", "<") else measured - self.value


@dataclass(frozen=True)
class Measure:
    """One measure of a budget (duration, jitter, deadline, rate, latency, why, utilization,
    lost) with its limits; `over` is a deadline's threshold (ns)."""
    name: str
    limits: tuple[Limit, ...]
    over: float | None = None
    line: int = 0


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

    def title(self) -> str:
        """The budget's name, or what it selects."""
        if self.name:
            return self.name
        if self.kind == "path":
            p = self.path_options
            return f"path {p['from']} -> {p['to']}" + (f" ({p['definition']} {p.get('case', 'best')})"
                                                         if p.get("definition") else "")
        if self.kind == "lost":
            return "lost events" + (" (default)" if self.default else "")
        return f"{self.kind} {self.select}"

    def where(self) -> str:
        """FILE:LINE of the budget (for messages and annotations)."""
        return f"{self.source}:{self.line}" if self.source else f"budget {self.index}"


#: The budget every check has unless the file gives its own `lost`.
DEFAULT_LOST = Budget("lost", (Measure("lost", (Limit("events", "<=", 0, COUNT), Limit("packets", "<=", 0, COUNT))),),
                      name=None, default=True)


class _File:
    """Error messages naming the budgets file, the line and the key."""

    def __init__(self, path: str):
        self.path = path

    def error(self, line: int, key: str, what: str) -> InputError:
        return InputError(f"{self.path}:{line}: {key}: {what}")


def _regex(f: _File, line: int, key: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise f.error(line, key, f"expected a regular expression (text), got {value!r}")
    try:
        regex.compile(value, None)
    except InputError as e:
        raise f.error(line, key, str(e)) from None
    return value


def _unit(f: _File, line: int, key: str, value, kind: str) -> float:
    try:
        return units.parse(value, kind)
    except UnitError as e:
        raise f.error(line, key, str(e)) from None


def _mapping(f: _File, line: int, key: str, value, allowed) -> yamlfile.LineMap:
    if not isinstance(value, dict):
        raise f.error(line, key, f"expected a mapping ({', '.join(allowed)}), got {value!r}")
    for k in value:
        if k not in allowed:
            raise f.error(value.line_of(k), f"{key}.{k}", f"unknown key (expected {', '.join(allowed)})")
    if not value:
        raise f.error(line, key, f"empty: give at least one of {', '.join(allowed)}")
    return value


def _stat_limits(f: _File, line: int, key: str, value, stats, kind: str) -> tuple[Limit, ...]:
    m = _mapping(f, line, key, value, stats)
    return tuple(Limit(s, "<=", _unit(f, m.line_of(s), f"{key}.{s}", m[s], kind), kind, m.line_of(s)) for s in m)


def _measure(f: _File, kind: str, name: str, value, line: int, key: str) -> Measure:
    """One measure of a budget of `kind` (its value as the file gives it)."""
    if name == "duration":
        return Measure(name, _stat_limits(f, line, key, value, STATS, DURATION), line=line)
    if name == "latency":
        return Measure(name, _stat_limits(f, line, key, value, PATH_STATS if kind == "path" else STATS, DURATION),
                       line=line)
    if name == "jitter":
        if isinstance(value, dict):
            m = _mapping(f, line, key, value, ("max",))
            return Measure(name, (Limit("max", "<=", _unit(f, m.line_of("max"), f"{key}.max", m["max"], DURATION),
                                        DURATION, m.line_of("max")),), line=line)
        return Measure(name, (Limit("max", "<=", _unit(f, line, key, value, DURATION), DURATION, line),), line=line)
    if name == "rate":
        m = _mapping(f, line, key, value, ("min", "max"))
        lim = tuple(Limit(b, ">=" if b == "min" else "<=", _unit(f, m.line_of(b), f"{key}.{b}", m[b], RATE), RATE,
                          m.line_of(b)) for b in ("min", "max") if b in m)
        if len(lim) == 2 and lim[0].value > lim[1].value:
            raise f.error(line, key, "min is above max")
        return Measure(name, lim, line=line)
    if name == "utilization":
        if not isinstance(value, dict):
            return Measure(name, (Limit("max", "<=", _unit(f, line, key, value, SHARE), SHARE, line),), line=line)
        m = _mapping(f, line, key, value, ("min", "max"))
        return Measure(name, tuple(Limit(b, ">=" if b == "min" else "<=", _unit(f, m.line_of(b), f"{key}.{b}", m[b], SHARE),
                                         SHARE, m.line_of(b)) for b in ("min", "max") if b in m), line=line)
    if name == "deadline":
        m = _mapping(f, line, key, value, ("over", "count", "share"))
        if "over" not in m:
            raise f.error(line, key, "give the deadline as over: DURATION (e.g. over: 50 ms)")
        if "count" not in m and "share" not in m:
            raise f.error(line, key, "give the most runs or flows allowed over it: count: N or share: PERCENT")
        over = _unit(f, m.line_of("over"), f"{key}.over", m["over"], DURATION)
        lim = []
        if "count" in m:
            lim.append(Limit("count", "<=", _unit(f, m.line_of("count"), f"{key}.count", m["count"], COUNT), COUNT,
                             m.line_of("count")))
        if "share" in m:
            lim.append(Limit("share", "<=", _unit(f, m.line_of("share"), f"{key}.share", m["share"], SHARE), SHARE,
                             m.line_of("share")))
        return Measure(name, tuple(lim), over=over, line=line)
    if name == "why":
        return Measure(name, _stat_limits(f, line, key, value, WHY_PARTS[kind], SHARE), line=line)
    # lost
    if isinstance(value, dict):
        m = _mapping(f, line, key, value, ("events", "packets"))
        lim = {b: _unit(f, m.line_of(b), f"{key}.{b}", m[b], COUNT) for b in m}
    else:
        n = _unit(f, line, key, value, COUNT)
        lim = {"events": n, "packets": n}
    return Measure(name, tuple(Limit(b, "<=", lim.get(b, 0), COUNT, line) for b in ("events", "packets")), line=line)


def _path(f: _File, line: int, key: str, value, base_dir: str) -> tuple[tuple[str, object], ...]:
    m = _mapping(f, line, key, value, PATH_KEYS)
    for need in ("from", "to"):
        if need not in m:
            raise f.error(line, key, f"a path needs '{need}' (a regular expression of topics)")
    out: dict = {"from": _regex(f, m.line_of("from"), f"{key}.from", m["from"]),
                 "to": _regex(f, m.line_of("to"), f"{key}.to", m["to"])}
    for k, allowed in PATH_CHOICES.items():
        if k in m:
            if m[k] not in allowed:
                raise f.error(m.line_of(k), f"{key}.{k}", f"{m[k]!r} is not one of {', '.join(allowed)}")
            out[k] = m[k]
    if ("end" in out or "case" in out) and "definition" not in out:
        raise f.error(line, key, "'end' and 'case' choose a response time: give 'definition' (dataflow or caret) too")
    if out.get("end") and out.get("definition") != "caret":
        raise f.error(m.line_of("end"), f"{key}.end", "a path ends at a callback only under definition: caret")
    if "exclude" in m:
        ex = m["exclude"] if isinstance(m["exclude"], list) else [m["exclude"]]
        out["exclude"] = tuple(_regex(f, m.line_of("exclude"), f"{key}.exclude", x) for x in ex)
    if "deps" in m:
        if not isinstance(m["deps"], str) or not m["deps"]:
            raise f.error(m.line_of("deps"), f"{key}.deps", "expected the path of a `roscope deps` file")
        out["deps"] = os.path.join(base_dir, m["deps"])
    if "all_paths" in m:
        if not isinstance(m["all_paths"], bool):
            raise f.error(m.line_of("all_paths"), f"{key}.all_paths", "expected true or false")
        out["all_paths"] = m["all_paths"]
    return tuple(out.items())


def budget(f: _File, index: int, item, line: int, base_dir: str = ".") -> Budget:
    """Budget number `index` of the file, from its mapping."""
    key = f"budgets[{index}]"
    if not isinstance(item, dict):
        raise f.error(line, key, f"expected a mapping with one of {', '.join(KINDS)}, got {item!r}")
    kinds = [k for k in KINDS if k in item]
    if len(kinds) != 1:
        raise f.error(line, key, f"give exactly one of {', '.join(KINDS)} (what the budget is about)"
                      + (f"; found {', '.join(kinds)}" if kinds else ""))
    kind = kinds[0]
    allowed = ("name", kind) + (MEASURES[kind] if kind != "lost" else ()) + (
        ("infrastructure",) if kind in INFRA_KINDS else ())
    for k in item:
        if k not in allowed:
            other = [kk for kk, ms in MEASURES.items() if k in ms]
            hint = f" (a measure of {' or '.join(other)} budgets)" if other else ""
            raise f.error(item.line_of(k), f"{key}.{k}", f"unknown key for a {kind} budget{hint}; expected "
                          f"{', '.join(allowed)}")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise f.error(item.line_of("name"), f"{key}.name", f"expected text, got {name!r}")
    infra = item.get("infrastructure")
    if "infrastructure" in item and infra not in infrastructure.CHOICES:
        raise f.error(item.line_of("infrastructure"), f"{key}.infrastructure",
                      f"{infra!r} is not one of {', '.join(infrastructure.CHOICES)} (keep: also select parameter "
                      "services, /rosout, /parameter_events, ...)")
    select, path = None, ()
    if kind == "path":
        path = _path(f, item.line_of("path"), f"{key}.path", item["path"], base_dir)
    elif kind in ("callback", "topic", "executor"):
        select = _regex(f, item.line_of(kind), f"{key}.{kind}", item[kind])
    if kind == "lost":
        measures = (_measure(f, kind, "lost", item["lost"], item.line_of("lost"), f"{key}.lost"),)
    else:
        measures = tuple(_measure(f, kind, m, item[m], item.line_of(m), f"{key}.{m}") for m in MEASURES[kind] if m in item)
        if not measures:
            raise f.error(line, key, f"no measure: give one or more of {', '.join(MEASURES[kind])}")
    return Budget(kind, measures, select, path, name, index, line, f.path, infrastructure=infra)


@dataclass
class Budgets:
    """A budgets file: its budgets (the default lost budget added when it has none)."""
    path: str
    budgets: list[Budget] = field(default_factory=list)


def parse(doc, path: str = "<budgets>") -> Budgets:
    """Budgets from a parsed document (a LineMap, as `yamlfile.read(..., lines=True)` gives)."""
    f = _File(path)
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
