"""DuckDB's memory: the budget of an analysis, a step given more when it needs
it, and the private temporary directories DuckDB spills into.

- `MEMORY_BUDGET`: DuckDB's memory cap on the connections of `roscope.open` (what
  `Database.limit_memory` sets by default);
- `memory_limit(con)`: the cap of a connection, as DuckDB shows it and in bytes;
- `within_memory(con, step, warnings, what)`: `step()`, with the cap doubled
  (and a warning) while it runs out of memory;
- `at_most(con, budget)`: the cap lowered while a block runs (a step whose
  queries are small, such as the data-flow search);
- `give_back()`: what C's malloc holds free, given back to the system;
- `private_dir()` / `remove_private_dir(path)`: a directory of this process
  only (mode 0700, locked while the process lives) for a database's files and
  DuckDB's spill; those of processes killed without cleaning up are removed by
  the next one.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
from typing import TYPE_CHECKING

from roscope import files

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.
if TYPE_CHECKING:
    import duckdb

#: DuckDB's memory cap on the connections of `open` (bytes; see
#: `Database.limit_memory`): results larger than this (data flows) spill to disk.
#: With the data-flow search over slices of the model, this is most of what an
#: analysis of a long trace holds (bench/scale.py).
MEMORY_BUDGET = 256 << 20

_UNITS = {"b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def memory_limit(con: duckdb.DuckDBPyConnection) -> tuple[str, int]:
    """DuckDB's memory limit of `con`: as DuckDB shows it, and in bytes."""
    shown = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    m = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]*)\s*", shown)
    return shown, int(float(m.group(1)) * _UNITS.get(m.group(2).lower() or "b", 1)) if m else 0


def within_memory(con: duckdb.DuckDBPyConnection, step, warnings: list[str], what: str, *, at_least: int = 0,
                  undo=None, restore: bool = True):
    """`step()` with DuckDB's memory limit on `con` raised to `at_least` if lower,
    and doubled while `step` runs out of it (`undo()` then removes what it left),
    up to DuckDB's own default (80% of the RAM), each time with a warning
    ("`what`: N MiB of memory were not enough; made with 2N MiB"). Some queries
    hold one group or one partition whole (an ordered window over the busiest
    thread's sched events or input waits): better slower and told than
    failed. `restore`: put the limit back afterwards (else the raised limit stays
    for the connection's next queries, which are likely to need it too)."""
    import duckdb

    shown, limit = memory_limit(con)
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 8 // 10
    budget = max(limit, at_least)
    try:
        while True:
            if budget != limit:
                con.execute("SET memory_limit = ?", [f"{budget >> 20}MiB"])
            try:
                return step()
            except duckdb.OutOfMemoryException:
                if undo is not None:
                    undo()
                if budget >= ram:
                    raise
                grown = min(2 * budget, ram)
                warnings.append(f"{what}: {budget >> 20} MiB of memory were not enough; made with {grown >> 20} MiB "
                                "(--memory sets the budget)")
                budget = grown
    finally:
        if restore and budget != limit:
            with contextlib.suppress(Exception):
                con.execute("SET memory_limit = ?", [shown])


@contextlib.contextmanager
def at_most(con: duckdb.DuckDBPyConnection, budget: int):
    """DuckDB's memory limit on `con` lowered to `budget` bytes while the block runs
    (left as it is when already lower, or when `budget` is 0), then put back. For a
    step whose queries are small while what DuckDB would keep up to the limit is
    only a cache (blocks of tables it reads, and of result tables it writes)."""
    shown, limit = memory_limit(con)
    lower = 0 < budget < limit
    if lower:
        con.execute("SET memory_limit = ?", [f"{budget >> 20}MiB"])
    try:
        yield
    finally:
        if lower:
            con.execute("SET memory_limit = ?", [shown])


#: `hand_back_freed`: DuckDB's allocator gives back what it freed in one go from this
#: size on (DuckDB's default is 512 MB); the sizes tried are in bench/README.md.
FLUSH_FREED = "2MB"


def hand_back_freed(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's allocator (`allocator_bulk_deallocation_flush_threshold`) gives back the
    memory of a query's results and of deleted rows when they are freed, instead of
    keeping it for later queries: for a connection of small queries that live long
    (`roscope watch`: a flatter RSS over a soak at the same CPU) or that run right after a
    small load (`roscope stats`: a lower peak); bench/README.md has the figures."""
    con.execute("SET allocator_bulk_deallocation_flush_threshold = ?", [FLUSH_FREED])


def give_back() -> None:
    """Gives the memory that C's `malloc` holds free back to the system
    (`malloc_trim`, glibc only; elsewhere nothing): after a step that allocated much
    in small pieces and freed it (the data-flow search's Rust structures: 45-55 MiB
    on 10M events), so that the next step does not start on top of it."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return
    trim(0)


#: The prefix of a Database's private temporary directories (in `$TMPDIR`).
PRIVATE_PREFIX = "roscope-duckdb-"
#: A private directory is removed by another roscope only if no process holds its
#: lock and it is older than this (seconds): its creator locks it right after
#: making it.
PRIVATE_MIN_AGE = 60


def private_dir() -> str:
    """A new private temporary directory (mode 0700) for a Database's files, held
    under a shared lock (`flock`) while this process lives. The directories of
    roscope processes that are gone without cleaning up (killed with SIGKILL, e.g.
    by the OOM killer, when the model file in it may be gigabytes) are removed
    first: no process holds their lock."""
    sweep_private_dirs(files.temp_root())
    return files.private_dir(files.temp_root(), PRIVATE_PREFIX)


def remove_private_dir(path: str) -> None:
    """Removes a directory of `private_dir` with what is in it, and releases its lock."""
    files.remove_private_dir(path)


def sweep_private_dirs(tmp: str) -> None:
    """Removes this user's private directories in `tmp` that no process holds."""
    files.sweep_private_dirs(tmp, PRIVATE_PREFIX, PRIVATE_MIN_AGE)
