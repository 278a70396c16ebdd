"""The report's data-flow section: for each pair of topics (report.pairs: given, or
found automatically), roscope.flow's data flows, summarised first and honestly:

- what the search warns about, beside its numbers (caps; flows resting on fallback
  intra-node edges, with the `roscope deps` hint; messages matched without a
  transport link; racy flows when the search marks them);
- the top paths as a compact table, each with its "guessed" badge when it rests on
  fallback edges, its fallback share, and its full text folded;
- the graph of the drawn paths (report.graph: Graphviz dot), a violin of end-to-end
  latency per path, the communication/computation/idle breakdown per path element
  (labelled), and the message-flow plot of the top path (report.msgflow);
- folded: every path, the data-flow paper's Tables I-IV, one message's flow graph.
"""
from __future__ import annotations

from roscope import flow as fl
from roscope.flow import FlowContext, FlowRequest
from roscope.report import figures as F
from roscope.report import queries as Q
from roscope.report.build import STATS, Report, plural
from roscope.report.graph import path_graph
from roscope.report.html import Col, badge, esc, fold, table
from roscope.report.msgflow import message_flow
from roscope.report.pairs import AutoPairs, flow_requests

COMPONENTS = ("latency", "communication", "idle", "computation")
DEPS_HINT = ("roscope deps finds a node's real intra-node dependencies from its C++ sources; give its file to "
             "roscope flow --deps (docs/deps.md)")
DEPS_HTML = ("<code>roscope deps</code> finds a node's real intra-node dependencies from its C++ sources; give its file to "
             "<code>roscope flow --deps</code> (docs/deps.md)")


def _codes(topics: list[str], limit: int = 12) -> str:
    shown = ", ".join(f"<code>{esc(t)}</code>" for t in topics[:limit])
    if len(topics) <= limit:
        return shown or "none"
    return shown + " " + fold(f"and {len(topics) - limit:,} more", ", ".join(f"<code>{esc(t)}</code>" for t in topics[limit:]),
                              cls="inline")


def flows(R: Report, given: list[FlowRequest]) -> None:
    """The section: one part per request of report.pairs.flow_requests."""
    body = ('<p class="sub">A data flow is a chain of messages and callback runs from a message on an input topic to a message '
            "on an output topic (the data-flow paper's Algorithm 1, over transport links where the trace has them and the "
            "newest message on the topic otherwise; intra-node dependencies from annotations or a dependency file where "
            "there are some, else fallback edges between a node's callbacks, which may not exist). Flows with the same "
            "sequence of callbacks and topics form a path.</p>")
    requests, auto = flow_requests(R.db, given)
    if auto is not None:
        body += auto_note(auto, bool(requests))
    if not requests:
        R.page.add("flows", "Data flows", body)
        return
    # One model in memory for every pair on a short trace; over slices of it on a long one
    # (docs/analyses.md, "Slices"), so that the report's memory does not grow with the trace.
    ctx = None if fl.sliced(R.db) else fl.context(R.db)
    for i, req in enumerate(requests):
        body += flow_set(R, ctx, i, req)
    R.page.add("flows", "Data flows", body)


def auto_note(a: AutoPairs, found: bool) -> str:
    words = ("Sources: topics whose publishers subscribe to no other topic with traffic. Sinks: topics that no subscriber "
             "republishes on another topic. Infrastructure (/rosout, /parameter_events, /clock, CARET's /caret/*) is neither, "
             "transforms (/tf, /tf_static) are never sources, and a topic that would be both is neither.")
    out = '<div class="note" id="auto-pairs">'
    if found:
        out += "<p>No --from/--to pair was given: the pair was found automatically. " + words + "</p>"
    else:
        out += ("<p>No --from/--to pair was given, and no source and sink topics were found (give --from/--to). "
                + words + "</p>")
    # <div>, not <p>: a long list folds its tail in a <details>, which may not stand in a <p>.
    out += (f'<div class="para">Sources: <span id="auto-sources">{_codes(a.sources)}</span>.<br>'
            f'Sinks: <span id="auto-sinks">{_codes(a.sinks)}</span>.</div>')
    if a.isolated:
        out += ('<div class="para">Left out, as both source and sink (no flow from one node to another): '
                f'<span id="auto-isolated">{_codes(a.isolated)}</span>.</div>')
    if a.infra:
        out += f'<div class="para">Left out as infrastructure: <span id="auto-infra">{_codes(a.infra)}</span>.</div>'
    return out + "</div>"


