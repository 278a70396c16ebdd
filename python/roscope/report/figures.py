"""Plotly figure specifications (plain dicts: {"data": [...], "layout": {...}})
built from data that queries.py already aggregated or sampled.

Plotly renders text in labels, ticks and hovers with a few HTML tags, so every
string that comes from a trace goes through `t()` (HTML-escaped, control
characters shown) before it reaches a figure.

Layout rules every figure keeps: a plot with one row per item grows with its rows
(ROW_PX each) and labels every row (one tick per category); a legend sits above the
plot area, never beside an axis title; a log axis starts at the smallest value
drawn, and a zero on it is drawn at that floor (the caption says so).
"""
from __future__ import annotations

import html as _html
import math

from roscope.report import names
from roscope.text import escape

KIND_COLOURS = {"communication": "#4c78a8", "computation": "#f58518", "idle": "#bab0ac"}
EDGE_COLOURS = {"subscribes": "#4c78a8", "publishes": "#f58518", "implicit": "#b279a2"}
OTHER_COLOURS = ["#54a24b", "#e45756", "#72b7b2", "#9d755d", "#ff9da6", "#79706e"]
FLOW_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d", "#eeca3b"]
RUN_COLOUR = "#e45756"
#: Height of one labelled row of a categorical plot (px), and the margins around the rows.
ROW_PX = 24
TOP_PX, BOTTOM_PX = 60, 60


def t(s, limit: int | None = None) -> str:
    """A trace string made safe for a Plotly label or hover (a long one cut: report.names)."""
    s = "-" if s is None else escape(names.cut(s) if isinstance(s, str) else s)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return _html.escape(s, quote=False)


def ms(ns) -> float | None:
    return None if ns is None else round(float(ns) / 1e6, 6)


def rows_height(n: int, top: int = TOP_PX, bottom: int = BOTTOM_PX, row: int = ROW_PX) -> int:
    """The height of a plot with `n` labelled rows: every row gets `row` px."""
    return top + bottom + row * max(n, 1)


def _layout(title: str, height: int = 420, **kw) -> dict:
    lay = {
        "title": {"text": title, "font": {"size": 15}, "x": 0, "xanchor": "left", "xref": "paper", "y": 1,
                  "yref": "container", "yanchor": "top", "pad": {"t": 10}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": TOP_PX, "b": BOTTOM_PX},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "plot_bgcolor": "#fbfbfb",
        "hoverlabel": {"align": "left"},
    }
    lay.update(kw)
    return lay


def legend_on_top(lay: dict) -> dict:
    """The legend in one row above the plot area, under the title: never over an axis title."""
    lay["legend"] = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1, "yanchor": "bottom", "traceorder": "normal"}
    lay["margin"]["t"] = max(lay["margin"]["t"], 80)
    lay["showlegend"] = True
    return lay


def every_row(labels: list[str], reverse: bool = True) -> dict:
    """A categorical y axis that labels every one of `labels` (top to bottom)."""
    return {"automargin": True, "type": "category", "tickmode": "linear", "dtick": 1, "categoryorder": "array",
            "categoryarray": list(reversed(labels)) if reverse else list(labels)}


def log_floor(values) -> float | None:
    """The floor of a log axis over `values` (ms), or None for a linear axis: a log axis
    when the positive values span more than 200x; its floor is the largest power of ten
    at or below the smallest positive value."""
    v = [x for x in values if x is not None and x > 0]
    if not v or max(v) / min(v) <= 200:
        return None
    return 10 ** math.floor(math.log10(min(v)))


def _log_axis(floor: float | None, values) -> dict:
    if floor is None:
        return {}
    top = max(x for x in values if x is not None and x > 0)
    return {"type": "log", "range": [math.log10(floor) - 0.05, math.log10(top) + 0.1]}


def _floored(values: list, floor: float | None) -> list:
    if floor is None:
        return values
    return [None if v is None else max(v, floor) for v in values]


