"""Many runs as one dataset: roscope's model of each run as Parquet files, hive-partitioned.

Layout (docs/dataset.md)::

    DIR/roscope-dataset.json                       marks a dataset (format, version)
    DIR/runs/run=<id>/part-0.parquet                one row per run: its manifest (written last:
                                                    a run exists once this file is in place)
    DIR/<table>/run=<id>/part-0.parquet             every model table (docs/model.md), meta, codes
    DIR/<table>/run=<id>/host=<host>/part-0.parquet tables with a host_id column, one file per host

`append()` loads traces as one run (`roscope load TRACE --dataset DIR`); it writes
everything into a temporary directory inside DIR, then renames each table's run
directory into place, the runs entry last: readers only see runs listed in `runs/`,
so a run is there whole or not at all. `open()` gives a `roscope.database.Database`
over views of the chosen runs' files; `runs()` lists the runs; `table_files()` names
the files of a table for other engines (Spark). No SQL text is ever built from a
path: files go to DuckDB as lists through its relational API. Analyses across runs
are `roscope.trend`'s and `roscope.dataset_queries`'.
"""
from __future__ import annotations

import builtins
import contextlib
import datetime as _dt
import fnmatch
import glob
import json
import os
import re
import socket
from collections.abc import Sequence

from roscope import _core, files, manifest
from roscope.database import Database, connect, create_views
from roscope.errors import InputError
from roscope.files import interrupts_deferred
from roscope.loading import write
from roscope.manifest import DATASET_MARKER as MARKER
from roscope.manifest import is_dataset  # noqa: F401 - dataset.is_dataset, as its callers name it
from roscope.trace import check_paths
from roscope.version import __version__

# DuckDB is imported in the functions that use it: the CLI's parser (every command's
# defaults, `roscope --help`) and `roscope info` start without it.

FORMAT = "roscope-dataset"
VERSION = 1
#: The table of runs (one row per run, its manifest).
RUNS = "runs"
#: A run id: letters, digits, '.', '_', '-' (a directory name, never '=' or '/').
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
#: A run is written in a directory DIR/.tmp-<run id>-<random> (roscope.files.private_dir),
#: locked while its roscope lives; one older than TMP_MIN_AGE seconds that no process
#: holds (its roscope was killed) is removed by the next append.
TMP_PREFIX = ".tmp-"
TMP_MIN_AGE = 60


# ---------------------------------------------------------------- the directory


def _check_dataset(path: str) -> None:
    if not os.path.isdir(path):
        raise InputError(f"{path}: no such dataset directory")
    m = os.path.join(path, MARKER)
    try:
        with builtins.open(m) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: not a roscope dataset (no {MARKER}; `roscope load TRACE --dataset DIR` makes one)") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{m}: unreadable dataset marker: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{m}: not a roscope dataset marker")
    if doc.get("version") != VERSION:
        raise InputError(f"{m}: dataset format version {doc.get('version')} is not {VERSION} (another roscope version)")


def create_dataset(path: str, inputs: Sequence[str] = ()) -> None:
    """Makes `path` a dataset: creates it if missing; an existing directory must be
    empty or a dataset already (nothing else of the user's is written into). A
    symbolic link, anything but a directory, or a directory inside one of `inputs`
    (the traces being loaded) is refused (roscope.files.check)."""
    files.check(path, directory=True, inputs=inputs, what="dataset directory")
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, MARKER)):
            _check_dataset(path)
            return
        if [n for n in os.listdir(path) if not n.startswith(".")]:
            raise InputError(f"{path}: a directory that is not a roscope dataset and not empty; give a new or empty directory")
    else:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise InputError(f"{path}: the directory {parent} does not exist")
        os.makedirs(path, exist_ok=True)
    files.atomic_write(os.path.join(path, MARKER), json.dumps({"format": FORMAT, "version": VERSION}) + "\n")


def _run_dir(dataset: str, table: str, run_id: str) -> str:
    return os.path.join(dataset, table, f"run={run_id}")


