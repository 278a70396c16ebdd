"""The independent oracle for roscope's CTF reader: babeltrace2 (through its
Python bindings, ``bt2``) decodes a trace into exactly the JSON-lines structure
of ``roscope dump`` (docs/dump-format.md), so tests can compare the two.

Nothing here uses roscope.  Everything streams (generators), so a large trace
is never held in memory.

    from tests.support.oracle import Reading, compare, read_dump_lines
    reading = Reading("/path/above/traces")
    compare(reading.events(), read_dump_lines(proc.stdout))
    reading.discarded_events   # {(trace, stream file name): count}, filled while iterating

Conventions (where bt2 and the dump format need a decision):

* ``ts`` is the event's default clock snapshot *value* (cycles) converted to
  ns with the clock class frequency (exact integer arithmetic:
  ``cycles * 10**9 // frequency``; LTTng clocks are 1 GHz so this is the
  identity), without the clock class offset.
* ``trace`` is the directory of the stream file (``bt2`` names each stream
  after its file) relative to the path given; ``.`` for the path itself.
* ``stream`` is ``{"id": stream class id}`` plus every packet-context field bt2
  still shows that is not bookkeeping (bt2 2.0 already hides the fields the
  decoder consumes; the names in ``BOOKKEEPING`` are removed in any case).
* ``context`` is bt2's common context (CTF stream event context) then its
  specific context (CTF event context), merged in that order.  ``payload`` is
  the payload field.  An event without one of them gets ``{}``; the compare
  function treats a missing ``context``/``payload`` key as ``{}``.
* Enumerations: bt2 returns the labels of every mapping containing the value,
  ordered by the *first appearance of each label* in the metadata (the CTF
  source groups all ranges of one label into one mapping).  We take the first
  label.  This equals "the mapping declared first" except in one case bt2
  cannot tell apart: a label declared twice, whose *second* range is the one
  that matches, overlapping a different label declared between its two
  declarations.  The fixtures avoid that (unresolvable) shape.  A value in no
  mapping gives the integer.
* Single-precision floats are returned as ``F32`` (a float subclass holding the
  exact value, widened to double); ``compare`` accepts any JSON number that
  rounds to the same binary32 value (so ``0.1`` and ``0.10000000149011612``
  both match the float ``0.1f``).  NaN/inf are the strings ``"nan"``,
  ``"inf"``, ``"-inf"`` on both sides; -0.0 and 0.0 are told apart.
* Strings: bt2's value, cut at the first NUL.  Bytes that are not UTF-8 are
  replaced with U+FFFD (see ``_fix_str``).  Text arrays/sequences are already
  strings in bt2 (the CTF source converts them).
* Variants: ``{option name: value}`` with bt2's option name (one leading
  underscore already removed by bt2).
"""
from __future__ import annotations

import collections
import json
import math
import os
import struct
import sys
from collections.abc import Iterable, Iterator
from typing import Callable

try:
    import bt2
    from bt2 import native_bt
except ImportError as _exc:  # pragma: no cover - depends on the machine
    bt2 = None
    BT2_IMPORT_ERROR = _exc
else:
    BT2_IMPORT_ERROR = None

__all__ = [
    "BOOKKEEPING", "F32", "Reading", "compare", "compare_by_trace", "read_dump_lines",
    "find_traces", "Mismatch", "sample_full", "project_like", "read_lttng_index",
    "group_by", "stream_key", "leading_lost_packets",
]

BOOKKEEPING = frozenset({
    "timestamp_begin", "timestamp_end", "content_size", "packet_size",
    "packet_seq_num", "events_discarded",
})


class F32(float):
    """A single-precision float value (exact, widened to double)."""
    __slots__ = ()


class Mismatch(AssertionError):
    pass


# --------------------------------------------------------------------------
# bt2 field -> JSON-like value
# --------------------------------------------------------------------------

