"""The closure over files, for `roscope deps`: every function's summary (from
any analysed translation unit) closed over the calls it makes, and a callback's
events seen from its registration."""
from __future__ import annotations

from roscope.deps.paths import join, norm_root, ok, sub_index
from roscope.deps.unit import UnitData


class Closure:
    """Summaries of all units closed over calls: every event a function makes,
    through the functions it calls, in terms of its own this/params/variables."""

    def __init__(self, units: list[UnitData]):
        self.summaries: dict[str, dict] = {}
        self.overrides: dict[str, list[str]] = {}
        self.names: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        for u in units:
            for usr, s in u.summaries.items():
                self.summaries.setdefault(usr, s)
            for base, lst in u.overrides.items():
                self.overrides.setdefault(base, [])
                self.overrides[base] += [x for x in lst if x not in self.overrides[base]]
            self.names.update(u.names)
            self.kinds.update(u.kinds)
        self.memo: dict[str, list[tuple]] = {}
        self.busy: set[str] = set()
        self.missing: dict[str, str] = {}

    def closed(self, usr: str) -> list[tuple]:
        """The events of `usr` and of what it calls, transitively (memoized). The walk
        over calls keeps its own stack (a chain of calls of any length): `_closing`
        is one function's part, suspended while a callee is closed."""
        value = self._known(usr)
        if value is not None:
            return value
        self.busy.add(usr)
        stack = [(usr, self._closing(usr))]
        value = None
        while stack:
            current, part = stack[-1]
            try:
                want = part.send(value)
            except StopIteration as stop:
                stack.pop()
                self.busy.discard(current)
                self.memo[current] = value = stop.value
                continue
            value = self._known(want)
            if value is None:
                self.busy.add(want)
                stack.append((want, self._closing(want)))
        return value

    def _known(self, usr: str) -> list[tuple] | None:
        """The closed events of `usr` when they need no walk: memoized, not a user
        function ([]), or a recursive call (the outer call accounts for its events)."""
        if usr in self.memo:
            return self.memo[usr]
        s = self.summaries.get(usr)
        if s is None:
            return []
        if usr in self.busy:
            return list(s["events"])
        return None

    def _closing(self, usr: str):
        """A generator: yields each callee whose closed events it needs (sent back to
        it), returns the function's closed events."""
        s = self.summaries[usr]
        evs = list(s["events"])
        for call in s["calls"]:
            targets = [call["usr"]]
            if call.get("virtual"):
                targets += self.overrides.get(call["usr"], [])
            found = False
            for t in targets:
                if t in self.summaries:
                    found = True
                    evs += substitute((yield t), call)
            if not found:
                self.missing.setdefault(call["name"], call["loc"])
                evs += call["fallback"]
        return dedupe(evs)
        s = self.summaries.get(usr)
        if s is None:
            return []
        if usr in self.busy:  # recursion: the outer call accounts for this function's events
            return list(s["events"])
        self.busy.add(usr)
        try:
            evs = list(s["events"])
            for call in s["calls"]:
                targets = [call["usr"]]
                if call.get("virtual"):
                    targets += self.overrides.get(call["usr"], [])
                found = False
                for t in targets:
                    if t in self.summaries:
                        found = True
                        evs += substitute(self.closed(t), call)
                if not found:
                    self.missing.setdefault(call["name"], call["loc"])
                    evs += call["fallback"]
        finally:
            self.busy.discard(usr)
        self.memo[usr] = dedupe(evs)
        return self.memo[usr]


def dedupe(evs: list[tuple]) -> list[tuple]:
    """One event per (kind, path, location): reads keep their earliest order,
    publications their latest (what 'read before it publishes' needs)."""
    best: dict[tuple, tuple] = {}
    for e in evs:
        key = (e[0], e[1], e[2], e[5])
        old = best.get(key)
        if old is None or (e[3] > old[3] if e[0] == "pub" else e[3] < old[3]):
            best[key] = e
    return list(best.values())


def substitute(events: list[tuple], call: dict) -> list[tuple]:
    """A callee's events seen from its caller: this and the parameters replaced by
    what the call binds to them; events on the callee's own copies dropped."""
    out = []
    this = call.get("this") or []
    args = call.get("args") or []
    idx = call.get("idx") or []
    for kind, path, loc, order, loops, why in events:
        o = tuple(call["order"]) + tuple(order)
        lp = tuple(call["loops"]) + tuple(loops)
        if path is None:
            out.append((kind, None, loc, o, lp, why))
            continue
        root = path[0]
        if root == ("this",):
            bases = this
        elif root[0] == "param":
            bases = args[root[1]] if root[1] < len(args) else []
        else:
            out.append((kind, sub_index(path, idx), loc, o, lp, why))
            continue
        rest = sub_index(path, idx)[1:]
        for bp, ba, bcd in bases:
            np = join(tuple(bp), ba, rest)
            # (a copy of a publisher publishes on its topic: a publication is never the copy's own)
            if np is None or (kind != "pub" and not ok(np, bcd)):
                continue
            out.append((kind, np, loc, o, lp, why))
    return out


def callback_events(clo: Closure, reg: dict) -> list[tuple]:
    usr = reg.get("callable")
    if usr is None or usr not in clo.summaries:
        return []
    call = {"this": reg.get("this") or [], "args": [], "idx": [], "order": (), "loops": ()}
    evs = substitute(clo.closed(usr), call)
    return dedupe([(k, norm_root(p, reg), loc, o, lp, why) for k, p, loc, o, lp, why in evs])
