"""roscope on Apache Spark: the dataset's statistics queries, and per-run work as Spark tasks.

- `stats(dataset, runs=None, spark=None)`: the queries of roscope.dataset_queries
  (the same SQL text DuckDB runs) on Spark SQL over the dataset's Parquet files;
  {query: rows in key order}, comparable with `roscope.dataset_queries.run_duckdb`.
- `load(traces, dataset, run_ids=None, spark=None)`: one Spark task per run; each
  task runs roscope's own `dataset.append` (the Rust core) in an executor, so
  every run appears whole or not at all; a failed run is reported, the others kept.
- `flows(dataset, request, runs=None, spark=None)`: one Spark task per run
  computes the data flows of one `roscope.flow.FlowRequest` and their path
  statistics with roscope's Rust core (`trend.run_flows`), as `roscope trend
  --metric path:` does run by run.
- `session(master="local[2]")`: a SparkSession set up for roscope (partition
  columns read as strings, no UI, executors on this Python).

Needs `pyspark` (3.3 or newer, for ``percentile_cont ... WITHIN GROUP``) and a
Java runtime (`scripts/setup.sh` installs both). On a cluster, give the master
(``yarn``, ``k8s://...``, ``spark://...``), keep the dataset on storage every
executor sees, and install roscope on the executors (docs/dataset.md).
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Sequence

from roscope import dataset as ds
from roscope import dataset_queries as Q
from roscope import trend
from roscope.errors import InputError, UserError, user_message
from roscope.flow import FlowRequest
from roscope.text import clean


class SparkUnavailable(UserError):
    """pyspark or Java is missing."""


def check() -> None:
    """Raises SparkUnavailable, saying what to install, if pyspark or Java is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable("pyspark is not installed (`make setup` installs it; or pip install 'pyspark>=3.5,<4')") from None
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    if not java or not os.path.exists(java):
        raise SparkUnavailable("Spark needs Java: no `java` on PATH and no JAVA_HOME "
                               "(`make setup` installs Debian's openjdk-17-jre-headless)")


#: The master URLs Spark understands (its docs' "Master URLs"): anything else makes its Java
#: process exit before Python hears why.
MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]|yarn"
                    r"|spark://[^\s/,:]+(:\d+)?(,[^\s/,:]+(:\d+)?)*|(mesos|k8s)://\S+")


def session(master: str = "local[2]", app: str = "roscope", conf: dict | None = None):
    """A SparkSession for roscope's jobs (`getOrCreate`: an existing session is reused).
    A master URL Spark does not know, or a Spark that does not start, is a UserError."""
    if not isinstance(master, str) or not MASTER.fullmatch(master):
        raise InputError(f"--master {master!r}: not a Spark master URL; give local[N], local[*], spark://HOST:PORT, "
                         "yarn, k8s://URL or mesos://URL")
    check()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         # run=20260101 stays the string '20260101', as in DuckDB
         .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
         # small per-run files: list them on the driver, few shuffle partitions (AQE coalesces further)
         .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
         .config("spark.sql.shuffle.partitions", "4")
         # percentile_cont keeps each group's values in a hash map; above this many groups per task
         # Spark falls back to a sort-based aggregation that re-serializes them (several times slower)
         .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "100000")
         .config("spark.sql.session.timeZone", "UTC"))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    from pyspark.errors import PySparkRuntimeError

    try:
        spark = b.getOrCreate()
    except PySparkRuntimeError as exc:  # e.g. JAVA_GATEWAY_EXITED: Java printed why on stderr
        raise UserError(f"Spark did not start with --master {master} ({exc}); see Spark's own messages above") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def register(spark, dataset: str, run_ids: Sequence[str], tables: Sequence[str]) -> None:
    """Temporary views named after the tables over the runs' Parquet files, with
    the partition columns (`run`, and `host` where the table has hosts) as strings."""
    for name in tables:
        files = ds.table_files(dataset, name, run_ids)
        if not files:
            raise InputError(f"{dataset}: the chosen runs have no table {name!r}")
        bad = ds.damaged_file(files)
        if bad:
            raise InputError(f"{bad[0]}: damaged Parquet file in the dataset ({bad[1]}); remove that run and load it again")
        df = spark.read.option("basePath", os.path.abspath(os.path.join(dataset, name))).parquet(*(os.path.abspath(f) for f in files))
        df.createOrReplaceTempView(name)