def run_ids(dataset: str) -> list[str]:
    """The committed runs of `dataset` (those with their entry in runs/), sorted by id."""
    _check_dataset(dataset)
    out = []
    for d in glob.glob(os.path.join(glob.escape(dataset), RUNS, "run=*")):
        rid = os.path.basename(d)[4:]
        if RUN_ID.match(rid) and glob.glob(os.path.join(glob.escape(d), "*.parquet")):
            out.append(rid)
    return sorted(out)


def select(dataset: str, runs: Sequence[str] | str | None = None) -> list[str]:
    """The run ids chosen by `runs`: None (every run), or run ids and shell
    patterns (``nightly-*``); an id or pattern that matches no run is an error."""
    have = run_ids(dataset)
    if runs is None:
        if not have:
            raise InputError(f"{dataset}: the dataset has no runs yet")
        verify(dataset, have)
        return have
    if isinstance(runs, str):
        runs = [runs]
    chosen: list[str] = []
    for pat in runs:
        hit = [r for r in have if fnmatch.fnmatchcase(r, pat)]
        if not hit:
            shown = ", ".join(have[:10]) + (", ..." if len(have) > 10 else "")
            raise InputError(f"{dataset}: no run matches {pat!r} (runs: {shown or 'none'})")
        chosen += [r for r in hit if r not in chosen]
    verify(dataset, chosen)
    return chosen


def verify(dataset: str, run_ids_: Sequence[str]) -> None:
    """Checks the runs' files before any query reads them: each run's entry in runs/
    is its own, and every table the entry counts has its files, with roscope's
    columns and, together, the rows the entry counts. A file deleted, replaced by
    another run's or another table's, or of another schema is an InputError naming
    the run and the file (a query would have left the run out, or read NULLs)."""
    import duckdb

    columns = {t["name"]: [c["name"] for c in t["columns"]] for t in json.loads(_core.schema())["tables"]}
    columns[RUNS] = [n for n, _t in RUNS_COLUMNS]
    con = duckdb.connect()
    try:
        for rid in run_ids_:
            _verify_run(con, dataset, rid, columns)
    finally:
        con.close()


def _verify_run(con, dataset: str, rid: str, columns: dict[str, list[str]]) -> None:
    """`verify` of one run (`con`: a DuckDB connection that reads the Parquet files)."""
    import duckdb

    entry = table_files(dataset, RUNS, [rid])
    rows = _check_files(con, dataset, rid, RUNS, entry, columns[RUNS])
    try:
        if rows == 1 and len(entry) == 1:
            rel = con.from_parquet(entry[0])
            row = dict(zip(rel.columns, rel.fetchall()[0]))
        else:
            row = None
        counts = json.loads(row["table_rows"]) if row else None
    except (OSError, ValueError, TypeError, duckdb.Error) as exc:
        raise InputError(f"{entry[0]}: unreadable entry of run {rid} ({exc}); {_redo(dataset, rid)}") from None
    if row is None or row.get("run_id") != rid or not isinstance(counts, dict):
        who = f"the entry of run {row.get('run_id')!r}" if row and row.get("run_id") != rid else "no entry of one run"
        raise InputError(f"{dataset}: run {rid}: {entry[0]} holds {who}; {_redo(dataset, rid)}")
    for table, n in sorted(counts.items()):
        got = _check_files(con, dataset, rid, table, table_files(dataset, table, [rid]), columns.get(table))
        if got != n:
            raise InputError(f"{dataset}: run {rid}: the files of table {table} ({_run_dir(dataset, table, rid)}) "
                             f"hold {got:,} rows, the run's entry counts {n:,}: a file was deleted or replaced; "
                             f"{_redo(dataset, rid)}")