def doubts_box(s: dict, link_less: int, paths: int, racy_col: bool) -> str:
    """The search's warnings, where its numbers are shown, in words."""
    items = []
    for w in s["warnings"]:
        if "fallback intra-node edges" in w:
            items.append(f'<span class="bad">{s["flows_on_fallback"]:,} of {s["flows"]:,} flows '
                         f'({(s["fallback_share"] or 0):.1%}) rest on fallback intra-node edges</span>: nothing is known '
                         "about those nodes (no annotation, no dependency file), so every pair of their callbacks is assumed "
                         f"to depend; such a flow may not exist. Paths marked {badge('guessed', 'guessed')} rest on them. "
                         + DEPS_HTML + ".")
        else:
            items.append(f'<span class="bad">Warning:</span> {esc(w)}')
    if link_less:
        items.append(f'<span class="bad">{plural(link_less, "path")} of {paths:,} cross a topic without a transport link</span> '
                     f"(marked {badge('no link', 'nolink')}): the trace does not tie the message a callback took to its "
                     "publication (e.g. no take events), so the newest publication on the topic before the run is taken; "
                     "the communication times there are estimates.")
    if racy_col and s.get("uncertain"):
        items.append(f'<span class="bad">{s["uncertain"]:,} flows are uncertain</span> (marked {badge("racy", "racy")}): '
                     "two threads of a node raced, so whether the input fed the output cannot be told from the trace.")
    if not items:
        return ('<div class="quality" id="flow-doubts"><strong>How sure these flows are</strong><ul><li>Every flow rests on '
                "transport links and known intra-node dependencies.</li></ul></div>")
    return ('<div class="quality warn flow-doubts"><strong>How sure these flows are</strong><ul>'
            + "".join(f"<li>{x}</li>" for x in items) + "</ul></div>")


def path_row(p: dict, steps: list[dict], d: dict | None) -> dict:
    """A row of the path table: statistics, the short and full path, its doubts."""
    d = d or {}
    intra = [s for a, s in zip(steps, steps[1:]) if a["is_run"] and s["is_run"]]
    comm = [s for a, s in zip(steps, steps[1:]) if not a["is_run"] and s["is_run"]]
    fallback = sum(1 for s in intra if s.get("edge") == "fallback")
    newest = sum(1 for s in comm if s.get("edge") == "newest_publication")
    marks = []
    if p.get("fallback_edges"):
        marks.append(badge("guessed", "guessed", f"{p['fallback_edges']} of {len(intra)} intra-node edges are fallback edges: "
                                                 "this path may not exist. " + DEPS_HINT))
    if newest:
        marks.append(badge("no link", "nolink", f"{newest} of {len(comm)} messages matched without a transport link"))
    if d.get("uncertain"):
        marks.append(badge("racy", "racy", f"{d['uncertain']:,} of its flows are uncertain (racing threads)"))
    if not marks:
        marks.append(badge("measured", "ok", "transport links and known intra-node dependencies only"))
    flows = d.get("flows") or p["flows"]
    lat = p.get("latency") or {}
    return {
        "path_id": p["path_id"], "flows": p["flows"], "route": _route(steps, p["path"]), "path": p["path"],
        "trust": " ".join(marks), "doubt": (p.get("fallback_edges") or 0) * 1000 + newest,
        "fallback_share": (d.get("on_fallback") or 0) / flows if flows else None,
        "fallback_edges": f"{fallback} of {len(intra)}" if intra else "none",
        "link_less": f"{newest} of {len(comm)}" if comm else "none", "newest": newest, "uncertain": d.get("uncertain"),
        **{f"lat_{k}_ns": lat.get(f"{k}_ns") for k in ("p50", "mean", "p99", "max")},
    }


