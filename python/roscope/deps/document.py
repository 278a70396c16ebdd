"""The dependency document of `roscope deps` (docs/deps.md, "The dependency
file"): per node, its callbacks with what they read, write and publish; the
edges between callbacks (B depends on A when A writes state that B reads before
B publishes); what could not be decided. `write` writes it."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from roscope.deps import bookkeeping
from roscope.deps.closure import Closure, callback_events
from roscope.deps.matching import FORMAT, FORMAT_VERSION
from roscope.deps.paths import conflict, display, generic, join, norm_root
from roscope.deps.unit import UnitData
from roscope.files import write_file
from roscope.version import __version__


def _rel(loc: str) -> str:
    """file:line:col with the file relative to the working directory when below it."""
    f, _, rest = loc.rpartition(":")
    f, _, line = f.rpartition(":")
    try:
        r = os.path.relpath(f)
        if not r.startswith(".."):
            f = r
    except ValueError:
        pass
    return f"{f}:{line}:{rest}"



def _unique_regs(units: list[UnitData]) -> tuple[list[dict], list[dict], dict[str, str]]:
    regs, pubs, inits, seen = [], [], {}, set()
    for u in units:
        for r in u.regs:
            if r["loc"] not in seen:
                seen.add(r["loc"])
                regs.append(r)
        for p in u.pubs:
            what = "ctor" if "ctor" in p else "alias" if "alias" in p else "pub"
            if (what, p["loc"]) not in seen:
                seen.add((what, p["loc"]))
                pubs.append(p)
        for k, v in u.inits.items():
            inits.setdefault(k, v)
    return regs, pubs, inits


def _ros_name(reg: dict, inits: dict[str, str]) -> str | None:
    h = reg.get("handle")
    if not h:
        return None
    if h[0] == "this":
        return inits.get(f"{h[1]}|base")
    if h[0] == "member":
        return inits.get(h[1])
    return inits.get(h[1])


#: How many pointers or references to a publisher in a row `_publisher_table` follows.
MAX_ALIASES = 8


def _publisher_table(pubs: list[dict]) -> dict:
    """Where each publisher is kept (a generic path) -> its creation; a pointer or
    reference to a publisher kept in state (`out_ = &pub_`, a member `out_(pub_)`)
    stands for the publisher it points to, through up to MAX_ALIASES of them."""
    table, aliases = {}, []

    def key(path, p):
        reg = {"cls": p["cls"], "fn_name": p["fn"], "fn": p["fn"], "param_usrs": []}
        return generic(norm_root(tuple(path), reg))

    in_ctor: dict[str, list[dict]] = {}
    for p in pubs:
        if "alias" in p:
            aliases.append(([key(d, p) for d in p["dest"]], [key(a, p) for a in p["alias"]]))
            in_ctor.setdefault(p["fn"], []).append(p)
            continue
        for d in p["dest"]:
            table.setdefault(key(d, p), p)
    for call in (p for p in pubs if "ctor" in p):  # `Sender s(&pub)` with `Sender(ros::Publisher* p) : pub_(p)`
        for al in in_ctor.get(call["ctor"], []):
            dests = [x for d in al["dest"] for x in _bind(tuple(d), call)]
            srcs = [x for a in al["alias"] for x in _bind(tuple(a), call)]
            aliases.append(([key(d, call) for d in dests], [key(a, call) for a in srcs]))
    for _ in range(MAX_ALIASES):
        added = False
        for dests, srcs in aliases:
            hit = next((table[s] for s in srcs if s in table), None)
            for d in dests:
                if hit is not None and d not in table:
                    table[d] = hit
                    added = True
        if not added:
            break
    return table


def _bind(path: tuple, call: dict) -> list[tuple]:
    """A constructor's path (rooted at its this or a parameter) at one of its calls."""
    root = path[0]
    if root == ("this",):
        bases = [(tuple(p), False) for p in call["this"]]
    elif root[0] == "param":
        bases = [(tuple(p), a) for p, a in call["args"][root[1]]] if root[1] < len(call["args"]) else []
    else:
        return [path]
    out = []
    for bp, ba in bases:
        np = join(bp, ba, path[1:])
        if np is not None:
            out.append(np)
    return out


