"""roscope: tracing and latency analysis for ROS 2 and ROS 1 systems.

The heavy lifting (CTF decoding, event -> model building) is in the Rust core,
``roscope._core``; this package holds the CLI, the Python API and the analyses.
"""
from roscope.version import __version__ as __version__


def open(trace_or_db, *, heuristics: bool = True, read_only: bool = True,  # noqa: A001 - the API's entry point
         memory: int | None = None, sync: bool = True, runs=None):
    """Opens traces (a path or a list of paths, loaded into a writable in-memory
    database) or a database file written by `roscope load`.

    A database file is opened **read-only** by default: queries, and analyses
    that return their results (the default), work on it, also while other
    processes read it. Pass ``read_only=False`` to store analysis results into
    it (``store=True``). ``heuristics=False`` makes only exact transport links
    and ``sync=False`` keeps every host's raw clock (traces only); ``memory`` is
    DuckDB's budget in bytes (default 256 MiB; results beyond it spill to disk). Returns a `roscope.database.Database`: ``.sql(query)`` and
    ``.table(name)`` give pandas DataFrames, ``.records(query)`` lists of dicts,
    ``.con`` the DuckDB connection. Wrong input raises `roscope.errors.UserError`
    (`InputError`, `DatabaseError`) or `roscope._core.TraceError`, with a
    message naming the file. A dataset directory (`roscope load --dataset`) is
    opened read-only over the runs chosen by ``runs`` (ids or shell patterns;
    one run: the same tables and views as a database; docs/dataset.md).
    """
    from roscope import opening  # here, not at the top: `roscope info` starts without DuckDB

    return opening.open(trace_or_db, heuristics=heuristics, read_only=read_only, memory=memory, sync=sync, runs=runs)
