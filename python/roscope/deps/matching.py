"""Matching a dependency file of `roscope deps` to a trace (docs/deps.md,
"Matching a trace"): `load` reads and checks the file, `match` finds the trace
callbacks each of its callbacks is, `trace_edges` gives its edges as pairs of the
trace's callback ids (what `roscope flow --deps` uses).

This module needs nothing of libclang: `flow` imports it alone."""
from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING

from roscope import yamlfile
from roscope.errors import InputError

if TYPE_CHECKING:
    from roscope.database import Database

#: The dependency file's "format" and the newest "version" this roscope reads.
FORMAT = "roscope-deps"
FORMAT_VERSION = 1
#: A dependency file is read up to this size (bytes).
MAX_DEPS_BYTES = 256 << 20


def load(deps) -> dict:
    """A dependency document from a path or a dict, checked (InputError names what is wrong)."""
    where = "the dependency document"
    if isinstance(deps, (str, os.PathLike)):
        where = os.fspath(deps)
        if not os.path.lexists(deps):
            raise InputError(f"{where}: no such file")
        data = yamlfile.read_small(deps, "dependency file", MAX_DEPS_BYTES)
        try:
            deps = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise InputError(f"{where}: not a JSON dependency file written by `roscope deps` ({exc})") from None
    if not isinstance(deps, dict) or deps.get("format") != FORMAT:
        raise InputError(f"{where}: not a dependency file written by `roscope deps` (no \"format\": \"{FORMAT}\")")
    v = deps.get("version")
    if not isinstance(v, int) or v > FORMAT_VERSION:
        raise InputError(f"{where}: dependency file version {v!r}; this roscope reads version {FORMAT_VERSION}")
    nodes = deps.get("nodes")
    if not isinstance(nodes, list):
        raise InputError(f"{where}: \"nodes\" must be a list")
    ids = set()
    for n in nodes:
        cbs = n.get("callbacks") if isinstance(n, dict) else None
        if not isinstance(cbs, list):
            raise InputError(f"{where}: a node without a \"callbacks\" list")
        for cb in cbs:
            if not isinstance(cb, dict) or not isinstance(cb.get("id"), str) or cb.get("kind") not in (
                    "subscription", "timer", "service"):
                raise InputError(f"{where}: a callback needs an \"id\" and a \"kind\" (subscription, timer, service)")
            if cb["id"] in ids:
                raise InputError(f"{where}: callback id {cb['id']!r} appears twice")
            ids.add(cb["id"])
    edges = deps.get("edges")
    if not isinstance(edges, list):
        raise InputError(f"{where}: \"edges\" must be a list")
    for e in edges:
        if not isinstance(e, dict) or e.get("from") not in ids or e.get("to") not in ids:
            raise InputError(f"{where}: edge {e!r} names a callback that is not in the file")
    return deps



def _norm_symbol(s) -> str | None:
    return re.sub(r"\s+", "", s) if isinstance(s, str) and s else None


def _norm_node(s) -> str | None:
    return s.strip("/") if isinstance(s, str) and s.strip("/") else None


def _node_ok(cb: dict, t: dict) -> bool:
    want = _norm_node(cb.get("ros_name"))
    if want is None:
        return True
    return want in {_norm_node(t.get("node")), _norm_node(t.get("node_namespace")), _norm_node(t.get("node_name"))}


def _fallback(cb: dict, free: list[dict]) -> tuple[list[dict], str | None]:
    if cb["kind"] == "timer":
        if cb.get("period_ns") is None:
            return [], None
        cands = [t for t in free if t["kind"] == "timer" and t["period_ns"] is not None and
                 int(t["period_ns"]) == int(cb["period_ns"]) and _node_ok(cb, t)]
        return cands, "period"
    if not cb.get("topic"):
        return [], None
    topic = cb["topic"]
    cands = [t for t in free if t["kind"] == cb["kind"] and t["topic"] is not None and _node_ok(cb, t) and (
        t["topic"] == topic or (not topic.startswith("/") and t["topic"].rsplit("/", 1)[-1] == topic))]
    return cands, "topic"