def _check_files(con, dataset: str, rid: str, table: str, files_: Sequence[str], columns: list[str] | None) -> int:
    """The rows of one table's files of run `rid`, each checked (readable, roscope's columns),
    read by DuckDB (`con`) from the files' footers."""
    if not files_:
        raise InputError(f"{dataset}: run {rid}: the files of table {table} are missing (no Parquet file in "
                         f"{_run_dir(dataset, table, rid)}); {_redo(dataset, rid)}")
    rows = 0
    for f in files_:
        try:
            rel = con.from_parquet(f)
            names = list(rel.columns)
            n = rel.count("*").fetchall()[0][0]  # from the footer's row groups
        except Exception as exc:  # noqa: BLE001 - any reason makes the file unreadable
            raise InputError(f"{f}: damaged Parquet file in the dataset (run {rid}: {exc}); "
                             f"{_redo(dataset, rid)}") from None
        if columns is not None and names != columns:
            raise InputError(f"{f}: not roscope's table {table} (run {rid}): its columns are {', '.join(names[:8])}"
                             f"{', ...' if len(names) > 8 else ''}; {_redo(dataset, rid)}")
        rows += n
    return rows


def _redo(dataset: str, rid: str) -> str:
    return f"load the run again with --force (roscope load TRACE --dataset {dataset} --run-id {rid} --force)"


def tables(dataset: str, run_ids_: Sequence[str]) -> list[str]:
    """The tables that at least one of the runs has."""
    out = []
    for d in sorted(os.listdir(dataset)):
        if d.startswith((".", "_")) or not os.path.isdir(os.path.join(dataset, d)):
            continue
        if any(os.path.isdir(_run_dir(dataset, d, r)) for r in run_ids_):
            out.append(d)
    return out


def table_files(dataset: str, table: str, run_ids_: Sequence[str]) -> list[str]:
    """The Parquet files of `table` for the runs, in run order (a host's files in name order)."""
    files = []
    for r in run_ids_:
        d = glob.escape(_run_dir(dataset, table, r))
        files += sorted(glob.glob(os.path.join(d, "*.parquet")) + glob.glob(os.path.join(d, "host=*", "*.parquet")))
    return files


def damaged_file(files: Sequence[str]) -> tuple[str, str] | None:
    """The first file that is not a readable Parquet file (its footer, read by DuckDB),
    with why; None if all are."""
    import duckdb

    con = duckdb.connect()
    try:
        for f in files:
            try:
                con.from_parquet(f)
            except Exception as exc:  # noqa: BLE001 - any reason makes the file unreadable
                return f, str(exc)
    finally:
        con.close()
    return None


def read_error(exc: BaseException, files: Sequence[str], what: str) -> InputError:
    """The error to raise when DuckDB cannot read a dataset's `files`: the damaged
    file named, or DuckDB's message under `what`."""
    bad = damaged_file(files)
    if bad:
        return InputError(f"{bad[0]}: damaged Parquet file in the dataset ({bad[1]}); remove that run and load it again")
    return InputError(f"{what}: cannot read the dataset: {exc}")


# ---------------------------------------------------------------- appending a run


def run_id_for(paths: Sequence[str], run_id: str | None, man: dict | None) -> str:
    """`run_id`, checked; None: the record manifest's record id, else the trace directory's name."""
    if run_id is None:
        base = (man or {}).get("record_id") or os.path.basename(os.path.abspath(paths[0]).rstrip("/")) or "run"
        run_id = re.sub(r"[^A-Za-z0-9._-]", "_", str(base)).lstrip("._-")[:128] or "run"
    if not RUN_ID.match(run_id):
        raise InputError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-' (at most 128, starting with a letter or digit)")
    return run_id


def record_manifest(paths: Sequence[str]) -> dict | None:
    """The `roscope record` manifest at or above the traces (the first one), if any."""
    for _m, man in manifest.find(paths):
        if isinstance(man, dict):
            return man
    return None


