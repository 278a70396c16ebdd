"""The data-flow graph of the report's drawn paths, laid out by Graphviz dot.

Topics are ellipses; callbacks are boxes inside one cluster per ROS node. Each edge
says how the flows cross it (`data_flow_steps.edge`): published, transport link,
no link (the newest publication on the topic: a guess), an intra-node dependency
from an annotation or `roscope deps`, or a fallback edge (guessed, dashed red).

The graph is written in DOT by the `graphviz` package (its quoting; no label is
ever taken as HTML), laid out by Debian's `dot` (run through roscope.processes,
like every process roscope starts), and drawn here as inline SVG from dot's JSON
output: every text is escaped by `esc()` and fitted to the width dot reserved for
it (`textLength`), so no two labels overlap whatever the browser's font.
"""
from __future__ import annotations

import json
import os
import shutil

from roscope import files
from roscope.extras import install_hint
from roscope.processes import group
from roscope.report.html import esc
from roscope.text import escape

try:
    import graphviz
except ImportError:  # the page says so where the graph would be
    graphviz = None

#: How each kind of step edge is drawn: (colour, dash, words).
EDGES = {
    "published": ("#f58518", "", "the callback publishes on the topic"),
    "transport": ("#4c78a8", "", "transport link: the message the callback took"),
    "newest_publication": ("#7f7f7f", "2,3", "no link: taken to be the newest publication on the topic (a guess)"),
    "annotation": ("#7b4fa0", "", "intra-node dependency from a causal-link annotation"),
    "source_analysis": ("#7b4fa0", "", "intra-node dependency from roscope deps"),
    "fallback": ("#b3261e", "7,4", "guessed: a fallback intra-node edge (nothing known about the node; may not exist)"),
}
#: When paths cross one edge in different ways, the least certain is drawn.
DOUBT = ("fallback", "newest_publication", "annotation", "source_analysis", "transport", "published")
FONT = "Helvetica"
FONT_PX = 11
LINE = 30  # characters per label line
DOT_TIMEOUT_S = 60


class LayoutError(Exception):
    """dot is missing or failed: the page says so instead of the graph."""


def wrap(text: str, width: int = LINE) -> list[str]:
    """`text` in lines of at most `width` characters, cut after a '/' or '_' where possible."""
    lines, cur = [], ""
    for part in _parts(text):
        while len(part) > width:
            if cur:
                lines.append(cur)
                cur = ""
            lines.append(part[:width])
            part = part[width:]
        if len(cur) + len(part) > width and cur:
            lines.append(cur)
            cur = ""
        cur += part
    if cur or not lines:
        lines.append(cur)
    return lines


def _parts(text: str) -> list[str]:
    out, cur = [], ""
    for ch in text:
        cur += ch
        if ch in "/_ ":
            out.append(cur)
            cur = ""
    return out + ([cur] if cur else [])


def _label(text: str) -> str:
    """A DOT label: control characters shown, backslashes kept literal, lines wrapped."""
    return graphviz.nohtml("\n".join(graphviz.escape(x) for x in wrap(escape(text))))


