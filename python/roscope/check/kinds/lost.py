"""The lost budget: `lost: N` (or `{events: N, packets: N}`), always checked (0) unless the
budgets file gives its own.

| measure | measured by |
|---|---|
| lost | `roscope.stats.summary` (`roscope stats`): `events_discarded`, `packets_lost` |
"""
from __future__ import annotations

from roscope import stats
from roscope.check.kind import Context, Kind, Measurement, Subject, Values
from roscope.check.limits import MeasureSpec
from roscope.check.units import COUNT

_SUMMARY = {"events": "events_discarded", "packets": "packets_lost"}


def _lost(ctx: Context, what: str, _over) -> Values:
    s = ctx.once("summary", lambda: stats.summary(ctx.db))
    return Values({what: s[_SUMMARY[what]]})


class Lost(Kind):
    """Its key is its measure; one subject per kind of loss, each measured by its own limit."""
    name = "lost"
    measures = Kind.specs(MeasureSpec("lost", COUNT, ("events", "packets"), "counts", _lost))

    def parse_subject(self, f, item, key: str, base_dir: str) -> tuple[None, tuple]:
        return None, ()

    def title(self, sel) -> str:
        return "lost events" + (" (default)" if sel.default else "")

    def measure(self, ctx: Context, sel, asks) -> Measurement:
        return Measurement([Subject(f"{what} lost", ref={"lost": what}, values=self.values(ctx, asks, what),
                                    stats=(what,)) for what in self.measures["lost"].stats])

    def suggest(self, seen: dict, runs, margin: float, paths) -> list[str]:
        return ["  - lost: 0"]


KIND = Lost()
