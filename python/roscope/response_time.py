"""Response time of the paths of one data-flow search (`roscope.flow.data_flows`' result), under a named
definition of where a path starts and ends, and CARET's response-time cases
(docs/analyses.md, "Response time").

Definitions (`definition`):

- ``dataflow`` (the data-flow paper): from the start of the callback run that
  published the input message (its publication, for a message published outside
  any run) to the output message's publication;
- ``caret`` (CARET's path latency): from the input message's publication to the
  start (``end="callback_start"``, default) or the end (``end="callback_end"``) of
  the subscription callback run that received the output message; one row per
  receiving callback run.

Cases, per path and per output (CARET's documented cases): the **cycle** of an
output is the input messages of the path's input publisher published after the
newest input of the previous output of the same path (and end), up to its own
newest input: the inputs that first reach an output there (a dropped or
overwritten input counts as delayed to the next output, CARET's
`treat_drop_as_delay`). The newest input is always in its cycle (an output made
again from the input of the previous output has a cycle of that input alone, so
``best`` is the data flow's latency for every output), and the first output of a
path, with no known previous input, has its newest input alone (and is left out,
below).

- ``best``: from the newest input of the cycle (roscope's data flow);
- ``worst``: from the oldest input of the cycle;
- ``all``: from every input of the cycle (one value each);
- ``worst_with_external``: from the newest input of the previous cycle (none for
  the first output).

The first output of a path (and end) has no previous output, so its cycle's lower
bound is unknown: inputs published before the trace began may belong to it. Its
``worst`` and ``all`` cases are left out of the statistics (flagged ``left_out`` in
the rows, counted in ``left_out``); under ``caret`` its ``best`` case too, as CARET
(0.7.3) leaves that output out altogether; under ``dataflow`` its ``best`` stays (the
data flow is exact).

API: `response_times(db, definition="dataflow", end=None, store=False, flows=...)`
-> list of dicts per (path, end callback) with the statistics of each case (None
for a case with no row kept) and `left_out` (case -> rows left out);
`response_time_rows(...)` -> the rows, a `results.Result` (path_id,
end_callback_id, output_publication_id, end_ts, case, input_publication_id,
response_ns, left_out), shown as `response_times`. `flows` is the search's result
(a `roscope.flow.DataFlows`).
"""
from __future__ import annotations

from roscope import percentiles
from roscope.choices import CASES, DEFINITIONS, ENDS, one_of
from roscope.database import Database
from roscope.errors import InputError
from roscope.results import Result, publish_query, shown

# The definitions, their ends and the cases are roscope.choices' (re-exported here).
__all__ = ["CASES", "DEFINITIONS", "ENDS", "response_time_rows", "response_times"]


def _query(definition: str, end: str, flows: str) -> str:
    """The SQL of every case's rows over the data flows in table `flows` (a result's
    SQL name). Written in roscope's code: `definition` and `end` only choose between
    fixed fragments (checked by the caller)."""
    start_of = ("coalesce(r.start_ts, p.ts)" if definition == "dataflow" else "p.ts")
    # The first output of a path (and end) has no previous output: its cycle's oldest input
    # may lie before the trace began, so its worst and all cases are left out; CARET leaves
    # out its best case too, the data-flow definition keeps it (the data flow is exact).
    best_left_out = "prev_input IS NULL" if definition == "caret" else "false"
    if end == "publish":
        ends = """SELECT f.*, f.end_ts AS out_ts, -1 AS end_callback_id FROM f"""
    else:
        col = "start_ts" if end == "callback_start" else "end_ts"
        ends = f"""SELECT f.*, r.{col} AS out_ts, r.callback_id AS end_callback_id
                   FROM f JOIN links l ON l.publication_id = f.output_publication_id
                   JOIN callback_runs r ON r.run_id = l.run_id WHERE r.{col} IS NOT NULL"""
    return f"""
    WITH inputs AS (  -- every publication, with its start under the definition
        SELECT p.publication_id, p.publisher_id, p.ts AS pub_ts, {start_of} AS start_ts
        FROM publications p LEFT JOIN callback_runs r ON r.run_id = p.run_id),
    f AS (
        SELECT d.path_id, d.output_publication_id, d.input_publication_id, d.end_ts, i.publisher_id, i.pub_ts
        FROM {flows} d JOIN inputs i ON i.publication_id = d.input_publication_id),
    e AS ({ends}),
    c AS (  -- each output with the newest input of the previous output of its path and end
        SELECT e.*,
               lag(input_publication_id) OVER w AS prev_input,
               lag(pub_ts) OVER w AS prev_pub_ts
        FROM e WINDOW w AS (PARTITION BY path_id, end_callback_id ORDER BY out_ts, output_publication_id)),
    cyc AS (  -- the cycle's inputs: same publisher, after the previous newest input, up to this one
        SELECT c.path_id, c.end_callback_id, c.output_publication_id, c.out_ts, c.input_publication_id AS newest,
               c.prev_input, i.publication_id AS input_publication_id, c.out_ts - i.start_ts AS response_ns
        FROM c JOIN inputs i ON i.publisher_id = c.publisher_id
         AND i.pub_ts <= c.pub_ts AND (i.publication_id = c.input_publication_id OR i.pub_ts > c.prev_pub_ts))
    SELECT path_id, end_callback_id, output_publication_id, out_ts AS end_ts, 'all' AS "case",
           input_publication_id, response_ns, prev_input IS NULL AS left_out FROM cyc
    UNION ALL
    SELECT path_id, end_callback_id, output_publication_id, out_ts, 'best', input_publication_id, response_ns,
           {best_left_out} FROM cyc WHERE input_publication_id = newest
    UNION ALL
    SELECT path_id, end_callback_id, output_publication_id, any_value(out_ts), 'worst',
           arg_max(input_publication_id, response_ns), max(response_ns), any_value(prev_input IS NULL)
    FROM cyc GROUP BY path_id, end_callback_id, output_publication_id
    UNION ALL
    SELECT c.path_id, c.end_callback_id, c.output_publication_id, c.out_ts, 'worst_with_external',
           c.prev_input, c.out_ts - i.start_ts, false
    FROM c JOIN inputs i ON i.publication_id = c.prev_input"""