def _fix_str(s: str) -> str:
    # bt2's SWIG wrapper decodes C strings with "surrogateescape": undecodable
    # bytes come back as lone surrogates U+DC80..U+DCFF.  Turn them back into
    # bytes and decode with "replace" (maximal-subpart U+FFFD substitution, the
    # same rule as Rust's String::from_utf8_lossy and WHATWG).
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _float_value(v: float, single: bool):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return F32(v) if single else float(v)


if bt2 is not None:
    import bt2.field as _F
    _get_u = native_bt.field_integer_unsigned_get_value
    _get_s = native_bt.field_integer_signed_get_value
    _get_str = native_bt.field_string_get_value
    _get_f64 = native_bt.field_real_double_precision_get_value
    _get_f32 = native_bt.field_real_single_precision_get_value

    def _conv_struct(f):
        return {name: convert(f[name]) for name in f}

    def _conv_array(f):
        return [convert(x) for x in f]

    def _conv_variant(f):
        idx = f.selected_option_index
        return {f.cls.option_at_index(idx).name: convert(f.selected_option)}

    def _conv_enum(f):
        labels = f.labels
        if labels:
            return labels[0]
        return int(f)

    _CONV: dict[type, Callable] = {
        _F._UnsignedIntegerFieldConst: lambda f: _get_u(f._ptr),
        _F._SignedIntegerFieldConst: lambda f: _get_s(f._ptr),
        _F._UnsignedEnumerationFieldConst: _conv_enum,
        _F._SignedEnumerationFieldConst: _conv_enum,
        _F._StringFieldConst: lambda f: _fix_str(_get_str(f._ptr)),
        _F._DoublePrecisionRealFieldConst: lambda f: _float_value(_get_f64(f._ptr), False),
        _F._SinglePrecisionRealFieldConst: lambda f: _float_value(_get_f32(f._ptr), True),
        _F._StructureFieldConst: _conv_struct,
        _F._StaticArrayFieldConst: _conv_array,
        _F._DynamicArrayFieldConst: _conv_array,
        _F._VariantFieldConst: _conv_variant,
        _F._BoolFieldConst: lambda f: bool(f),
        _F._BitArrayFieldConst: lambda f: int(f.value_as_integer),
    }


    # Structures read member by member through native_bt: the member names once per
    # structure class, scalar members straight from their pointers (the same
    # native_bt getters as _CONV's), any other member through bt2's own wrapper and
    # _CONV. The Python wrappers bt2 makes for every member and its class cost more
    # than half of a pass over a large trace (684k events: 35 of 43 s under cProfile).
    _TYPE_OF_CLASS = native_bt.field_class_get_type
    _CLASS_OF = native_bt.field_borrow_class_const
    _MEMBER_AT = native_bt.field_structure_borrow_member_field_by_index_const
    _T = native_bt
    _PTR_CONV: dict[int, Callable] = {
        _T.FIELD_CLASS_TYPE_UNSIGNED_INTEGER: _get_u,
        _T.FIELD_CLASS_TYPE_SIGNED_INTEGER: _get_s,
        _T.FIELD_CLASS_TYPE_STRING: lambda p: _fix_str(_get_str(p)),
        _T.FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL: lambda p: _float_value(_get_f64(p), False),
        _T.FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL: lambda p: _float_value(_get_f32(p), True),
    }
    _STRUCT = _T.FIELD_CLASS_TYPE_STRUCTURE
    assert _F._TYPE_ID_TO_CONST_OBJ[_STRUCT] is _F._StructureFieldConst
    assert all(_CONV[_F._TYPE_ID_TO_CONST_OBJ[t]] is not None for t in _PTR_CONV)

    def _members(fc, plans: dict) -> list[tuple[str, int, Callable | None]]:
        """(name, type id, pointer converter or None) of each member of structure class `fc`."""
        key = int(fc)
        plan = plans.get(key)
        if plan is None:
            plan = []
            for i in range(native_bt.field_class_structure_get_member_count(fc)):
                m = native_bt.field_class_structure_borrow_member_by_index_const(fc, i)
                t = _TYPE_OF_CLASS(native_bt.field_class_structure_member_borrow_field_class_const(m))
                plan.append((native_bt.field_class_structure_member_get_name(m), t, _PTR_CONV.get(t)))
            plans[key] = plan
        return plan

    def _struct_fast(ptr, owner: tuple, plans: dict) -> dict:
        """`_conv_struct` of the structure field at `ptr` (its wrapper's
        owner: (pointer, get_ref, put_ref)), the same dict, faster. `plans` holds the
        member lists by structure class address: one per trace collection read (its
        classes live as long as the reading)."""
        def walk(ptr) -> dict:
            out = {}
            for i, (name, t, conv) in enumerate(_members(_CLASS_OF(ptr), plans)):
                mp = _MEMBER_AT(ptr, i)
                if conv is not None:
                    out[name] = conv(mp)
                elif t == _STRUCT:
                    out[name] = walk(mp)
                else:
                    out[name] = convert(_F._create_field_from_const_ptr(mp, *owner))
            return out

        return walk(ptr)


