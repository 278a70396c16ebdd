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
#: The data-flow search's intra-node dependency modes and fallback rules (roscope-flow's
#: `Implicit::NAMES`, `FallbackRule::NAMES`), read by roscope.choices.
IMPLICIT_MODES: list[str]
FALLBACK_RULES: list[str]

class TraceError(ValueError):
    """A trace cannot be read: the message names the file and what is wrong."""

class ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class ArrowTable:
    """Record batches made in Rust, exported through the Arrow PyCapsule protocol."""

    @property
    def num_rows(self) -> int: ...
    @property
    def nbytes(self) -> int:
        """Bytes of its data (as pyarrow's `Table.nbytes`)."""
    @staticmethod
    def concat(tables: list[ArrowTable]) -> ArrowTable:
        """The tables' batches, in order, as one table (no copy; equal schemas only)."""
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

class Meter:
    """Counters a long job of the core updates while it runs, read by a thread that
    shows progress, without a lock: (done, total, found, work). The model builder:
    bytes read, bytes in all, events; a data-flow search: output messages searched, -,
    flows, candidate flows."""

    def __init__(self) -> None: ...
    def read(self) -> tuple[int, int, int, int]: ...

def build_model(
    paths: Sequence[str],
    heuristics: bool = True,
    progress: bool = False,
    record_ids: Sequence[str] | None = None,
    sync: bool = True,
    meter: Meter | None = None,
) -> tuple[list[tuple[str, ArrowTable]], list[tuple[str, int]], list[str], list[tuple[str, int, int]]]:
    """Builds the execution model (docs/model.md): (tables by name, stats, warnings, losses);
    `sync`: several hosts' clocks synchronized from the messages between them."""

def model_statistics(
    paths: Sequence[str],
    heuristics: bool = True,
    record_ids: Sequence[str] | None = None,
    sync: bool = True,
    meter: Meter | None = None,
    attach: bool = False,
    place: Callable[[int, int], tuple[int, int]] | None = None,
) -> tuple[dict, list[tuple[str, int]], list[str], list[tuple[str, int, int]], tuple[int, int] | None]:
    """Builds the model as `build_model` does and returns (parts, stats, warnings, losses,
    window): `parts`, what roscope.stats reads from a database, computed from the model held
    in memory (crates/model/src/stats.rs; roscope.stats_core assembles them): span, counts,
    links_by_method, traces, callback_info, durations, periods, topics, publications,
    linked, takes, drops, latencies, transports, services, nodes. `place(first, last)`, given
    the trace's span, gives a window (start, end) ns: the callbacks' and topics' parts are
    then that window's (`roscope stats --window`), and `window` is it; else None."""

class ModelStream:
    """A streaming build: the builder runs in its own thread and hands over the
    instance tables in chunks while it reads; records older than `window_ns` of
    trace time that nothing will change leave memory. Several hosts whose clocks
    are synchronized are held whole and come at `finish()`."""

    def __init__(self, paths: Sequence[str], heuristics: bool = True, progress: bool = False,
                 record_ids: Sequence[str] | None = None, sync: bool = True, window_ns: int = 1_000_000_000,
                 queue: int = 2, flush_every: int = 0, meter: Meter | None = None) -> None:
        """Opens the traces (TraceError if none can be read) and starts the builder;
        `queue`: chunks the builder may be ahead; `flush_every`: events between chunks (0: 65536)."""
    def next_chunk(self) -> tuple[str, ArrowTable] | None:
        """The next chunk (table name, rows), or None once the build is complete."""
    def finish(self) -> tuple[list[tuple[str, ArrowTable]], list[tuple[str, int]], list[str], list[tuple[str, int, int]]]:
        """After the last chunk: the other tables, stats, warnings, losses, as `build_model`."""

