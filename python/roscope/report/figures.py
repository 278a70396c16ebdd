"""Plotly figure specifications (plain dicts: {"data": [...], "layout": {...}})
built from data that queries.py already aggregated or sampled.

Plotly renders text in labels, ticks and hovers with a few HTML tags, so every
string that comes from a trace goes through `t()` (HTML-escaped, control
characters shown) before it reaches a figure.
"""
from __future__ import annotations

import html as _html

from roscope.report import names
from roscope.text import escape

KIND_COLOURS = {"communication": "#4c78a8", "computation": "#f58518", "idle": "#bab0ac"}
STATE_COLOURS = {"executing": "#54a24b", "selecting": "#eeca3b", "waiting": "#d3d3d3"}
EDGE_COLOURS = {"subscribes": "#4c78a8", "publishes": "#f58518", "implicit": "#b279a2"}
OTHER_COLOURS = ["#54a24b", "#e45756", "#72b7b2", "#9d755d", "#ff9da6", "#79706e"]
RUN_COLOUR = "#e45756"
MS = "ms"


def t(s, limit: int | None = None) -> str:
    """A trace string made safe for a Plotly label or hover (a long one cut: report.names)."""
    s = "-" if s is None else escape(names.cut(s) if isinstance(s, str) else s)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return _html.escape(s, quote=False)


def ms(ns) -> float | None:
    return None if ns is None else round(float(ns) / 1e6, 6)