def stats(dataset: str, runs=None, spark=None, names: Sequence[str] = ("callbacks", "topics"),
          master: str = "local[2]") -> dict[str, list[dict]]:
    """The queries `names` of roscope.dataset_queries on Spark over the dataset's runs
    (`runs`: ids or shell patterns; None: all); {name: rows in key order}."""
    chosen = ds.select(dataset, runs)
    spark = spark or session(master)
    register(spark, dataset, chosen, sorted({t for n in names for t in Q.QUERIES[n].tables}))
    out = {}
    for n in names:
        rows = [r.asDict() for r in spark.sql(Q.sql(n)).collect()]
        out[n] = Q.order(n, [{k: _plain(v) for k, v in r.items()} for r in rows])
    return out


def _plain(v):
    """Spark's Decimal (unsigned 64-bit columns) as int; everything else as is."""
    import decimal

    if isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _load_task(job: dict) -> dict:
    """One run, in a Spark executor: roscope's own append into the dataset."""
    t0 = time.perf_counter()
    try:
        row, res = ds.append(job["traces"], job["dataset"], run_id=job["run_id"], config=job.get("config"),
                              commit=job.get("commit"), recorded_at=job.get("recorded_at"), force=job.get("force", False))
    except Exception as exc:  # noqa: BLE001 - reported to the driver, which says which run failed
        msg = user_message(exc)
        return {"run_id": job["run_id"], "traces": job["traces"], "ok": False,
                "error": msg if msg is not None else f"{type(exc).__name__}: {exc}", "bug": msg is None}
    return {"run_id": row["run_id"], "traces": job["traces"], "ok": True, "events": row["events"],
            "recorded_at": row["recorded_at"], "seconds": time.perf_counter() - t0, "warnings": res.warnings,
            "executor_pid": os.getpid()}


def load(traces: Sequence[str], dataset: str, run_ids: Sequence[str] | None = None, *, spark=None,
         master: str = "local[2]", config: dict | None = None, commit: str | None = None, force: bool = False) -> list[dict]:
    """Loads each trace directory as one run into the dataset, one Spark task per
    run; returns one result per run ({run_id, ok, error | events, seconds, ...}),
    in the order given. A run that fails leaves nothing behind; the others are kept."""
    if not traces:
        raise InputError("no trace given")
    traces = [os.path.abspath(t) for t in traces]
    for t in traces:
        if not os.path.isdir(t):
            raise InputError(f"{t}: not a trace directory")
    if run_ids is None:
        run_ids = [ds.run_id_for([t], None, ds.record_manifest([t])) for t in traces]
    if len(run_ids) != len(traces):
        raise InputError(f"{len(run_ids)} run ids for {len(traces)} traces")
    dup = sorted({r for r in run_ids if run_ids.count(r) > 1})
    if dup:
        raise InputError(f"run ids given twice: {', '.join(dup)} (name the runs with --run-id)")
    dataset = os.path.abspath(dataset)
    ds.create_dataset(dataset, traces)  # once, on the driver: the tasks only add runs
    jobs = [{"traces": [t], "dataset": dataset, "run_id": r, "config": config, "commit": commit, "force": force}
            for t, r in zip(traces, run_ids)]
    spark = spark or session(master)
    rdd = spark.sparkContext.parallelize(jobs, numSlices=len(jobs))
    return rdd.map(_load_task).collect()


def _flows_task(job: dict) -> dict:
    """One run's data flows and path statistics, in a Spark executor."""
    try:
        return {"ok": True, **clean(trend.run_flows(job["dataset"], job["run"], job["request"]))}
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        msg = user_message(exc)
        return {"ok": False, "run": job["run"], "error": msg if msg is not None else f"{type(exc).__name__}: {exc}"}


def flows(dataset: str, request: FlowRequest, runs=None, *, spark=None, master: str = "local[2]") -> list[dict]:
    """Per run (one Spark task each): the latency statistics of the data flows of
    `request` and their path statistics (`roscope.trend.run_flows`), in the order of
    `dataset.select`."""
    trend.parse_metric(f"path:{request.from_re}->{request.to_re}")  # the regexes, checked on the driver
    chosen = ds.select(dataset, runs)
    jobs = [{"dataset": os.path.abspath(dataset), "run": r, "request": request} for r in chosen]
    spark = spark or session(master)
    return spark.sparkContext.parallelize(jobs, numSlices=len(jobs)).map(_flows_task).collect()