def convert(field):
    """A bt2 field as the dump format's JSON value (see module doc)."""
    try:
        conv = _CONV[type(field)]
    except KeyError:
        raise TypeError(f"oracle: unhandled bt2 field type {type(field).__name__}") from None
    return conv(field)


# --------------------------------------------------------------------------
# Reading a trace collection
# --------------------------------------------------------------------------

def find_traces(path: str) -> list[str]:
    """Every directory at or below *path* holding a ``metadata`` file, sorted."""
    out = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        if "metadata" in files:
            out.append(root)
    return sorted(out)


def sample_full(ts: int, name: str, every: int = 10) -> bool:
    """Deterministic, order-independent choice of the events compared in full
    when only a sample is: those whose ts is a multiple of *every*."""
    return ts % every == 0


class Reading:
    """One pass of babeltrace2 over *path* (any directory above one or more
    CTF traces, like ``babeltrace2 PATH``).

    ``events()`` yields dump-format dicts in bt2's merged time order.  While it
    runs it fills:

    * ``counts``: Counter of event names; ``trace_counts``: {trace: Counter},
    * ``discarded_events`` / ``discarded_packets``: {(trace, stream file
      name): total count} from bt2's discarded-events/packets messages (a
      message whose count is unknown counts as 1 and is listed in
      ``discarded_unknown``),
    * ``hostnames``: {trace: hostname from the trace environment},
    * ``environments``: {trace: dict of the trace environment},
    * ``clock_offsets_ns``: {trace: offset of the default clock in ns},
    * ``n_events``.

    ``full``: None to convert every event completely; otherwise a predicate
    ``full(ts, name) -> bool``; events for which it is false are yielded with
    only ts, name, trace and stream (see ``compare(project=...)``).
    """

    def __init__(self, path: str, full: Callable[[int, str], bool] | None = None):
        if bt2 is None:
            raise RuntimeError(f"bt2 (python3-bt2) is not importable: {BT2_IMPORT_ERROR}")
        self.path = os.path.abspath(path)
        self.full = full
        self.counts: collections.Counter = collections.Counter()
        self.trace_counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.discarded_events: dict[tuple[str, str], int] = collections.defaultdict(int)
        self.discarded_packets: dict[tuple[str, str], int] = collections.defaultdict(int)
        self.discarded_unknown: list[tuple[str, str, str]] = []
        self.hostnames: dict[str, str] = {}
        self.environments: dict[str, dict] = {}
        self.clock_offsets_ns: dict[str, int] = {}
        self.n_events = 0
        self.done = False

    def _stream_key(self, stream) -> tuple[str, str]:
        fname = stream.name
        if fname is None:
            raise RuntimeError("oracle: bt2 stream without a name (file path)")
        fname = os.path.abspath(fname)
        tdir = os.path.relpath(os.path.dirname(fname), self.path)
        return tdir, os.path.basename(fname)

    def events(self) -> Iterator[dict]:
        full = self.full
        it = bt2.TraceCollectionMessageIterator(self.path)
        EventMsg = bt2._EventMessageConst
        PacketBegin = bt2._PacketBeginningMessageConst
        StreamBegin = bt2._StreamBeginningMessageConst
        DiscEv = bt2._DiscardedEventsMessageConst
        DiscPk = bt2._DiscardedPacketsMessageConst
        counts = self.counts
        plans: dict = {}  # structure class address -> members (_struct_fast)
        names: dict[int, str] = {}  # event class address -> name
        nb = native_bt
        borrow_event, borrow_stream = nb.message_event_borrow_event_const, nb.event_borrow_stream_const
        borrow_snapshot = nb.message_event_borrow_default_clock_snapshot_const
        snapshot_value = nb.clock_snapshot_get_value
        borrow_class, class_name = nb.event_borrow_class_const, nb.event_class_get_name
        common_ctx, specific_ctx = nb.event_borrow_common_context_field_const, nb.event_borrow_specific_context_field_const
        payload = nb.event_borrow_payload_field_const
        # per stream (by address): [trace, stream dict, ns conversion (num, den)]
        streams: dict[int, list] = {}
        for msg in it:
            t = type(msg)
            if t is EventMsg:
                # native_bt on the message's pointers: what msg.event, ev.stream, ev.cls.name,
                # msg.default_clock_snapshot and the fields' wrappers read (the stream has a
                # default clock: StreamBegin checked)
                mp = msg._ptr
                ev = borrow_event(mp)
                sinfo = streams[int(borrow_stream(ev))]
                cycles = snapshot_value(borrow_snapshot(mp))
                num, den = sinfo[2]
                ts = cycles if num == den else cycles * num // den
                cls = borrow_class(ev)
                name = names.get(int(cls))
                if name is None:
                    name = names[int(cls)] = class_name(cls)
                counts[name] += 1
                sinfo[3][name] += 1
                self.n_events += 1
                if full is not None and not full(ts, name):
                    yield {"ts": ts, "name": name, "trace": sinfo[0], "stream": sinfo[1]}
                    continue
                owner = (mp, msg._get_ref, msg._put_ref)
                ctx = {}
                f = common_ctx(ev)
                if f is not None:
                    ctx.update(_struct_fast(f, owner, plans))
                f = specific_ctx(ev)
                if f is not None:
                    ctx.update(_struct_fast(f, owner, plans))
                f = payload(ev)
                yield {
                    "ts": ts, "name": name, "trace": sinfo[0], "stream": sinfo[1],
                    "context": ctx,
                    "payload": _struct_fast(f, owner, plans) if f is not None else {},
                }
            elif t is PacketBegin:
                pk = msg.packet
                st = pk.stream
                sinfo = streams[st.addr]
                sd = {"id": st.cls.id}
                pc = pk.context_field
                if pc is not None:
                    for k in pc:
                        if k not in BOOKKEEPING:
                            sd[k] = convert(pc[k])
                sinfo[1] = sd
            elif t is StreamBegin:
                st = msg.stream
                tdir, _fname = self._stream_key(st)
                trace = st.trace
                if tdir not in self.environments:
                    env = {}
                    for k in trace.environment:
                        v = trace.environment[k]
                        env[k] = int(v) if "Integer" in type(v).__name__ else str(v)
                    self.environments[tdir] = env
                    if "hostname" in env:
                        self.hostnames[tdir] = env["hostname"]
                cc = st.cls.default_clock_class
                if cc is None:
                    raise RuntimeError(f"oracle: stream {st.name} has no default clock")
                freq = cc.frequency
                if tdir not in self.clock_offsets_ns:
                    off = cc.offset
                    self.clock_offsets_ns[tdir] = off.seconds * 10**9 + off.cycles * 10**9 // freq
                streams[st.addr] = [tdir, {"id": st.cls.id}, (10**9, freq), self.trace_counts[tdir]]
            elif t is DiscEv or t is DiscPk:
                key = self._stream_key(msg.stream)
                n = msg.count
                if n is None:
                    self.discarded_unknown.append((t.__name__, *key))
                    n = 1
                # bt2 counts a stream's discarded events as the difference of the packets'
                # 64-bit events_discarded counters; where LTTng's counter reads lower than the
                # packet before (seen with per-UID buffers under load), that difference wraps
                # (a count >= 2**63). The stream's net count is the sum modulo 2**64.
                d = self.discarded_events if t is DiscEv else self.discarded_packets
                d[key] = (d[key] + n) % 2**64
        self.done = True

    # conveniences ---------------------------------------------------------
    def run(self) -> Reading:
        """Consume ``events()`` for the side tables only."""
        for _ in self.events():
            pass
        return self

    def total_discarded_events(self) -> int:
        return sum(self.discarded_events.values())