def parse_config(items: Sequence[str] | None) -> dict:
    """``KEY=VAL`` strings as a dict (a value that parses as JSON keeps its type)."""
    out: dict = {}
    for it in items or ():
        key, sep, val = it.partition("=")
        if not sep or not key:
            raise InputError(f"--config {it!r}: give KEY=VALUE")
        try:
            value = json.loads(val)
        except ValueError:
            out[key] = val
            continue
        try:
            json.dumps(value, allow_nan=False)   # NaN, Infinity, 1e999: stored as standard JSON only
        except ValueError:
            raise InputError(f"--config {it!r}: the value is not a finite number; give a finite one, "
                             f"or quote it as text (--config '{key}=\"{val}\"')") from None
        out[key] = value
    return out


def _parse_time(text: str) -> int:
    try:
        t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"recorded time {text!r}: give an ISO 8601 time, e.g. 2026-01-31T12:00:00Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    ns = int(t.timestamp()) * 10**9 + t.microsecond * 1000
    if not 0 <= ns < 2**63:
        raise InputError(f"recorded time {text!r}: out of range; give a time from 1970-01-01 to 2262-04-11 "
                         "(stored in nanoseconds since 1970 as a 64-bit number)")
    return ns


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    t = _dt.datetime.fromtimestamp(ns // 10**9, _dt.timezone.utc).replace(microsecond=(ns % 10**9) // 1000)
    return t.isoformat().replace("+00:00", "Z")


def _export(con, out: str, run_id: str) -> dict[str, int]:
    """Every base table of the loaded run into `out`/<table>/run=<id>/...; rows per table."""
    import duckdb

    names = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_type = 'BASE TABLE' "
        "ORDER BY table_name").fetchall()]
    hosts = dict(con.execute("SELECT host_id, hostname FROM hosts").fetchall()) if "hosts" in names else {}
    dirs: dict[int | None, str] = {}
    for hid, name in sorted(hosts.items()):
        d = f"host={name}" if name and _HOST.match(name) else f"host=host-{hid}"
        dirs[hid] = d if d not in dirs.values() else f"host={name if _HOST.match(name or '') else 'host'}~{hid}"
    rows: dict[str, int] = {}
    for name in names:
        rel = con.table(name)
        rows[name] = rel.aggregate("count(*)").fetchall()[0][0]
        base = _run_dir(out, name, run_id)
        os.makedirs(base)
        if "host_id" not in rel.columns or not hosts:
            rel.write_parquet(os.path.join(base, "part-0.parquet"))
            continue
        col = duckdb.ColumnExpression("host_id")
        present = sorted((r[0] for r in rel.project("host_id").distinct().fetchall()), key=lambda h: (h is None, h))
        for hid in present or [None]:
            sub = rel.filter(col.isnull() if hid is None else col == duckdb.ConstantExpression(hid))
            d = dirs.get(hid, "host=_") if hid is not None else "host=_"
            os.makedirs(os.path.join(base, d), exist_ok=True)
            sub.write_parquet(os.path.join(base, d, "part-0.parquet"))
    return rows


_Y2000_NS = 946_684_800 * 10**9
_CREATED = re.compile(r'trace_creation_datetime\s*=\s*"(\d{8}T\d{6}(?:[+-]\d{4}|Z)?)"')


def _creation_time(paths: Sequence[str]) -> int | None:
    """The earliest `trace_creation_datetime` of the traces' CTF metadata (LTTng
    writes it), in ns since the epoch; None if no trace has one. Reads no events."""
    best = None
    for _rel, _dir, tsdl in _core.Trace(list(paths)).traces():
        m = _CREATED.search(tsdl)
        if not m:
            continue
        try:
            t = _dt.datetime.strptime(m.group(1).replace("Z", "+0000"), "%Y%m%dT%H%M%S%z")
        except ValueError:
            continue
        ns = int(t.timestamp()) * 10**9
        best = ns if best is None else min(best, ns)
    return best


