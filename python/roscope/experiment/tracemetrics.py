"""Metrics of one trial from its trace, by name, through roscope's own analyses:
a callback's duration or timer jitter (roscope.stats.callbacks), an end-to-end
latency between topics (roscope.flow.data_flows), and an executor thread's
utilization or state times (roscope.executor.threads). Callbacks and executor
threads are selected by roscope.selector (the labels `check` and `why` match).
Values in ms (the trace's ns / 1e6); shares and counts as they are."""
from __future__ import annotations

import roscope
from roscope import executor, percentiles, selector, stats
from roscope.flow import FlowRequest, data_flows


def trace_metrics(trace_dir, metrics: dict) -> tuple[dict, list[str]]:
    """{name: value in ms (or the raw value for count/cpu_share)} and warnings."""
    wanted = {n: m for n, m in metrics.items() if m["from"] == "trace"}
    if not wanted:
        return {}, []
    out: dict = {}
    warnings: list[str] = []
    db = roscope.open(str(trace_dir))
    try:
        cbs = ths = labels = None
        for name, m in wanted.items():
            if "executor" in m:
                if ths is None:
                    ths, nodes = executor.threads(db), selector.thread_nodes(db)
                    for t in ths:
                        t["nodes"] = nodes.get(t["thread_id"], [])
                sel = selector.Selector("executor", m["executor"], f"metric {name}: executor")
                hit = sorted((t for t in ths if sel.matches_any(selector.executor_names(t))),
                             key=lambda t: -(t.get("executing_ns") or 0))
                if not hit:
                    warnings.append(f"metric {name}: no executor thread matches {m['executor']!r}")
                    continue
                if len(hit) > 1:
                    warnings.append(f"metric {name}: {len(hit)} executor threads match {m['executor']!r}; the busiest is used")
                v = hit[0].get(m["stat"])
                if v is not None:
                    out[name] = float(v) / 1e6 if m["stat"].endswith("_ns") else float(v)
                continue
            if "callback" in m:
                if cbs is None:
                    cbs, labels = stats.callbacks(db), selector.callback_labels(db)
                sel = selector.Selector("callback", m["callback"], f"metric {name}: callback")
                hit = [c for c in cbs if sel.matches(labels.get(c["callback_id"]))]
                if not hit:
                    warnings.append(f"metric {name}: no callback matches {m['callback']!r}")
                    continue
                if len(hit) > 1:
                    warnings.append(f"metric {name}: {len(hit)} callbacks match {m['callback']!r}; the busiest is used")
                v = hit[0].get(m["stat"])
            else:
                try:
                    flows = data_flows(db, FlowRequest(m["flow"]["from"], m["flow"]["to"]))
                except Exception as e:  # noqa: BLE001 - no matching topic is a per-trial finding, not fatal
                    warnings.append(f"metric {name}: {e}")
                    continue
                rows = db.records(f"SELECT {_aggregates()} FROM {flows.sql('data_flows')}")
                v = rows[0].get(m["stat"]) if rows else None
            if v is None:
                continue
            out[name] = float(v) if m["stat"] in ("count", "cpu_share") else float(v) / 1e6
    finally:
        try:
            db.close()
        except Exception:  # noqa: BLE001
            pass
    return out, warnings


def _aggregates() -> str:
    return percentiles.aggregates("latency_ns", quartiles=True)