def dot_graph(step_lists: list[list[dict]], labels: dict[int, str]) -> tuple[object, dict, dict]:
    """The DOT graph of the paths (`step_lists`: each path's steps, as
    queries.representative_steps gives them), and per node and per edge what the
    drawing needs: {name: (kind, hover)}, {(tail, head): (edge kind, paths)}."""
    nodes: dict[str, tuple[str, str]] = {}
    clusters: dict[str, list[tuple[str, str]]] = {}
    topics: dict[str, str] = {}
    edges: dict[tuple[str, str], list] = {}
    for steps in step_lists:
        prev = None
        for s in steps:
            if s["is_run"]:
                name = f"c{s['callback_id']}"
                what = s.get("cb_topic") or (f"{s['period_ns'] / 1e6:g} ms" if s.get("period_ns") else "")
                if name not in nodes:
                    nodes[name] = ("callback", labels.get(s["callback_id"], "?"))
                    clusters.setdefault(s.get("node") or "?", []).append((name, f"{s.get('kind') or '?'} {what}".strip()))
            else:
                topic = s.get("topic") or "?"
                name = topics.setdefault(topic, f"t{len(topics)}")
                nodes.setdefault(name, ("topic", topic))
            if prev is not None:
                e = edges.setdefault((prev, name), [s.get("edge") or "", 0])
                kind = s.get("edge") or ""
                if kind in DOUBT and (e[0] not in DOUBT or DOUBT.index(kind) < DOUBT.index(e[0])):
                    e[0] = kind
                e[1] += 1
            prev = name
    g = graphviz.Digraph(graph_attr={"rankdir": "LR", "fontname": FONT, "fontsize": str(FONT_PX), "nodesep": "0.18",
                                     "ranksep": "0.35", "margin": "0", "labeljust": "l"},
                         node_attr={"fontname": FONT, "fontsize": str(FONT_PX), "margin": "0.08,0.04", "height": "0.3"},
                         edge_attr={"arrowsize": "0.6"})
    for i, (node, members) in enumerate(sorted(clusters.items())):
        with g.subgraph(name=f"cluster_{i}", graph_attr={"label": _label(node)}) as c:
            for name, text in members:
                c.node(name, _label(text), shape="box")
    for topic, name in topics.items():
        g.node(name, _label(topic), shape="ellipse")
    for (a, b), (kind, _n) in edges.items():
        g.edge(a, b, style="dashed" if kind in ("fallback", "newest_publication") else "solid")
    return g, nodes, {k: tuple(v) for k, v in edges.items()}


def layout(source: str) -> dict:
    """dot's JSON layout of DOT text `source`, run through roscope.processes."""
    dot = shutil.which("dot")
    if dot is None:
        raise LayoutError("Graphviz is not installed (the `dot` program; Debian: apt-get install graphviz)")
    d = files.private_dir(files.temp_root(), "roscope-dot-")  # dot's files, made by roscope.files' rules
    try:
        src, out = os.path.join(d, "graph.dot"), os.path.join(d, "graph.json")
        with files.new_file(src) as f:
            f.write(source.encode("utf-8"))
        with open(src, "rb") as fin, files.new_file(out) as fout:
            rc = group.run("graphviz-dot", [dot, "-Tjson"], DOT_TIMEOUT_S, stdin=fin, stdout=fout)
        if rc != 0:
            raise LayoutError(f"Graphviz dot failed (exit status {rc})" if rc is not None else
                              f"Graphviz dot did not finish within {DOT_TIMEOUT_S} s")
        with open(out, encoding="utf-8") as f:
            return json.load(f)
    finally:
        files.remove_private_dir(d)


def _f(v: float) -> str:
    return f"{v:.1f}"


class _Svg:
    """dot's coordinates (points, y up) to SVG's (px, y down), with a margin."""

    def __init__(self, bb: str, pad: float = 6):
        x0, y0, x1, y1 = (float(v) for v in bb.split(","))
        self.h, self.pad = y1, pad
        self.width, self.height = x1 - x0 + 2 * pad, y1 - y0 + 2 * pad

    def x(self, v: float) -> float:
        return v + self.pad

    def y(self, v: float) -> float:
        return self.h - v + self.pad

    def texts(self, ops: list[dict], cls: str) -> str:
        out = []
        for op in ops or []:
            if op.get("op") != "T":
                continue
            x, y = op["pt"]
            anchor = {"l": "start", "r": "end"}.get(op.get("align"), "middle")
            out.append(f'<text class="{cls}" x="{_f(self.x(x))}" y="{_f(self.y(y))}" text-anchor="{anchor}" '
                       f'textLength="{_f(op["width"])}" lengthAdjust="spacingAndGlyphs">{esc(op["text"])}</text>')
        return "".join(out)


def _node_svg(s: _Svg, o: dict, kind: str, hover: str) -> str:
    x, y = (float(v) for v in o["pos"].split(","))
    w, h = float(o["width"]) * 72, float(o["height"]) * 72
    cx, cy = s.x(x), s.y(y)
    if kind == "topic":
        shape = f'<ellipse cx="{_f(cx)}" cy="{_f(cy)}" rx="{_f(w / 2)}" ry="{_f(h / 2)}"/>'
    else:
        shape = f'<rect x="{_f(cx - w / 2)}" y="{_f(cy - h / 2)}" width="{_f(w)}" height="{_f(h)}" rx="4"/>'
    return f'<g class="gnode {kind}"><title>{esc(hover)}</title>{shape}{s.texts(o.get("_ldraw_"), "glabel")}</g>'