def _summarise_callback(reg: dict, evs: list[tuple], pubtab: dict, names: dict[str, str]) -> dict:
    reads, writes, publishes, undecided, hidden = {}, {}, [], [], []
    for kind, path, loc, _order, _loops, why in sorted(evs, key=lambda e: (e[3], e[2])):
        if kind == "hidden":
            hidden.append({"why": why, "at": _rel(loc)})
            continue
        if kind == "pub":
            p = pubtab.get(generic(path))
            publishes.append({"publisher": display(generic(path), names) if path is not None else None,
                              "topic": p["topic"] if p else None,
                              "topic_expr": p["topic_expr"] if p else None, "at": _rel(loc)})
            continue
        if path is None:
            continue
        target = reads if kind == "r" else writes
        target.setdefault(display(path, names), [])
        if _rel(loc) not in target[display(path, names)]:
            target[display(path, names)].append(_rel(loc))
        if why is not None:
            undecided.append({"state": display(path, names), "access": "write" if kind == "w" else "read",
                              "at": _rel(loc), "why": why})
    seen_pub, pubs_u = set(), []
    for p in publishes:
        key = (p["publisher"], p["at"])
        if key not in seen_pub:
            seen_pub.add(key)
            pubs_u.append(p)
    return {"reads": [{"state": k, "at": v} for k, v in sorted(reads.items())],
            "writes": [{"state": k, "at": v} for k, v in sorted(writes.items())],
            "publishes": pubs_u, "undecided": _uniq_dicts(undecided),
            # what it may publish through unseen: only for a callback seen publishing nowhere
            "unseen": [] if pubs_u else _uniq_dicts(hidden)}