def _run_row(con, run_id, paths, res, rows, man, config, commit, recorded_ns) -> dict:
    if recorded_ns is None and man and isinstance(man.get("start_time_ns"), int):
        recorded_ns = man["start_time_ns"]  # `roscope record`'s start, on the real-time clock
    if recorded_ns is None:
        recorded_ns = _creation_time(paths)
    if recorded_ns is None and "threads" in rows:
        first = con.execute("SELECT min(first_ts) FROM threads").fetchall()[0][0]
        recorded_ns = first if first is not None and first >= _Y2000_NS else None  # a real-time clock, not monotonic
    hosts = [r[0] for r in con.execute("SELECT hostname FROM hosts ORDER BY host_id").fetchall()] if "hosts" in rows else []
    if commit is None and man:
        commit = man.get("commit") or man.get("git_describe")
    return {
        "run_id": run_id,
        "recorded_ns": recorded_ns,
        "recorded_at": _iso(recorded_ns),
        "loaded_at": _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z"),
        "commit": commit,
        "config": json.dumps(config, sort_keys=True),
        "sources": [os.path.abspath(p) for p in paths],
        "hosts": hosts,
        "record_id": (man or {}).get("record_id"),
        "loaded_by": socket.gethostname(),
        "roscope_version": __version__,
        "events": int(res.stats.get("events", 0) or 0),
        "events_discarded": con.execute("SELECT coalesce(sum(events_discarded), 0) FROM traces").fetchall()[0][0]
        if "traces" in rows else 0,
        "packets_lost": con.execute("SELECT coalesce(sum(packets_lost), 0) FROM traces").fetchall()[0][0] if "traces" in rows else 0,
        "callback_runs": rows.get("callback_runs", 0),
        "publications": rows.get("publications", 0),
        "warnings": len(res.warnings),
        "table_rows": json.dumps(rows, sort_keys=True),
        "manifest": json.dumps(man, sort_keys=True, default=str) if man else None,
    }


#: The columns of the runs table and their types (one row per run).
RUNS_COLUMNS = (
    ("run_id", "VARCHAR"), ("recorded_ns", "BIGINT"), ("recorded_at", "VARCHAR"), ("loaded_at", "VARCHAR"),
    ("commit", "VARCHAR"), ("config", "VARCHAR"), ("sources", "VARCHAR[]"), ("hosts", "VARCHAR[]"),
    ("record_id", "VARCHAR"), ("loaded_by", "VARCHAR"), ("roscope_version", "VARCHAR"), ("events", "BIGINT"),
    ("events_discarded", "BIGINT"), ("packets_lost", "BIGINT"), ("callback_runs", "BIGINT"), ("publications", "BIGINT"),
    ("warnings", "BIGINT"), ("table_rows", "VARCHAR"), ("manifest", "VARCHAR"),
)
#: The run's row as one SELECT of its values (parameters), each of its type: roscope's own names.
_RUN_ROW_SQL = "SELECT " + ", ".join(f'${n}::{t} AS "{n}"' for n, t in RUNS_COLUMNS)


def _write_run_row(row: dict, out: str) -> None:
    import duckdb

    d = _run_dir(out, RUNS, row["run_id"])
    os.makedirs(d)
    con = duckdb.connect()
    try:
        con.sql(_RUN_ROW_SQL, params={n: row.get(n) for n, _t in RUNS_COLUMNS}).write_parquet(os.path.join(d, "part-0.parquet"))
    finally:
        con.close()


def _existing_dirs(dataset: str, run_id: str) -> list[str]:
    """Every directory of the run in the dataset (table dirs, runs/ entry)."""
    out = []
    for t in sorted(os.listdir(dataset)):
        if t.startswith((".", "_")):
            continue
        d = _run_dir(dataset, t, run_id)
        if os.path.lexists(d):
            out.append(t)
    return out


