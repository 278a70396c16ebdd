"""Type stub of `roscope._core`, the Rust core (crates/roscope-py).

Every table crosses between Rust and Python by the Arrow C data interface (the
PyCapsule protocol): the core hands out `ArrowTable`s, which `pyarrow.table(t)` and
`pyarrow.record_batch(t)` read without copying, and reads the model's tables back
from any object with `__arrow_c_stream__` (a pyarrow Table or RecordBatchReader,
what DuckDB's `.arrow()` returns).
"""
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__version__: str

class TraceError(ValueError):
    """A trace cannot be read: the message names the file and what is wrong."""

class ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class ArrowTable:
    """Record batches made in Rust, exported through the Arrow PyCapsule protocol."""

    @property
    def num_rows(self) -> int: ...
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """Only for a table of one batch (each of `Trace.read_batches`)."""

class Trace:
    """One pass over a set of CTF traces (directories anywhere above `metadata` files).
    A Trace is read once: summarize, dump or read batches, then open another."""

    def __init__(self, paths: Sequence[str]) -> None: ...
    def traces(self) -> list[tuple[str, str, str]]:
        """(relative dir, dir, metadata TSDL text) of each trace, without reading events."""
    def summary_json(self) -> str:
        """Reads every event once; the summary as a JSON document."""
    def dump(self, fd: int, limit: int | None = None) -> int:
        """Writes every event as a JSON line to file descriptor `fd`; returns the count."""
    def read_batches(self, events: Sequence[str] | None = None, max_rows: int = 262144) -> list[tuple[int, str, ArrowTable]] | None:
        """The next batches, or None at the end: (trace index, event name, one record batch)."""
    def warnings(self) -> list[str]:
        """Problems met so far (file, byte offset, what); reading goes on past them."""
    def losses(self) -> list[tuple[str, int, int]]:
        """(stream's first file, events discarded, packets lost) for streams that lost any."""

def build_model(
    paths: Sequence[str],
    heuristics: bool = True,
    progress: bool = False,
    record_ids: Sequence[str] | None = None,
    sync: bool = True,
) -> tuple[list[tuple[str, ArrowTable]], list[tuple[str, int]], list[str], list[tuple[str, int, int]]]:
    """Builds the execution model (docs/model.md): (tables by name, stats, warnings, losses);
    `sync`: several hosts' clocks synchronized from the messages between them."""

class ModelStream:
    """A streaming build: the builder runs in its own thread and hands over the
    instance tables in chunks while it reads; records older than `window_ns` of
    trace time that nothing will change leave memory. Several hosts whose clocks
    are synchronized are held whole and come at `finish()`."""

    def __init__(self, paths: Sequence[str], heuristics: bool = True, progress: bool = False,
                 record_ids: Sequence[str] | None = None, sync: bool = True, window_ns: int = 1_000_000_000,
                 queue: int = 2, flush_every: int = 0) -> None:
        """Opens the traces (TraceError if none can be read) and starts the builder;
        `queue`: chunks the builder may be ahead; `flush_every`: events between chunks (0: 65536)."""
    def next_chunk(self) -> tuple[str, ArrowTable] | None:
        """The next chunk (table name, rows), or None once the build is complete."""
    def finish(self) -> tuple[list[tuple[str, ArrowTable]], list[tuple[str, int]], list[str], list[tuple[str, int, int]]]:
        """After the last chunk: the other tables, stats, warnings, losses, as `build_model`."""

class PerfUnsupported(ValueError):
    """A perf.data the core's reader does not handle: read it with `perf script`."""

class PerfNoSched(ValueError):
    """A perf.data without sched:sched_switch events."""

class KernelBuilder:
    """Kernel scheduling tables in one streamed pass (crates/model/src/kernel): sources are
    added in turn, each host's events in time order; chunks of the tables `thread_states`,
    `preemptions`, `migrations` (each row with its thread's process as known when written)
    go to `put(name, table)` while reading; `finish` gives the last ones and
    `kernel_threads_raw` (host_id, tid, pid, name, rewrite)."""
    def __init__(self, chunk_rows: int = 524288) -> None: ...
    def ust_pids(self, table: ArrowStream) -> None:
        """The processes of threads by their UST events: a table (host_id, tid, pid)."""
    def add_perf(self, path: str, host: int, map: tuple[int, int, float] | None,
                 put: Callable[[str, ArrowTable], object]) -> dict[str, Any]:
        """perf.data read directly; raises PerfUnsupported, PerfNoSched, or ValueError."""
    def add_lttng(self, path: str, host: int, map: tuple[int, int, float] | None,
                  put: Callable[[str, ArrowTable], object]) -> int:
        """An LTTng kernel trace's sched events; returns how many."""
    def add_batch(self, batch: ArrowStream, host: int, put: Callable[[str, ArrowTable], object]) -> None:
        """Events in kernel.py's normalized layout, times already mapped."""
    def finish(self, put: Callable[[str, ArrowTable], object]) -> None: ...

