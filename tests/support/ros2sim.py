"""ros2sim (tools/ros2sim, docs/ros2sim.md) as the tests run it, and its ground truth (CSVs the
simulated processes write) against roscope's database: callback runs, publications, transport
links. The oracle side never reads roscope's output."""
from __future__ import annotations

import collections
import csv
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import cli

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tools" / "ros2sim" / "ros2sim.py"
duckdb = pytest.importorskip("duckdb", reason="DuckDB reads the database roscope load writes")


def run_roscope(*args: str, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli.roscope(*args, timeout=timeout, env=env)


def build_ros2sim() -> None:
    p = subprocess.run(["make", "-s", "-C", str(DRIVER.parent)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def simulate_many(jobs: list[tuple[Path, list[str]]], parallel: int = 3, timeout: float = 240) -> list[Path]:
    """`ros2sim.py run --out OUT ARGS...` for each (OUT, ARGS) of `jobs`, `parallel` at a time (each
    host of a ros2sim run has its own namespaces and session daemon, so runs at once do not see each
    other, and a run is mostly LTTng's set-up and its start delay: 5 one-second runs take ~35 s one
    after the other, ~15 s three at a time); their OUTs, each run's output in OUT.log. Fails naming
    the run that failed, with its output."""
    def start(out: Path, args: list[str]):
        log = open(f"{out}.log", "w+")
        return out, log, subprocess.Popen([sys.executable, str(DRIVER), "run", "--out", str(out), *map(str, args)],
                                          stdout=log, stderr=subprocess.STDOUT, text=True)

    def finish(job) -> None:
        out, log, p = job
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.seek(0)
        text = log.read()
        log.close()
        assert p.returncode == 0, f"ros2sim run --out {out} failed (exit {p.returncode}):\n{text[-3000:]}"

    running: list = []
    try:
        for out, args in jobs:
            if len(running) >= parallel:
                finish(running.pop(0))
            running.append(start(Path(out), args))
        while running:
            finish(running.pop(0))
    finally:
        for _out, log, p in running:   # a failure above: the rest stopped, never left running
            p.kill()
            p.wait()
            log.close()
    return [Path(out) for out, _ in jobs]


def ground_truth(sim: Path) -> dict[str, list[dict]]:
    out = {}
    for name in ("messages", "deliveries", "callbacks", "links"):
        with open(sim / "ground_truth" / f"{name}.csv") as f:
            out[name] = list(csv.DictReader(f))
    return out


def load_db(trace: Path, db: Path):
    """`roscope load` (the CLI), then the database opened read-only with DuckDB itself."""
    p = run_roscope("load", str(trace), "-o", str(db))
    assert p.returncode == 0, p.stderr
    return duckdb.connect(str(db), read_only=True)


def rows(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def roscope_runs(con, pids: set[int]) -> dict[tuple[int, int], list[dict]]:
    """(pid, callback address) -> roscope's callback runs in start order."""
    out = collections.defaultdict(list)
    for r in rows(con, """SELECT p.pid, c.handle, r.run_id, r.start_ts, r.end_ts, r.duration_ns
                          FROM callback_runs r JOIN callbacks c USING (callback_id) JOIN processes p USING (proc_id)
                          ORDER BY r.start_ts"""):
        if r["pid"] in pids:
            out[(r["pid"], r["handle"])].append(r)
    return out


def truth_runs(gt: dict) -> dict[tuple[int, int], list[dict]]:
    out = collections.defaultdict(list)
    for c in gt["callbacks"]:
        out[(int(c["vpid"]), int(c["callback"], 16))].append(c)
    for v in out.values():
        v.sort(key=lambda c: int(c["start_ns"]))
    return out


def run_ids(con, gt: dict, pids: set[int]) -> dict[int, str]:
    """roscope run_id -> ground-truth run_id: the n-th run of a callback (by address) in a process."""
    ours, truth = roscope_runs(con, pids), truth_runs(gt)
    return {r["run_id"]: t["run_id"] for key, runs in ours.items() for r, t in zip(runs, truth.get(key, []))}


def publication_ids(con, gt: dict, pids: set[int]) -> dict[int, str]:
    """roscope publication_id -> ground-truth msg_id: the n-th publication of a publisher (rcl handle)."""
    by = {(int(m["vpid"]), int(m["publisher_handle"], 16), int(m["seq"])): m["msg_id"] for m in gt["messages"]}
    out = {}
    for r in rows(con, """SELECT pb.publication_id, p.pid, pu.handle,
                                 row_number() OVER (PARTITION BY pb.publisher_id
                                                    ORDER BY coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts)) AS seq
                          FROM publications pb JOIN publishers pu USING (publisher_id)
                          JOIN processes p ON p.proc_id = pu.proc_id"""):
        if r["pid"] in pids:
            out[r["publication_id"]] = by.get((r["pid"], r["handle"], r["seq"]))
    return out


def roscope_links(con, gt: dict, pids: set[int]) -> tuple[set, collections.Counter]:
    """{(msg_id, ground-truth run_id)} of roscope's transport links, and their methods."""
    pubs, runs = publication_ids(con, gt, pids), run_ids(con, gt, pids)
    got, methods = set(), collections.Counter()
    for r in rows(con, "SELECT publication_id, run_id, method FROM links"):
        if r["publication_id"] in pubs:
            got.add((pubs[r["publication_id"]], runs.get(r["run_id"])))
            methods[r["method"]] += 1
    return got, methods


def truth_links(gt: dict, publishers_traced=lambda m: True) -> set:
    """{(msg_id, run_id)} of every message taken by a subscription, from a traced publisher."""
    traced = {m["msg_id"] for m in gt["messages"] if publishers_traced(m)}
    return {(d["msg_id"], d["callback_run"]) for d in gt["deliveries"] if d["status"] == "taken" and d["msg_id"] in traced}


def check_runs_against_truth(con, gt: dict, pids: set[int]) -> int:
    """Every callback's run count equals the ground truth's; starts, ends and durations agree with it.

    The ground truth reads the clock just before each tracepoint fires, so an event's time is never
    earlier and usually a few µs later (a preempted thread can be a scheduler slice late)."""
    ours, truth = roscope_runs(con, pids), truth_runs(gt)
    assert {k: len(v) for k, v in ours.items()} == {k: len(v) for k, v in truth.items()}
    d_start, d_end, d_dur = [], [], []
    for key, runs in truth.items():
        for r, t in zip(ours[key], runs):
            d_start.append(r["start_ts"] - int(t["start_ns"]))
            d_end.append(r["end_ts"] - int(t["end_ns"]))
            d_dur.append(abs(r["duration_ns"] - (int(t["end_ns"]) - int(t["start_ns"]))))
    for name, d in (("start", d_start), ("end", d_end)):
        d.sort()
        assert d[0] >= 0 and d[-1] < 100_000_000, (name, d[0], d[-1])
        assert d[len(d) // 2] < 200_000, (name, d[len(d) // 2])
    d_dur.sort()
    assert d_dur[-1] < 100_000_000 and d_dur[len(d_dur) // 2] < 200_000, (d_dur[len(d_dur) // 2], d_dur[-1])
    return len(d_start)


def publications_per_topic(con, pids: set[int]) -> collections.Counter:
    c = collections.Counter()
    for r in rows(con, """SELECT p.pid, pu.name AS topic FROM publications pb JOIN publishers pu USING (publisher_id)
                          JOIN processes p ON p.proc_id = pu.proc_id"""):
        if r["pid"] in pids:
            c[r["topic"]] += 1
    return c