def quartile_boxes(labels: list[str], stats: list[dict], title: str, axis: str, sort_orders: dict[str, list[str]] | None = None,
                   prefix: str = "") -> dict:
    """Horizontal box plots drawn from precomputed statistics (whiskers at min and max).
    On a log axis a 0 (e.g. a min of 0.000 ms) is drawn at the axis' floor
    (`layout.meta.log_floor`, for the caption)."""
    g = lambda s, k: ms(s.get(f"{prefix}{k}_ns"))  # noqa: E731
    keys = ("p25", "p50", "p75", "min", "max", "mean", "p99")
    cols = {k: [g(s, k) for s in stats] for k in keys}
    floor = log_floor([v for k in keys for v in cols[k]])
    cols = {k: _floored(v, floor) for k, v in cols.items()}
    trace = {
        "type": "box", "orientation": "h", "name": "", "y": labels, "boxpoints": False,
        "q1": cols["p25"], "median": cols["p50"], "q3": cols["p75"], "lowerfence": cols["min"], "upperfence": cols["max"],
        "mean": cols["mean"], "marker": {"color": "#4c78a8"}, "hoverinfo": "x+y",
    }
    p99 = {"type": "scatter", "mode": "markers", "name": "p99", "y": labels, "x": cols["p99"],
           "marker": {"symbol": "line-ns-open", "size": 12, "color": "#e45756"}, "hovertemplate": "p99 %{x} ms<extra></extra>"}
    order = sort_orders or {}
    first = next(iter(order.values()), labels)
    lay = _layout(title, rows_height(len(labels), top=80 if len(order) > 1 else TOP_PX), showlegend=False,
                  xaxis={"title": {"text": axis}, **_log_axis(floor, [v for k in keys for v in cols[k]])},
                  yaxis=every_row(first), meta={"log_floor": floor})
    if len(order) > 1:
        lay["updatemenus"] = [{
            "type": "buttons", "direction": "right", "x": 1, "y": 1.0, "yanchor": "bottom", "xanchor": "right", "pad": {"b": 8},
            "buttons": [{"label": name, "method": "relayout", "args": [{"yaxis.categoryarray": list(reversed(o))}]}
                        for name, o in order.items()],
        }]
        lay["margin"]["t"] = 80
    return {"data": [trace, p99], "layout": lay}


def floor_note(fig: dict) -> str:
    """The caption's words for a log axis' floor, if the figure has one."""
    floor = fig["layout"].get("meta", {}).get("log_floor")
    return "" if floor is None else (f" Log axis: a value of 0 (or below {floor:g} ms) is drawn at {floor:g} ms, "
                                     "where the axis starts.")


def bars(labels: list[str], values: list, title: str, axis: str, colour: str = "#4c78a8", hover: list[str] | None = None) -> dict:
    tr = {"type": "bar", "orientation": "h", "y": labels, "x": values, "marker": {"color": colour}}
    if hover is not None:
        tr["hovertext"] = hover
        tr["hoverinfo"] = "text+x"
    lay = _layout(title, rows_height(len(labels)), showlegend=False, xaxis={"title": {"text": axis}}, yaxis=every_row(labels))
    return {"data": [tr], "layout": lay}


def timers(labels: list[str], stats: list[dict], nominal: list, title: str) -> dict:
    fig = quartile_boxes(labels, stats, title, "period (ms)")
    floor = fig["layout"]["meta"]["log_floor"]
    fig["data"].append({"type": "scatter", "mode": "markers", "name": "nominal period", "y": labels,
                        "x": _floored([ms(n) for n in nominal], floor),
                        "marker": {"symbol": "diamond-open", "size": 10, "color": "#54a24b"},
                        "hovertemplate": "nominal %{x} ms<extra></extra>"})
    fig["data"][1]["showlegend"] = True
    fig["data"][0]["showlegend"] = False
    legend_on_top(fig["layout"])
    return fig