def _route(steps: list[dict], full: str) -> str:
    """The path in brief (input topic, nodes in order, output topic), its full text folded."""
    parts: list[str] = []
    for s in steps:
        part = f"[{s.get('topic')}]" if not s["is_run"] else (s.get("node") or "?")
        if not parts or parts[-1] != part:
            parts.append(part)
    short = " → ".join(parts) if len(parts) <= 6 else " → ".join(parts[:2] + [f"… {len(parts) - 4} more …"] + parts[-2:])
    return f'<details class="path"><summary>{esc(short)}</summary><div class="fullpath">{esc(full)}</div></details>'


def path_table(tid: str, rows: list[dict], racy: bool, limit: int) -> str:
    cols = [Col("path_id", "path", "int"), Col("route", "route (click for the full path)", "html", sort="path"),
            Col("trust", "how sure", "html", "guessed: rests on fallback intra-node edges; no link: a message matched "
                "without a transport link", sort="doubt"),
            Col("flows", "flows", "int"), Col("lat_p50_ns", "p50 ms", "ns"), Col("lat_mean_ns", "mean ms", "ns"),
            Col("lat_p99_ns", "p99 ms", "ns"), Col("lat_max_ns", "max ms", "ns"),
            Col("fallback_share", "on fallback %", "pct", "share of the path's flows resting on fallback edges"),
            Col("fallback_edges", "fallback edges", tip="intra-node edges of the path that are fallback edges"),
            Col("link_less", "without link", tip="messages of the path matched without a transport link")]
    if racy:
        cols.append(Col("uncertain", "racy flows", "int", "flows whose input may not have fed the output (racing threads)"))
    return table(tid, cols, rows, row_id="path_id", limit=limit)


def flow_set(R: Report, ctx: FlowContext | None, i: int, req: FlowRequest) -> str:
    res = fl.data_flows(R.db, req, ctx=ctx)
    s = res.summary
    head = (f'<h3 id="flows-{i}" data-from="{esc(req.from_re)}" data-to="{esc(req.to_re)}">Flows {i + 1}: '
            f'{plural(len(s["topics_from"]), "input topic")} to {plural(len(s["topics_to"]), "output topic")}</h3>'
            f'<div class="para">{plural(s["flows"], "data flow")} on {plural(s["paths"], "path")}, ending at '
            f'{plural(s["outputs"], "output message")}. Input topics: {_codes(s["topics_from"], 6)}; output topics: '
            f'{_codes(s["topics_to"], 6)}.</div>')
    if not s["flows"]:
        return head + doubts_box(s, 0, 0, False) + '<p class="note">No data flow connects these topics in this trace.</p>'
    paths = fl.path_stats(res)
    comps = fl.component_stats(res)
    doubts = Q.path_doubts(R.con, res.sql("data_flows"))
    racy = any(d.get("uncertain") is not None for d in doubts.values())
    if racy:
        s["uncertain"] = sum(d.get("uncertain") or 0 for d in doubts.values())
    steps = Q.representative_steps(R.con, res.sql("data_flows"), res.sql("data_flow_steps"), [p["path_id"] for p in paths])
    rows = [path_row(p, steps.get(p["path_id"], []), doubts.get(p["path_id"])) for p in paths]
    link_less = sum(1 for r in rows if r["newest"])
    n = R.budget["paths_drawn"]
    drawn = paths[:n]
    ids = [p["path_id"] for p in drawn]
    body = head + doubts_box(s, link_less, len(paths), racy)
    top = "The path" if len(paths) == 1 else f"The top {min(n, len(paths))} paths (by flows)"
    body += f"<h4>{top}</h4>" + path_table(f"top-{i}", rows[:n], racy, n)
    if len(paths) > n:
        body += fold(f"All {len(paths):,} paths", path_table(f"allpaths-{i}", rows, racy, R.budget["table_rows"]))
    body += ("<h4>Data-flow graph of the top paths</h4>" + path_graph([steps.get(p, []) for p in ids], R.labels)
             + '<p class="caption">Laid out by Graphviz dot. Topics are ellipses; callbacks are boxes in one frame per node. '
             "Hover a box or an edge for what it is.</p>")
    body += latency_figures(R, i, res, drawn, steps)
    body += fold("Tables I to IV: end-to-end latency per path and per component", tables(R, i, paths, comps))
    body += fold("One message's flow graph", message_section(R, ctx, i, steps.get(ids[0], [])))
    body += "<h4>Message flow of the top path</h4>" + message_flow(R, ctx, i, req, drawn[0], steps.get(ids[0], []))
    return body