class LiveModel:
    """The model of a live session, fed chunk by chunk (the traces a rotating LTTng
    session archives): objects, open runs and pending links persist across chunks."""

    def __init__(self, heuristics: bool = True, record_ids: Sequence[str] | None = None,
                 window_ns: int = 1_000_000_000, attach: bool = False) -> None:
        """`window_ns`: records are handed over once older than this before a chunk's last event;
        `attach`: processes without a recording id belong to the recording."""
    def feed(self, paths: Sequence[str], upto: int | None = None,
             after: Sequence[tuple[str, int]] | None = None) -> tuple[list[tuple[str, ArrowTable]], int | None, int, int]:
        """Reads the next chunk: (final records as (table, rows), its last event's time or
        None, events discarded and packets lost in it). A live source's mini chunk
        (`LiveClient.poll`): only its events up to `upto` (clock cycles), and of the stream
        files in `after` (paths relative to `paths[0]`, with a time) only those after it."""
    @property
    def events(self) -> int:
        """Events read so far, over every chunk fed (as babeltrace2 counts a trace's)."""
    def objects(self) -> list[tuple[str, ArrowTable]]:
        """The objects known so far (hosts ... callbacks), as (table, rows)."""
    @property
    def held_messages(self) -> int:
        """Entries the ROS 1 message matching holds (publications, receptions, writes on
        connections, message ids and objects): those older than the linker's horizon are gone."""
    def changed_objects(self) -> list[tuple[str, ArrowTable]]:
        """The object tables (as `objects`) that changed since the last call (every one at
        the first)."""
    def pending_takes_since(self) -> int | None:
        """The earliest time of a take not handed over yet (None if none): a window is
        complete only before it."""
    def close(self) -> list[tuple[str, ArrowTable]]:
        """After the last chunk: every record still held."""

class FlowInput:
    """What a live watch's data-flow searches read (`roscope.live_flows`): the callback
    runs, publications and links handed over, held from chunk to chunk."""

    def __init__(self) -> None: ...
    def add(self, name: str, table: ArrowStream) -> None:
        """Keeps the records of `table` (callback_runs, publications or links of
        `LiveModel.feed`; other tables are left)."""
    def forget_before(self, t: int) -> None:
        """Forgets the runs and publications before `t`, and the links of publications
        no longer held."""
    @property
    def held(self) -> tuple[int, int, int]:
        """Runs, publications and links held."""
    def published(self, since: int, until: int, publishers: Sequence[int]) -> bool:
        """Whether one of `publishers` published at a time (as the flow reads it) in
        [since, until)."""
    def model(self, objects: Mapping[str, ArrowStream]) -> FlowModel:
        """The flow's model of the records held (ids 0..n in their order) and the object
        tables `objects` (by name; one missing is empty)."""
    def races(self, callbacks: ArrowStream) -> list[ArrowTable]:
        """The runs held of each process whose callbacks ran on more than one thread, as
        `FlowSearch.add_overlaps` reads them."""

class LiveStats:
    """The records and objects a live watch's windows count (`roscope.live`), held in the
    model's own tables (no database), and each window's statistics from them."""

    def __init__(self) -> None: ...
    def add(self, name: str, table: ArrowStream) -> None:
        """Adds the records of `table` (callback_runs, publications, takes or links of
        `LiveModel.feed`; other tables are left)."""
    def objects(self, name: str, table: ArrowStream) -> None:
        """Replaces the object table `name` (`LiveModel.changed_objects`; one the statistics
        do not read is left)."""
    def prune(self, t: int) -> None:
        """Forgets the runs that start, the publications and takes made before `t`, and the
        links of publications no longer held."""
    def window(self, start: int, end: int) -> dict[str, Any]:
        """The statistics' parts of the window [start, end), as `model_statistics` gives a
        whole trace's (`roscope.stats.callback_rows` and `topic_rows` assemble them)."""
    @property
    def rows(self) -> list[tuple[str, int]]:
        """Rows held, per table."""
    @staticmethod
    def describe(xs: Sequence[int]) -> dict[str, Any]:
        """count, min_ns, mean_ns, std_ns, p50_ns, p90_ns, p99_ns, max_ns of `xs`, as
        `roscope stats` computes them (DuckDB's arithmetic)."""