def utilization(labels: list[str], shares: dict[str, list], title: str, colours: dict[str, str]) -> dict:
    data = [{"type": "bar", "orientation": "h", "name": k, "y": labels, "x": [round(100 * (x or 0), 3) for x in v],
             "marker": {"color": colours.get(k, "#888")}} for k, v in shares.items()]
    lay = _layout(title, rows_height(len(labels), top=80), barmode="stack",
                  xaxis={"title": {"text": "% of the thread's traced time"}, "range": [0, 100]}, yaxis=every_row(labels))
    return {"data": data, "layout": legend_on_top(lay)}


def violins(samples: list[tuple[str, list[float], int]], title: str) -> dict:
    """One violin per path: (label, latencies in ms, flows it was drawn from)."""
    data = [{"type": "violin", "name": label, "x": v, "orientation": "h", "box": {"visible": True}, "meanline": {"visible": True},
             "points": False, "hoveron": "violins+kde", "spanmode": "hard"} for label, v, _n in samples]
    labels = [s[0] for s in samples]
    values = [x for _l, v, _n in samples for x in v]
    floor = log_floor(values)
    if floor is not None:
        for d in data:
            d["x"] = _floored(d["x"], floor)
    lay = _layout(title, rows_height(len(samples), row=56), showlegend=False,
                  xaxis={"title": {"text": "end-to-end latency (ms)" + (", log axis" if floor else "")},
                         **_log_axis(floor, values)}, yaxis=every_row(labels), meta={"log_floor": floor})
    return {"data": data, "layout": lay}


def breakdown(paths: list[tuple[str, list[dict]]], title: str) -> dict:
    """Stacked bars: per path, its elements in order, each the mean time of its kind, as
    a share of the path's total (so that every path reads, whatever its latency).
    Each segment is labelled inside with its number in the path, and its mean when
    wide enough (a segment too narrow for its label hides it; the element table lists
    them all)."""
    data, shown = [], set()
    for label, elements in paths:
        total = sum(ms(e["mean_ns"]) or 0 for e in elements) or 1
        for i, e in enumerate(elements, 1):
            kind = e["kind"]
            value = ms(e["mean_ns"]) or 0
            share = 100 * value / total
            text = f"{i}. {e.get('short') or kind} {value:.3g} ms" if share > 12 else f"{i}"
            data.append({"type": "bar", "orientation": "h", "y": [label], "x": [round(share, 4)], "name": kind,
                         "legendgroup": kind, "showlegend": kind not in shown, "marker": {"color": KIND_COLOURS[kind],
                         "line": {"color": "white", "width": 1}}, "text": [text], "textposition": "inside",
                         "insidetextanchor": "middle", "textfont": {"size": 11}, "constraintext": "both",
                         "hovertext": [f"{i}. {e['label']}: {value:.4g} ms ({share:.1f} %)"], "hoverinfo": "text"})
            shown.add(kind)
    labels = [p[0] for p in paths]
    lay = _layout(title, rows_height(len(paths), top=80, row=46), barmode="stack",
                  xaxis={"title": {"text": "share of the path's mean latency (%), its elements in order"}, "range": [0, 100]},
                  yaxis=every_row(labels),
                  uniformtext={"minsize": 9, "mode": "hide"})
    return {"data": data, "layout": legend_on_top(lay)}


def stacked(labels: list[str], parts: dict[str, tuple[str, list]], title: str, axis: str, hover: list[str]) -> dict:
    """Horizontal stacked bars, one per label: `parts` {name: (colour, values in ms)} in stacking order;
    `hover` (trace text, made safe here) per bar."""
    hv = [t(h) for h in hover]
    data = [{"type": "bar", "orientation": "h", "name": name, "y": labels, "x": [v or 0 for v in values],
             "marker": {"color": colour, "line": {"color": "white", "width": 1}}, "customdata": hv,
             "hovertemplate": f"{name}: %{{x}} ms<br>%{{customdata}}<extra></extra>"} for name, (colour, values) in parts.items()]
    lay = _layout(title, rows_height(len(labels), top=80), barmode="stack", xaxis={"title": {"text": axis}},
                  yaxis=every_row(labels))
    return {"data": data, "layout": legend_on_top(lay)}