# --------------------------------------------------------------------------
# Reading roscope's output
# --------------------------------------------------------------------------

def read_dump_lines(lines: Iterable) -> Iterator[dict]:
    """Parse ``roscope dump`` JSON lines (str or bytes) lazily."""
    loads = json.loads
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield loads(line)
        except ValueError as exc:
            raise Mismatch(f"roscope dump line {i + 1} is not JSON ({exc}): {line[:300]!r}") from None


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def _f32_bits(x: float) -> bytes | None:
    try:
        return struct.pack("<f", x)
    except OverflowError:
        return None


def values_equal(exp, act) -> bool:
    """Deep equality with the float rules of the module doc."""
    te = type(exp)
    if te is dict:
        if type(act) is not dict or len(exp) != len(act):
            return False
        # key order matters in the format only for humans; compare as mappings
        for k, v in exp.items():
            if k not in act or not values_equal(v, act[k]):
                return False
        return True
    if te is list:
        if type(act) is not list or len(exp) != len(act):
            return False
        return all(values_equal(a, b) for a, b in zip(exp, act))
    if te is int:
        return type(act) is int and exp == act
    if te is str:
        return type(act) is str and exp == act
    if te is F32 or te is float:
        if type(act) not in (int, float):
            return False
        a = float(act)
        if te is F32:
            if _f32_bits(a) != _f32_bits(exp):
                return False
        elif a != exp:
            return False
        return math.copysign(1.0, a) == math.copysign(1.0, exp) or (type(act) is int and exp == 0.0 and math.copysign(1.0, exp) > 0)
    if te is bool:
        return type(act) is bool and exp == act
    return exp == act