def _commit(tmp: str, dataset: str, run_id: str, force: bool) -> None:
    """Renames the run's directories from `tmp` into the dataset, runs/ last; on
    any failure puts everything back as it was."""
    old = _existing_dirs(dataset, run_id)
    if old and not force:
        raise InputError(f"{dataset}: run {run_id!r} is already in the dataset (pass --force to replace it)")
    new = sorted(t for t in os.listdir(tmp) if os.path.isdir(_run_dir(tmp, t, run_id)))
    new.sort(key=lambda t: t == RUNS)  # the runs entry last: it makes the run visible
    aside = os.path.join(tmp, ".old")
    moved_old: list[str] = []
    moved_new: list[str] = []
    with interrupts_deferred():
        try:
            if RUNS in old:  # hide the old run first, then its tables
                old = [RUNS] + [t for t in old if t != RUNS]
            for t in old:
                os.makedirs(os.path.join(aside, t))
                files.rename_new(_run_dir(dataset, t, run_id), _run_dir(aside, t, run_id))
                moved_old.append(t)
            for t in new:
                os.makedirs(os.path.join(dataset, t), exist_ok=True)
                try:
                    files.rename_new(_run_dir(tmp, t, run_id), _run_dir(dataset, t, run_id))
                except OSError as exc:
                    if os.path.lexists(_run_dir(dataset, t, run_id)):
                        raise InputError(f"{dataset}: run {run_id!r} appeared while roscope was writing it "
                                         "(another load with the same run id); left as it is") from None
                    raise InputError(f"{dataset}: cannot move run {run_id!r} into place: {exc.strerror or exc}") from None
                moved_new.append(t)
        except BaseException:
            for t in reversed(moved_new):
                with contextlib.suppress(OSError):
                    files.rename_new(_run_dir(dataset, t, run_id), _run_dir(tmp, t, run_id))
            for t in moved_old:
                with contextlib.suppress(OSError):
                    files.rename_new(_run_dir(aside, t, run_id), _run_dir(dataset, t, run_id))
            raise


def append(paths: Sequence[str] | str, dataset: str, *, run_id: str | None = None, config: dict | None = None,
           commit: str | None = None, recorded_at: str | None = None, force: bool = False,
           heuristics: bool = True, sync: bool = True):
    """Loads the traces `paths` as one run into the dataset `dataset` (created if
    missing); returns (the run's row of the runs table, the LoadResult).

    `run_id` defaults to the `roscope record` manifest's record id, else the trace
    directory's name; an existing run id is refused unless `force` (which replaces
    that run only). `config` (a dict) and `commit` are stored with the run;
    `recorded_at` (ISO 8601) overrides the recorded time (else the record
    manifest's start if on the real-time clock, else the trace's first event).
    The run appears whole or not at all (written in a temporary directory inside
    the dataset, then renamed into place); the traces are only read.
    """
    paths = check_paths([paths] if isinstance(paths, (str, os.PathLike)) else paths)
    dataset = os.fspath(dataset)
    man = record_manifest(paths)
    run_id = run_id_for(paths, run_id, man)
    recorded_ns = _parse_time(recorded_at) if recorded_at else None
    create_dataset(dataset, paths)
    if not force and _existing_dirs(dataset, run_id):
        raise InputError(f"{dataset}: run {run_id!r} is already in the dataset (pass --force to replace it)")
    # What appends killed on the way (SIGKILL, the OOM killer) left: no process holds its lock.
    files.sweep_private_dirs(dataset, TMP_PREFIX, TMP_MIN_AGE)
    tmp = None
    try:
        tmp = files.private_dir(dataset, f"{TMP_PREFIX}{run_id}-")
        dbfile = os.path.join(tmp, ".model.duckdb")
        res = write(paths, dbfile, heuristics=heuristics, sync=sync)
        con = connect(dbfile, read_only=True)
        try:
            rows = _export(con, tmp, run_id)
            row = _run_row(con, run_id, paths, res, rows, man, config or {}, commit, recorded_ns)
        finally:
            con.close()
        _write_run_row(row, tmp)
        _commit(tmp, dataset, run_id, force)
        return row, res
    finally:
        if tmp is not None:
            files.remove_private_dir(tmp)


# ---------------------------------------------------------------- reading