def message_flow(lanes: list[str], flows: list[list[tuple[float, int]]], hover: list[str], title: str, first: int = 40) -> dict:
    """CARET's message-flow plot: one line per data flow through the lanes of a path
    (y: the path's elements in order, top to bottom), over time (x: ms from the
    trace's start). `flows`: per flow its points (time, lane index) in order. The
    view opens on the `first` flows (zoom out for the others)."""
    data = []
    for c in range(min(len(FLOW_COLOURS), len(flows))):
        xs, ys, tx = [], [], []
        for k in range(c, len(flows), len(FLOW_COLOURS)):
            for x, lane in flows[k]:
                xs.append(x)
                ys.append(lanes[lane])
                tx.append(hover[k])
            xs.append(None)
            ys.append(None)
            tx.append(None)
        data.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "hovertext": tx, "hoverinfo": "text+x",
                     "line": {"color": FLOW_COLOURS[c], "width": 1.2}, "marker": {"size": 4}, "showlegend": False,
                     "connectgaps": False})
    xaxis = {"title": {"text": "ms from the trace's start"}}
    shown = [x for f in flows[:first] for x, _ in f]
    if len(flows) > first and shown:
        pad = (max(shown) - min(shown)) * 0.02 or 1
        xaxis["range"] = [min(shown) - pad, max(shown) + pad]
    lay = _layout(title, rows_height(len(lanes), row=30), xaxis=xaxis, yaxis=every_row(lanes), showlegend=False)
    return {"data": data, "layout": lay}


def graph(nodes: list[dict], edges: list[dict], title: str, xaxis: dict | None = None, yaxis: dict | None = None) -> dict:
    """A directed graph at given positions: nodes {id, x, y, label, hover, group, symbol}; edges {a, b, kind}
    (one message's flow graph: x is time, y a lane)."""
    pos = {n["id"]: (n["x"], n["y"]) for n in nodes}
    data = []
    kinds = []
    for e in edges:
        if e["kind"] not in kinds:
            kinds.append(e["kind"])
    colour = {k: EDGE_COLOURS.get(k) or OTHER_COLOURS[i % len(OTHER_COLOURS)] for i, k in enumerate(kinds)}
    for kind in kinds:
        xs, ys = [], []
        for e in edges:
            if e["kind"] == kind and e["a"] in pos and e["b"] in pos:
                (x0, y0), (x1, y1) = pos[e["a"]], pos[e["b"]]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        data.append({"type": "scatter", "mode": "lines", "name": kind, "x": xs, "y": ys, "hoverinfo": "skip",
                     "line": {"color": colour[kind], "width": 1.6}})
    annotations = [{"x": pos[e["b"]][0], "y": pos[e["b"]][1], "ax": pos[e["a"]][0], "ay": pos[e["a"]][1], "xref": "x", "yref": "y",
                    "axref": "x", "ayref": "y", "showarrow": True, "arrowhead": 2, "arrowsize": 1.2, "standoff": 9, "text": "",
                    "arrowcolor": colour[e["kind"]], "opacity": 0.8}
                   for e in edges if e["a"] in pos and e["b"] in pos][:400]
    groups: dict[str, list[dict]] = {}
    for n in nodes:
        groups.setdefault(n["group"], []).append(n)
    for g, ns in groups.items():
        data.append({"type": "scatter", "mode": "markers", "name": g, "x": [n["x"] for n in ns], "y": [n["y"] for n in ns],
                     "hovertext": [n["hover"] for n in ns], "hoverinfo": "text",
                     "marker": {"size": 12, "symbol": [n.get("symbol", "circle") for n in ns], "line": {"width": 1, "color": "#333"}}})
    rows = 1 + max((n["y"] for n in nodes), default=0)
    xaxis = {"zeroline": False, **(xaxis or {"visible": False})}
    yaxis = {"zeroline": False, **(yaxis or {"visible": False, "autorange": "reversed"})}
    lay = _layout(title, rows_height(rows, top=80, row=34), annotations=annotations, xaxis=xaxis, yaxis=yaxis)
    return {"data": data, "layout": legend_on_top(lay)}