def _norm(ev: dict) -> dict:
    if "context" not in ev or "payload" not in ev:
        ev = dict(ev)
        ev.setdefault("context", {})
        ev.setdefault("payload", {})
    return ev


def _short(ev, limit=1500) -> str:
    s = json.dumps(ev, default=float, sort_keys=False)
    return s if len(s) <= limit else s[:limit] + "..."


def _bucket_key(ev) -> str:
    return json.dumps([ev.get("name"), ev.get("trace"), ev.get("stream")], sort_keys=True, default=float)


def compare(expected: Iterable[dict], actual: Iterable[dict],
            project: Callable[[dict], dict] | None = None,
            what: str = "roscope dump", prefix: bool = False) -> int:
    """Check that *actual* (e.g. roscope's events) equals *expected* (the
    oracle's), event by event, with runs of equal ``ts`` compared as
    multisets.  *project*, if given, is applied to each actual event first
    (for sampled comparisons).  With *prefix*, *actual* may stop early (its
    last run of equal ts may then be part of the expected run).  Raises
    ``Mismatch`` describing the first difference (index of the run, the
    expected event and the actual one); returns the number of actual events
    compared."""
    ei = iter(expected)
    ai = iter(actual)
    index = 0
    e_next = next(ei, None)
    a_next = next(ai, None)
    prev_ts = None
    while e_next is not None or a_next is not None:
        if e_next is None:
            raise Mismatch(f"{what} has more events than babeltrace2: event #{index} {_short(a_next)} is extra")
        if a_next is None:
            if prefix:
                return index
            raise Mismatch(f"{what} stops early: it has {index} events; babeltrace2's event #{index} is {_short(e_next)}")
        if type(a_next.get("ts")) is not int:
            raise Mismatch(f"{what} event #{index} has no integer ts: {_short(a_next)}")
        ts = e_next["ts"]
        if prev_ts is not None and a_next["ts"] < prev_ts:
            raise Mismatch(f"{what} is not in time order at event #{index}: ts {a_next['ts']} after {prev_ts}: {_short(a_next)}")
        # collect the run of equal ts on both sides
        erun = [e_next]
        e_next = next(ei, None)
        while e_next is not None and e_next["ts"] == ts:
            erun.append(e_next)
            e_next = next(ei, None)
        arun = []
        while a_next is not None and a_next.get("ts") == ts:
            arun.append(_norm(project(a_next) if project else a_next))
            a_next = next(ai, None)
        erun = [_norm(e) for e in erun]
        if len(erun) == 1 and len(arun) == 1:
            if not values_equal(erun[0], arun[0]):
                raise Mismatch(_diff_msg(what, index, erun[0], arun[0]))
        elif not arun:
            raise Mismatch(f"{what} event #{index}: expected ts {ts} (babeltrace2: {_short(erun[0])}) "
                           f"but {what} has {_short(a_next) if a_next else 'no more events'}")
        else:
            _match_run(what, index, erun, arun, partial=prefix and a_next is None)
            if prefix and a_next is None:
                return index + len(arun)
        index += len(erun)
        prev_ts = ts
    return index


