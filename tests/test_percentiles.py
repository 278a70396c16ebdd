"""Exact percentiles by selection (`roscope.percentiles.grouped_by_selection`,
`select_ranks`; `grouped` takes them when quantile_cont's groups do not fit):
each group's values counted in buckets, only the buckets holding the wanted ranks
looked at again. Checked against numpy on the same values (the values at the
wanted ranks of a sort, and numpy's linear percentile), and against DuckDB's own
`quantile_cont` aggregate over the whole group (bit for bit): one value, two,
odd and even counts, all equal, heavy ties, nulls, spreads over the whole int64
range, skewed data that needs several rounds, text and null group keys."""
from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from roscope import percentiles
from roscope.database import Database

FRACTIONS = {"p25": 0.25, "p50": 0.5, "p75": 0.75, "p90": 0.9, "p99": 0.99}


@pytest.fixture
def db():
    d = Database(duckdb.connect(":memory:"), ":memory:", meta={})
    yield d
    d.con.close()


def _put(db: Database, groups: dict) -> None:
    """The table v(g, x): group key g, int64 values x (None: a null x)."""
    keys, xs = [], []
    for g, values in groups.items():
        keys += [g] * len(values)
        xs += list(values)
    tbl = pa.table({"g": pa.array(keys), "x": pa.array(xs, pa.int64())})
    db.con.execute("DROP TABLE IF EXISTS v")
    db.con.from_arrow(tbl).create("v")


def _check(db: Database, groups: dict) -> None:
    """grouped() per group equals numpy's sort and percentiles, and DuckDB's quantile_cont."""
    _put(db, groups)
    rows = {r["g"]: r for r in percentiles.grouped_by_selection(db, "SELECT g, x FROM v", ["g"], quartiles=True)}
    whole = {r["g"]: r for r in db.records(f"SELECT g, {percentiles.aggregates('x', quartiles=True)} FROM v GROUP BY g")}
    assert set(rows) == set(groups)
    for g, values in groups.items():
        r = rows[g]
        assert list(r) == ["g", "count", *percentiles.keys(quartiles=True)]
        # Bit for bit DuckDB's quantile_cont (std: DuckDB sums in whatever order its threads run).
        assert {k: v for k, v in r.items() if k != "std_ns"} == {k: v for k, v in whole[g].items() if k != "std_ns"}
        v = np.sort(np.array([x for x in values if x is not None], dtype=np.int64))
        assert r["count"] == len(v)
        if not len(v):
            assert all(r[f"{n}_ns"] is None for n in FRACTIONS)
            continue
        assert (r["min_ns"], r["max_ns"]) == (v[0], v[-1])
        for name, f in FRACTIONS.items():
            p = (len(v) - 1) * f
            lo, hi = math.floor(p), math.ceil(p)
            got = r[f"{name}_ns"]
            if lo == hi:
                assert got == float(v[lo]), (g, name)
            else:
                # Between the two neighbouring ranks of numpy's sort, at numpy's linear percentile.
                assert min(v[lo], v[hi]) <= got <= max(v[lo], v[hi]), (g, name)
                if np.abs(v).max() < 2**53:  # exact as doubles
                    expected = float(np.percentile(v.astype(np.float64), f * 100, method="linear"))
                    assert got == pytest.approx(expected, rel=1e-15, abs=1e-9), (g, name)


def test_small_groups_ties_one_value_even_odd_all_equal(db):
    rng = np.random.default_rng(29)
    _check(db, {
        0: [42],
        1: [7, 3],
        2: [5, 1, 9],
        3: [8] * 1000,
        4: rng.integers(0, 3, 5001).tolist(),  # heavy ties, odd count
        5: rng.integers(-10**6, 10**6, 4000).tolist(),  # even count, negatives
        6: [None, None],  # no value
        7: [None, 4, None, 2],
    })


def test_large_groups_need_buckets(db):
    """Groups above GATHER: counted in buckets first; a bucket of ties; a long tail."""
    rng = np.random.default_rng(7)
    tail = np.concatenate([rng.integers(1_000_000, 1_000_100, 60_000), rng.integers(0, 10**12, 50)])
    _check(db, {
        "uniform": rng.integers(0, 10**9, 100_001).tolist(),
        "tail": tail.tolist(),
        "ties": np.concatenate([np.full(70_000, 12345), rng.integers(0, 10**6, 3)]).tolist(),
    })


def test_huge_spreads_over_the_whole_int64_range(db):
    """Values from -2^63+1 to 2^63-1: their differences do not fit a BIGINT."""
    rng = np.random.default_rng(3)
    big = (2**63 - 1)
    values = [-big, big, 0, 1, -1] + rng.integers(-big, big, 40_000, dtype=np.int64).tolist()
    _check(db, {"wide": values, "wide-ties": [-big] * 20_000 + [big] * 20_001})


def test_many_rounds_give_the_same_ranks(db, monkeypatch):
    """With tiny buckets a skewed group needs many rounds: select_ranks's values at
    every wanted rank are those of numpy's sort."""
    monkeypatch.setattr(percentiles, "GATHER", 16)
    monkeypatch.setattr(percentiles, "BUCKET_VALUES", 2)
    monkeypatch.setattr(percentiles, "MAX_BUCKETS", 4)
    rng = np.random.default_rng(11)
    groups = {"skewed": (rng.lognormal(10, 3, 20_000)).astype(np.int64).tolist(),
              "ties": rng.integers(0, 5, 3_000).tolist(), "one": [9]}
    _put(db, groups)
    stats = db.records("SELECT g, min(x) AS lo, max(x) AS hi, count(x) AS n FROM v GROUP BY g ORDER BY g")
    wanted = [sorted(rng.choice(r["n"], size=min(r["n"], 25), replace=False).tolist()) for r in stats]
    picked = percentiles.select_ranks(db, "SELECT g, x FROM v", ["g"],
                                      [((r["g"],), r["lo"], r["hi"], r["n"]) for r in stats], wanted)
    for r, w, got in zip(stats, wanted, picked):
        v = np.sort(np.array(groups[r["g"]], dtype=np.int64))
        assert got == {k: int(v[k]) for k in w}
    _check(db, groups)


def test_text_and_null_group_keys(db):
    """Groups keyed by several columns, some null (a timer has no topic)."""
    rng = np.random.default_rng(5)
    rows = [(n, t, int(x)) for n in ("a", "b") for t in ("/t", None) for x in rng.integers(0, 10**7, 20_000)]
    tbl = pa.table({"node": [r[0] for r in rows], "topic": [r[1] for r in rows], "x": pa.array([r[2] for r in rows], pa.int64())})
    db.con.from_arrow(tbl).create("w")
    got = percentiles.grouped_by_selection(db, "SELECT node, topic, x FROM w", ["node", "topic"], quartiles=True,
                                           extra="avg(x) AS again")
    whole = db.records(f"SELECT node, topic, {percentiles.aggregates('x', quartiles=True)}, avg(x) AS again "
                       "FROM w GROUP BY ALL")
    key = lambda r: (r["node"], str(r["topic"]))  # noqa: E731
    assert len(got) == 4
    for a, b in zip(sorted(got, key=key), sorted(whole, key=key)):
        assert list(a) == list(b)
        assert {k: v for k, v in a.items() if k != "std_ns"} == {k: v for k, v in b.items() if k != "std_ns"}
        v = np.sort(np.array([r[2] for r in rows if (r[0], r[1]) == (a["node"], a["topic"])]))
        assert a["p50_ns"] == pytest.approx(float(np.percentile(v, 50)), rel=1e-15)
