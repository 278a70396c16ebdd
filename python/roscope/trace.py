"""Reading traces from Python: summaries, JSON lines, and columnar batches.

Every method makes one pass over the events in the Rust core; Python only
ever sees whole columns (Arrow arrays), never one object per event.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, NamedTuple

from roscope import _core

TraceError = _core.TraceError

#: Traces of at most this many bytes in all (about 400k events) are loaded whole: a load
#: stores their tables as the core hands them over, without pyarrow (roscope.loading).
#: (`roscope stats` computes in the core up to its own, larger bound: stats_core.CORE_BYTES.)
SMALL_TRACE_BYTES = 16 << 20


def trace_bytes(paths: Sequence[str], limit: int) -> int:
    """The bytes of the files under `paths`, counted up to just past `limit`."""
    total = 0
    for p in paths:
        for d, _dirs, names in os.walk(p):
            for f in names:
                try:
                    total += os.stat(os.path.join(d, f)).st_size
                except OSError:
                    continue
                if total > limit:
                    return total
    return total


def table_from_core(obj) -> pyarrow.Table:  # noqa: F821
    """A pyarrow Table over a core table (Arrow C stream, no copy), for the Python API
    (pyarrow is not in the core install: `pip install 'roscope[arrow]'`; the verbs hand
    the core's tables to DuckDB as they are). Not `pa.table(obj)`: that one imports
    pandas to check its argument (a quarter of a second at start-up)."""
    import pyarrow as pa

    return pa.RecordBatchReader.from_stream(obj).read_all()


class Batch(NamedTuple):
    trace: int
    event: str
    batch: pyarrow.RecordBatch  # noqa: F821


def check_paths(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The input paths as a list of strings; FileNotFoundError naming one that is
    empty or missing (ValueError for none at all)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise ValueError("no trace path given")
    for p in out:
        if not p:
            raise FileNotFoundError("an input path is empty: give a trace directory or a database")
        if not os.path.exists(p):
            raise FileNotFoundError(f"{p}: no such file or directory")
    return out


class Trace:
    """One or more CTF traces (a directory anywhere above `metadata` files)."""

    paths: list[str]
    warnings: list[str]
    #: (stream file, events discarded, packets lost) for streams that lost any.
    losses: list[tuple[str, int, int]]

    def __init__(self, paths):
        self.paths = check_paths(paths)
        self.warnings = []
        self.losses = []

    def _open(self):
        return _core.Trace(self.paths)

    def metadata(self) -> list[tuple[str, str, str]]:
        """(relative dir, dir, TSDL text) of each trace found."""
        return self._open().traces()

    def summary(self) -> dict:
        """Counts, processes, streams and lost events, from one pass."""
        t = self._open()
        s = json.loads(t.summary_json())
        self.warnings = t.warnings()
        return s

    def dump(self, out: IO | int | None = None, limit: int | None = None) -> int:
        """Writes every event as a JSON line (docs/dump-format.md)."""
        if out is None:
            out = sys.stdout
        if not isinstance(out, int):
            out.flush()
            out = out.fileno()
        t = self._open()
        try:
            return t.dump(out, limit)
        finally:
            self.warnings = t.warnings()
            self.losses = t.losses()

    def batches(self, events: Sequence[str] | None = None, max_rows: int = 1 << 18) -> Iterator[Batch]:
        """Columnar batches, one table per (trace, event class), as pyarrow record batches
        (pyarrow: `pip install 'roscope[arrow]'`)."""
        import pyarrow as pa

        for trace_idx, name, table in self.core_batches(events, max_rows):
            # One record batch over the core's buffers (Arrow C data interface, no copy).
            yield Batch(trace_idx, name, pa.record_batch(table))

    def core_batches(self, events: Sequence[str] | None = None, max_rows: int = 1 << 18) -> Iterator[tuple[int, str, object]]:
        """(trace index, event name, table) per batch, the table as the core hands it over:
        an Arrow C stream (`__arrow_c_stream__`) that DuckDB or pyarrow read without a copy."""
        t = self._open()
        ev = list(events) if events is not None else None
        while True:
            got = t.read_batches(ev, max_rows)
            if got is None:
                break
            yield from got
        self.warnings = t.warnings()
        self.losses = t.losses()

    def tables(self, events: Sequence[str] | None = None) -> dict[str, pyarrow.Table]:  # noqa: F821
        """All events of each class as one Arrow table per event name (all traces)."""
        import pyarrow as pa

        parts: dict[str, list] = {}
        for b in self.batches(events):
            parts.setdefault(b.event, []).append(b.batch)
        out = {}
        for name, bs in parts.items():
            out[name] = pa.Table.from_batches(bs) if len({tuple(x.schema.names) for x in bs}) == 1 else pa.concat_tables(
                [pa.Table.from_batches([x]) for x in bs], promote_options="default"
            )
        return out