def _match_run(what, index, erun, arun, partial=False):
    buckets = collections.defaultdict(list)
    for a in arun:
        buckets[_bucket_key(a)].append(a)
    for k, e in enumerate(erun):
        cands = buckets.get(_bucket_key(e), [])
        for j, a in enumerate(cands):
            if values_equal(e, a):
                del cands[j]
                break
        else:
            if partial:
                continue
            other = cands[0] if cands else (arun[0] if arun else None)
            raise Mismatch(
                f"{what}: in the run of {len(erun)} babeltrace2 events with ts {e['ts']} starting at event "
                f"#{index}, event #{index + k} has no equal among {what}'s {len(arun)} events with that ts.\n"
                + _diff_msg(what, index + k, e, other))
    left = [a for c in buckets.values() for a in c]
    if left:
        raise Mismatch(f"{what}: run of ts {erun[0]['ts']} at event #{index}: {len(arun)} events "
                       f"vs babeltrace2's {len(erun)}; extra: {_short(left[0])}")


def _diff_msg(what, index, exp, act) -> str:
    where = ""
    if act is not None:
        for key in ("ts", "name", "trace", "stream", "context", "payload"):
            if not values_equal(exp.get(key), act.get(key)):
                where = f" (first differing key: {key!r}"
                if isinstance(exp.get(key), dict) and isinstance(act.get(key), dict):
                    for k2 in list(exp[key]) + [k for k in act[key] if k not in exp[key]]:
                        if k2 not in act[key] or k2 not in exp[key] or not values_equal(exp[key][k2], act[key][k2]):
                            where += f", field {k2!r}: babeltrace2 {exp[key].get(k2, '<absent>')!r} vs {act[key].get(k2, '<absent>')!r}"
                            break
                where += ")"
                break
    return (f"event #{index} differs{where}\n  babeltrace2: {_short(exp)}\n"
            f"  {what}: {_short(act) if act is not None else '<none>'}")


def group_by(events: Iterable[dict], key: Callable[[dict], object]) -> dict:
    out: dict = collections.defaultdict(list)
    for ev in events:
        out[key(ev)].append(ev)
    return out


def stream_key(ev: dict) -> tuple[str, str]:
    """What tells an event's stream apart in the dump format: trace + stream."""
    return ev.get("trace"), json.dumps(ev.get("stream"), sort_keys=True)


def compare_by_trace(expected: Iterable[dict], actual: Iterable[dict],
                     what: str = "roscope dump") -> dict[str, int]:
    """Compare trace by trace (for collections of several traces, whose
    clocks have different offsets, so the global merge order of babeltrace2,
    which uses the offsets, may differ from roscope's).  Holds the events in
    memory; returns {trace: events compared}."""
    exp = group_by(expected, lambda e: e["trace"])
    act = group_by(actual, lambda e: e.get("trace"))
    extra = sorted(set(act) - set(exp), key=str)
    if extra:
        raise Mismatch(f"{what} has events of traces babeltrace2 does not know: {extra} "
                       f"(babeltrace2's traces: {sorted(exp)}); first: {_short(act[extra[0]][0])}")
    out = {}
    for trace in sorted(exp):
        try:
            out[trace] = compare(exp[trace], act.get(trace, []), what=what)
        except Mismatch as exc:
            raise Mismatch(f"trace {trace!r}: {exc}") from None
    return out