def table_rows(table: ArrowStream, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of a small table (a search's flows, an object table), the named columns
    only, as tuples (null: None). Not for a table of events."""

class LiveClient:
    """A client of an `lttng-relayd`'s viewer port (LTTng's live protocol): each `poll`
    writes the packets every stream is complete up to into a new directory, a CTF trace
    that `LiveModel.feed` reads as it reads a chunk."""

    def __init__(self, addr: str) -> None:
        """Connects to the viewer port at `addr` (host:port)."""
    def attach(self, name: str, timeout_s: float) -> int:
        """Attaches to the live session `name` (waiting up to `timeout_s` for the relay to
        know it); returns its live timer (us)."""
    def poll(self, out: str) -> tuple[int, int, bool, int | None, list[tuple[str, int]]]:
        """Writes what is complete into the new directory `out` (none if nothing is):
        (packets, bytes, ended, upto, after); `upto` and `after` go to `LiveModel.feed`."""
    def received(self) -> tuple[int, int]:
        """Packets and bytes got from the relay so far."""
    def streams(self) -> tuple[int, int]:
        """Data streams known, and those ended."""

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
    @property
    def missed_switches(self) -> int:
        """Switch-outs so far of a thread its CPU had not switched in (the data misses a switch)."""
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

class SearchOptions:
    """The options of a data-flow search, as `roscope.flow.FlowRequest` makes them."""

    def __init__(
        self,
        *,
        is_input: Sequence[bool],
        is_output: Sequence[bool],
        implicit: str = "auto",
        fallback: str = "pairs",
        exact_links: bool = True,
        max_flows_per_output: int | None = 10000,
        max_flows: int | None = None,
        all_paths: bool = False,
        all_steps: bool = False,
        excluded_topics: Sequence[bool] | None = None,
        excluded_callbacks: Sequence[bool] | None = None,
        deps: Sequence[tuple[int, int]] | None = None,
        deps_callbacks: Sequence[int] | None = None,
        deps_unseen: Sequence[int] | None = None,
        overlaps: Sequence[tuple[int, int, int]] | None = None,
        drop_uncertain: bool = False,
        chunk_rows: int = 65536,
    ) -> None:
        """Masks over the model's topics (and callbacks); implicit is one of auto, all,
        annotations, none; `fallback`: pairs, pipelines or timers; `deps`: intra-node
        edges (callback ids) from source analysis, `deps_callbacks` the callbacks the
        dependency file matched (their nodes get no fallback edge), `deps_unseen` those it
        cannot vouch for (they keep their fallback edges). `overlaps`: (callback,
        run's callback, run's start) of the runs another callback's run overlapped on
        another thread (`overlapping_runs`): a flow through such an implicit dependency
        is uncertain; `drop_uncertain` leaves those flows out. Caps: None is no cap."""
    @property
    def is_input(self) -> list[bool]: ...
    @property
    def is_output(self) -> list[bool]: ...
    @property
    def implicit(self) -> str: ...
    @property
    def fallback(self) -> str: ...
    @property
    def exact_links(self) -> bool: ...
    @property
    def max_flows_per_output(self) -> int | None: ...
    @property
    def max_flows(self) -> int | None: ...
    @property
    def all_paths(self) -> bool: ...
    @property
    def all_steps(self) -> bool: ...
    @property
    def excluded_topics(self) -> list[bool] | None: ...
    @property
    def excluded_callbacks(self) -> list[bool] | None: ...
    @property
    def deps(self) -> list[tuple[int, int]] | None: ...
    @property
    def deps_callbacks(self) -> list[int] | None: ...
    @property
    def deps_unseen(self) -> list[int] | None: ...
    @property
    def overlaps(self) -> list[tuple[int, int, int]] | None: ...
    @property
    def drop_uncertain(self) -> bool: ...
    @property
    def chunk_rows(self) -> int: ...

class Facts:
    """The whole trace's counts the implicit-edge rules read: (callback_id, runs,
    publishing runs) per callback, and (publisher_id, callback_id) pairs of runs that
    published on a publisher."""

    def __init__(self, *, runs: Sequence[tuple[int, int, int]], pairs: Sequence[tuple[int, int]]) -> None: ...
    @property
    def runs(self) -> list[tuple[int, int, int]]: ...
    @property
    def pairs(self) -> list[tuple[int, int]]: ...

class FlowSearch:
    """A data-flow search over the whole model, or over a model handed over in
    slices (docs/analyses.md, "Slices"), slice after slice in output time order."""

    def __init__(self, model: FlowModel, options: SearchOptions, facts: Facts | None = None,
                 meter: Meter | None = None) -> None:
        """`model`: the model or any slice of it (its callbacks and topics name things);
        `facts`: the whole trace's, or None to take them from `model` (the whole model);
        `meter`: counts, once per output message, outputs searched, flows and candidates."""
    def run(self, model: FlowModel, sink: Callable[[str, ArrowTable], object],
            outputs: tuple[int, int] | None = None) -> None:
        """Searches the outputs of the whole model `model` (`outputs`: those published in
        [since, until) only); data_flows, data_flow_steps and data_flow_segments go to
        `sink(name, table)` in chunks."""
    def run_slices(self, reads: Any, sink: Callable[[str, ArrowTable], object], per_slice: int,
                   reach_ns: int) -> dict[str, Any]:
        """Searches the model slice after slice (crates/flow slices.rs plans them: about
        `per_slice` publications each, reaching `reach_ns` before and after its outputs),
        read through `reads` (`roscope.flow.slices.Reads`: its methods return Arrow
        streams of integer columns, `counts` a tuple, `slice` a `FlowModel`); chunks to
        `sink` with the model's ids. Returns what the slicing did: count, restarts,
        answered_from_database, reach_ns, peak_instances, publications_per_slice,
        rest_from (the time from which no output was searched when a cap stopped the
        search, else None)."""
    def add_overlaps(self, runs: ArrowStream) -> int:
        """Adds the overlaps of `runs` (as `overlapping_runs` reads them) that an
        intra-node edge of the search depends on (the only ones that can make a flow
        uncertain); returns how many the search holds."""
    @property
    def stopped(self) -> bool:
        """`max_flows` was reached, or a sink refused a chunk."""
    @property
    def segments_unsure(self) -> int:
        """Segments found again after a slice forgot them (maybe twice in the table)."""
    def finish(self, sink: Callable[[str, ArrowTable], object]) -> tuple[ArrowTable, dict[str, Any]]:
        """The last chunks to `sink`; returns (paths, stats: outputs, outputs_total,
        outputs_capped, capped_examples, stopped_at, flows, candidates,
        duplicates_dropped, flows_on_fallback, flows_uncertain, uncertain_dropped,
        flows_from_publications, trees_cached,
        cache_evicted, cache_hits, seconds)."""

class CausalSearch:
    """Causal links over the whole model or slice after slice (as `FlowSearch`)."""

    def __init__(self, infer_timer_inputs: bool = True) -> None: ...
    def run(self, model: FlowModel, sink: Callable[[str, ArrowTable], object]) -> None:
        """The links of the whole model `model` to `sink("causal_links", table)`."""
    def run_slices(self, reads: Any, sink: Callable[[str, ArrowTable], object], per_slice: int,
                   reach_ns: int) -> dict[str, Any]:
        """The links slice after slice (as `FlowSearch.run_slices`), one table per slice
        to `sink("causal_links", table)`; returns what the slicing did."""

def overlapping_runs(runs: ArrowStream) -> list[tuple[int, int, int]]:
    """Runs that another callback's run overlapped on another thread of the process:
    `runs` has int64 columns proc_id, thread_id, callback_id, start_ts, end_ts, in
    (proc_id, start_ts) order; returns [(overlapping callback, callback, run start)].
    ValueError for a missing column, nulls, or rows out of order."""


class Regex:
    """A user's regular expression on Rust's `regex` engine (linear-time matching;
    roscope.regex is its one user). ValueError with the engine's reason if it cannot run."""

    def __init__(self, pattern: str) -> None: ...
    def search(self, text: str) -> bool: ...
    def mask(self, texts: list[str]) -> list[bool]: ...
    @property
    def pattern(self) -> str: ...