def latency_figures(R: Report, i: int, res: fl.DataFlows, drawn: list[dict], steps: dict) -> str:
    ids = [p["path_id"] for p in drawn]
    names = {p["path_id"]: f"path {p['path_id']} ({p['flows']:,} flows)" for p in drawn}
    samples = Q.latency_samples(R.con, res.sql("data_flows"), R.budget["violin"])
    sampled = [p for p in ids if samples[p]["of"] > len(samples[p]["ms"])]
    cap = ("Violins of every flow's end-to-end latency (from the start of the callback run that published the input message "
           "to the publication of the output message), with the box of quartiles and the mean." if not sampled else
           f"Violins drawn from at most {R.budget['violin']:,} flows per path, chosen by a hash of the flow id (a uniform "
           f"sample), for {len(sampled)} paths that have more; the tables use every flow.")
    if sampled:
        R.sampled.append(f"violins of end-to-end latency: at most {R.budget['violin']:,} flows per path")
    violin = F.violins([(F.t(names[p], 60), samples[p]["ms"], samples[p]["of"]) for p in ids], "End-to-end latency per path")
    out = "<h4>End-to-end latency per path</h4>" + R.page.fig(
        f"flow_violin_{i}", violin, cap + F.floor_note(violin))
    means = Q.segment_means(R.con, "data_flow_segments")
    elements = {p: path_elements(R, steps.get(p, []), means) for p in ids}
    out += "<h4>Where the time goes, per path element</h4>" + R.page.fig(
        f"flow_breakdown_{i}", F.breakdown([(F.t(names[p], 60), elements[p]) for p in ids],
                                           "Communication, computation and idle per path element"),
        "Each bar is a path's elements in order (communication on a topic into a callback, computation in a callback, idle "
        "between two callbacks of a node), as shares of the path's total so that every path reads; each is labelled with its "
        "number and, when wide enough, its mean time (the mean of that element's distinct segments over all flows, as in "
        "Tables II to IV). The table below names every element with its mean.")
    rows = [{"id": f"{p}:{k}", "path_id": p, "k": k, "kind": e["kind"], "label": e["label"], "mean_ns": e["mean_ns"]}
            for p in ids for k, e in enumerate(elements[p], 1)]
    out += fold("The elements of each bar", table(f"elements-{i}", [
        Col("path_id", "path", "int"), Col("k", "#", "int"), Col("kind", "kind"), Col("label", "element"),
        Col("mean_ns", "mean ms", "ns")], rows, row_id="id"))
    return out


def path_elements(R: Report, steps: list[dict], means: dict[tuple, dict]) -> list[dict]:
    """The stacked segments of one path: (kind, mean, label, short) per element, in order."""
    out = []
    lab = lambda cb: R.labels.get(cb, "?")  # noqa: E731
    mean = lambda *key: (means.get(key) or {}).get("mean_ns")  # noqa: E731
    short = lambda s: F.t((s.get("node") or "?").rsplit("/", 1)[-1], 24)  # noqa: E731
    for a, b in zip(steps, steps[1:]):
        if a["is_run"] == 0 and b["is_run"] == 1:
            out.append({"kind": "communication", "mean_ns": mean("communication", a["topic"], str(b["callback_id"])),
                        "label": F.t(f"communication on {a['topic']} to {lab(b['callback_id'])}", 140),
                        "short": F.t((a["topic"] or "?").rsplit("/", 1)[-1], 24)})
        elif a["is_run"] == 1 and b["is_run"] == 0:
            out.append({"kind": "computation", "mean_ns": mean("computation", str(a["callback_id"]), b["topic"]),
                        "label": F.t(f"computation in {lab(a['callback_id'])} until it publishes on {b['topic']}", 160),
                        "short": short(a)})
        else:
            out.append({"kind": "computation", "mean_ns": mean("computation", str(a["callback_id"]), None),
                        "label": F.t(f"computation: {lab(a['callback_id'])} runs", 140), "short": short(a)})
            out.append({"kind": "idle", "mean_ns": mean("idle", str(a["callback_id"]), str(b["callback_id"])),
                        "label": F.t(f"idle in {a['node']} until {lab(b['callback_id'])} starts", 160),
                        "short": "idle " + short(a)})
    return out