def schema() -> str:
    """The database schema (crates/model/src/schema.rs) as JSON: {"tables": [{name,
    origin, doc, columns: [{name, type, doc}]}], "codes": [{name, doc, used_in,
    values: [{code, name, doc}]}]}."""

class FlowModel:
    """The flow's model (crates/flow), built from the execution model's tables."""

    def __init__(self, tables: Mapping[str, ArrowStream] | Callable[[str, list[str]], ArrowStream]) -> None:
        """`tables`: the tables of `inputs()` (with at least their listed columns), by
        name, or a callable (table, columns) -> stream, called one table at a time.
        Raises ValueError when a table or column is missing or a reference is out of range."""
    @staticmethod
    def inputs() -> list[tuple[str, list[str]]]:
        """The tables and columns the flow reads."""
    @property
    def topics(self) -> list[str]:
        """Topic names in byte order; topic masks follow this order."""
    def causal_links(self, infer_timer_inputs: bool = True) -> ArrowTable:
        """in_publication_id, in_run_id, out_publication_id, kind (direct,
        periodic_async, partial_sync, inferred)."""
    def message_graph(
        self, publication: int, forward: bool = True, backward: bool = True
    ) -> tuple[list[int], list[int], list[tuple[str, int, str, int, str]]]:
        """(publications, runs, edges as (from kind 'p'|'r', id, to kind, id, edge kind))."""
    @property
    def callback_labels(self) -> list[str]:
        """Callback labels (`node kind(topic)`); callback masks follow this order."""

#: (pub_base, pub_n, pub_extra, run_base, run_n, run_extra): a slice's ids to the model's.
Ids = tuple[int, int, Sequence[int], int, int, Sequence[int]]
#: (lo, hi, out_from_ts, out_from_id, out_to, lo_cb, lo_pub): the slice and the outputs handled.
Window = tuple[int, int, int, int, int, Sequence[int], Sequence[int]]

class FlowSearch:
    """A data-flow search over the whole model, or over a model handed over in
    slices (docs/analyses.md, "Slices"), slice after slice in output time order."""

    def __init__(
        self,
        model: FlowModel,
        is_input: Sequence[bool],
        is_output: Sequence[bool],
        facts: tuple[Sequence[tuple[int, int, int]], Sequence[tuple[int, int]]] | None,
        implicit: str = "auto",
        exact_links: bool = True,
        max_flows_per_output: int | None = 10000,
        all_steps: bool = False,
        *,
        max_flows: int | None = None,
        all_paths: bool = False,
        excluded_topics: Sequence[bool] | None = None,
        excluded_callbacks: Sequence[bool] | None = None,
        deps: Sequence[tuple[int, int]] | None = None,
        fallback: str = "pairs",
        chunk_rows: int = 65536,
    ) -> None:
        """Masks over `model.topics` (and callbacks); implicit is one of auto, all,
        annotations, none; `deps`: intra-node edges (callback ids) from source analysis;
        `fallback`: pairs, pipelines or timers. Caps: None is no cap. `facts`: the whole
        trace's runs and publishing runs per callback and (publisher, callback) pairs,
        or None to take them from `model` (the whole model)."""
    def run(
        self,
        model: FlowModel,
        ids: Ids,
        window: Window | None,
        sink: Callable[[str, ArrowTable], object],
        answers: tuple[Sequence[tuple[int, int, int]], Sequence[tuple[int, int, int]], Sequence[int], Sequence[int]] | None = None,
    ) -> tuple[int, int, list[tuple[str, int, int]]] | None:
        """Searches the outputs of one slice; data_flows, data_flow_steps and
        data_flow_segments go to `sink(name, table)` in chunks, with the model's ids.
        Returns None, or the output (time, publication id) whose flows reach beyond the
        slice and what the slice lacked: ("node", 0 run / 1 publication, id),
        ("run_before", callback, time), ("newest_before", topic, time)."""
    @property
    def stopped(self) -> bool:
        """`max_flows` was reached, or a sink refused a chunk."""
    @property
    def segments_unsure(self) -> int:
        """Segments found again after a slice forgot them (maybe twice in the table)."""
    def finish(self, sink: Callable[[str, ArrowTable], object]) -> tuple[ArrowTable, dict[str, Any]]:
        """The last chunks to `sink`; returns (paths, stats: outputs, outputs_total,
        outputs_capped, capped_examples, stopped_at, flows, candidates,
        duplicates_dropped, flows_on_fallback, flows_from_publications, trees_cached,
        cache_evicted, cache_hits, seconds)."""

class CausalSearch:
    """Causal links over the whole model or slice after slice (as `FlowSearch`)."""

    def __init__(self, infer_timer_inputs: bool = True) -> None: ...
    def run(self, model: FlowModel, ids: Ids, window: Window | None) -> tuple[ArrowTable, tuple[int, int] | None]:
        """The links of the slice's publications in `window`, with the model's ids, and
        the publication (time, id) from which the slice does not hold what they need."""
