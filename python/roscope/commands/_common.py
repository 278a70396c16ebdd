"""What every `roscope` subcommand shares: arguments, opening inputs, reporting,
JSON and text output. Use these instead of re-implementing them in a verb.

Arguments (argparse):
    add_inputs(parser, databases=True)  positional ``inputs``: one or more TRACE (and,
                                  with databases=True, one DB written by `roscope load`) -> args.inputs
    add_json(parser)              ``--json``                      -> args.json
    add_heuristics(parser)        ``--no-heuristics``             -> args.no_heuristics
    add_progress(parser)          ``--progress``/``--no-progress`` -> args.progress
    add_wide(parser)              ``--wide``: text tables with whole names -> args.wide;
                                  width(rows, key, default, wide) sizes a column of names
    int_range(lo, hi)             argparse ``type=`` for a bounded integer option
    number(unit, lo, hi)          argparse ``type=`` for every duration (and other real) option:
                                  roscope.numbers' one parser (finite, decimal, in [lo, hi])
    add_window(parser, help)      ``--window START:END`` (stats, flow, report: every verb over a
                                  stretch of the trace) -> args.window, (start ns, end ns or None)
                                  from the trace's start, parsed by `window` (roscope.numbers.window);
                                  window_ns(window, db, within=False) places it in a database's
                                  trace time (roscope.numbers.window_in); window_place(window)
                                  the same as a callable of a trace's span (first, last)
    regex                         argparse ``type=`` for a topic or callback regex: refused
                                  at once if roscope.regex (Rust's linear-time engine) cannot run it
    output_path, input_path       argparse ``type=`` for ``-o`` (refuses an empty path) and inputs:
                                  UTF-8 paths only (the core takes no other)

Opening:
    Inputs.of(args, **changes)    the typed value of what opening reads from the arguments
                                  (paths, --merge, --run/--runs, --memory, --no-heuristics,
                                  --no-sync; a verb without an option gets its default)
    open_inputs(inputs, writable=False) -> roscope.database.Database
        (`inputs`: an Inputs, or the parsed arguments) trace directories are loaded in
        memory; one .duckdb file is opened read-only unless `writable` (several databases,
        or a database mixed with traces, is an InputError); a trace directory holding
        several separate recordings is refused unless --merge (check_recordings(inputs),
        roscope.recordings).

Progress (stderr, roscope.progress):
    progress(args, verb)          `with C.progress(args, "flow") as p:` around the work: the
                                  phase, how far, elapsed and left on a terminal (unless --json),
                                  or wherever --progress asks; closed (line cleared) before output
    session(args, verb)           `with C.session(args, "why") as s: db = s.open_inputs(); ...`: the
                                  progress (s.progress) and the database a verb opens; if the
                                  work fails (Ctrl-C too), the progress line is closed and the
                                  trace's warnings reported before the error goes on

Reporting (stderr, the same for every verb; call it whether or not the verb failed):
    report(warnings, losses)      ``roscope: warning: ...`` lines for the trace's warnings
                                  and for each stream that lost events: (file, events
                                  discarded, packets lost) tuples
    report_from(obj)              the same for anything with .warnings and .losses
                                  (Database, Trace, LoadResult)

Output:
    print_json(obj, out=None)     one JSON document (cleaned by `clean`) and a newline
    clean(obj)                    JSON-ready copy: NaN/inf -> null, numpy scalars and
                                  arrays, Decimal, pandas NA, datetimes
    escape(s)                     control characters shown visibly (``\\x1b``), for any
                                  trace string (node, topic, process names) or path printed
    cell(value, width)            escape(str(value)), '-' for None, cut to `width` with '…'
    TextOut(out)                  a writer whose .write() escapes control characters except
                                  newlines: the last guard of a verb's text output
    ms(ns)                        a duration for text tables: milliseconds, 3 decimals
                                  ('-' for None/NaN); JSON keeps integers/floats in ns
    pct(share)                    a share 0..1 as a percentage with 2 decimals
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from roscope.errors import InputError
from roscope.text import TextOut, cell, clean, escape

if TYPE_CHECKING:
    from roscope.database import Database

__all__ = ["Inputs", "Session", "session", "TextOut", "add_heuristics", "add_inputs", "add_json", "add_progress", "add_wide", "cell", "check_recordings", "clean", "escape", "int_range",
           "input_path", "ms", "number", "open_inputs", "output_path", "pct", "print_json", "progress", "regex", "report", "report_from", "show", "size",
           "warn", "width", "window", "window_ns", "window_place", "add_window"]

PROG = "roscope"


# ---------------------------------------------------------------- arguments


#: --no-sync, for every verb that reads traces.
NO_SYNC_HELP = ("map the clocks of a trace set's hosts by the traces' metadata clock offsets (their wall-clock anchors) "
                "instead of synchronizing them from the messages between them; the clock_sync table has each host's map")


def add_inputs(parser: argparse.ArgumentParser, databases: bool = True, help: str | None = None,  # noqa: A002
               memory: int = 256 << 20, merge: bool = True) -> None:
    """Positional inputs: one or more trace directories (or one database when `databases`), and
    with `databases` the run selection and `--memory`, whose default budget (`memory`, bytes; the verb sets
    it with `set_defaults`; default `memory.MEMORY_BUDGET`, not imported here to keep `info`'s start
    short; tests/test_cli.py checks they agree) its help shows."""
    if help is None:
        help = ("trace directories (any directory above 'metadata' files), or one database written by "
                "`roscope load`") if databases else "trace directories (any directory above 'metadata' files)"
    parser.add_argument("inputs", nargs="+", type=input_path, metavar="TRACE|DB" if databases else "TRACE", help=help)
    if merge:
        parser.add_argument("--merge", action="store_true",
                            help="analyse a directory holding several separate recordings as one (refused without: "
                                 "each recording's name is listed; several hosts of one recording load as one)")
    if databases:
        sel = parser.add_mutually_exclusive_group()
        sel.add_argument("--run", metavar="ID", help="with a dataset (`roscope load --dataset`): the run to analyse")
        sel.add_argument("--runs", metavar="GLOB", help="with a dataset: the run to analyse, as a shell pattern "
                         "(it must match one run; `roscope trend` and `roscope dataset stats` go across runs)")
        parser.add_argument("--memory", type=size, metavar="SIZE", default=None,
                            help=f"DuckDB's memory budget (e.g. 512M, 2G; default {memory >> 20}M; 0: DuckDB's own, "
                                 "80%% of RAM): "
                                 "larger results and queries spill to a temporary directory")


_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
          "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40, "tib": 2**40}


def size(text: str) -> int:
    """An argparse ``type=`` for a size in bytes: ``512M``, ``2G``, ``300MiB``, ``0``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m and _UNITS.get(m.group(2).lower())
    if not unit:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 512M, 2G, 0)")
    v = int(float(m.group(1)) * unit)
    if v and v < 64 * 2**20:
        raise argparse.ArgumentTypeError(f"{text!r} is below DuckDB's useful minimum of 64M")
    if v > 2**50:
        raise argparse.ArgumentTypeError(f"{text!r} is too large")
    return v


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for machines (durations in ns, keys *_ns)")