def runs(dataset: str, selection: Sequence[str] | str | None = None) -> list[dict]:
    """The runs table (one dict per run), ordered by recorded time, then load time, then id."""
    import duckdb

    chosen = select(dataset, selection)
    files = table_files(dataset, RUNS, chosen)
    con = duckdb.connect(":memory:")
    try:
        rel = con.read_parquet(files, hive_partitioning=False, union_by_name=True)
        rows = rel.order("recorded_ns NULLS LAST, loaded_at, run_id")
        cols = rows.columns
        out = [dict(zip(cols, r)) for r in rows.fetchall()]
    except duckdb.Error as exc:
        raise read_error(exc, files, dataset) from None
    finally:
        con.close()
    for r in out:
        for k in ("config", "table_rows", "manifest"):
            if r.get(k) is not None:
                r[k] = json.loads(r[k])
    return out


def register(con, dataset: str, run_ids_: Sequence[str], tables_: Sequence[str] | None = None) -> list[str]:
    """Views named after the tables over the Parquet files of the runs, on the
    DuckDB connection `con`, each with the partition columns `run` (and `host` where
    the table has hosts) as strings. Returns the tables registered."""
    import duckdb

    names = list(tables_) if tables_ is not None else tables(dataset, run_ids_)
    for name in names:
        files = table_files(dataset, name, run_ids_)
        if not files:
            raise InputError(f"{dataset}: the chosen runs have no table {name!r}")
        try:
            rel = con.read_parquet(files, filename=True, union_by_name=True)
            # The partition columns from each row's file name (kept as strings, as Spark reads them).
            # (anchored at the file's end: a parent directory of the dataset may look like run=x too)
            cols = ["* EXCLUDE (filename)", r"regexp_extract(filename, '/run=([^/]+)/(host=[^/]+/)?[^/]+$', 1) AS run"]
            if _has_host(files):
                cols.append(r"regexp_extract(filename, '/host=([^/]+)/[^/]+$', 1) AS host")
            rel.project(", ".join(cols)).create_view(name)
        except duckdb.Error as exc:
            raise read_error(exc, files, f"{dataset}/{name}") from None
    return names


def _has_host(files: Sequence[str]) -> bool:
    return any(os.path.basename(os.path.dirname(f)).startswith("host=") for f in files)


def open(dataset: str, runs: Sequence[str] | str | None = None, *, memory: int | None = None) -> Database:  # noqa: A001
    """A read-only `roscope.database.Database` over the dataset's runs chosen by `runs`
    (ids or shell patterns; None: every run).

    One run: the same tables and views as a database written by `roscope load`
    (views over that run's Parquet files), so every analysis works on it. Several
    runs: each table is the union of the runs' files with the partition column
    `run` (ids are per run: join on run too); the model's views are left out and
    `db.runs` lists the run ids. Raises InputError naming the file for a damaged file."""
    import duckdb

    _check_dataset(dataset)
    chosen = select(dataset, runs)
    con = duckdb.connect(":memory:")
    try:
        names = [t for t in tables(dataset, chosen) if t != RUNS]
        if len(chosen) == 1:
            for name in names:
                files = table_files(dataset, name, chosen)
                try:
                    con.read_parquet(files, hive_partitioning=False, union_by_name=True).create_view(name)
                except duckdb.Error as exc:
                    raise read_error(exc, files, f"{dataset}/{name}") from None
            create_views(con)
            try:
                meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta").fetchall()}
            except duckdb.Error as exc:
                raise read_error(exc, table_files(dataset, "meta", chosen), f"{dataset}/meta") from None
        else:
            register(con, dataset, chosen, names + [RUNS])
            meta = {"warnings": [], "losses": []}
        meta["dataset"] = os.path.abspath(dataset)
        meta["runs"] = chosen
    except BaseException:
        con.close()
        raise
    db = Database(con, f"{dataset}#{','.join(chosen)}" if len(chosen) < 4 else f"{dataset}#{len(chosen)} runs", meta,
                  read_only=True, runs=chosen)
    db.limit_memory(memory)
    return db
