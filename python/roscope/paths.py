"""Named end-to-end paths, as CARET users define them: a paths file (YAML) that names
paths by their topics (and optional intermediate callbacks), says which input each
node's output comes from (CARET's message contexts), and what no flow may pass
through. `roscope flow --paths FILE` and `roscope report --paths FILE` take one;
CARET's architecture file is read as one too, in every form CARET has written
(named_paths or path_name_aliases, message_contexts, variable_passings, callback
groups, executors: docs/paths.md).

roscope's format::

    paths:
      - name: sensor_to_actuator
        topics: [/topic1, /topic2, /topic3, /topic4]  # first: input, last: output, between: in order
        callbacks: [filter_node]     # optional: regexes, each matching a callback of the path
        exclude: [/debug]            # optional: regexes, as `flow --exclude`
    contexts:                        # optional: node N publishes P from its input S
      - {node: /message_driven_node, subscribe: /topic2, publish: /topic3}
    exclude: [/parameter_events]     # optional: for every path

API (a library module: no printing):

- `load(path, require_paths=True) -> PathsFile`: either format (a file with one of
  CARET's top-level keys and no `paths` is CARET's); InputError naming the file and
  the key that is wrong (and, with `require_paths`, when it names no path);
- `requests(pf, db, names=None, **options) -> list[(NamedPath, FlowRequest)]`:
  one `roscope.flow.FlowRequest` per path (its first and last topic, anchored; the
  exclusions; the contexts and variable passings as intra-node dependency edges
  between the database's callbacks, replacing the fallback on those nodes);
  `options` are other FlowRequest fields;
- `matches(named, path_text) -> bool`: a path of `roscope flow` (its `path` text)
  passes through the named path's topics in order and a callback matching each of
  its callback regexes;
- `context_edges(db, contexts)`, `passing_edges(db, passings) -> list[(callback_id,
  callback_id)]`: the intra-node dependency edges `requests` gives as the FlowRequest's
  `deps` (as a `roscope deps` file's); `callback_ids(db, CallbackRef)`.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

import yaml

from roscope import regex
from roscope.errors import InputError
from roscope.flow import FlowRequest
from roscope.text import escape

if TYPE_CHECKING:
    from roscope.database import Database

#: CARET's name for a topic or node it could not tell.
UNDEFINED = "UNDEFINED"


@dataclasses.dataclass(frozen=True)
class NamedPath:
    name: str
    topics: tuple[str, ...]  # input, intermediate topics in order, output
    callbacks: tuple[str, ...] = ()  # regexes
    exclude: tuple[str, ...] = ()
    end: tuple[str, str] | None = None  # (node, topic) of the subscription where it ends, when the file names it


@dataclasses.dataclass(frozen=True)
class Context:
    """Node `node` publishes on `publish` from its input on `subscribe` (CARET's
    use_latest_message, inherit_unique_stamp or tilde context: an intra-node dependency)."""
    node: str
    subscribe: str
    publish: str


@dataclasses.dataclass
class PathsFile:
    source: str
    paths: list[NamedPath]
    contexts: list[Context]
    exclude: tuple[str, ...] = ()
    format: str = "roscope"
    passings: list = dataclasses.field(default_factory=list)  # [Passing]: CARET's variable passings
    callback_groups: list[dict] = dataclasses.field(default_factory=list)  # CARET's: {node, name, type, callbacks}
    executors: list[dict] = dataclasses.field(default_factory=list)  # CARET's: {name, type, callback_groups}

    def named(self, names=None) -> list[NamedPath]:
        """The paths called `names` (all when None); an unknown name is an error listing them."""
        if not self.paths:
            _fail(self.source, "names no path ('paths' in roscope's format, 'named_paths' or 'path_name_aliases' "
                               "in CARET's)")
        if not names:
            return list(self.paths)
        have = {p.name: p for p in self.paths}
        unknown = [n for n in names if n not in have]
        if unknown:
            raise InputError(f"{escape(self.source)}: no path named {escape(unknown[0])!r} "
                             f"(paths: {', '.join(escape(n) for n in have) or 'none'})")
        return [have[n] for n in names]


def _fail(source: str, what: str):
    raise InputError(f"{escape(source)}: {what}")


def _strings(source: str, where: str, v) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        _fail(source, f"{where}: a list of names")
    for x in v:
        try:
            regex.compile(x, None)
        except InputError as exc:
            _fail(source, f"{where}: {exc}")
    return tuple(v)


def _roscope(source: str, doc: dict) -> PathsFile:
    paths = []
    for k in doc:
        if k not in ("paths", "contexts", "exclude"):
            _fail(source, f"{k}: unknown key (known here: paths, contexts, exclude)")
    for i, p in enumerate(doc.get("paths") or []):
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            _fail(source, f"paths[{i}]: a mapping with a name")
        for k in p:
            if k not in ("name", "topics", "callbacks", "exclude"):
                _fail(source, f"paths[{i}].{k}: unknown key (known here: name, topics, callbacks, exclude)")
        topics = p.get("topics")
        if not isinstance(topics, list) or len(topics) < 2 or not all(isinstance(t, str) and t for t in topics):
            _fail(source, f"paths[{i}] ({p['name']}): topics: a list of at least two topic names (input ... output)")
        paths.append(NamedPath(p["name"], tuple(topics), _strings(source, f"paths[{i}].callbacks", p.get("callbacks")),
                               _strings(source, f"paths[{i}].exclude", p.get("exclude"))))
    contexts = []
    for i, c in enumerate(doc.get("contexts") or []):
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in ("node", "subscribe", "publish")):
            _fail(source, f"contexts[{i}]: a mapping with node, subscribe and publish")
        for k in c:
            if k not in ("node", "subscribe", "publish"):
                _fail(source, f"contexts[{i}].{k}: unknown key (known here: node, subscribe, publish)")
        contexts.append(Context(c["node"], c["subscribe"], c["publish"]))
    return PathsFile(source, paths, contexts, _strings(source, "exclude", doc.get("exclude")))


def _defined(v) -> str | None:
    return v if isinstance(v, str) and v and v != UNDEFINED else None


# CARET's architecture file: every key its versions have written (docs/paths.md). Any
# other key is an error naming it: a file of another format, or a typo, is not read
# as a file that describes nothing.
_CARET_KEYS = ("named_paths", "path_name_aliases", "path_name_alias", "executors", "nodes")
_NODE_KEYS = ("node_name", "callbacks", "callback_groups", "variable_passings", "callback_dependencies",
              "publishes", "publish", "subscribes", "message_contexts")
_CALLBACK_KEYS = ("callback_name", "callback_type", "type", "topic_name", "service_name", "period_ns", "symbol",
                  "construction_order")
#: CARET's callback types -> the kind in the trace (callbacks_info.kind).
CALLBACK_KINDS = {"subscription_callback": "subscription", "timer_callback": "timer", "service_callback": "service"}
#: CARET's message context types: each makes the node's output depend on its input.
CONTEXT_TYPES = ("use_latest_message", "inherit_unique_stamp", "callback_chain", "tilde")


@dataclasses.dataclass(frozen=True)
class CallbackRef:
    """A callback as CARET's file describes it: its node, its name there, its kind in
    the trace (subscription, timer, service) and what tells it apart there (its topic
    or service, its period)."""
    node: str
    name: str
    kind: str
    topic: str | None = None
    period_ns: int | None = None

    def label(self) -> str:
        """A regex matching this callback in a `roscope flow` path text."""
        return f"^{re.escape(self.node)} {self.kind}" + (f"\\({re.escape(self.topic)}\\)" if self.topic else "") + "$"


@dataclasses.dataclass(frozen=True)
class Passing:
    """Callback `read` of a node uses what callback `write` of it left (CARET's variable
    passing, or a step of a callback_chain context): `read` depends on `write`."""
    write: CallbackRef
    read: CallbackRef


class _Caret:
    """One pass over CARET's architecture file, every error naming the file and the key."""

    def __init__(self, source: str, doc: dict):
        self.source = source
        self._keys("", doc, _CARET_KEYS)
        self.callbacks: dict[tuple[str, str], CallbackRef] = {}
        self.publishes: dict[tuple[str, str], list[str]] = {}
        self.contexts: list[Context] = []
        self.passings: list[Passing] = []
        self.callback_groups: list[dict] = []
        self.executors: list[dict] = []
        nodes = self._list("nodes", doc.get("nodes"))
        for i, n in enumerate(nodes):
            if not isinstance(n, dict) or not isinstance(n.get("node_name"), str) or not n["node_name"]:
                self.fail(f"nodes[{i}].node_name", "a name expected")
            self._keys(f"nodes[{i}] ({n['node_name']})", n, _NODE_KEYS)
            self._callbacks(f"nodes[{i}] ({n['node_name']})", n)
        for i, n in enumerate(nodes):
            self._node(f"nodes[{i}] ({n['node_name']})", n)
        for i, e in enumerate(self._list("executors", doc.get("executors"))):
            self._keys(f"executors[{i}]", e, ("executor_type", "executor_name", "callback_group_names"),
                       ("executor_type", "executor_name"))
            self.executors.append({"name": e["executor_name"], "type": e["executor_type"],
                                   "callback_groups": self._names(f"executors[{i}].callback_group_names",
                                                                  e.get("callback_group_names"))})
        self.paths = [self._named_path(f"named_paths[{i}]", p) for i, p in enumerate(self._list("named_paths", doc.get("named_paths")))]
        for key in ("path_name_aliases", "path_name_alias"):
            self.paths += [self._alias(f"{key}[{i}]", p) for i, p in enumerate(self._list(key, doc.get(key)))]

    def fail(self, where: str, what: str):
        _fail(self.source, f"{where}: {what}")

    def _keys(self, where: str, v, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> None:
        if not isinstance(v, dict):
            self.fail(where or "the file", "a mapping expected")
        for k in v:
            if k not in allowed:
                self.fail(f"{where}.{k}" if where else str(k), f"unknown key (known here: {', '.join(allowed)})")
        for k in required:
            if not isinstance(v.get(k), str) or not v[k]:
                self.fail(f"{where}.{k}", "a name expected")

    def _list(self, where: str, v) -> list:
        if v is None:
            return []
        if not isinstance(v, list):
            self.fail(where, "a list expected")
        return v

    def _names(self, where: str, v) -> list[str]:
        v = self._list(where, v)
        if not all(isinstance(x, str) and x for x in v):
            self.fail(where, "a list of names expected")
        return v

    def _callbacks(self, where: str, n: dict) -> None:
        node = n["node_name"]
        for j, cb in enumerate(self._list(f"{where}.callbacks", n.get("callbacks"))):
            w = f"{where}.callbacks[{j}]"
            self._keys(w, cb, _CALLBACK_KEYS, ("callback_name",))
            ctype = cb.get("callback_type", cb.get("type"))
            if ctype not in CALLBACK_KINDS:
                self.fail(f"{w}.callback_type", f"{ctype!r}: not one of {', '.join(CALLBACK_KINDS)}")
            kind = CALLBACK_KINDS[ctype]
            topic = cb.get("topic_name") if kind == "subscription" else cb.get("service_name") if kind == "service" else None
            if kind != "timer" and not _defined(topic):
                self.fail(f"{w}.{'topic_name' if kind == 'subscription' else 'service_name'}", "a name expected")
            period = cb.get("period_ns")
            if kind == "timer" and (isinstance(period, bool) or not isinstance(period, int) or period <= 0):
                self.fail(f"{w}.period_ns", "a positive whole number of nanoseconds expected")
            self.callbacks[(node, cb["callback_name"])] = CallbackRef(node, cb["callback_name"], kind, topic,
                                                                      period if kind == "timer" else None)

    def callback(self, where: str, node: str, name) -> CallbackRef | None:
        """The node's callback called `name` (None for UNDEFINED)."""
        if name == UNDEFINED:
            return None
        if not isinstance(name, str) or (node, name) not in self.callbacks:
            self.fail(where, f"{name!r}: no callback of {node} by that name in the file")
        return self.callbacks[(node, name)]

    def _node(self, where: str, n: dict) -> None:
        node = n["node_name"]
        for key in ("publishes", "publish"):  # `publish`: CARET's first files
            for j, p in enumerate(self._list(f"{where}.{key}", n.get(key))):
                w = f"{where}.{key}[{j}]"
                self._keys(w, p, ("topic_name", "callback_name", "callback_names", "construction_order"), ("topic_name",))
                names = self._names(f"{w}.callback_names", p.get("callback_names")) + \
                    ([p["callback_name"]] if p.get("callback_name") is not None else [])
                for name in names:
                    cb = self.callback(f"{w}.callback_name", node, name)
                    if cb:
                        self.publishes.setdefault((node, cb.name), []).append(p["topic_name"])
                        if cb.kind == "subscription" and _defined(p["topic_name"]):  # its own input -> this output
                            self.contexts.append(Context(node, cb.topic, p["topic_name"]))
        for j, s in enumerate(self._list(f"{where}.subscribes", n.get("subscribes"))):
            self._keys(f"{where}.subscribes[{j}]", s, ("topic_name", "callback_name", "construction_order"), ("topic_name",))
            self.callback(f"{where}.subscribes[{j}].callback_name", node, s.get("callback_name", UNDEFINED))
        for key, (wk, rk) in (("variable_passings", ("callback_name_write", "callback_name_read")),
                              ("callback_dependencies", ("callback_name_from", "callback_name_to"))):
            for j, v in enumerate(self._list(f"{where}.{key}", n.get(key))):
                w = f"{where}.{key}[{j}]"
                self._keys(w, v, (wk, rk), (wk, rk))
                a, b = self.callback(f"{w}.{wk}", node, v[wk]), self.callback(f"{w}.{rk}", node, v[rk])
                if a and b:
                    self.passings.append(Passing(a, b))
        for j, c in enumerate(self._list(f"{where}.message_contexts", n.get("message_contexts"))):
            w = f"{where}.message_contexts[{j}]"
            self._keys(w, c, ("context_type", "subscription_topic_name", "publisher_topic_name", "callbacks",
                              "publisher_construction_order", "subscription_construction_order"),
                       ("context_type", "subscription_topic_name", "publisher_topic_name"))
            ctype = c["context_type"]
            if ctype != UNDEFINED and ctype not in CONTEXT_TYPES:
                self.fail(f"{w}.context_type", f"{ctype!r}: not one of {', '.join(CONTEXT_TYPES)} or {UNDEFINED}")
            chain = [self.callback(f"{w}.callbacks", node, x) for x in self._names(f"{w}.callbacks", c.get("callbacks"))]
            sub, pub = _defined(c["subscription_topic_name"]), _defined(c["publisher_topic_name"])
            if ctype == "callback_chain":  # through the callbacks it names, else the node's variable passings
                self.passings += [Passing(a, b) for a, b in zip(chain, chain[1:]) if a and b]
            elif ctype != UNDEFINED and sub and pub:
                self.contexts.append(Context(node, sub, pub))
        for j, g in enumerate(self._list(f"{where}.callback_groups", n.get("callback_groups"))):
            w = f"{where}.callback_groups[{j}]"
            self._keys(w, g, ("callback_group_type", "callback_group_name", "callback_names"),
                       ("callback_group_type", "callback_group_name"))
            self.callback_groups.append({"node": node, "name": g["callback_group_name"], "type": g["callback_group_type"],
                                         "callbacks": [self.callback(f"{w}.callback_names", node, x).name
                                                       for x in self._names(f"{w}.callback_names", g.get("callback_names"))
                                                       if x != UNDEFINED]})

    def _named_path(self, where: str, p) -> NamedPath:
        """CARET's named path (`named_paths`): its node_chain's topics in order."""
        self._keys(where, p, ("path_name", "node_chain"), ("path_name",))
        topics: list[str] = []
        for j, n in enumerate(self._list(f"{where}.node_chain", p.get("node_chain"))):
            self._keys(f"{where}.node_chain[{j}]", n, ("node_name", "publish_topic_name", "subscribe_topic_name",
                                                       "publisher_construction_order", "subscription_construction_order"),
                       ("node_name",))
            for t in (_defined(n.get("subscribe_topic_name")), _defined(n.get("publish_topic_name"))):
                if t and (not topics or topics[-1] != t):
                    topics.append(t)
        if len(topics) < 2:
            self.fail(f"{where} ({p['path_name']})", "its node_chain names fewer than two topics")
        return NamedPath(p["path_name"], tuple(topics))

    def _alias(self, where: str, p) -> NamedPath:
        """CARET's first named path (`path_name_aliases`): its chain of callbacks, each
        `/node/callback_name`. The topics are those the chain's subscriptions take from
        another node (and what its last callback publishes, when it publishes one
        topic); every callback up to the last topic must be on the path; a last
        subscription is where the path ends (CARET's response time ends at its start)."""
        self._keys(where, p, ("path_name", "callbacks"), ("path_name",))
        by_unique = {f"{node}/{name}": cb for (node, name), cb in self.callbacks.items()}
        by_unique.update({name: cb for (_node, name), cb in self.callbacks.items() if name.startswith("/")})
        chain = []
        for x in self._names(f"{where}.callbacks", p.get("callbacks")):
            if x not in by_unique:
                self.fail(f"{where}.callbacks", f"{x!r}: no callback of the file's nodes by that name")
            chain.append(by_unique[x])
        topics, on_path, end = [], [], None
        for i, cb in enumerate(chain):
            if cb.kind == "subscription" and i and chain[i - 1].node != cb.node:
                topics.append(cb.topic)
            elif cb.kind == "subscription" and not i:
                topics.append(cb.topic)
            on_path.append(cb)
        if chain and chain[-1].kind == "subscription" and len(chain) > 1 and chain[-2].node != chain[-1].node:
            end = chain[-1]
            on_path.pop()
        elif chain:
            out = sorted(set(self.publishes.get((chain[-1].node, chain[-1].name), [])))
            if len(out) > 1:
                self.fail(f"{where}.callbacks", f"its last callback {chain[-1].node}/{chain[-1].name} publishes "
                                                f"{', '.join(out)}: the path's output cannot be told")
            topics += [t for t in out if not topics or topics[-1] != t]
        if len(topics) < 2:
            self.fail(f"{where} ({p['path_name']})", "its callbacks pass fewer than two topics")
        return NamedPath(p["path_name"], tuple(topics), tuple(dict.fromkeys(cb.label() for cb in on_path)),
                         end=(end.node, end.topic) if end else None)


def _caret(source: str, doc: dict) -> PathsFile:
    """CARET's architecture file, every form its versions wrote (docs/paths.md)."""
    c = _Caret(source, doc)
    return PathsFile(source, c.paths, list(dict.fromkeys(c.contexts)), format="caret",
                     passings=list(dict.fromkeys(c.passings)), callback_groups=c.callback_groups, executors=c.executors)


def load(path: str, require_paths: bool = True) -> PathsFile:
    """A paths file, roscope's or CARET's architecture file (module docstring);
    `require_paths`: a file that names no path is an error."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise InputError(f"{escape(path)}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{escape(path)}: not YAML ({escape(str(exc).splitlines()[0])})") from None
    if not isinstance(doc, dict):
        _fail(path, "not a paths file: a mapping with 'paths' (roscope) or 'named_paths' (CARET) expected")
    caret = "paths" not in doc and any(k in doc for k in _CARET_KEYS)
    pf = _caret(path, doc) if caret else _roscope(path, doc)
    if require_paths and not pf.paths:
        _fail(path, "names no path ('paths' in roscope's format, 'named_paths' or 'path_name_aliases' in CARET's)")
    return pf


def context_edges(db: Database, contexts: list[Context]) -> list[tuple[int, int]]:
    """The contexts as (callback_id A, callback_id B) pairs, B depending on A (as
    `roscope deps`' edges): A a callback of the node subscribed to `subscribe`, B a
    callback of the node whose runs published on `publish`."""
    out: set[tuple[int, int]] = set()
    for c in contexts:
        subs = [r[0] for r in db.con.execute(
            "SELECT callback_id FROM callbacks_info WHERE node = ? AND topic = ?", [c.node, c.subscribe]).fetchall()]
        pubs = [r[0] for r in db.con.execute("""
            SELECT DISTINCT r.callback_id FROM publications_info p JOIN callback_runs r ON r.run_id = p.run_id
            JOIN callbacks_info c ON c.callback_id = r.callback_id WHERE c.node = ? AND p.topic = ?""",
            [c.node, c.publish]).fetchall()]
        out.update((int(a), int(b)) for a in subs for b in pubs if a != b)
    return sorted(out)


def callback_ids(db: Database, cb: CallbackRef) -> list[int]:
    """The database's callbacks that `cb` describes: its node's subscription to its
    topic, service of its name, or timers of its period."""
    q = "SELECT callback_id FROM callbacks_info WHERE node = ? AND kind = ?"
    args: list = [cb.node, cb.kind]
    if cb.topic is not None:
        q, args = q + " AND topic = ?", [*args, cb.topic]
    if cb.period_ns is not None:
        q, args = q + " AND period_ns = ?", [*args, cb.period_ns]
    return sorted(int(r[0]) for r in db.con.execute(q, args).fetchall())


def passing_edges(db: Database, passings: list[Passing]) -> list[tuple[int, int]]:
    """The variable passings as (callback_id A, callback_id B) pairs, B depending on A."""
    out: set[tuple[int, int]] = set()
    for p in passings:
        out.update((a, b) for a in callback_ids(db, p.write) for b in callback_ids(db, p.read) if a != b)
    return sorted(out)


def requests(pf: PathsFile, db: Database, names=None, **options) -> list[tuple[NamedPath, FlowRequest]]:
    """One FlowRequest per named path (module docstring)."""
    named = pf.named(names)
    deps = None
    if pf.contexts or pf.passings:
        deps = sorted(set(context_edges(db, pf.contexts)) | set(passing_edges(db, pf.passings)))
    if deps is not None and "deps" in options and options["deps"] is not None:
        raise InputError(f"{escape(pf.source)}: its contexts and variable passings are intra-node dependencies: "
                         "give them or --deps, not both")
    out = []
    for p in named:
        exclude = tuple(options.get("exclude") or ()) + pf.exclude + p.exclude
        opts = {**options, "exclude": exclude}
        if deps:
            opts["deps"] = deps
        out.append((p, FlowRequest(f"^{re.escape(p.topics[0])}$", f"^{re.escape(p.topics[-1])}$", **opts)))
    return out


def matches(named: NamedPath, path_text: str) -> bool:
    """`path_text` (a `roscope flow` path: `cb -> [topic] -> cb ...`) goes through the
    named path's topics in order, and has a callback matching each callback regex."""
    parts = path_text.split(" -> ")
    topics = [p[1:-1] for p in parts if p.startswith("[") and p.endswith("]")]
    callbacks = [p for p in parts if not (p.startswith("[") and p.endswith("]"))]
    it = iter(topics)
    if not all(any(t == want for t in it) for want in named.topics):
        return False
    return all(any(regex.compile(rx, "callbacks").mask(callbacks)) for rx in named.callbacks)