def _layout(title: str, height: int = 420, **kw) -> dict:
    lay = {
        "title": {"text": title, "font": {"size": 15}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "plot_bgcolor": "#fbfbfb",
        "hoverlabel": {"align": "left"},
    }
    lay.update(kw)
    return lay


def _log_axis(values) -> dict:
    v = [x for x in values if x is not None and x > 0]
    if v and max(v) / min(v) > 200:
        return {"type": "log"}
    return {}


def quartile_boxes(labels: list[str], stats: list[dict], title: str, axis: str, sort_orders: dict[str, list[str]] | None = None,
                   prefix: str = "") -> dict:
    """Horizontal box plots drawn from precomputed statistics (whiskers at min and max)."""
    g = lambda s, k: ms(s.get(f"{prefix}{k}_ns"))  # noqa: E731
    trace = {
        "type": "box", "orientation": "h", "name": "", "y": labels, "boxpoints": False,
        "q1": [g(s, "p25") for s in stats], "median": [g(s, "p50") for s in stats], "q3": [g(s, "p75") for s in stats],
        "lowerfence": [g(s, "min") for s in stats], "upperfence": [g(s, "max") for s in stats],
        "mean": [g(s, "mean") for s in stats], "marker": {"color": "#4c78a8"}, "hoverinfo": "x+y",
    }
    p99 = {"type": "scatter", "mode": "markers", "name": "p99", "y": labels, "x": [g(s, "p99") for s in stats],
           "marker": {"symbol": "line-ns-open", "size": 12, "color": "#e45756"}, "hovertemplate": "p99 %{x} ms<extra></extra>"}
    height = max(260, 60 + 22 * len(labels))
    order = sort_orders or {}
    first = next(iter(order.values()), labels)
    lay = _layout(title, height, showlegend=False, xaxis={"title": {"text": axis}, **_log_axis(trace["lowerfence"] + p99["x"])},
                  yaxis={"automargin": True, "categoryorder": "array", "categoryarray": list(reversed(first))})
    if len(order) > 1:
        lay["updatemenus"] = [{
            "type": "buttons", "direction": "right", "x": 1, "y": 1.0, "yanchor": "bottom", "xanchor": "right", "pad": {"b": 8},
            "buttons": [{"label": name, "method": "relayout", "args": [{"yaxis.categoryarray": list(reversed(o))}]}
                        for name, o in order.items()],
        }]
        lay["margin"]["t"] = 80
        lay["title"].update({"x": 0, "xanchor": "left", "xref": "paper"})
    return {"data": [trace, p99], "layout": lay}


def bars(labels: list[str], values: list, title: str, axis: str, colour: str = "#4c78a8", hover: list[str] | None = None) -> dict:
    tr = {"type": "bar", "orientation": "h", "y": labels, "x": values, "marker": {"color": colour}}
    if hover is not None:
        tr["hovertext"] = hover
        tr["hoverinfo"] = "text+x"
    lay = _layout(title, max(240, 60 + 20 * len(labels)), showlegend=False, xaxis={"title": {"text": axis}},
                  yaxis={"automargin": True, "autorange": "reversed"})
    return {"data": [tr], "layout": lay}


def timers(labels: list[str], stats: list[dict], nominal: list, title: str) -> dict:
    fig = quartile_boxes(labels, stats, title, "period (ms)")
    fig["data"].append({"type": "scatter", "mode": "markers", "name": "nominal period", "y": labels, "x": [ms(n) for n in nominal],
                        "marker": {"symbol": "diamond-open", "size": 10, "color": "#54a24b"},
                        "hovertemplate": "nominal %{x} ms<extra></extra>"})
    fig["layout"]["showlegend"] = True
    return fig


def timeline(lanes: list[str], states: list[dict], runs: list[dict], run_labels: dict, state_lane: dict, run_lane: dict,
             title: str) -> dict:
    """Executor states and callback runs as horizontal bars per thread lane (ms from the window's start)."""
    data = []
    for state, colour in STATE_COLOURS.items():
        sel = [s for s in states if s["state"] == state]
        if not sel:
            continue
        data.append({"type": "bar", "orientation": "h", "name": state, "y": [state_lane[s["thread_id"]] for s in sel],
                     "base": [round(s["t0"], 4) for s in sel], "x": [max(round(s["d"], 4), 1e-4) for s in sel],
                     "marker": {"color": colour}, "hovertemplate": f"{state}: %{{x}} ms at %{{base}} ms<extra></extra>"})
    if runs:
        data.append({"type": "bar", "orientation": "h", "name": "callback run", "y": [run_lane[r["thread_id"]] for r in runs],
                     "base": [round(r["t0"], 4) for r in runs], "x": [max(round(r["d"], 4), 1e-4) for r in runs],
                     "hovertext": [run_labels.get(r["callback_id"], "?") for r in runs], "hoverinfo": "text+x",
                     "marker": {"color": RUN_COLOUR, "opacity": 0.85}})
    lay = _layout(title, max(260, 80 + 26 * len(lanes)), barmode="overlay", bargap=0.25,
                  xaxis={"title": {"text": "ms from the window's start"}},
                  yaxis={"automargin": True, "categoryorder": "array", "categoryarray": list(reversed(lanes))})
    return {"data": data, "layout": lay}


def utilization(labels: list[str], shares: dict[str, list], title: str) -> dict:
    colours = {**STATE_COLOURS, "busy (callbacks)": RUN_COLOUR}
    data = [{"type": "bar", "orientation": "h", "name": k, "y": labels, "x": [round(100 * (x or 0), 3) for x in v],
             "marker": {"color": colours.get(k, "#888")}} for k, v in shares.items()]
    lay = _layout(title, max(240, 70 + 24 * len(labels)), barmode="stack", xaxis={"title": {"text": "% of the thread's traced time"},
                  "range": [0, 100]}, yaxis={"automargin": True, "autorange": "reversed"})
    return {"data": data, "layout": lay}


def violins(samples: list[tuple[str, list[float], int]], title: str) -> dict:
    """One violin per path: (label, latencies in ms, flows it was drawn from)."""
    data = [{"type": "violin", "name": label, "x": v, "orientation": "h", "box": {"visible": True}, "meanline": {"visible": True},
             "points": False, "hoveron": "violins+kde", "spanmode": "hard"} for label, v, _n in samples]
    lay = _layout(title, max(260, 80 + 60 * len(samples)), showlegend=False, xaxis={"title": {"text": "end-to-end latency (ms)"}},
                  yaxis={"automargin": True, "autorange": "reversed"})
    return {"data": data, "layout": lay}


def breakdown(paths: list[tuple[str, list[dict]]], title: str) -> dict:
    """Stacked bars: per path, its elements in order, each the mean time of its kind."""
    data, shown = [], set()
    for label, elements in paths:
        for e in elements:
            kind = e["kind"]
            data.append({"type": "bar", "orientation": "h", "y": [label], "x": [ms(e["mean_ns"])], "name": kind,
                         "legendgroup": kind, "showlegend": kind not in shown, "marker": {"color": KIND_COLOURS[kind],
                         "line": {"color": "white", "width": 1}}, "hovertext": [e["label"]], "hoverinfo": "text+x"})
            shown.add(kind)
    lay = _layout(title, max(240, 90 + 46 * len(paths)), barmode="stack",
                  xaxis={"title": {"text": "mean time (ms), path elements in order"}},
                  yaxis={"automargin": True, "autorange": "reversed"}, legend={"orientation": "h", "y": -0.2})
    return {"data": data, "layout": lay}


def stacked(labels: list[str], parts: dict[str, tuple[str, list]], title: str, axis: str, hover: list[str]) -> dict:
    """Horizontal stacked bars, one per label: `parts` {name: (colour, values in ms)} in stacking order;
    `hover` (trace text, made safe here) per bar."""
    hv = [t(h) for h in hover]
    data = [{"type": "bar", "orientation": "h", "name": name, "y": labels, "x": [v or 0 for v in values],
             "marker": {"color": colour, "line": {"color": "white", "width": 1}}, "customdata": hv,
             "hovertemplate": f"{name}: %{{x}} ms<br>%{{customdata}}<extra></extra>"} for name, (colour, values) in parts.items()]
    lay = _layout(title, max(260, 90 + 26 * len(labels)), barmode="stack", xaxis={"title": {"text": axis}},
                  yaxis={"automargin": True, "autorange": "reversed"}, legend={"orientation": "h", "y": -0.2, "traceorder": "normal"})
    return {"data": data, "layout": lay}


def graph(nodes: list[dict], edges: list[dict], title: str, xaxis: dict | None = None, yaxis: dict | None = None) -> dict:
    """A directed graph: nodes {id, x, y, label, hover, group, symbol}; edges {a, b, kind}."""
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
        data.append({"type": "scatter", "mode": "markers+text", "name": g, "x": [n["x"] for n in ns], "y": [n["y"] for n in ns],
                     "text": [n["label"] for n in ns], "hovertext": [n["hover"] for n in ns],
                     "textposition": ["top center" if n["x"] % 2 == 0 else "bottom center" for n in ns],
                     "hoverinfo": "text", "marker": {"size": 14, "symbol": [n.get("symbol", "circle") for n in ns],
                                                     "line": {"width": 1, "color": "#333"}}})
    height = max(320, 120 + 70 * (1 + max((n["y"] for n in nodes), default=0)))
    xaxis = {"zeroline": False, **(xaxis or {"visible": False})}
    yaxis = {"zeroline": False, **(yaxis or {"visible": False, "autorange": "reversed"})}
    legend = {"orientation": "h", "y": -0.3 if xaxis.get("title") else -0.12}
    lay = _layout(title, height, annotations=annotations, legend=legend, xaxis=xaxis, yaxis=yaxis)
    return {"data": data, "layout": lay}