def _edge_svg(s: _Svg, e: dict, kind: str, paths: int) -> str:
    colour, dash, words = EDGES.get(kind, ("#555", "", kind or "edge"))
    d = ""
    for op in e.get("_draw_", []):
        if op.get("op") in ("b", "B"):
            pts = [(s.x(x), s.y(y)) for x, y in op["points"]]
            d += f"M{_f(pts[0][0])},{_f(pts[0][1])}" + "".join(
                f" C{_f(a[0])},{_f(a[1])} {_f(b[0])},{_f(b[1])} {_f(c[0])},{_f(c[1])}"
                for a, b, c in zip(pts[1::3], pts[2::3], pts[3::3]))
    head = ""
    for op in e.get("_hdraw_", []):
        if op.get("op") in ("P", "p"):
            head = '<polygon points="' + " ".join(f"{_f(s.x(x))},{_f(s.y(y))}" for x, y in op["points"]) + '"/>'
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    tip = f"{words} ({paths} path{'s' if paths != 1 else ''})"
    return (f'<g class="gedge {esc(kind)}" stroke="{colour}" fill="{colour}"><title>{esc(tip)}</title>'
            f'<path d="{d}" fill="none"{dash_attr}/>{head}</g>')


def svg(lay: dict, nodes: dict, edges: dict) -> str:
    """The SVG drawing of dot's layout `lay` (module docstring)."""
    s = _Svg(lay["bb"])
    by_id = {o["_gvid"]: o for o in lay.get("objects", [])}
    parts = []
    for o in lay.get("objects", []):
        if "bb" in o and "pos" not in o:  # a cluster: one ROS node
            x0, y0, x1, y1 = (float(v) for v in o["bb"].split(","))
            parts.append(f'<g class="gcluster"><rect x="{_f(s.x(x0))}" y="{_f(s.y(y1))}" width="{_f(x1 - x0)}" '
                         f'height="{_f(y1 - y0)}" rx="6"/>{s.texts(o.get("_ldraw_"), "gclabel")}</g>')
    for e in lay.get("edges", []):
        key = (by_id[e["tail"]]["name"], by_id[e["head"]]["name"])
        kind, paths = edges.get(key, ("", 0))
        parts.append(_edge_svg(s, e, kind, paths))
    for o in lay.get("objects", []):
        if "pos" in o and o.get("name") in nodes:
            kind, hover = nodes[o["name"]]
            parts.append(_node_svg(s, o, kind, hover))
    return (f'<svg class="dot-graph" xmlns="http://www.w3.org/2000/svg" width="{_f(s.width)}" height="{_f(s.height)}" '
            f'viewBox="0 0 {_f(s.width)} {_f(s.height)}" font-family="{FONT}, Arial, sans-serif" font-size="{FONT_PX}">'
            + "".join(parts) + "</svg>")


def legend(kinds: set[str]) -> str:
    items = []
    for k in DOUBT[::-1]:
        if k in kinds:
            colour, dash, words = EDGES[k]
            line = (f'<svg width="34" height="10"><line x1="1" y1="5" x2="33" y2="5" stroke="{colour}" stroke-width="2"'
                    + (f' stroke-dasharray="{dash}"' if dash else "") + "/></svg>")
            items.append(f'<span class="gl-item">{line} {esc(words)}</span>')
    return '<div class="graph-legend">' + "".join(items) + "</div>"


def path_graph(step_lists: list[list[dict]], labels: dict[int, str]) -> str:
    """The HTML of the graph of `step_lists` (a box that scrolls when the graph is
    larger), or a note saying why it could not be drawn."""
    if graphviz is None:
        return ('<p class="note">The data-flow graph is not drawn: the <code>graphviz</code> Python package is not '
                f"installed ({install_hint('graphviz')}).</p>")
    g, nodes, edges = dot_graph(step_lists, labels)
    if not nodes:
        return '<p class="note">No path to draw.</p>'
    try:
        lay = layout(g.source)
    except LayoutError as exc:
        return f'<p class="note">The data-flow graph is not drawn: {esc(exc)}.</p>'
    return f'<div class="graph-box">{svg(lay, nodes, edges)}</div>' + legend({k for k, _ in edges.values()})