def add_heuristics(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-heuristics", action="store_true",
                        help="make only exact transport links (for traces; a database keeps the links it was loaded with)")
    parser.add_argument("--no-sync", action="store_true", help=NO_SYNC_HELP)


def add_wide(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wide", action="store_true",
                        help="text tables with every name whole (columns as wide as their longest name), "
                             "instead of names cut with '…' to fit about 200 columns")


def width(rows, key, default: int, wide: bool) -> int:
    """The width of a text column of names: `default`, or with `wide` the longest of
    `key(row)` (escaped) over `rows`, at least the default's header room (4)."""
    if not wide:
        return default
    return max([4] + [len(escape("-" if key(r) is None else key(r))) for r in rows])


def add_progress(parser: argparse.ArgumentParser) -> None:
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress on stderr (phase, how far, flows so far, elapsed, time left) even with --json "
                        "or when stderr is not a terminal (then a line every few seconds)")
    g.add_argument("--no-progress", dest="progress", action="store_false",
                   help="never show progress (by default it is shown on a terminal, unless --json)")


def progress(args, verb: str):
    """The progress display of a verb (`roscope.progress.Progress`), to use as `with`:
    shown as `add_progress` says; its watchers (e.g. a data-flow search that looks huge)
    speak even when it is not shown."""
    from roscope import progress as pg

    return pg.Progress(pg.wanted(getattr(args, "progress", None), getattr(args, "json", False)), verb)


