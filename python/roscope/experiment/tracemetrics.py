"""Metrics of one trial from its trace, by name, through roscope's own analyses:
a callback's duration or timer jitter (roscope.stats.callbacks) and an end-to-end
latency between topics (roscope.flow.data_flows). Values in ms (the trace's ns / 1e6)."""
from __future__ import annotations

import re


def _label(c: dict) -> str:
    return f"{c.get('node') or ''} {c.get('kind') or ''}({c.get('topic') or ''}) {c.get('symbol') or ''}"


def trace_metrics(trace_dir, metrics: dict) -> tuple[dict, list[str]]:
    """{name: value in ms (or the raw value for count/cpu_share)} and warnings."""
    wanted = {n: m for n, m in metrics.items() if m["from"] == "trace"}
    if not wanted:
        return {}, []
    import roscope
    from roscope import flow, stats

    out: dict = {}
    warnings: list[str] = []
    db = roscope.open(str(trace_dir))
    try:
        cbs = None
        for name, m in wanted.items():
            if "callback" in m:
                if cbs is None:
                    cbs = stats.callbacks(db)
                rx = re.compile(m["callback"])
                hit = [c for c in cbs if rx.search(_label(c))]
                if not hit:
                    warnings.append(f"metric {name}: no callback matches {m['callback']!r}")
                    continue
                if len(hit) > 1:
                    warnings.append(f"metric {name}: {len(hit)} callbacks match {m['callback']!r}; the busiest is used")
                v = hit[0].get(m["stat"])
            else:
                try:
                    flow.data_flows(db, m["flow"]["from"], m["flow"]["to"])
                except Exception as e:  # noqa: BLE001 - no matching topic is a per-trial finding, not fatal
                    warnings.append(f"metric {name}: {e}")
                    continue
                rows = db.records(f"SELECT {_aggregates()} FROM data_flows")
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
    from roscope import statistics

    return statistics.aggregates("latency_ns", quartiles=True)
