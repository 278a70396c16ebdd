"""roscope on Apache Spark (issue 14), in local mode on 2 cores.

A 21-run dataset of the shared real ROS 2 traces (the Autoware trace once, the
four others five times each) is loaded by `roscope.spark.load`: one Spark task per
run, each running roscope's own load in an executor process. The statistics
queries (roscope.dataset_queries, one SQL text) then run on Spark and on DuckDB over that
dataset: the rows must be the same (counts, minima, maxima exactly; means,
deviations and percentiles up to floating rounding), and equal `roscope stats
TRACE --json` on each run's trace (checked against babeltrace2/CARET elsewhere).
One Spark session for the module (its start costs seconds).
"""
from __future__ import annotations

import json
import os
import shutil

import pytest
from roscope import cli
from roscope import dataset as ds
from roscope import dataset_queries as Q

from tests.support.cli import in_process
from tests.support.spark import BIG, ROS2, SMALL, _spark_missing, close, same_rows

pytestmark = [
    pytest.mark.spark, pytest.mark.slow,
    pytest.mark.skipif(not all(os.path.isdir(os.path.join(ROS2, n)) for n in SMALL + [BIG]),
                       reason=f"the shared ROS 2 traces are not all in {ROS2}"),
    pytest.mark.skipif(_spark_missing() is not None, reason=_spark_missing() or ""),
]


def plan() -> list[tuple[str, str]]:
    """(run id, trace) of the 21 runs."""
    out = [("s00", os.path.join(ROS2, BIG))]
    for i in range(20):
        out.append((f"s{i + 1:02d}", os.path.join(ROS2, SMALL[i % len(SMALL)])))
    return out


@pytest.fixture(scope="module")
def spark():
    from roscope import spark as rs

    s = rs.session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory) -> tuple[str, list[dict]]:
    from roscope import spark as rs

    d = str(tmp_path_factory.mktemp("spark") / "ds")
    runs = plan()
    res = rs.load([t for _r, t in runs], d, [r for r, _t in runs], spark=spark, config={"engine": "spark"})
    return d, res


def test_one_task_per_run_in_executors(loaded):
    d, res = loaded
    assert [r["run_id"] for r in res] == [r for r, _t in plan()]
    assert all(r["ok"] for r in res), [r for r in res if not r["ok"]]
    # the tasks ran in Spark's Python workers, not in this process
    assert os.getpid() not in {r["executor_pid"] for r in res}
    runs = {r["run_id"]: r for r in ds.runs(d)}
    assert len(runs) == 21 and all(r["config"] == {"engine": "spark"} for r in runs.values())
    assert runs["s00"]["events"] == res[0]["events"] > 100_000
    assert not [n for n in os.listdir(d) if n.startswith(".tmp")]


def test_spark_equals_duckdb(spark, loaded):
    from roscope import spark as rs

    d, _res = loaded
    names = ("callbacks", "topics", "runs")
    got = rs.stats(d, spark=spark, names=names)
    want = Q.run_duckdb(d, names=names)
    for n in names:
        same_rows(got[n], want[n], n)
    assert len(got["callbacks"]) > 342 and {r["run"] for r in got["callbacks"]} == {r for r, _t in plan()}
    # and both equal `roscope stats TRACE --json` of the run's trace
    p = in_process("stats", "--json", os.path.join(ROS2, BIG))
    assert p.returncode == 0, p.stderr
    ref = {c["callback_id"]: c for c in json.loads(p.stdout)["callbacks"] if c["count"]}
    mine = {r["callback_id"]: r for r in got["callbacks"] if r["run"] == "s00"}
    assert set(mine) == set(ref)
    for cid, c in ref.items():
        assert mine[cid]["count"] == c["count"] and mine[cid]["max_ns"] == c["max_ns"]
        assert all(close(mine[cid][f"{k}_ns"], c[f"{k}_ns"]) for k in ("min", "mean", "std", "p50", "p90", "p99"))


def test_existing_run_refused_by_its_task(spark, loaded):
    from roscope import spark as rs

    d, _res = loaded
    before = sorted(os.listdir(os.path.join(d, "runs")))
    res = rs.load([os.path.join(ROS2, SMALL[0]), os.path.join(ROS2, SMALL[1])], d, ["s03", "extra"], spark=spark)
    assert not res[0]["ok"] and "run 's03' is already in the dataset" in res[0]["error"]
    assert res[1]["ok"]
    assert sorted(os.listdir(os.path.join(d, "runs"))) == sorted(before + ["run=extra"])


def test_damaged_file_named(spark, loaded, tmp_path):
    from roscope import spark as rs
    from roscope.errors import InputError

    d = str(tmp_path / "copy")
    shutil.copytree(loaded[0], d)
    bad = os.path.join(d, "publications", "run=s02", "part-0.parquet")
    with open(bad, "r+b") as f:
        f.truncate(100)
    with pytest.raises(InputError, match="damaged Parquet file") as e:
        rs.stats(d, spark=spark)
    assert bad in str(e.value)


def test_flows_as_spark_tasks(spark, loaded, capfd):
    """Path statistics per run, one Spark task each (the Rust core in the executors),
    equal `roscope flow TRACE --json` on the run's trace."""
    from roscope import spark as rs
    from roscope.flow import FlowRequest

    res = rs.flows(loaded[0], FlowRequest("^/ping$", "^/pong$"), runs=["s0[1-8]"], spark=spark)
    assert [r["run"] for r in res] == [f"s0{i}" for i in range(1, 9)] and all(r["ok"] for r in res)
    rc = cli.main(["flow", os.path.join(ROS2, SMALL[3]), "--from", "^/ping$", "--to", "^/pong$", "--json"])
    ref = json.loads(capfd.readouterr().out)
    assert rc == 0 and ref["summary"]["flows"] > 0
    for r in res:
        if dict(plan())[r["run"]].endswith(SMALL[3]):
            assert r["latency"]["count"] == ref["summary"]["flows"] and r["paths"] == ref["paths"]
        else:
            assert r["latency"]["count"] == 0 and "no topic matches" in r["note"]


def test_cli_spark_stats(loaded, capfd):
    """Last in the module: the verb stops the (shared) session when done."""
    rc = cli.main(["spark", "stats", loaded[0], "--runs", "s0[1-4]", "--json"])
    out = capfd.readouterr().out
    assert rc == 0
    d = json.loads(out)
    assert d["runs"] == 4 and d["engine"] == "spark local[2]"
    want = Q.run_duckdb(loaded[0], runs=["s0[1-4]"])
    same_rows(d["callbacks"], json.loads(json.dumps(want["callbacks"])), "callbacks")
