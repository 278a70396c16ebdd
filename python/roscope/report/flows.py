"""The report's data-flow section: for each --from/--to pair (or the pairs found
automatically), roscope.flow's data flows, path and component statistics (the
data-flow paper's Tables I-IV), a violin of end-to-end latency per path, the
communication/computation/idle breakdown per path element, the data-flow graph
and one message's flow graph."""
from __future__ import annotations

from roscope import flow as fl
from roscope.flow import FlowContext, FlowRequest
from roscope.report import figures as F
from roscope.report import queries as Q
from roscope.report.build import STATS, Report, plural
from roscope.report.html import Col, esc, table

COMPONENTS = ("latency", "communication", "idle", "computation")


def flows(R: Report, requests: list[FlowRequest]) -> None:
    """The section: one part per request (a pair of topic regexes); none given: the
    pairs of sources and sinks found automatically."""
    body = ('<p class="sub">A data flow is a chain of messages and callback runs from a message on an input topic to a message '
            "on an output topic (the data-flow paper's Algorithm 1, over transport links where the trace has them and the "
            "newest message on the topic otherwise; every pair of callbacks of a node may depend on each other unless "
            "causal-link annotations say otherwise). Flows with the same sequence of callbacks and topics form a path.</p>")
    if not requests:
        src, snk = Q.auto_pairs(R.con)
        if not src or not snk:
            R.page.add("flows", "Data flows", body + '<p class="note">No --from/--to pair was given, and no source and sink '
                       "topics were found (sources: topics published by nodes that subscribe to no topic with traffic; sinks: "
                       "topics that no subscribing node republishes).</p>")
            return
        body += ('<p class="note">No --from/--to pair was given: the pairs were found automatically. Sources (topics published by '
                 "nodes that subscribe to no topic with traffic): " + ", ".join(f"<code>{esc(t)}</code>" for t in src)
                 + ". Sinks (topics that no subscribing node republishes): " + ", ".join(f"<code>{esc(t)}</code>" for t in snk) + ".</p>")
        requests = [FlowRequest(Q.exact_regex(src), Q.exact_regex(snk))]
    # One model in memory for every pair on a short trace; over slices of it on a long one
    # (docs/analyses.md, "Slices"), so that the report's memory does not grow with the trace.
    ctx = None if fl.sliced(R.db) else fl.context(R.db)
    for i, req in enumerate(requests):
        body += flow_set(R, ctx, i, req)
    R.page.add("flows", "Data flows", body)


def flow_set(R: Report, ctx: FlowContext | None, i: int, req: FlowRequest) -> str:
    res = fl.data_flows(R.db, req, ctx=ctx)
    s = res.summary
    head = (f'<h3 id="flows-{i}">From <code>{esc(req.from_re)}</code> to <code>{esc(req.to_re)}</code></h3>'
            f'<p>{plural(s["flows"], "data flow")} on {plural(s["paths"], "path")}, ending at {plural(s["outputs"], "output message")}. '
            "Input topics: "
            + ", ".join(f"<code>{esc(t)}</code>" for t in s["topics_from"]) + "; output topics: "
            + ", ".join(f"<code>{esc(t)}</code>" for t in s["topics_to"]) + ".</p>")
    if not s["flows"]:
        return head + '<p class="note">No data flow connects these topics in this trace.</p>'
    paths = fl.path_stats(R.db)
    comps = fl.component_stats(R.db)
    n = R.budget["paths_drawn"]
    drawn = paths[:n]
    ids = [p["path_id"] for p in drawn]
    names = {p["path_id"]: f"path {p['path_id']} ({p['flows']:,} flows)" for p in paths}
    body = head + "<ol class=\"paths\">" + "".join(
        f'<li value="{p["path_id"]}"><strong>{esc(names[p["path_id"]])}</strong>: {esc(p["path"])}</li>' for p in paths[:200]) + "</ol>"
    if len(paths) > 200:
        body += f'<p class="caption">The first 200 of {len(paths):,} paths are listed.</p>'
    samples = Q.latency_samples(R.con, "data_flows", R.budget["violin"])
    sampled = [p for p in drawn if samples[p["path_id"]]["of"] > len(samples[p["path_id"]]["ms"])]
    cap = ("Violins of every flow's end-to-end latency (from the start of the callback run that published the input message "
           "to the publication of the output message), with the box of quartiles and the mean." if not sampled else
           f"Violins drawn from at most {R.budget['violin']:,} flows per path, chosen by a hash of the flow id (a uniform "
           f"sample), for {len(sampled)} paths that have more; the tables below use every flow.")
    cap += "" if len(paths) <= n else f" The {n} paths with the most flows are drawn, of {len(paths):,}."
    if sampled:
        R.sampled.append(f"violins of end-to-end latency: at most {R.budget['violin']:,} flows per path")
    body += "<h4>End-to-end latency per path</h4>" + R.page.fig(
        f"flow_violin_{i}", F.violins([(F.t(names[p], 60), samples[p]["ms"], samples[p]["of"]) for p in ids],
                                      "End-to-end latency per path"), cap)
    steps = Q.representative_steps(R.con, "data_flows", "data_flow_steps", ids)
    means = Q.segment_means(R.con, "data_flow_segments")
    body += "<h4>Where the time goes, per path element</h4>" + R.page.fig(
        f"flow_breakdown_{i}", F.breakdown([(F.t(names[p], 60), path_elements(R, steps.get(p, []), means)) for p in ids],
                                           "Communication, computation and idle per path element"),
        "Each bar is a path's elements in order (communication on a topic into a callback, computation in a callback, idle "
        "between two callbacks of a node); each segment is the mean of that element's distinct segments over all flows, "
        "as in Tables II to IV (hover for what it is).")
    body += tables(R, i, paths, comps)
    body += "<h4>Data-flow graph</h4>" + R.page.fig(f"flow_graph_{i}", flow_graph(R, [steps.get(p, []) for p in ids]),
                                                    "Topics (squares) and callbacks (circles, coloured by node) on the drawn "
                                                    "paths; edges: subscribes (topic to callback), publishes (callback to "
                                                    "topic), implicit (callback to callback of the same node).")
    body += message_section(R, ctx, i, steps.get(ids[0], []))
    return body


