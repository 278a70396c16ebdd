"""Opening what the user gives: a trace (or several), a database file written by
`roscope load`, or a dataset directory (`roscope load --dataset`), as one
`Database`. The top of the storage layer: `roscope.open` is `open` here.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from roscope import dataset
from roscope.database import Database, is_db, open_file
from roscope.errors import DatabaseError, InputError
from roscope.loading import load
from roscope.memory import MEMORY_BUDGET, private_dir, remove_private_dir

#: Traces opened for analysis (`open`) are loaded in memory up to this share of
#: DuckDB's budget (their size on disk; a model takes less than its trace's size in
#: DuckDB), into a temporary database file beyond: a file costs some writing,
#: memory would leave the queries too little of the budget (bench/README.md).
IN_MEMORY_SHARE = 4


def _size(paths: Sequence[str]) -> int:
    """The bytes of the files under `paths`."""
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for root, _dirs, files in os.walk(p):
            for f in files:
                with contextlib.suppress(OSError):
                    total += os.path.getsize(os.path.join(root, f))
    return total


def open(trace_or_db, *, heuristics: bool = True, read_only: bool = True,  # noqa: A001 - the API's name
         memory: int | None = None, sync: bool = True, runs=None) -> Database:
    """A Database over a DuckDB file written by `roscope load`, or over traces.

    A database file is opened **read-only** by default: queries, and analyses
    that return their results (the default), work on it, and other processes
    may read it at the same time; give `read_only=False` to store results in it
    (analyses called with ``store=True``). Traces (a path or a list of paths) are
    loaded into a writable database, in memory or, for traces larger than a
    quarter of the budget, in a temporary file removed on `close()`; `heuristics=False` keeps only
    exact transport links. `memory`: DuckDB's memory cap in bytes (default
    `MEMORY_BUDGET`, 0: DuckDB's own), beyond which it spills to a temporary
    directory. Raises InputError / DatabaseError (both UserError) with a message
    naming the file when the input is wrong. A dataset directory (`roscope load
    --dataset`) is opened read-only over the runs chosen by `runs` (ids or shell
    patterns; see `roscope.dataset.open`).
    """
    if isinstance(trace_or_db, (str, os.PathLike)):
        paths = [os.fspath(trace_or_db)]
    else:
        paths = [os.fspath(p) for p in trace_or_db]
    if len(paths) == 1 and dataset.is_dataset(paths[0]):
        return dataset.open(paths[0], runs, memory=memory)
    if runs is not None:
        raise InputError(f"{paths[0]}: not a dataset (`roscope load TRACE --dataset DIR` makes one); a run selection "
                         "applies to datasets only")
    if len(paths) == 1 and is_db(paths[0]):
        db = open_file(paths[0], read_only)
    else:
        for p in paths:
            if os.path.isfile(p) and p.endswith((".duckdb", ".db")) and not is_db(p):
                raise DatabaseError(f"{p}: not a DuckDB database (the file does not start with DuckDB's header)")
        budget = MEMORY_BUDGET if memory is None or int(memory) <= 0 else int(memory)
        if _size(paths) <= budget // IN_MEMORY_SHARE:
            db, _ = load(paths, None, heuristics=heuristics, sync=sync)
        else:
            # Into a database file of a private directory: DuckDB then evicts table
            # data it does not need without writing it out, and its budget is the
            # queries' (in memory, the tables of a 10M-event trace alone exceed it).
            private = private_dir()
            try:
                db, _ = load(paths, os.path.join(private, "model.duckdb"), heuristics=heuristics, sync=sync)
            except BaseException:
                remove_private_dir(private)
                raise
            db.adopt_dir(private)
    db.limit_memory(memory)
    return db