def response_time_rows(db: Database, definition: str = "dataflow", end: str | None = None, *, store: bool = False,
                       flows=None) -> Result:
    """Every case's rows (see the module's doc) of the data flows `flows` (a
    `roscope.flow.DataFlows`; None: the flows shown last on `db` under `data_flows`,
    as a user's `roscope sql` reads them), shown as `response_times`."""
    one_of(definition, DEFINITIONS, "response-time definition")
    end = end or ENDS[definition][0]
    if end not in ENDS[definition]:
        raise InputError(f"definition {definition!r} ends at {' or '.join(ENDS[definition])}, not {end!r}")
    flow_rows = shown(db, "data_flows") if flows is None else flows.results["data_flows"]
    source, keep = ('"data_flows"', ()) if flow_rows is None else (flow_rows.sql, (flow_rows,))  # None: a stored table
    return publish_query(db, "response_times", _query(definition, end, source), store, keep=keep)


def response_times(db: Database, definition: str = "dataflow", end: str | None = None, *, store: bool = False,
                   flows=None) -> list[dict]:
    """Per (path, end callback) of the data flows `flows` (a `roscope.flow.DataFlows`;
    None: those shown last on `db`): the statistics of each case (count, min_ns ...
    max_ns with quartiles). See the module's doc."""
    res = response_time_rows(db, definition, end, store=store, flows=flows)
    end = end or ENDS[definition][0]
    agg = percentiles.aggregates("CASE WHEN NOT t.left_out THEN t.response_ns END", quartiles=True)
    rows = db.records(f"""
        SELECT t.path_id, t.end_callback_id, c.node AS end_node, c.topic AS end_topic, t."case",
               count(*) FILTER (WHERE t.left_out) AS left_out, {agg}
        FROM {res.sql} t LEFT JOIN callbacks_info c ON c.callback_id = t.end_callback_id
        GROUP BY ALL ORDER BY t.path_id, t.end_callback_id""")
    out: dict[tuple, dict] = {}
    for r in rows:
        key = (r["path_id"], r["end_callback_id"])
        entry = out.setdefault(key, {"path_id": r["path_id"], "definition": definition, "end": end,
                                     "end_callback_id": None if r["end_callback_id"] < 0 else r["end_callback_id"],
                                     "end_node": r["end_node"], "end_topic": r["end_topic"], "cases": {},
                                     "left_out": {}})
        if r["count"]:
            entry["cases"][r["case"]] = {"count": r["count"], **{k: r[k] for k in percentiles.keys(quartiles=True)}}
        if r["left_out"]:
            entry["left_out"][r["case"]] = r["left_out"]
    for entry in out.values():
        entry["cases"] = {c: entry["cases"].get(c) for c in CASES}
        entry["left_out"] = {c: entry["left_out"][c] for c in CASES if c in entry["left_out"]}
    return list(out.values())