def _stats_cols(count_title: str = "count") -> list[Col]:
    return [Col("count", count_title, "int")] + [Col(f"{s}_ns", f"{s} ms", "ns") for s in STATS]


def tables(R: Report, i: int, paths: list[dict], comps: dict) -> str:
    rows = [{"id": f"{p['path_id']}:{c}", "path_id": p["path_id"], "component": c, **p[c]} for p in paths for c in COMPONENTS]
    out = ("<h4>Table I: end-to-end latency per path, and its parts</h4>"
           + table(f"paths-{i}", [Col("path_id", "path", "int"), Col("component", "part")] + _stats_cols("flows"), rows,
                   row_id="id", limit=R.budget["table_rows"]))
    out += ('<p class="caption">Tables II to IV count each distinct segment once over all flows (a message that feeds several '
            "flows counts once).</p>")
    out += "<h4>Table II: communication per topic</h4>" + table(
        f"comm-{i}", [Col("topic", "topic")] + _stats_cols(), comps["communication_by_topic"], row_id="topic")
    out += "<h4>Table III: idle per node (implicit dependencies)</h4>" + table(
        f"idle-{i}", [Col("node", "node")] + _stats_cols(), comps["idle_by_node"], row_id="node")
    if not comps["idle_by_node"]:
        out += '<p class="caption">No idle time: no path goes through two callbacks of one node.</p>'
    out += "<h4>Table IV: computation per callback</h4>" + table(
        f"calc-{i}", [Col("node", "node"), Col("kind", "kind"), Col("topic", "topic")] + _stats_cols()
        + [Col("callback_mean_ns", "callback mean ms", "ns", "mean duration of the callback's runs on these paths")],
        comps["computation_by_callback"])
    return out


def message_section(R: Report, ctx: FlowContext | None, i: int, steps: list[dict]) -> str:
    out_pub = next((s["id"] for s in reversed(steps) if not s["is_run"]), None)
    if out_pub is None:
        return '<p class="note">The top path has no output message.</p>'
    g = fl.message_graph(R.db, int(out_pub), ctx)
    info = g["nodes"]
    keys = sorted(info, key=lambda k: info[k].get("publish_ts") or info[k].get("start_ts") or 0)
    cut = len(keys) > R.budget["graph_nodes"]
    keys = keys[: R.budget["graph_nodes"]]
    t0 = min((info[k].get("publish_ts") or info[k].get("start_ts") or 0) for k in keys) if keys else 0
    lanes: list[str] = []
    nodes = []
    for k in keys:
        v = info[k]
        if k.startswith("p"):
            lane, ts, lab = f"[{v.get('topic')}]", v.get("publish_ts"), f"message p{v['publication_id']} on {v.get('topic')}"
        else:
            lane, ts = str(v.get("node")), v.get("start_ts")
            lab = f"run r{v['run_id']}: {v.get('node')} {v.get('kind')} {v.get('topic') or ''}"
        if lane not in lanes:
            lanes.append(lane)
        nodes.append({"id": k, "x": round(((ts or t0) - t0) / 1e6, 4), "y": lanes.index(lane), "label": "",
                      "hover": F.t(lab, 160), "group": "message" if k.startswith("p") else "callback run",
                      "symbol": "diamond" if k.startswith("p") else "circle"})
    edges = [{"a": e["from"], "b": e["to"], "kind": str(e["kind"])} for e in g["edges"]]
    fig = F.graph(nodes, edges, f"Flow graph of message p{out_pub} (the output of the first flow of the top path)",
                  xaxis={"title": {"text": "ms after the first message of the graph"}},
                  yaxis={"tickvals": list(range(len(lanes))), "ticktext": [F.t(x, 50) for x in lanes], "autorange": "reversed",
                         "automargin": True})
    cap = ("Every message and callback run reached from this message backward (its causes) and forward (what it caused), "
           "by transport and causal links." + (f" The first {R.budget['graph_nodes']} in time are drawn." if cut else ""))
    return R.page.fig(f"message_graph_{i}", fig, cap)
