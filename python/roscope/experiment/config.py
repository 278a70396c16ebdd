"""The experiment file (YAML): reading, checking, and expanding it into conditions.

A *condition* is one scenario at one level of its sweep (or the scenario itself
when it has no sweep): the unit that trials are grouped by. Every error names
the file and the key that is wrong (a UserError: no traceback).
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from roscope import regex, yamlfile
from roscope.errors import InputError

SCENARIO_KINDS = ("cpu_load", "msg_load", "cpuset")
SWEEPABLE = {"cpu_load.load", "cpu_load.workers", "msg_load.rate", "msg_load.publishers",
             "msg_load.payload", "cpuset.cpus"}
METRIC_SOURCES = ("driver", "wall", "trace")
TRACE_STATS = ("count", "min_ns", "mean_ns", "std_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns",
               "period_mean_ns", "period_jitter_ns", "cpu_share")
EXECUTOR_STATS = ("utilization", "executing_ns", "waiting_ns", "selecting_ns", "traced_ns", "executions")
FLOW_STATS = ("count", "min_ns", "mean_ns", "std_ns", "p25_ns", "p50_ns", "p75_ns", "p90_ns", "p99_ns", "max_ns")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: An experiment file is read only up to this size (bytes).
MAX_FILE_BYTES = 1 << 20
#: At most this many values once the file's YAML aliases are expanded (an alias bomb is refused).
MAX_VALUES = 100_000
#: Upper bound of every time in the file (s): driver.timeout, system.ready.timeout, ...
MAX_SECONDS = 1e6
#: Each sweepable parameter's range: (lowest, highest, integer); cpuset.cpus: up to the CPUs usable.
PARAM_RANGES = {"cpu_load.load": (1, 100, False), "cpu_load.workers": (1, 256, True),
                "msg_load.rate": (0.1, 1e6, False), "msg_load.publishers": (1, 64, True),
                "msg_load.payload": (0, 1 << 24, True), "cpuset.cpus": (1, None, True)}


@dataclass
class Condition:
    """One scenario at one level: what a trial runs under."""
    id: str                      # e.g. "msg_load@rate=500"
    scenario: str
    params: dict                 # {"cpu_load": {...}, "msg_load": {...}, "cpuset": {...}} (those present)
    level: object = None         # the sweep/bisection level, or None
    sweep_param: str | None = None


@dataclass
class Experiment:
    path: Path
    raw: dict
    name: str
    trials: int
    tracing: bool
    system: dict
    driver: dict
    metrics: dict
    scenarios: list = field(default_factory=list)
    ros: str | None = None
    base_dir: Path = Path(".")

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _err(path: Path, where: str, what: str) -> InputError:
    return InputError(f"{path}: {where}: {what}")


def _text(path: Path, where: str, v) -> str:
    """A scalar as text for a command line or the environment (no NUL: the kernel cannot pass it)."""
    if isinstance(v, (dict, list)) or v is None:
        raise _err(path, where, f"expected text, got {type(v).__name__ if v is not None else 'nothing'}")
    t = str(v)
    if "\0" in t:
        raise _err(path, where, "contains a NUL character, which a command line or environment cannot hold")
    return t


def _env(path: Path, where: str, d) -> dict:
    """NAME: value pairs for the environment: names without '=' or NUL, values without NUL."""
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise _err(path, where, f"expected a mapping of NAME: value, got {type(d).__name__}")
    out = {}
    for k, v in d.items():
        name = _text(path, f"{where}: name {k!r}", k)
        if not name or "=" in name:
            raise _err(path, where, f"{name!r} is not a variable name (empty, or with '=')")
        out[name] = _text(path, f"{where}.{name}", v)
    return out


def _command(path: Path, where: str, v) -> list[str]:
    if isinstance(v, str):
        try:
            argv = shlex.split(v)
        except ValueError as e:
            raise _err(path, where, f"cannot split the command: {e}") from None
    elif isinstance(v, list) and all(isinstance(a, (str, int, float)) for a in v):
        argv = [str(a) for a in v]
    else:
        raise _err(path, where, "a command is a string or a list of strings")
    if not argv:
        raise _err(path, where, "the command is empty")
    for a in argv:
        _text(path, where, a)
    return argv


def _number(path: Path, where: str, v, lo=None, hi=None, integer=False):
    """A finite number (an integer with `integer`) in [lo, hi]."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise _err(path, where, f"expected {'an integer' if integer else 'a number'}, got {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise _err(path, where, f"expected a finite number, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _err(path, where, f"{v} is out of range [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]")
    return v


def _keys(path: Path, where: str, d, allowed: set, required: set = frozenset()) -> dict:
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise _err(path, where, f"expected a mapping, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise _err(path, where, f"unknown key(s) {', '.join(map(str, unknown))} (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(d))
    if missing:
        raise _err(path, where, f"missing key(s) {', '.join(missing)}")
    return d


def _system(path: Path, d) -> dict:
    d = _keys(path, "system", d, {"start", "cwd", "env", "ready", "restart", "stop_timeout"}, {"start"})
    ready = _keys(path, "system.ready", d.get("ready"), {"command", "topic", "timeout", "delay"})
    out = {
        "start": _command(path, "system.start", d["start"]),
        "cwd": _text(path, "system.cwd", d.get("cwd", ".")),
        "env": _env(path, "system.env", d.get("env")),
        "ready": {
            "command": _command(path, "system.ready.command", ready["command"]) if "command" in ready else None,
            "topic": str(ready["topic"]) if "topic" in ready else None,
            "timeout": float(_number(path, "system.ready.timeout", ready.get("timeout", 30), 0.1, MAX_SECONDS)),
            "delay": float(_number(path, "system.ready.delay", ready.get("delay", 0), 0, MAX_SECONDS)),
        },
        "restart": d.get("restart", "per_trial"),
        "stop_timeout": float(_number(path, "system.stop_timeout", d.get("stop_timeout", 5), 0.1, MAX_SECONDS)),
    }
    if out["restart"] not in ("per_trial", "per_scenario"):
        raise _err(path, "system.restart", f"{out['restart']!r} is not per_trial or per_scenario")
    return out


def _driver(path: Path, d) -> dict:
    d = _keys(path, "driver", d, {"command", "timeout", "cwd", "env"}, {"command"})
    return {"command": _command(path, "driver.command", d["command"]),
            "timeout": float(_number(path, "driver.timeout", d.get("timeout", 60), 0.1, MAX_SECONDS)),
            "cwd": _text(path, "driver.cwd", d.get("cwd", ".")),
            "env": _env(path, "driver.env", d.get("env"))}


def _metric(path: Path, name: str, d) -> dict:
    where = f"metrics.{name}"
    d = _keys(path, where, d, {"from", "key", "callback", "flow", "executor", "stat", "weight", "budget", "better", "unit"},
              {"from"})
    src = d["from"]
    if src not in METRIC_SOURCES:
        raise _err(path, f"{where}.from", f"{src!r} is not one of {', '.join(METRIC_SOURCES)}")
    m = {"name": name, "from": src, "weight": d.get("weight"), "budget": d.get("budget"),
         "better": d.get("better", "lower"), "unit": d.get("unit")}
    for k in ("weight", "budget"):
        if m[k] is not None:
            _number(path, f"{where}.{k}", m[k], 0)
    if m["better"] not in ("lower", "higher"):
        raise _err(path, f"{where}.better", f"{m['better']!r} is not lower or higher")
    if src == "driver":
        m["key"] = str(d.get("key", name))
    elif src == "wall":
        m["unit"] = m["unit"] or "ms"
    else:
        if sum(k in d for k in ("callback", "flow", "executor")) != 1:
            raise _err(path, where, "a trace metric has exactly one of 'callback' (a regex), 'flow' ({from, to}) "
                                    "or 'executor' (a regex)")
        if "executor" in d:
            m["executor"] = _regex(path, f"{where}.executor", d["executor"])
            m["stat"] = d.get("stat", "utilization")
            if m["stat"] not in EXECUTOR_STATS:
                raise _err(path, f"{where}.stat", f"{m['stat']!r} is not one of {', '.join(EXECUTOR_STATS)}")
            m["unit"] = m["unit"] or ("ms" if m["stat"].endswith("_ns") else "")
            return m
        m["unit"] = m["unit"] or "ms"
        if "callback" in d:
            m["callback"] = _regex(path, f"{where}.callback", d["callback"])
            m["stat"] = d.get("stat", "mean_ns")
            if m["stat"] not in TRACE_STATS:
                raise _err(path, f"{where}.stat", f"{m['stat']!r} is not one of {', '.join(TRACE_STATS)}")
        else:
            f = _keys(path, f"{where}.flow", d["flow"], {"from", "to"}, {"from", "to"})
            m["flow"] = {"from": _regex(path, f"{where}.flow.from", f["from"]),
                         "to": _regex(path, f"{where}.flow.to", f["to"])}
            m["stat"] = d.get("stat", "p50_ns")
            if m["stat"] not in FLOW_STATS:
                raise _err(path, f"{where}.stat", f"{m['stat']!r} is not one of {', '.join(FLOW_STATS)}")
    return m


def _regex(path: Path, where: str, v) -> str:
    try:
        regex.compile(str(v), None)
    except InputError as e:
        raise _err(path, where, str(e)) from None
    return str(v)


def _load_params(path: Path, where: str, kind: str, d) -> dict:
    if kind == "cpu_load":
        d = _keys(path, where, d, {"workers", "load", "method", "cpus"})
        out = {"workers": _number(path, f"{where}.workers", d.get("workers", 2), 1, 256, integer=True),
               "load": _number(path, f"{where}.load", d.get("load", 80), 1, 100),
               "method": str(d.get("method", "matrixprod"))}
        if d.get("cpus") is not None:
            out["cpus"] = str(d["cpus"])
        return out
    if kind == "msg_load":
        d = _keys(path, where, d, {"publishers", "rate", "payload", "topic_prefix"})
        return {"publishers": _number(path, f"{where}.publishers", d.get("publishers", 4), 1, 64, integer=True),
                "rate": _number(path, f"{where}.rate", d.get("rate", 1000), 0.1, 1e6),
                "payload": _number(path, f"{where}.payload", d.get("payload", 1024), 0, 1 << 24, integer=True),
                "topic_prefix": str(d.get("topic_prefix", "/roscope_flood"))}
    d = _keys(path, where, d, {"cpus", "driver"})
    return {"cpus": _number(path, f"{where}.cpus", d.get("cpus", 1), 1, 4096, integer=True),
            "driver": bool(d.get("driver", True))}


def _scenario(path: Path, i: int, d) -> dict:
    where = f"scenarios[{i}]"
    d = _keys(path, where, d, {"name", "trials", "sweep", "breaking_point", *SCENARIO_KINDS}, {"name"})
    name = str(d["name"])
    if not NAME_RE.fullmatch(name):
        raise _err(path, f"{where}.name", f"{name!r}: use letters, digits, '_', '.', '-' (at most 64)")
    sc = {"name": name, "params": {}, "trials": d.get("trials")}
    if sc["trials"] is not None:
        _number(path, f"{where}.trials", sc["trials"], 1, 10000, integer=True)
    for kind in SCENARIO_KINDS:
        if kind in d:
            sc["params"][kind] = _load_params(path, f"{where}.{kind}", kind, d[kind])
    if "sweep" in d and "breaking_point" in d:
        raise _err(path, where, "a scenario has a sweep or a breaking_point, not both")
    if "sweep" in d:
        s = _keys(path, f"{where}.sweep", d["sweep"], {"param", "levels"}, {"param", "levels"})
        _sweep_param(path, f"{where}.sweep.param", s["param"], sc)
        if not isinstance(s["levels"], list) or not s["levels"]:
            raise _err(path, f"{where}.sweep.levels", "a non-empty list of levels")
        for j, lv in enumerate(s["levels"]):
            _level(path, f"{where}.sweep.levels[{j}]", s["param"], lv)
        sc["sweep"] = {"param": s["param"], "levels": list(s["levels"])}
    if "breaking_point" in d:
        b = _keys(path, f"{where}.breaking_point", d["breaking_point"],
                  {"param", "low", "high", "trials", "resolution", "max_failures"}, {"param", "low", "high"})
        _sweep_param(path, f"{where}.breaking_point.param", b["param"], sc)
        lo = _level(path, f"{where}.breaking_point.low", b["param"], b["low"])
        hi = _level(path, f"{where}.breaking_point.high", b["param"], b["high"])
        if hi <= lo:
            raise _err(path, f"{where}.breaking_point", f"high ({hi}) must be above low ({lo})")
        sc["breaking_point"] = {
            "param": b["param"], "low": lo, "high": hi,
            "trials": _number(path, f"{where}.breaking_point.trials", b.get("trials", 2), 1, 1000, integer=True),
            "resolution": _number(path, f"{where}.breaking_point.resolution", b.get("resolution", (hi - lo) / 8), 1e-9),
            "max_failures": _number(path, f"{where}.breaking_point.max_failures", b.get("max_failures", 0), 0, integer=True),
        }
    return sc


def _level(path: Path, where: str, param: str, v):
    """A level of a swept or bisected parameter, in that parameter's range."""
    lo, hi, integer = PARAM_RANGES[param]
    if hi is None:   # cpuset.cpus: the CPUs roscope may use (pick_cpus takes the last N of them)
        hi = len(os.sched_getaffinity(0))
        if isinstance(v, int) and not isinstance(v, bool) and v > hi:
            raise _err(path, where, f"a cpuset of {v} CPUs, but roscope may use {hi} CPUs here")
    return _number(path, where, v, lo, hi, integer)


def _sweep_param(path: Path, where: str, p, sc: dict) -> None:
    if p not in SWEEPABLE:
        raise _err(path, where, f"{p!r} is not one of {', '.join(sorted(SWEEPABLE))}")
    if p.split(".")[0] not in sc["params"]:
        raise _err(path, where, f"{p!r} sweeps {p.split('.')[0]}, which this scenario does not have")


def read_yaml(path: Path):
    """The YAML document of `path` (roscope.yamlfile: at most MAX_FILE_BYTES, MAX_VALUES values once
    its aliases are expanded). Every failure is an InputError naming the file."""
    return yamlfile.read(path, "experiment file", max_bytes=MAX_FILE_BYTES, max_values=MAX_VALUES)


def load(path) -> Experiment:
    """Reads and checks an experiment file."""
    path = Path(path)
    raw = read_yaml(path)
    if isinstance(raw, dict) and not {"system", "driver", "scenarios"} & set(raw):
        # not an experiment file: nothing of it is quoted (it may be any file, /etc/shadow)
        raise _err(path, "top level", "none of system, driver, scenarios: not an experiment file (docs/experiment.md)")
    raw = _keys(path, "top level", raw, {"name", "trials", "tracing", "ros", "system", "driver", "metrics", "scenarios"},
                {"system", "driver", "scenarios"})
    name = str(raw.get("name", path.stem))
    if not NAME_RE.fullmatch(name):
        raise _err(path, "name", f"{name!r}: use letters, digits, '_', '.', '-'")
    ros = raw.get("ros")
    if ros not in (None, "ros1"):
        raise _err(path, "ros", f"{ros!r}: only 'ros1' (a fresh rosmaster port per run) is understood")
    metrics = _keys(path, "metrics", raw.get("metrics"), set(raw.get("metrics") or {}))
    tracing = raw.get("tracing", False)
    if not isinstance(tracing, bool):
        raise _err(path, "tracing", f"expected true or false, got {tracing!r}")
    if not isinstance(raw["scenarios"], list) or not raw["scenarios"]:
        raise _err(path, "scenarios", "a non-empty list of scenarios")
    exp = Experiment(
        path=path, raw=copy.deepcopy(raw), name=name,
        trials=_number(path, "trials", raw.get("trials", 3), 1, 10000, integer=True),
        tracing=tracing, system=_system(path, raw["system"]), driver=_driver(path, raw["driver"]),
        metrics={str(k): _metric(path, str(k), v) for k, v in metrics.items()},
        scenarios=[_scenario(path, i, s) for i, s in enumerate(raw["scenarios"])],
        ros=ros, base_dir=path.resolve().parent)
    names = [s["name"] for s in exp.scenarios]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise _err(path, "scenarios", f"duplicate scenario name(s): {', '.join(dup)}")
    if tracing and exp.system["restart"] != "per_trial":
        raise _err(path, "system.restart", "tracing needs the system started per trial (restart: per_trial): "
                   "the trace of a trial must see its processes start")
    if ros != "ros1" and any("msg_load" in s["params"] for s in exp.scenarios):
        raise _err(path, "ros", "msg_load scenarios need 'ros: ros1' (the flood publishers are ROS 1 nodes)")
    if any(m["from"] == "trace" for m in exp.metrics.values()) and not tracing:
        raise _err(path, "metrics", "trace metrics need 'tracing: true'")
    if any("cpuset" in s["params"] for s in exp.scenarios):
        ncpu = len(os.sched_getaffinity(0))
        for s in exp.scenarios:
            levels = s.get("sweep", {}).get("levels", []) if s.get("sweep", {}).get("param") == "cpuset.cpus" else []
            for n in [s["params"].get("cpuset", {}).get("cpus", 1), *levels]:
                if n > ncpu:
                    raise _err(path, f"scenario {s['name']}", f"cpuset of {n} CPUs, but this machine has {ncpu}")
    return exp


def with_level(sc: dict, param: str, level) -> dict:
    """The scenario's params with `param` (e.g. "msg_load.rate") set to `level`."""
    params = copy.deepcopy(sc["params"])
    kind, key = param.split(".")
    params[kind][key] = int(level) if key in ("workers", "publishers", "payload", "cpus") else level
    return params


def level_text(level) -> str:
    if isinstance(level, float) and level.is_integer():
        level = int(level)
    return f"{level:g}" if isinstance(level, float) else str(level)


def conditions(sc: dict) -> list[Condition]:
    """The fixed conditions of a scenario (a bisection's are decided as it runs)."""
    if "sweep" in sc:
        p = sc["sweep"]["param"]
        return [Condition(f"{sc['name']}@{p.split('.')[1]}={level_text(lv)}", sc["name"], with_level(sc, p, lv), lv, p)
                for lv in sc["sweep"]["levels"]]
    if "breaking_point" in sc:
        return []
    return [Condition(sc["name"], sc["name"], copy.deepcopy(sc["params"]))]


def bisect_condition(sc: dict, level) -> Condition:
    p = sc["breaking_point"]["param"]
    return Condition(f"{sc['name']}@{p.split('.')[1]}={level_text(level)}", sc["name"], with_level(sc, p, level), level, p)