def _uniq_dicts(items: list[dict]) -> list[dict]:
    seen, out = set(), []
    for d in items:
        key = json.dumps(d, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _edges(cbs: list[dict], names: dict[str, str], skip: Iterable[str] = ()) -> list[dict]:
    """B depends on A when A writes state that B reads before B publishes (or, for a
    B that does not publish, state B reads when B writes what a publishing callback
    reads); with a registration in a loop, A may be B (another registration).
    Accesses of the state `skip` names (and of its parts) do not count."""
    skip = list(skip)
    shown: dict = {}

    def kept(e) -> bool:
        if e[1] is None:
            return False
        if not skip:
            return True
        if e[1] not in shown:
            shown[e[1]] = not bookkeeping.covers(skip, display(e[1], names))
        return shown[e[1]]

    for cb in cbs:
        evs = cb["_events"]
        pubs = [e for e in evs if e[0] == "pub"]
        cb["_writes"] = [e for e in evs if e[0] == "w" and kept(e)]
        last = max((e[3] for e in pubs), default=None)
        loops_with_pub = {lp for e in pubs for lp in e[4]}
        cb["_reads_all"] = [e for e in evs if e[0] == "r" and kept(e)]
        cb["_reads_pub"] = [e for e in cb["_reads_all"] if last is not None and (
            e[3] < last or loops_with_pub.intersection(e[4]))]
        cb["_publishes"] = bool(pubs)

    def feeds(a, b, reads):
        same = a is b
        found = []
        for w in a["_writes"]:
            for r in reads:
                if conflict(w[1], r[1], same):
                    found.append((w, r))
        return found

    relevant = {id(cb) for cb in cbs if cb["_publishes"]}
    changed = True
    while changed:
        changed = False
        for b in cbs:
            if id(b) in relevant:
                continue
            if any(feeds(b, c, c["_reads_pub"] if c["_publishes"] else c["_reads_all"]) for c in cbs
                   if id(c) in relevant and (c is not b or c["in_loop"])):
                relevant.add(id(b))
                changed = True
    out = []
    for a in cbs:
        for b in cbs:
            if id(b) not in relevant or (a is b and not b["in_loop"]):
                continue
            pairs = feeds(a, b, b["_reads_pub"] if b["_publishes"] else b["_reads_all"])
            if not pairs:
                continue
            state = sorted({display(r[1], names) for w, r in pairs})
            certain = any(w[5] is None and r[5] is None for w, r in pairs)
            roots = {w[1][0][0] for w, r in pairs}
            out.append({"from": a["id"], "to": b["id"], "state": state, "certain": certain,
                        "through": "member" if roots == {"obj"} else "shared",
                        "evidence": _uniq_dicts([{"write": _rel(w[2]), "read": _rel(r[2])} for w, r in pairs])[:6]})
    return out


def _callback_entry(reg: dict, cid: str, ros_name, summary: dict) -> dict:
    return {
        "id": cid, "kind": reg["kind"], "api": reg["api"],
        "topic": reg["topic"], "topic_expr": reg["topic_expr"],
        "period_ns": reg["period_ns"], "period_expr": reg["period_expr"],
        "symbol": reg.get("symbol"), "symbol_alternatives": reg.get("symbol_alternatives") or [],
        "callable": reg.get("callable_kind"), "function": reg.get("function"),
        "registered_at": _rel(reg["loc"]),
        "defined_at": _rel(reg["defined_at"]) if reg.get("defined_at") else None,
        "instances": "many" if reg["in_loop"] else "one", "ros_name": ros_name, **summary,
    }


def build(units: list[UnitData], ignore_state: Sequence[str] = (), keep_state: Sequence[str] = ()) -> dict:
    """The document of the analysed translation units. Edges leave out the bookkeeping
    state found (but that `keep_state` names) and the state `ignore_state` names."""
    clo = Closure(units)
    regs, pubs, inits = _unique_regs(units)
    pubtab = _publisher_table(pubs)
    names = clo.names
    nodes: dict[str, dict] = {}
    cbs: list[dict] = []
    ids: dict[str, int] = {}
    undecided_all, unseen_all = [], []
    for reg in sorted((r for r in regs if r["kind"] != "publisher"), key=lambda r: r["loc"]):
        evs = callback_events(clo, reg)
        node_key = reg["cls"] or reg["fn_name"]
        base = reg.get("function") or f"{node_key}::?"
        ids[base] = ids.get(base, 0) + 1
        cid = base if ids[base] == 1 else f"{base}#{ids[base]}"
        summary = _summarise_callback(reg, evs, pubtab, names)
        if reg.get("callable") is None:
            summary["undecided"].append({"state": None, "access": None, "at": _rel(reg["loc"]), "why": reg["why"]})
            summary["unseen"].append({"why": reg["why"], "at": _rel(reg["loc"])})
        elif reg["callable"] not in clo.summaries:
            why = f"no definition of {reg.get('function')} in the analysed sources: its accesses are unknown"
            summary["undecided"].append({"state": None, "access": None, "at": _rel(reg["loc"]), "why": why})
            summary["unseen"].append({"why": why, "at": _rel(reg["loc"])})
        entry = _callback_entry(reg, cid, _ros_name(reg, inits), summary)
        node = nodes.setdefault(node_key, {"name": node_key, "kind": "class" if reg["cls"] else "function",
                                           "ros_name": None, "callbacks": []})
        node["callbacks"].append(entry)
        cbs.append({"id": cid, "node": node_key, "in_loop": reg["in_loop"], "_events": evs})
        undecided_all += [dict(u, callback=cid) for u in summary["undecided"]]
        unseen_all += [dict(u, callback=cid) for u in summary["unseen"]]
    for node in nodes.values():
        rn = {cb["ros_name"] for cb in node["callbacks"]}
        node["ros_name"] = rn.pop() if len(rn) == 1 else None
    found = bookkeeping.detect(cbs, names)
    skip = sorted({b["state"] for b in found if not bookkeeping.covers(keep_state, b["state"])} | set(ignore_state))
    edges = _edges(cbs, names, skip)
    left_out = _left_out(_edges(cbs, names), edges) if skip else []
    node_of = {cb["id"]: cb["node"] for cb in cbs}
    for e in edges + left_out:
        e["cross_node"] = node_of[e["from"]] != node_of[e["to"]]
    notes = [f"no definition of {name} (called at {_rel(loc)}) in the analysed sources: decided from its declaration"
             for name, loc in sorted(clo.missing.items())]
    seen = {display(e[1], names) for cb in cbs for e in cb["_events"] if e[1] is not None and e[0] in ("r", "w")}
    notes += [f"--ignore-state {n}: no callback reads or writes state of that name (or a part of it)"
              for n in ignore_state if not any(bookkeeping.covers([n], x) for x in seen)]
    notes += [f"--keep-state {n}: no bookkeeping state of that name (or a part of it) was found"
              for n in keep_state if not any(bookkeeping.covers([n], b["state"]) for b in found)]
    return {"format": FORMAT, "version": FORMAT_VERSION, "generator": f"roscope {__version__} deps",
            "nodes": sorted(nodes.values(), key=lambda n: n["name"]), "edges": edges,
            "undecided": undecided_all, "unseen": unseen_all, "notes": notes,
            "bookkeeping": [{"state": b["state"], "node": b["node"], "callbacks": b["callbacks"],
                             "left_out": not bookkeeping.covers(keep_state, b["state"]),
                             "why": f"read and written by each of the {b['publishing']} publishing callbacks of "
                                    f"{b['node']}, through the same code ({', '.join(_rel(a) for a in b['at'])})"}
                            for b in found],
            "edges_left_out": left_out}


def _left_out(every: list[dict], kept: list[dict]) -> list[dict]:
    """The edges of `every` (all state counted) that are not in `kept`: they rest on
    bookkeeping or ignored state alone."""
    have = {(e["from"], e["to"]) for e in kept}
    return [e for e in every if (e["from"], e["to"]) not in have]



def write(doc: dict, path: str, *, force: bool = False, inputs: Iterable[str] = ()) -> None:
    """Writes the dependency document by roscope.files' rules (a new temporary file
    beside `path`, renamed when complete; an existing file replaced only with
    `force`, and only a regular file; never one of `inputs`)."""
    write_file(path, json.dumps(doc, indent=1) + "\n", force=force, inputs=inputs)
