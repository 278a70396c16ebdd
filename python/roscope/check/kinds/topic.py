"""Topic budgets: `topic: RE` (a topic's name), infrastructure topics (/rosout,
/parameter_events, ...: roscope.check.infrastructure) left out unless kept.

| measure | measured by |
|---|---|
| rate | `roscope.stats.topics` (`roscope stats`): `rate_hz`, the topic's own rate over its first to last publication |
| latency | `roscope.stats.topics`: `lat_<stat>_ns`, publication to the start of the callback that took it |
"""
from __future__ import annotations

from roscope import selector, stats
from roscope.check import infrastructure as infra
from roscope.check import units
from roscope.check.kind import (
    ALL_STATS,
    Context,
    Kind,
    Measurement,
    Subject,
    Values,
    column,
    exact,
    left_out,
    per_run,
    round_down,
    round_up,
    seen_text,
    shown,
    suggested,
    yaml_text,
)
from roscope.check.limits import MeasureSpec
from roscope.check.units import DURATION, RATE

#: The statistics of a delivery latency a budget may limit (upper bounds).
STATS = ("min", "mean", "std", "p50", "p90", "p99", "max")
#: Topics every ROS 2 node has, left out of a suggestion.
NOISE_TOPICS = ("/rosout", "/parameter_events")

_DELIVERY_LATENCIES = ("SELECT callback_start_ts - publish_ts FROM links_info WHERE topic = ? "
                       "AND callback_start_ts IS NOT NULL")
#: Publications per whole second of the topic's own span, first to last publication (empty seconds included).
_RATE_PER_SECOND = """
    WITH w AS (SELECT range AS k FROM range(0, CAST(floor((?::HUGEINT - ?::HUGEINT) / 1e9) AS BIGINT)))
    SELECT count(p.publish_ts) FROM w LEFT JOIN (SELECT publish_ts FROM publications_info WHERE topic = ?) p
      ON p.publish_ts >= ?::HUGEINT + w.k * 1000000000 AND p.publish_ts < ?::HUGEINT + (w.k + 1) * 1000000000
    GROUP BY w.k ORDER BY w.k"""


def _topics(ctx: Context) -> list[dict]:
    return ctx.once("topics", lambda: stats.topics(ctx.db))


# ---------------------------------------------------------------- its measures: (ctx, topic row, over) -> Values

def _rate(ctx: Context, t: dict, _over) -> Values:
    """The topic's own rate (stats.topic_rate); its samples over its own span."""
    name, first, last = t["topic"], t["first_publish_ts"] or 0, t["last_publish_ts"] or 0
    return Values(t["rate_hz"], samples=lambda _s: column(ctx, _RATE_PER_SECOND, [last, first, name, first, first]))


def _latency(ctx: Context, t: dict, _over) -> Values:
    name = t["topic"]
    if not t["deliveries"]:
        return Values(missing=f"{name}: no delivery to a callback was traced (no latency)")
    return Values({s: t.get(f"lat_{s}_ns") for s in ALL_STATS},
                  samples=lambda _s: column(ctx, _DELIVERY_LATENCIES, [name]))


class Topic(Kind):
    name = "topic"
    infrastructure = True
    measures = Kind.specs(
        MeasureSpec("rate", RATE, ("min", "max"), "bounds", _rate, at_least=("min",), read="min", lower_is_worse=True),
        MeasureSpec("latency", DURATION, STATS, "stats", _latency),
    )

    def measure(self, ctx: Context, sel, asks) -> Measurement:
        rows = _topics(ctx)
        idx = selector.Selector("topic", sel.select, "select").pick(dict(enumerate(t["topic"] for t in rows)))
        keep = ctx.keeps_infrastructure(sel)
        dropped = [] if keep else [i for i in idx if infra.topic(rows[i]["topic"])]
        idx = [i for i in idx if i not in set(dropped)]
        if not idx:
            return Measurement(missing=f"no topic matches {sel.select!r} (topics: "
                                       f"{shown(t['topic'] for t in rows if keep or not infra.topic(t['topic']))})"
                                       + left_out("topic", [rows[i]["topic"] for i in dropped]))
        return Measurement([Subject(rows[i]["topic"], ref={"topic": rows[i]["topic"]},
                                    values=self.values(ctx, asks, rows[i])) for i in idx])

    def observe(self, ctx: Context, paths) -> dict:
        """Every topic's rate and delivery latency p99."""
        return self.observe_every(ctx, {"rate": "min", "latency": "p99"})

    def suggest(self, seen: dict, runs, margin: float, paths) -> list[str]:
        """Per topic that published its rate's bounds around the lowest and highest seen (and its
        latency's p99, the largest seen, with margin)."""
        out = []
        for key in sorted(k for k, name in seen if name == "rate"):
            v = per_run(seen, (key, "rate"), runs)
            if key in NOISE_TOPICS or min(v) <= 0:
                continue
            out += [f"  - topic: {yaml_text(exact(key))}", f"    # rate seen: {seen_text(v, RATE)}",
                    f"    rate: {{min: {units.text(round_down(min(v) * (1 - margin)), RATE)}, "
                    f"max: {units.text(round_up(max(v) * (1 + margin)), RATE)}}}"]
            lat = per_run(seen, (key, "latency"), runs)
            if lat:
                out += suggested("latency", "latency p99", lat, DURATION, margin, "p99")
        return out


KIND = Topic()
