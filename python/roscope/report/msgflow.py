"""The message-flow plot (CARET's signature plot): many data flows of one path over
time, each a line through the path's elements in order (its callback runs from start
to end, its messages at their publication).

The report's search keeps the steps of one flow per path only, so the flows drawn
here come from a second search from the path's input topic to its output topic with
every flow's steps (`FlowRequest.all_steps`), capped at BUDGET["msgflow_candidates"]
candidate flows: the first flows of the trace, in time. It replaces the result
tables of the report's search, so it runs last for its pair.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from roscope import flow as fl
from roscope.report import figures as F
from roscope.report.queries import records

if TYPE_CHECKING:
    from roscope.flow import FlowContext, FlowRequest
    from roscope.report.build import Report


def lanes(steps: list[dict]) -> list[str]:
    """One lane per element of the path (its steps in order), labelled and unique."""
    out = []
    for k, s in enumerate(steps, 1):
        if s["is_run"]:
            what = s.get("cb_topic") or (f"{s['period_ns'] / 1e6:g} ms" if s.get("period_ns") else "")
            lab = f"{k}. {s.get('node') or '?'} {s.get('kind') or '?'} {what}".strip()
        else:
            lab = f"{k}. [{s.get('topic') or '?'}]"
        out.append(F.t(lab, 70))
    return out


def flow_points(R: Report, res: fl.DataFlows, path_id: int, n: int) -> tuple[list[list[tuple[float, int]]], list[str]]:
    """The first `n` flows of path `path_id` of the search `res` (all steps kept): per
    flow its points (ms from the trace's start, step index), and a hover text."""
    rows = records(R.con, f"""
        WITH f AS (SELECT flow_id, start_ts, latency_ns FROM {res.sql("data_flows")} WHERE path_id = ?
                   ORDER BY start_ts, flow_id LIMIT ?)
        SELECT f.flow_id, f.latency_ns, s.step, s.is_run,
               coalesce(pi.publish_ts, r.start_ts) AS t0, CASE WHEN s.is_run = 1 THEN r.end_ts END AS t1
        FROM f JOIN {res.sql("data_flow_steps")} s USING (flow_id)
        LEFT JOIN callback_runs r ON s.is_run = 1 AND r.run_id = s.id
        LEFT JOIN publications_info pi ON s.is_run = 0 AND pi.publication_id = s.id
        ORDER BY f.start_ts, f.flow_id, s.step""", [path_id, n])
    flows: list[list[tuple[float, int]]] = []
    hover: list[str] = []
    last = None
    for r in rows:
        if r["flow_id"] != last:
            flows.append([])
            hover.append(f"flow {r['flow_id']}: {r['latency_ns'] / 1e6:.3f} ms end to end")
            last = r["flow_id"]
        lane = int(r["step"])
        if r["t0"] is not None:
            flows[-1].append((round((r["t0"] - R.first) / 1e6, 4), lane))
        if r["t1"] is not None:
            flows[-1].append((round((r["t1"] - R.first) / 1e6, 4), lane))
    return flows, hover


def message_flow(R: Report, ctx: FlowContext | None, i: int, req: FlowRequest, path: dict, steps: list[dict]) -> str:
    """The plot's HTML for `path` (a row of path_stats, `steps` its representative
    steps), or a note saying why there is none."""
    topics = [s.get("topic") for s in steps if not s["is_run"]]
    if len(topics) < 1 or topics[0] is None or topics[-1] is None:
        return ""
    budget, n = R.budget["msgflow_candidates"], R.budget["msgflow_flows"]
    again = dataclasses.replace(req, from_re=f"^{re.escape(topics[0])}$", to_re=f"^{re.escape(topics[-1])}$", all_steps=True,
                                max_flows=budget, store=False, definition=None, end=None)
    res = fl.data_flows(R.db, again, ctx=ctx)
    found = R.con.execute(f"SELECT path_id FROM {res.sql('paths')} WHERE path = ?", [path["path"]]).fetchall()
    if not found:
        return (f'<p class="note">No flow of path {path["path_id"]} among the first {budget:,} candidate flows from '
                "its input topic to its output topic.</p>")
    flows, hover = flow_points(R, res, found[0][0], n)
    lab = lanes(steps)
    fig = F.message_flow(lab, flows, hover, f"Message flow of path {path['path_id']}: the first {len(flows):,} flows in time")
    cap = (f"Each line is one data flow of path {path['path_id']} ({path['flows']:,} flows in all): it starts where the "
           "callback that published the input message starts, runs along each callback run (start to end) and reaches each "
           f"message at its publication. The first {len(flows):,} flows of the trace are drawn (from a second search "
           f"with every flow's steps, capped at {budget:,} candidates); the view opens on the first 40: zoom out (double-click) "
           "for all, drag to zoom in.")
    return R.page.fig(f"message_flow_{i}", fig, cap)