class Session:
    """A verb's work between opening its inputs and printing its result (`session`)."""

    def __init__(self, args, verb: str, inputs: Inputs | None = None):
        self._display = progress(args, verb)
        self.inputs = inputs if inputs is not None else Inputs.of(args)
        self.progress = self._display
        self.db = None
        self._opening = False

    def __enter__(self) -> Session:
        self.progress = self._display.__enter__()
        return self

    def opening(self) -> None:
        """The phase "opening" (once: `open_inputs` starts it unless the verb did)."""
        if not self._opening:
            self._opening = True
            self.progress.phase("opening")

    def open_inputs(self, opener: Callable[[], Database] | None = None, *, writable: bool = False) -> Database:
        """The verb's database (`open_inputs`, or `opener()`), in the phase "opening"."""
        self.opening()
        self.db = opener() if opener is not None else open_inputs(self.inputs, writable)
        return self.db

    def __exit__(self, kind, exc, tb) -> None:
        if kind is not None:   # the line cleared, then the trace's warnings, then the error
            self.progress.close()
            if self.db is not None:
                report_from(self.db)
        self._display.__exit__(kind, exc, tb)


def session(args, verb: str, inputs: Inputs | None = None) -> Session:
    """`with C.session(args, "why") as s:` around a verb's work: `s.progress` is its
    progress display (`progress`), `s.open_inputs()` opens its inputs (`Inputs.of(args)`, or
    `inputs`) as `s.db`. If the work raises (Ctrl-C too), the progress line is closed and
    the database's warnings and losses are reported before the error goes on; on success
    the verb reports them itself, after its output."""
    return Session(args, verb, inputs)


def int_range(lo: int, hi: int):
    """An argparse ``type=`` accepting integers in [lo, hi]."""

    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} is out of range ({lo} to {hi})")
        return v

    parse.__name__ = "integer"
    return parse


def number(unit: str, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False):
    """An argparse ``type=`` for a number of `unit` (``s``, ``ms``, or a name) in [lo, hi]
    (open ends with `lo_open`/`hi_open`): `roscope.numbers.number`, the one parser of
    every duration option."""
    from roscope import numbers

    def parse(text: str) -> float:
        try:
            return numbers.number(text, unit, lo, hi, lo_open=lo_open, hi_open=hi_open)
        except InputError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = "number"
    return parse