def match(db: Database, deps) -> tuple[dict[str, list[dict]], dict]:
    """Which trace callbacks (rows of callbacks_info) each file callback is: by
    demangled symbol first; else, for the rest, by node and topic (subscriptions,
    services) or node and period (timers)."""
    doc = load(deps)
    rows = db.records("SELECT ci.callback_id, ci.proc_id, ci.pid, ci.procname, ci.node, ci.node_name, "
                      "ci.node_namespace, ci.kind, ci.topic, ci.period_ns, ci.symbol, c.node_id "
                      "FROM callbacks_info ci JOIN callbacks c USING (callback_id) ORDER BY ci.callback_id")
    by_sym: dict[str, list[dict]] = {}
    for t in rows:
        s = _norm_symbol(t["symbol"])
        if s:
            by_sym.setdefault(s, []).append(t)
    cbs = [cb for n in doc["nodes"] for cb in n["callbacks"]]
    found: dict[str, list[dict]] = {}
    report = {"matched": [], "unmatched": [], "ambiguous": [], "trace_unmatched": []}
    taken: set[int] = set()
    for cb in cbs:
        hit = []
        for sym in [cb.get("symbol")] + list(cb.get("symbol_alternatives") or []):
            hit = [t for t in by_sym.get(_norm_symbol(sym) or "\0", []) if t["kind"] == cb["kind"]]
            if hit:
                break
        if hit:
            found[cb["id"]] = hit
            taken.update(t["callback_id"] for t in hit)
            report["matched"].append({"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in hit],
                                      "by": "symbol"})
    for cb in cbs:
        if cb["id"] in found:
            continue
        cands, by = _fallback(cb, [t for t in rows if t["callback_id"] not in taken])
        if not cands:
            why = ("no trace callback has its symbol" + (f", nor its {by}" if by else
                   " and its topic or period is not known statically"))
            report["unmatched"].append({"callback": cb["id"], "why": why})
            continue
        nodes = {(t["proc_id"], t["node_id"]) for t in cands}
        syms = {_norm_symbol(t["symbol"]) for t in cands}
        if len(nodes) > 1 and len(syms) > 1:
            report["ambiguous"].append({"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in cands],
                                        "why": f"its {by} matches callbacks of {len(nodes)} nodes; give the node's "
                                               "name in the source (a literal) to choose"})
            continue
        found[cb["id"]] = cands
        taken.update(t["callback_id"] for t in cands)
        report["matched"].append({"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in cands], "by": by})
    procs = {t["proc_id"] for hit in found.values() for t in hit}
    report["trace_unmatched"] = [
        {"callback_id": t["callback_id"], "kind": t["kind"], "node": t["node"], "topic": t["topic"],
         "period_ns": t["period_ns"], "symbol": t["symbol"]}
        for t in rows if t["proc_id"] in procs and t["callback_id"] not in taken]
    elsewhere: dict = {}
    for t in rows:
        if t["proc_id"] not in procs:
            elsewhere.setdefault(t["proc_id"], {"pid": t["pid"], "procname": t["procname"], "callbacks": 0})
            elsewhere[t["proc_id"]]["callbacks"] += 1
    report["trace_processes_unmatched"] = list(elsewhere.values())
    return found, report


def trace_edges(db: Database, deps) -> tuple[list[tuple[int, int]], dict]:
    """The file's dependency edges as (callback_id A, callback_id B) pairs of the
    database's `callbacks` table (B depends on A), and a report of the match
    (see `match`; plus, per file edge, the trace pairs it gave). Pairs are within
    one process, and within one node when the edge rests on member state only."""
    doc = load(deps)
    found, report = match(db, doc)
    pairs: set[tuple[int, int]] = set()
    report["edges"] = []
    for e in doc["edges"]:
        got = []
        for a in found.get(e["from"], []):
            for b in found.get(e["to"], []):
                if a["callback_id"] == b["callback_id"] or a["proc_id"] != b["proc_id"]:
                    continue
                if e.get("through", "member") == "member" and a["node_id"] is not None and b["node_id"] is not None \
                        and a["node_id"] != b["node_id"]:
                    continue
                got.append((int(a["callback_id"]), int(b["callback_id"])))
        pairs.update(got)
        report["edges"].append({"from": e["from"], "to": e["to"], "trace_edges": sorted(got)})
    report["undecided"] = [
        {"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in found[cb["id"]]],
         "accesses": len(cb.get("undecided") or []), "why": cb["undecided"][0].get("why")}
        for n in doc["nodes"] for cb in n["callbacks"] if cb["id"] in found and cb.get("undecided")]
    report["unseen"] = _unseen(db, doc, found)
    return sorted(pairs), report


def _unseen(db: Database, doc: dict, found: dict[str, list[dict]]) -> list[dict]:
    """The matched callbacks the file cannot vouch for (`flow --deps` keeps their trace
    edges): those it lists as unseen (it saw no publication of theirs, but not all of
    their code), and subscriptions and timers it says publish nothing while the trace
    shows publications from their runs (a file that missed them, e.g. one written before
    helpers were followed: issue 39)."""
    published = {int(r["callback_id"]): int(r["n"]) for r in db.records(
        "SELECT r.callback_id, count(*) AS n FROM publications pb JOIN callback_runs r USING (run_id) GROUP BY 1")}
    out = []
    for n in doc["nodes"]:
        for cb in n["callbacks"]:
            hit = found.get(cb["id"])
            if not hit:
                continue
            ids = [int(t["callback_id"]) for t in hit]
            why = None
            if cb.get("unseen"):
                why = f"the file could not see all it may publish through: {cb['unseen'][0].get('why')}"
            elif not cb.get("publishes") and cb["kind"] in ("subscription", "timer"):
                seen = sum(published.get(i, 0) for i in ids)
                if seen:
                    why = (f"the file says it publishes nothing; the trace shows {seen} publication(s) from its runs "
                           "(messages, or service requests)")
            if why is not None:
                out.append({"callback": cb["id"], "trace_callbacks": ids, "why": why})
    return out


def warnings(report: dict | None, shown: int = 5) -> list[str]:
    """What `flow --deps` must say about the match of `report` (of `trace_edges`), so
    that a flow is never silently worse with the dependency file than without it:
    trace callbacks it matched nothing to (in nodes it describes they get no
    intra-node edge), its callbacks that left something undecided, that match
    callbacks of several nodes, or that are not in the trace."""
    if not report:
        return []
    out = []

    def some(names: list[str]) -> str:
        return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")

    lost = report.get("trace_unmatched") or []
    if lost:
        out.append(f"--deps: {len(lost)} trace callback(s) in the processes the dependency file describes match none of "
                   f"its callbacks: {some([_label(t) for t in lost])}; what they depend on is not known (no intra-node "
                   "edge into them in a node the file describes, the fallback rule elsewhere): analyse their sources too")
    procs = report.get("trace_processes_unmatched") or []
    if procs:
        names = [f"{p['procname']} (pid {p['pid']}, {p['callbacks']} callbacks)" for p in procs]
        out.append(f"--deps: the callbacks of {len(procs)} process(es) match nothing in the dependency file: "
                   f"{some(names)}; their nodes keep the fallback rule")
    unseen = report.get("unseen") or []
    if unseen:
        names = [f"{u['callback']} ({u['why']})" for u in unseen]
        out.append(f"--deps: {len(unseen)} callback(s) of the dependency file cannot be vouched for and keep the edges "
                   f"the trace alone gives them: {some(names)}")
    und = report.get("undecided") or []
    if und:
        names = [f"{u['callback']} ({u['why']})" for u in und]
        out.append(f"--deps: {len(und)} callback(s) of the dependency file leave accesses undecided (counted as writes; "
                   f"edges resting on them may not exist): {some(names)}")
    amb = report.get("ambiguous") or []
    if amb:
        out.append(f"--deps: {len(amb)} callback(s) of the dependency file match callbacks of several nodes and are not "
                   f"used: {some([a['callback'] for a in amb])}; their edges are missing")
    missing = report.get("unmatched") or []
    if missing:
        out.append(f"--deps: {len(missing)} callback(s) of the dependency file are not in the trace: "
                   f"{some([m['callback'] for m in missing])}")
    return out


def _label(t: dict) -> str:
    """A trace callback as `node kind(topic or period)`."""
    what = t.get("topic") or (f"{t['period_ns'] / 1e6:g} ms" if t.get("period_ns") else "")
    return f"{t.get('node') or '?'} {t.get('kind')}({what})"
