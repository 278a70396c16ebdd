"""roscope spark on a real Spark standalone cluster (issue 41), not in local mode.

The module starts a cluster on this machine with Spark's own `spark-class`
(`roscope.spark.standalone`): a master and two workers (1 core, 1 GiB each), all
bound to 127.0.0.1 on free ports, up within 120 s or the module fails with the
logs named, and every process of it (the executors and their Python workers
too) stopped when the module ends, whatever happened. The executors run this
Python (PYSPARK_PYTHON), which imports this roscope and its Rust core.

Eight runs (the four small shared ROS 2 traces, twice each) are loaded with
`roscope spark load --master spark://...`; `roscope spark stats` and `roscope
spark flow` then run on the cluster, and every per-run number must equal DuckDB's:
`roscope dataset stats` (counts, minima, maxima exactly; means, deviations and
percentiles up to floating rounding) and `roscope flow DATASET --run ID` for each
run (every path's numbers exactly). The independent oracle for the runs' sizes is
babeltrace2: each run's events and callback runs are its trace's events and
`ros2:callback_start` events as babeltrace2 counts them.

One Spark session (one application on the cluster) serves the module: the verbs,
run in this process, reuse it (a caller's session is left running). Cost, measured
on 2 cores shared with other jobs: 69 s for the module at a load average of 6.5,
104 to 160 s at 11 to 17 (the cluster's start 18 to 31 s of it, the session and the
load about 35 s, `spark stats`' first query on cold executors 40 to 73 s); 80 s
after tests/test_spark.py in one pytest (the driver's JVM already warm).
"""
from __future__ import annotations

import json
import os
import sys

import pytest
from roscope import dataset as ds
from roscope import dataset_queries as Q
from roscope.flow import FlowRequest

from tests.support import oracle
from tests.support.cli import in_process
from tests.support.spark import ROS2, SMALL, _spark_missing, close, same_rows

PLAN = [(f"c{i}", os.path.join(ROS2, SMALL[i % len(SMALL)])) for i in range(8)]
FROM, TO = "^/(topic1|ping)$", "^/(drive|topic2|pong)$"   # flows in three of the four traces


pytestmark = [
    pytest.mark.spark, pytest.mark.slow,
    pytest.mark.skipif(not all(os.path.isdir(os.path.join(ROS2, n)) for n in SMALL),
                       reason=f"the shared ROS 2 traces are not all in {ROS2}"),
    pytest.mark.skipif(_spark_missing() is not None, reason=_spark_missing() or ""),
    pytest.mark.skipif(oracle.bt2 is None, reason="babeltrace2's Python bindings (the oracle) are needed"),
]


def cli_json(argv: list[str]) -> tuple[int, dict | None, str]:
    """`roscope ARGV` in this process: exit status, its JSON (None if it printed none), its stderr."""
    p = in_process(*argv)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from roscope import spark as rs

    with rs.standalone(str(tmp_path_factory.mktemp("cluster")), workers=2, cores=1, memory="1g", timeout=120) as c:
        yield c
    left = [st.pid for p in (c.master, *c.workers) for st in p.members()]
    assert not left, f"cluster processes still running: {left}"


@pytest.fixture(scope="module")
def session(cluster):
    from roscope import spark as rs

    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": "512m",
            # tasks start once both executors are up: each worker gets its share
            "spark.scheduler.minRegisteredResourcesRatio": "1.0"}
    with rs.running(cluster.url, conf) as sp:
        assert sp.sparkContext.master == cluster.url
        yield sp


@pytest.fixture(scope="module")
def bt2_counts() -> dict[str, oracle.Reading]:
    return {n: oracle.Reading(os.path.join(ROS2, n)).run() for n in SMALL}


@pytest.fixture(scope="module")
def loaded(cluster, session, tmp_path_factory):
    d = str(tmp_path_factory.mktemp("cluster-ds") / "ds")
    ids = [a for r, _t in PLAN for a in ("--run-id", r)]
    rc, out, err = cli_json(["spark", "load", *[t for _r, t in PLAN], "--dataset", d, *ids, "--master", cluster.url,
                             "--config", "engine=cluster", "--json"])
    assert rc == 0, err
    return d, out


def test_load_ran_on_both_workers(cluster, loaded, bt2_counts):
    """Each run was loaded by a task in an executor of the cluster (a process of a
    worker's group), both workers took tasks, and each run holds its trace's events."""
    d, out = loaded
    res = out["runs"]
    assert [r["run_id"] for r in res] == [r for r, _t in PLAN]
    assert all(r["ok"] for r in res), [r for r in res if not r["ok"]]
    by_worker = [{st.pid for st in w.members()} for w in cluster.workers]
    pids = {r["executor_pid"] for r in res}
    assert os.getpid() not in pids and all(any(p in w for w in by_worker) for p in pids), (pids, by_worker)
    assert all(pids & w for w in by_worker), "a worker ran no task"
    for r, (_rid, trace) in zip(res, PLAN):
        assert r["events"] == bt2_counts[os.path.basename(trace)].n_events, r


