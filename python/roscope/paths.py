"""Named end-to-end paths, as CARET users define them: a paths file (YAML) that names
paths by their topics (and optional intermediate callbacks), says which input each
node's output comes from (CARET's message contexts), and what no flow may pass
through. `roscope flow --paths FILE` and `roscope report --paths FILE` take one;
CARET's architecture file (what `Architecture.export` writes) is read as one too
(docs/paths.md).

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

- `load(path) -> PathsFile`: either format (a file with `named_paths` or `nodes` is
  CARET's); InputError naming the file and what is wrong;
- `requests(pf, db, names=None, **options) -> list[(NamedPath, FlowRequest)]`:
  one `roscope.flow.FlowRequest` per path (its first and last topic, anchored; the
  exclusions; the contexts as intra-node dependency edges between the database's
  callbacks, replacing the fallback on those nodes); `options` are other
  FlowRequest fields;
- `matches(named, path_text) -> bool`: a path of `roscope flow` (its `path` text)
  passes through the named path's topics in order and a callback matching each of
  its callback regexes;
- `context_edges(db, contexts) -> list[(callback_id, callback_id)]`.
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


@dataclasses.dataclass(frozen=True)
class Context:
    """Node `node` publishes on `publish` from its input on `subscribe` (CARET's
    callback_chain or use_latest_message: either way, an intra-node dependency)."""
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

    def named(self, names=None) -> list[NamedPath]:
        """The paths called `names` (all when None); an unknown name is an error listing them."""
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
    for i, p in enumerate(doc.get("paths") or []):
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            _fail(source, f"paths[{i}]: a mapping with a name")
        topics = p.get("topics")
        if not isinstance(topics, list) or len(topics) < 2 or not all(isinstance(t, str) and t for t in topics):
            _fail(source, f"paths[{i}] ({p['name']}): topics: a list of at least two topic names (input ... output)")
        paths.append(NamedPath(p["name"], tuple(topics), _strings(source, f"paths[{i}].callbacks", p.get("callbacks")),
                               _strings(source, f"paths[{i}].exclude", p.get("exclude"))))
    contexts = []
    for i, c in enumerate(doc.get("contexts") or []):
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in ("node", "subscribe", "publish")):
            _fail(source, f"contexts[{i}]: a mapping with node, subscribe and publish")
        contexts.append(Context(c["node"], c["subscribe"], c["publish"]))
    return PathsFile(source, paths, contexts, _strings(source, "exclude", doc.get("exclude")))


def _defined(v) -> str | None:
    return v if isinstance(v, str) and v and v != UNDEFINED else None


def _caret(source: str, doc: dict) -> PathsFile:
    """CARET's architecture file: named_paths (node_chain) and the nodes' message_contexts
    (also the older form: a callback's subscription topic and the topics it publishes)."""
    paths = []
    for i, p in enumerate(doc.get("named_paths") or []):
        chain = p.get("node_chain") if isinstance(p, dict) else None
        if not isinstance(chain, list) or not chain:
            _fail(source, f"named_paths[{i}]: a path_name and a node_chain")
        topics: list[str] = []
        for n in chain:
            for t in (_defined(n.get("subscribe_topic_name")), _defined(n.get("publish_topic_name"))):
                if t and (not topics or topics[-1] != t):
                    topics.append(t)
        if len(topics) < 2:
            _fail(source, f"named_paths[{i}] ({p.get('path_name')}): its node_chain names fewer than two topics")
        paths.append(NamedPath(str(p.get("path_name", f"path{i}")), tuple(topics)))
    contexts = []
    for n in doc.get("nodes") or []:
        node = n.get("node_name")
        for c in n.get("message_contexts") or []:
            sub, pub = _defined(c.get("subscription_topic_name")), _defined(c.get("publisher_topic_name"))
            if _defined(c.get("context_type")) and sub and pub:
                contexts.append(Context(node, sub, pub))
        topic_of = {cb.get("callback_name"): cb.get("topic_name") for cb in n.get("callbacks") or []}
        for pub in n.get("publishes") or []:  # the older form: callback_name(s) that publish the topic
            names = pub.get("callback_names") or ([pub["callback_name"]] if pub.get("callback_name") else [])
            for cb in names:
                sub = _defined(topic_of.get(cb))
                if sub and _defined(pub.get("topic_name")):
                    contexts.append(Context(node, sub, pub["topic_name"]))
    return PathsFile(source, paths, list(dict.fromkeys(contexts)), format="caret")


def load(path: str) -> PathsFile:
    """A paths file, roscope's or CARET's architecture file (module docstring)."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise InputError(f"{escape(path)}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{escape(path)}: not YAML ({escape(str(exc).splitlines()[0])})") from None
    if not isinstance(doc, dict):
        _fail(path, "not a paths file: a mapping with 'paths' (roscope) or 'named_paths' (CARET) expected")
    pf = _caret(path, doc) if ("named_paths" in doc or "nodes" in doc) and "paths" not in doc else _roscope(path, doc)
    if not pf.paths:
        _fail(path, "names no path ('paths' in roscope's format, 'named_paths' in CARET's)")
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


def requests(pf: PathsFile, db: Database, names=None, **options) -> list[tuple[NamedPath, FlowRequest]]:
    """One FlowRequest per named path (module docstring)."""
    deps = context_edges(db, pf.contexts) if pf.contexts else None
    if deps is not None and "deps" in options and options["deps"] is not None:
        raise InputError(f"{escape(pf.source)}: its contexts are intra-node dependencies: give them or --deps, not both")
    out = []
    for p in pf.named(names):
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