def path_elements(R: Report, steps: list[dict], means: dict[tuple, dict]) -> list[dict]:
    """The stacked segments of one path: (kind, mean, label) per element, in order."""
    out = []
    lab = lambda cb: R.labels.get(cb, "?")  # noqa: E731
    mean = lambda *key: (means.get(key) or {}).get("mean_ns")  # noqa: E731
    for a, b in zip(steps, steps[1:]):
        if a["is_run"] == 0 and b["is_run"] == 1:
            out.append({"kind": "communication", "mean_ns": mean("communication", a["topic"], str(b["callback_id"])),
                        "label": F.t(f"communication on {a['topic']} to {lab(b['callback_id'])}", 140)})
        elif a["is_run"] == 1 and b["is_run"] == 0:
            out.append({"kind": "computation", "mean_ns": mean("computation", str(a["callback_id"]), b["topic"]),
                        "label": F.t(f"computation in {lab(a['callback_id'])} until it publishes on {b['topic']}", 160)})
        else:
            out.append({"kind": "computation", "mean_ns": mean("computation", str(a["callback_id"]), None),
                        "label": F.t(f"computation: {lab(a['callback_id'])} runs", 140)})
            out.append({"kind": "idle", "mean_ns": mean("idle", str(a["callback_id"]), str(b["callback_id"])),
                        "label": F.t(f"idle in {a['node']} until {lab(b['callback_id'])} starts", 160)})
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


def flow_graph(R: Report, step_lists: list[list[dict]]) -> dict:
    nodes: dict[str, dict] = {}
    edges: dict[tuple, dict] = {}
    node_names = {s["node"] for steps in step_lists for s in steps if s["is_run"]}
    by_node = len(node_names) <= 12
    for steps in step_lists:
        prev = None
        for s in steps:
            if s["is_run"]:
                nid = f"c{s['callback_id']}"
                lab = R.labels.get(s["callback_id"], "?")
                nodes.setdefault(nid, {"id": nid, "label": F.t(f"{s['node']} {s['kind']}", 40), "hover": F.t(lab, 160),
                                       "group": F.t(s["node"], 50) if by_node else "callback", "symbol": "circle"})
            else:
                nid = f"t{s['topic']}"
                nodes.setdefault(nid, {"id": nid, "label": F.t(s["topic"], 40), "hover": F.t(s["topic"], 160),
                                       "group": "topic", "symbol": "square"})
            if prev is not None:
                kind = ("implicit" if prev[1] and s["is_run"] else "subscribes" if s["is_run"] else "publishes")
                edges[(prev[0], nid)] = {"a": prev[0], "b": nid, "kind": kind}
            prev = (nid, s["is_run"])
    layer = {k: 0 for k in nodes}
    for _ in range(len(nodes)):  # longest-path layering; a cycle stops after len(nodes) rounds
        changed = False
        for e in edges.values():
            if layer[e["b"]] < layer[e["a"]] + 1 and layer[e["a"]] + 1 <= len(nodes):
                layer[e["b"]] = layer[e["a"]] + 1
                changed = True
        if not changed:
            break
    rows: dict[int, int] = {}
    for k, n in nodes.items():
        n["x"] = layer[k]
        n["y"] = rows.get(layer[k], 0)
        rows[layer[k]] = n["y"] + 1
    return F.graph(list(nodes.values()), list(edges.values()), "Data-flow graph of the drawn paths")


def message_section(R: Report, ctx: FlowContext | None, i: int, steps: list[dict]) -> str:
    out_pub = next((s["id"] for s in reversed(steps) if not s["is_run"]), None)
    if out_pub is None:
        return ""
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
    fig = F.graph(nodes, edges, f"Flow graph of message p{out_pub} (the output of the first flow of the first path)",
                  xaxis={"title": {"text": "ms after the first message of the graph"}},
                  yaxis={"tickvals": list(range(len(lanes))), "ticktext": [F.t(x, 50) for x in lanes], "autorange": "reversed",
                         "automargin": True})
    cap = ("Every message and callback run reached from this message backward (its causes) and forward (what it caused), "
           "by transport and causal links." + (f" The first {R.budget['graph_nodes']} in time are drawn." if cut else ""))
    return "<h4>One message's flow graph</h4>" + R.page.fig(f"message_graph_{i}", fig, cap)