def test_stats_on_cluster_equal_duckdb(cluster, loaded, bt2_counts):
    d, _out = loaded
    rc, got, err = cli_json(["spark", "stats", d, "--master", cluster.url, "--json"])
    assert rc == 0, err
    assert got["engine"] == f"spark {cluster.url}" and got["runs"] == len(PLAN)
    rc, want, err = cli_json(["dataset", "stats", d, "--json"])
    assert rc == 0, err
    for n in ("callbacks", "topics"):
        same_rows(got[n], want[n], n)
        assert {r["run"] for r in got[n]} == {r for r, _t in PLAN}, n
    # the runs' totals, as the cluster's load tasks stored them, against babeltrace2
    runs = Q.run_duckdb(d, names=("runs",))["runs"]
    assert [r["run"] for r in runs] == [r for r, _t in PLAN]
    for row, (_rid, trace) in zip(runs, PLAN):
        bt = bt2_counts[os.path.basename(trace)]
        assert json.loads(row["config"]) == {"engine": "cluster"}, row
        assert row["events"] == bt.n_events and row["callback_runs"] == bt.counts["ros2:callback_start"], (row, trace)


def test_flow_on_cluster_equal_flow_per_run(cluster, loaded):
    d, _out = loaded
    rc, got, err = cli_json(["spark", "flow", d, "--from", FROM, "--to", TO, "--master", cluster.url, "--json"])
    assert rc == 0, err
    res = got["runs"]
    assert [r["run"] for r in res] == [r for r, _t in PLAN] and all(r["ok"] for r in res)
    with_flows = 0
    for r, (rid, trace) in zip(res, PLAN):
        rc, ref, err = cli_json(["flow", d, "--run", rid, "--from", FROM, "--to", TO, "--json"])
        if trace.endswith("caret-talker-listener-galactic"):   # no /topic1 nor /ping in it
            assert rc == 1 and "no topic matches" in err and "no topic matches" in r["note"]
            assert r["latency"] == {"count": 0} and r["paths"] == []
            continue
        assert rc == 0, err
        with_flows += 1
        assert r["note"] is None and r["paths"] == ref["paths"], rid
        lat, paths = r["latency"], ref["paths"]
        assert lat["count"] == ref["summary"]["flows"] == sum(p["flows"] for p in paths) > 0
        assert lat["min_ns"] == min(p["latency"]["min_ns"] for p in paths)
        assert lat["max_ns"] == max(p["latency"]["max_ns"] for p in paths)
        assert close(lat["mean_ns"], sum(p["latency"]["mean_ns"] * p["flows"] for p in paths) / lat["count"])
    assert with_flows == 6


def test_session_of_another_master_refused(cluster, session, loaded):
    """This process runs the cluster's session: a verb asking for another master says so
    (getOrCreate would silently hand it the cluster's) and leaves that session running;
    a --conf that is not a Spark setting is refused before Spark is asked."""
    d, _out = loaded
    rc, _out, err = cli_json(["spark", "stats", d, "--master", "local[2]"])
    assert rc == 1 and f"already runs a Spark session on {cluster.url}" in err, err
    assert session.sparkContext.master == cluster.url and not session.sparkContext._jsc.sc().isStopped()
    for bad in ("executor.memory=1g", "spark.executor.memory", "spark..x=1"):
        rc, _out, err = cli_json(["spark", "flow", d, "--from", FROM, "--to", TO, "--master", cluster.url, "--conf", bad])
        assert rc != 0 and f"--conf {bad!r}: not KEY=VALUE" in err, (bad, err)


def _python_without_roscope() -> str | None:
    """The Python this environment was made from (the same version, so Spark's worker from
    pyspark.zip runs on it), if it cannot import roscope."""
    from roscope.processes import group

    py = os.path.join(sys.base_prefix, "bin", "python3")
    if not os.path.isfile(py) or os.path.abspath(py) == os.path.abspath(sys.executable):
        return None
    res = group.output("probe-python", [py, "-c", "import roscope"], timeout=30)
    return py if res.returncode not in (0, None) and "No module named 'roscope'" in res.stderr else None


def test_executors_without_roscope_named(cluster, session, loaded, tmp_path):
    """What the executors run must hold roscope: executors on a Python without it (the base
    Python of this environment: Spark's worker runs there from pyspark.zip, roscope's task
    cannot be unpickled), or on a Python that does not exist, fail with an error naming that
    Python and what to do, not Spark's Java stack; nothing is added to the dataset."""
    from roscope import spark as rs
    from roscope.errors import UserError

    other = _python_without_roscope()
    if other is None:
        pytest.skip("no Python without roscope next to this environment")
    sc = session.sparkContext
    mine = sc.pythonExec
    d = str(tmp_path / "ds")
    try:
        sc.pythonExec = other
        with pytest.raises(UserError, match=r"executors' Python \(.*\) cannot import roscope: install") as e:
            rs.load([PLAN[0][1]], d, ["x"], spark=session)
        assert other in str(e.value)
        sc.pythonExec = os.path.join(str(tmp_path), "no-such-python")
        with pytest.raises(UserError, match="the Spark executors cannot run their Python .*no-such-python"):
            rs.flows(loaded[0], FlowRequest(FROM, TO), runs=["c0"], spark=session)
    finally:
        sc.pythonExec = mine
    assert ds.run_ids(d) == [] and not [n for n in os.listdir(d) if n.startswith(".tmp")]