def window(text: str) -> tuple[int, int | None]:
    """An argparse ``type=`` for ``--window START:END`` (seconds from the trace's start, exact
    to the ns; either side may be empty): `roscope.numbers.window`."""
    from roscope import numbers
    try:
        return numbers.window(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_window(parser: argparse.ArgumentParser, help: str) -> None:  # noqa: A002
    """``--window START:END`` (`window`), `help` saying what it selects."""
    parser.add_argument("--window", type=window, metavar="START:END", help=help)


def window_ns(window: tuple[int, int | None] | None, db: Database, *, within: bool = False) -> tuple[int, int] | None:
    """A ``--window`` (`window`'s value) in `db`'s trace time (`window_place`):
    (first + START, first + END), END empty: past the last event; `within`: a timeline's
    window, starting within the trace and cut at its end. None without one."""
    if window is None:
        return None
    from roscope import stats as st
    return window_place(window, within=within)(*st.trace_span(db))


def window_place(window: tuple[int, int | None] | None, *, within: bool = False):
    """A ``--window`` (`window`'s value) as a placement on a trace whose events span
    [first, last] ns: `place(first, last) -> (start, end)` (`roscope.numbers.window_in`;
    the core calls it once it knows the span: `roscope.stats_core`). None without one."""
    if window is None:
        return None
    from roscope import numbers
    return lambda first, last: numbers.window_in(window, first, last, within=within)


def regex(text: str) -> str:
    """An argparse ``type=`` for a regular expression matched against trace strings: the
    text, once `roscope.regex` (the engine every such match runs on) compiled it."""
    from roscope import regex as rx
    try:
        return rx.compile(text, None).pattern
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _utf8(text: str, what: str) -> str:
    """`text` (a path from the command line) if it is UTF-8 text; the core, DuckDB and the
    files roscope writes (JSON, XML) take only such paths."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("utf-8", "backslashreplace")
        raise argparse.ArgumentTypeError(f"'{escape(shown)}': the {what} path is not UTF-8 text; roscope reads "
                                         "and writes only at UTF-8 paths (rename it)") from None
    return text


def input_path(text: str) -> str:
    """An argparse ``type=`` for an input path (a trace, a database, a budgets file): UTF-8."""
    return _utf8(text, "input")


def output_path(text: str) -> str:
    """An argparse ``type=`` for an output path (``-o``, ``--junit``): not empty (which
    would write into the current directory), UTF-8."""
    if not text:
        raise argparse.ArgumentTypeError("the output path is empty")
    return _utf8(text, "output")


# ---------------------------------------------------------------- opening


class Inputs(NamedTuple):
    """What opening a verb's inputs reads from its arguments (`add_inputs`, `add_heuristics`),
    as one typed value (a NamedTuple, not a dataclass: `dataclasses` imports `inspect`, ~5 ms
    of every verb's start)."""
    paths: tuple[str, ...]
    merge: bool = False
    run: str | None = None
    runs: str | None = None
    memory: int | None = None
    heuristics: bool = True
    sync: bool = True

    @classmethod
    def of(cls, args, **changes) -> Inputs:
        """The Inputs of parsed arguments (`args.inputs` and the options of `add_inputs` and
        `add_heuristics` a verb has; the others their defaults), with `changes` (e.g. `paths`)."""
        if isinstance(args, Inputs):
            return args._replace(**changes)
        given = vars(args)
        made = cls(paths=tuple(given["inputs"]), merge=bool(given.get("merge", False)), run=given.get("run"),
                   runs=given.get("runs"), memory=given.get("memory"),
                   heuristics=not given.get("no_heuristics", False), sync=not given.get("no_sync", False))
        return made._replace(**{k: tuple(v) if k == "paths" else v for k, v in changes.items()})


def open_inputs(inputs, writable: bool = False):
    """The Database of `inputs` (an `Inputs`, or parsed arguments): traces loaded in
    memory, or one database file, opened read-only unless `writable`."""
    # Here, not at the top: `roscope info` starts without DuckDB.
    from roscope import dataset as _dataset
    from roscope import opening
    from roscope.database import is_db

    inp = Inputs.of(inputs)
    paths = list(inp.paths)
    selection = inp.run or inp.runs
    if len(paths) == 1 and _dataset.is_dataset(paths[0]):
        chosen = _dataset.select(paths[0], selection)
        if len(chosen) != 1:
            shown = ", ".join(chosen[:10]) + (", ..." if len(chosen) > 10 else "")
            raise InputError(f"{escape(paths[0])}: {len(chosen)} runs {'match' if selection else 'in the dataset'} "
                             f"({escape(shown)}): this verb analyses one run; choose it with --run ID "
                             "(across runs: `roscope trend`, `roscope dataset stats`)")
        if writable:
            raise InputError(f"{escape(paths[0])}: a dataset is read-only; load the run into a database "
                             "(`roscope load TRACE -o FILE`) to store results")
        return opening.open(paths[0], runs=chosen, memory=inp.memory)
    if selection:
        raise InputError(f"{escape(paths[0])}: not a dataset; --run/--runs apply to a dataset (`roscope load --dataset DIR`)")
    dbs = [p for p in paths if is_db(p)]
    if dbs:
        if len(dbs) > 1:
            raise InputError(f"{len(dbs)} databases given ({', '.join(escape(p) for p in dbs)}): "
                             "give one database, or the trace directories to analyse together")
        if len(paths) > 1:
            others = [p for p in paths if p not in dbs]
            raise InputError(f"{escape(dbs[0])} is a database and {escape(others[0])} is not: "
                             "give one database, or trace directories only")
        if not inp.heuristics:
            warn(f"{dbs[0]}: --no-heuristics has no effect on a database (its links were made by `roscope load`)")
        return opening.open(dbs[0], read_only=not writable, memory=inp.memory)
    check_recordings(inp)
    return opening.open(paths, heuristics=inp.heuristics, memory=inp.memory, sync=inp.sync)


def check_recordings(inputs) -> None:
    """Refuses an input directory that holds several separate recordings (roscope.recordings)
    unless --merge: one line per recording, so that the user can pick one. `inputs`: an
    `Inputs`, or parsed arguments."""
    inp = Inputs.of(inputs)
    if inp.merge:
        return
    from roscope import recordings

    for p in inp.paths:
        if not os.path.isdir(p):
            continue
        groups = recordings.separate([p])
        if groups:
            shown = "; ".join(" + ".join(s.label() for s in g) for g in groups[:10])
            raise InputError(f"{escape(p)} holds {len(groups)} separate recordings: {escape(shown)}"
                             f"{'; ...' if len(groups) > 10 else ''}. Give one of them, or --merge to analyse them as one")


# ---------------------------------------------------------------- reporting


def warn(msg: str) -> None:
    """One ``roscope: warning: <msg>`` line on stderr (escaped)."""
    print(f"{PROG}: warning: {escape(msg)}", file=sys.stderr)


def report(warnings: Iterable[str] = (), losses: Iterable = ()) -> None:
    """The trace's warnings, then one line per stream that lost events, on stderr."""
    for w in warnings:
        warn(str(w))
    for f, ev, pk in losses:
        warn(f"{f}: {int(ev):,} events discarded, {int(pk):,} packets lost by the tracer")


def report_from(obj) -> None:
    """`report` for anything with .warnings and .losses (Database, Trace, LoadResult)."""
    report(getattr(obj, "warnings", ()) or (), getattr(obj, "losses", ()) or ())


# ---------------------------------------------------------------- JSON


def print_json(obj, out=None) -> None:
    out = out or sys.stdout
    # The encoder's pieces written a few thousand at a time: json.dump writes each piece
    # (76k writes, a fifth of `roscope stats --json` on the Autoware trace), json.dumps
    # holds them all at once (several times the output's size).
    pieces = json.JSONEncoder(indent=1).iterencode(clean(obj))
    while batch := "".join(itertools.islice(pieces, 4096)):
        out.write(batch)
    out.write("\n")


def show(args, result, render_text) -> None:
    """A verb's result on stdout: JSON with `--json`, else its text rendering."""
    if args.json:
        print_json(result)
    else:
        render_text(result)


# ---------------------------------------------------------------- text

def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def ms(ns) -> str:
    """A duration in ns shown in milliseconds with 3 decimals (µs resolution); '-' if unknown."""
    return "-" if _missing(ns) else f"{ns / 1e6:.3f}"


def pct(share) -> str:
    """A share (0..1) as a percentage with 2 decimals; '-' if unknown."""
    return "-" if _missing(share) else f"{100 * share:.2f}"
