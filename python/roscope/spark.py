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
- `session(master="local[2]", conf=None)`: a SparkSession set up for roscope (partition
  columns read as strings, no UI, executors on this Python unless PYSPARK_PYTHON says
  otherwise); `running(master, conf)`: the same, stopped at the end unless the caller
  already had one running (what the `roscope spark` verbs use).
- `standalone(workdir)`: a Spark standalone cluster on this machine (a master and
  workers from Spark's own `spark-class`, bound to 127.0.0.1), stopped on exit: for
  tests, benchmarks, and trying a cluster out (docs/spark.md).

Needs `pyspark` (3.3 or newer, for ``percentile_cont ... WITHIN GROUP``) and a
Java runtime (`scripts/setup.sh` installs both). On a cluster, give the master
(``yarn``, ``k8s://...``, ``spark://...``), keep the dataset on storage every
executor sees, and install or ship roscope to the executors (docs/spark.md).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roscope import dataset as ds
from roscope import dataset_queries as Q
from roscope import trend
from roscope.errors import InputError, UserError, user_message
from roscope.extras import install_hint, missing_message
from roscope.flow import FlowRequest
from roscope.processes import group
from roscope.text import clean


class SparkUnavailable(UserError):
    """pyspark or Java is missing."""


def check() -> None:
    """Raises SparkUnavailable, saying what to install, if pyspark or Java is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkUnavailable(missing_message(exc, "spark") or f"roscope spark cannot import pyspark ({exc}): "
                               f"{install_hint('pyspark')}") from None
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    if not java or not os.path.exists(java):
        raise SparkUnavailable("Spark needs Java: no `java` on PATH and no JAVA_HOME "
                               "(`make setup` installs Debian's openjdk-17-jre-headless)")


#: The master URLs Spark understands (its docs' "Master URLs"): anything else makes its Java
#: process exit before Python hears why.
MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]|yarn"
                    r"|spark://[^\s/,:]+(:\d+)?(,[^\s/,:]+(:\d+)?)*|(mesos|k8s)://\S+")


def check_master(master: str) -> str:
    """`master` if Spark knows such a master URL, else an InputError saying what it takes."""
    if not isinstance(master, str) or not MASTER.fullmatch(master):
        raise InputError(f"--master {master!r}: not a Spark master URL; give local[N], local[*], spark://HOST:PORT, "
                         "yarn, k8s://URL or mesos://URL")
    return master


#: A Spark setting's name (Spark's own all begin with ``spark.``; ``spark.hadoop.*`` reach Hadoop).
CONF_KEY = re.compile(r"spark\.[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*")


def parse_conf(items: Sequence[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` arguments as {KEY: VALUE}; a key that is not a Spark setting's
    name, or an item without ``=``, is an InputError naming it."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not CONF_KEY.fullmatch(key):
            raise InputError(f"--conf {item!r}: not KEY=VALUE with a Spark setting as KEY (spark.NAME, e.g. "
                             "spark.executor.memory=2g)")
        if key in out and out[key] != value:
            raise InputError(f"--conf {key} given twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out


def session(master: str = "local[2]", app: str = "roscope", conf: dict | None = None):
    """A SparkSession for roscope's jobs (`getOrCreate`: an existing session is reused, if
    it runs on `master`). A master URL Spark does not know, a setting that is not a Spark
    setting, a session of this process on another master, or a Spark that does not start,
    is a UserError."""
    check_master(master)
    for k, v in (conf or {}).items():
        if not isinstance(k, str) or not CONF_KEY.fullmatch(k) or not isinstance(v, str):
            raise InputError(f"Spark setting {k!r}={v!r}: the name must be spark.NAME and the value a string")
    check()
    # The executors' Python: Spark's spark.pyspark.python reaches a driver only through spark-submit;
    # a driver that is this Python reads PYSPARK_PYTHON when its context starts.
    if (conf or {}).get("spark.pyspark.python"):
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
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
    if spark.sparkContext.master != master:  # getOrCreate gave this process's running session
        raise UserError(f"this process already runs a Spark session on {spark.sparkContext.master}; it cannot also "
                        f"run one on {master} (stop that session first)")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def running(master: str = "local[2]", conf: dict | None = None, *, end_java: bool = False):
    """`session(master, conf)` for the block; stopped at its end unless this process already
    had a session running (the caller's, reused: left to the caller to stop). With
    `end_java` (a command about to exit), the Java process pyspark started for this Python
    is ended too and waited for, so that nothing of the command outlives it."""
    check()
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    spark = session(master, conf=conf)
    try:
        yield spark
    finally:
        if before is None:
            spark.stop()
            if end_java:
                _end_java()


def _end_java(timeout: float = 30.0) -> None:
    """Ends pyspark's Java process (its gateway) and waits for it: it exits when its standard
    input closes (else it lingers for a moment after this Python has exited). No Spark starts
    in this process afterwards unless pyspark launches a new one."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or SparkContext._active_spark_context is not None:
        return
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    if proc is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()   # pyspark's own child, by its handle
            proc.wait()


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
    return _collect(spark, spark.sparkContext.parallelize(jobs, numSlices=len(jobs)).map(_load_task))


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
    return _collect(spark, spark.sparkContext.parallelize(jobs, numSlices=len(jobs)).map(_flows_task))


def _collect(spark, rdd) -> list:
    """The results of roscope's tasks; executors whose Python cannot run them are a UserError
    saying which Python and what it needs (instead of Spark's Java stack)."""
    try:
        return rdd.collect()
    except Exception as exc:
        text, python = str(exc), spark.sparkContext.pythonExec
        if "No module named 'roscope" in text:
            raise UserError(f"the Spark executors' Python ({python}) cannot import roscope: install the same roscope "
                            "there, or ship it with the job (spark.archives: docs/spark.md)") from None
        if "Cannot run program" in text:
            raise UserError(f"the Spark executors cannot run their Python {python!r} (PYSPARK_PYTHON or "
                            "spark.pyspark.python: a path that exists on every executor; docs/spark.md)") from None
        raise


@dataclass
class Cluster:
    """A Spark standalone cluster started by `standalone`: its master URL, the master's
    web UI (``UI/json/`` describes the cluster), and the started processes
    (roscope.processes.group: each a process group with all it made, executors included)."""
    url: str
    ui: str
    master: object
    workers: list

    def state(self) -> dict:
        """The master's own description of the cluster (its ``/json/``)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1: never through a proxy
        with opener.open(self.ui + "/json/", timeout=5) as r:
            return json.load(r)


def spark_home() -> str:
    """SPARK_HOME, else the pyspark package (a pip install of pyspark is a whole Spark)."""
    check()
    import pyspark

    home = os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__))
    if not os.path.isfile(os.path.join(home, "bin", "spark-class")):
        raise SparkUnavailable(f"{home}: no bin/spark-class in this Spark (SPARK_HOME or the pyspark package)")
    return home


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait(what: str, ready, procs: list, deadline: float) -> None:
    """Polls `ready()` until true; a process of `procs` that ended, or the deadline, is a UserError
    naming its log."""
    while True:
        for p in procs:
            if not p.alive():
                raise UserError(f"Spark's {p.name} ended (exit status {p.popen.returncode}) before {what}; its log: {p.log}")
        try:
            if ready():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise UserError(f"{what}: not within the time allowed; the logs: {', '.join(str(p.log) for p in procs)}")
        time.sleep(0.25)


MEMORY = re.compile(r"[1-9]\d*[mMgG]")


@contextlib.contextmanager
def standalone(workdir: str, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120.0):
    """A Spark standalone cluster on this machine for the block: a master and `workers`
    workers (`cores` cores and `memory` each) started with Spark's own ``spark-class``,
    all bound to 127.0.0.1 on free ports, their logs and work directories in `workdir`;
    executors run PYSPARK_PYTHON (default: this Python, so they import this roscope).
    Yields a Cluster once every worker has registered (within `timeout` seconds, else a
    UserError); stops every process of the cluster at the end, whatever happened."""
    if not (1 <= workers <= 64 and 1 <= cores <= 1024 and isinstance(memory, str) and MEMORY.fullmatch(memory)):
        raise InputError(f"standalone cluster: workers {workers!r} (1 to 64), cores {cores!r} (1 to 1024), "
                         f"memory {memory!r} (e.g. 1g, 512m)")
    cls = os.path.join(spark_home(), "bin", "spark-class")
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": os.path.dirname(os.path.dirname(cls)), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(work), "SPARK_LOCAL_DIRS": str(work / "local"),
           "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    port, ui = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    started: list = []
    try:
        started.append(group.start("spark-master", [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                                    "--port", str(port), "--webui-port", str(ui)],
                                   env=env, log=work / "master.log"))
        cluster = Cluster(url, f"http://127.0.0.1:{ui}", started[0], [])
        _wait(f"the Spark master listened on {url}", lambda: _listening(port) and _listening(ui), started, deadline)
        for i in range(workers):
            wd = work / f"worker-{i + 1}"
            wd.mkdir(exist_ok=True)
            started.append(group.start(f"spark-worker-{i + 1}",
                                       [cls, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                        "--webui-port", "0", "--cores", str(cores), "--memory", memory,
                                        "--work-dir", str(wd), url], env=env, log=work / f"worker-{i + 1}.log"))
        cluster.workers = started[1:]
        _wait(f"{workers} Spark workers registered with {url}",
              lambda: cluster.state().get("aliveworkers", 0) >= workers, started, deadline)
        yield cluster
    finally:
        for p in reversed(started):
            group.stop(p, 5.0)