def read_lttng_index(path: str) -> list[dict]:
    """Entries of an LTTng packet index file (``index/<stream>.idx``): offset
    (bytes), packet_size and content_size (bits), timestamp_begin/_end,
    events_discarded, stream_id (CTF index format 1.0/1.1, big-endian)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, major, minor, entry_len = struct.unpack_from(">IIII", data, 0)
    if magic != 0xC1F1DCC1:
        raise ValueError(f"{path}: not an LTTng index (magic {magic:#x})")
    names = ("offset", "packet_size", "content_size", "timestamp_begin", "timestamp_end",
             "events_discarded", "stream_id", "stream_instance_id", "packet_seq_num")
    nfields = min(len(names), entry_len // 8)
    fmt = f">{nfields}Q"
    out = []
    for pos in range(16, len(data) - entry_len + 1, entry_len):
        out.append(dict(zip(names, struct.unpack_from(fmt, data, pos))))
    return out


def leading_lost_packets(trace_dir: str) -> int | None:
    """Packets missing *before* the first one kept, summed over the stream
    files of one trace (the first packet_seq_num of each stream, from LTTng's
    index files; for a stream split into several trace files only the first
    file counts).  Overwrite-mode (flight recorder) channels overwrite their
    oldest packets, so the first kept one can have seq num > 0; babeltrace2
    only counts gaps *between* packets.  None without index files."""
    idx = os.path.join(trace_dir, "index")
    if not os.path.isdir(idx):
        return None
    firsts: dict[str, int] = {}
    for f in sorted(os.listdir(idx)):
        if not f.endswith(".idx"):
            continue
        entries = read_lttng_index(os.path.join(idx, f))
        if not entries or "packet_seq_num" not in entries[0]:
            return None
        stem = f[:-4]
        # chan_0 or, when split into trace files, chan_0_0, chan_0_1, ...
        parts = stem.rsplit("_", 2)
        stream = stem
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            stream = f"{parts[0]}_{parts[1]}"
            if stream in firsts and entries[0]["packet_seq_num"] >= firsts[stream]:
                continue
        firsts[stream] = entries[0]["packet_seq_num"]
    return sum(firsts.values())


def project_like(full: Callable[[int, str], bool]) -> Callable[[dict], dict]:
    """The projection matching ``Reading(full=...)``: keep every key for
    events the predicate selects, only ts/name/trace/stream for the others."""
    def proj(ev: dict) -> dict:
        if full(ev.get("ts"), ev.get("name")):
            return ev
        return {"ts": ev.get("ts"), "name": ev.get("name"), "trace": ev.get("trace"),
                "stream": ev.get("stream")}
    return proj


if __name__ == "__main__":  # pragma: no cover - manual use / timing
    import argparse
    import time
    ap = argparse.ArgumentParser(description="decode a trace with bt2 into roscope dump JSON lines")
    ap.add_argument("path")
    ap.add_argument("--count", action="store_true", help="only count, print timing")
    ap.add_argument("--sample", type=int, default=0, help="full fields only for ts %% N == 0")
    args = ap.parse_args()
    r = Reading(args.path, full=(lambda ts, n: ts % args.sample == 0) if args.sample else None)
    t0 = time.perf_counter()
    if args.count:
        n = sum(1 for _ in r.events())
        dt = time.perf_counter() - t0
        print(f"{n} events in {dt:.1f} s ({n / dt:.0f} events/s); discarded events "
              f"{r.total_discarded_events()}, hostnames {r.hostnames}", file=sys.stderr)
    else:
        out = sys.stdout
        for ev in r.events():
            out.write(json.dumps(ev, default=float) + "\n")
