"""The one way a user selects what to measure with a regular expression: callbacks,
topics, paths, executor threads and nodes (docs/analyses.md, "Selecting"). `check`'s
budgets, the pytest API, `why --callback`, an experiment's trace metrics, `trend
--metric` and `flow --exclude` all select through here, so that "a callback matching
RE" means one thing everywhere.

A selection is a regular expression compiled by `roscope.regex` (Rust's linear-time
engine) and searched anywhere in each subject's one label:

| kind | label (the text searched) |
|---|---|
| callback | `node topic-or-timer symbol`: the node's full name (`/ns/name`; the process name for a callback of no node), then the topic (service) it serves, `timer P ms` for a timer (P its period in ms as DuckDB prints a double: `timer 20.0 ms`) or else its kind, then its symbol; missing parts are left out, one space between |
| topic | the topic's name |
| node | the node's full name (`/ns/name`) |
| executor | an executor thread: its process name, and each node whose callbacks it ran; it is selected when any of them matches |
| path | `FROM->TO`: two topic selections, the data flows between them (`roscope.flow`) |

    Selector(kind, pattern, what)       compiled (InputError naming `what` and the pattern)
    Selector.matches(label) -> bool     search in one label
    Selector.pick({key: label}) -> keys whose label matches, in the mapping's order
    Selector.nothing(names, where) -> InputError "WHAT: no KIND matches 'RE' (KINDs: names)"
    parse("callback:RE" | "topic:RE" | "node:RE" | "executor:RE" | "path:FROM->TO")
    callback_labels(db), thread_nodes(db), executor_names(thread)

The labels come from SQL (`CALLBACK_LABEL`, over the `callbacks_info` view or the same
columns of a dataset's runs), never rebuilt in Python: one text per callback.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from roscope import regex
from roscope.errors import InputError
from roscope.text import names as listed

if TYPE_CHECKING:
    from roscope.database import Database

#: What a selection can be about.
KINDS = ("callback", "topic", "path", "executor", "node")
#: The plural of each kind in messages.
_PLURAL = {"callback": "callbacks", "topic": "topics", "path": "paths", "executor": "executor threads",
           "node": "nodes"}

#: A callback's label (SQL over `callbacks_info c`, or any relation `c` with its columns node,
#: procname, topic, period_ns, kind and symbol): `node topic-or-timer symbol`.
CALLBACK_LABEL = ("concat_ws(' ', coalesce(c.node, c.procname), coalesce(c.topic, CASE WHEN c.period_ns IS NOT NULL "
                  "THEN 'timer ' || CAST(c.period_ns / 1e6 AS VARCHAR) || ' ms' END, c.kind), c.symbol)")


class Selector:
    """One selection: a kind (`KINDS`) and a regular expression (roscope.regex), refused at
    once with a message naming `what` (the option, key or metric) when the engine cannot
    run it."""

    __slots__ = ("kind", "pattern", "what", "_rx")

    def __init__(self, kind: str, pattern: str, what: str | None = None):
        if kind not in KINDS:
            raise InputError(f"{what or 'selection'}: {kind!r} is not one of {', '.join(KINDS)}")
        self.kind, self.pattern, self.what = kind, pattern, what
        self._rx = regex.compile(pattern, what)

    def matches(self, label: str | None) -> bool:
        """Whether the pattern is found anywhere in `label` (None never matches)."""
        return label is not None and self._rx.search(label)

    def matches_any(self, labels: Iterable[str | None]) -> bool:
        """Whether it matches one of a subject's labels (an executor thread's names)."""
        return any(self.matches(x) for x in labels)

    def pick(self, labels: Mapping) -> list:
        """The keys of `labels` ({key: label}) whose label matches, in the mapping's order."""
        keys = list(labels)
        hits = self._rx.mask(["" if labels[k] is None else labels[k] for k in keys])
        return [k for k, hit in zip(keys, hits) if hit and labels[k] is not None]

    def nothing(self, names: Iterable[str | None], where: str = "") -> InputError:
        """The error of a selection that matched nothing: "WHAT: no KIND`where` matches 'RE'
        (KINDs: the names there are)", the names as `roscope.text.names` lists them (the
        first 20, then their number)."""
        shown = sorted({n for n in names if n is not None})
        noun = "executor thread" if self.kind == "executor" else self.kind
        return InputError(f"{self.what + ': ' if self.what else ''}no {noun}{where} matches {self.pattern!r} "
                          f"({_PLURAL[self.kind]}: {listed(shown) or 'none'})")

    def __repr__(self) -> str:
        return f"Selector({self.kind!r}, {self.pattern!r})"


def parse(text: str, what: str | None = None) -> tuple[str, str, str | None]:
    """``KIND:RE`` (callback, topic, node, executor) or ``path:FROM->TO`` as (kind, RE or
    FROM, TO or None), each regular expression compiled (roscope.regex)."""
    shown = what or f"{text!r}"
    kind, sep, rest = text.partition(":")
    if not sep or kind not in KINDS or not rest:
        raise InputError(f"{shown}: give callback:REGEX, topic:REGEX, node:REGEX, executor:REGEX or path:FROM->TO")
    to = None
    if kind == "path":
        rest, sep, to = rest.partition("->")
        if not sep or not rest or not to:
            raise InputError(f"{shown}: a path is path:FROM_REGEX->TO_REGEX")
    for r in (rest, to) if to is not None else (rest,):
        try:
            regex.compile(r, None)
        except InputError as exc:
            raise InputError(f"{shown}: {exc}") from None
    return kind, rest, to


def callback_labels(db: Database) -> dict[int, str]:
    """callback_id -> its label (`CALLBACK_LABEL`), in callback_id order."""
    return {r[0]: r[1] for r in db.con.execute(
        f"SELECT c.callback_id, {CALLBACK_LABEL} AS label FROM callbacks_info c ORDER BY c.callback_id").fetchall()}


def callbacks(db: Database, pattern: str, what: str | None = None) -> list[int]:
    """The ids of the callbacks whose label matches `pattern`; InputError listing the
    labels when the trace has callbacks and none matches."""
    sel = Selector("callback", pattern, what)
    labels = callback_labels(db)
    ids = sel.pick(labels)
    if labels and not ids:
        raise sel.nothing(labels.values())
    return ids


def thread_nodes(db: Database) -> dict[int, list[str]]:
    """thread_id -> the nodes whose callbacks ran on it (sorted), for executor selections."""
    nodes: dict = {}
    for tid, node in db.con.execute("SELECT DISTINCT r.thread_id, c.node FROM callback_runs r "
                                    "JOIN callbacks_info c USING (callback_id) WHERE c.node IS NOT NULL "
                                    "ORDER BY 1, 2").fetchall():
        nodes.setdefault(tid, []).append(node)
    return nodes


def executor_names(thread: Mapping) -> list[str]:
    """An executor thread's labels (`roscope.executor.threads` row with `nodes` from
    `thread_nodes`): each node it ran callbacks of, and its process name."""
    return [*thread.get("nodes", ()), *([thread["procname"]] if thread.get("procname") else [])]
