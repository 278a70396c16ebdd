"""Kernel scheduling data stored chunk by chunk (issues 14 and 29): `roscope load` into a
file, where DuckDB is capped and the streamed builder (crates/model/src/kernel) hands its
rows over in chunks, against the same independent oracle as tests/test_sched_lttng.py (the
real LTTng kernel trace bug446190, decoded with babeltrace2 and walked by a state machine in
plain Python). The builder's chunks are made tiny (16 rows), so that the tables come in
over a hundred inserts, and the few rows written before their thread's process was known
are corrected afterwards. (The trace has one time shared by two sched events only, so this
does not test the order of events of one time.)"""
from __future__ import annotations

import collections

import pytest

from tests.support.sched_lttng import STATES, TRACE, oracle


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    import roscope
    from roscope import kernel, loading

    chunks = collections.Counter()
    put = kernel.RowStore.put

    def counted(self, name, table):
        chunks[name] += 1
        put(self, name, table)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel, "CHUNK_ROWS", 16)
        mp.setattr(kernel.RowStore, "put", counted)
        out = tmp_path_factory.mktemp("stream") / "k.duckdb"
        res = loading.write([str(TRACE)], str(out), memory=16 << 20)
    db = roscope.open(str(out))
    yield db, res, chunks
    db.con.close()


def test_the_rows_came_in_many_chunks(loaded):
    _db, res, chunks = loaded
    assert chunks["thread_states"] >= res.tables["thread_states"] // 16 > 100
    assert chunks["preemptions"] > 10


def test_intervals_preemptions_migrations_names_equal_babeltrace2s(loaded):
    db, res, _chunks = loaded
    o = oracle()
    got = collections.defaultdict(list)
    for r in db.records("SELECT tid, state, start_ts, end_ts, cpu, name FROM thread_states ORDER BY tid, start_ts"):
        got[r["tid"]].append((r["state"], r["start_ts"], r["end_ts"], r["cpu"] if r["state"] == "running" else None,
                              r["name"]))
    assert dict(got) == o["intervals"]
    assert res.tables["thread_states"] == sum(len(v) for v in o["intervals"].values()) > 1500
    pre = collections.defaultdict(list)
    for r in db.records("SELECT tid, ts, cpu, by_tid FROM preemptions ORDER BY tid, ts"):
        pre[r["tid"]].append((r["ts"], r["cpu"], r["by_tid"]))
    assert dict(pre) == o["preemptions"]
    mig = collections.defaultdict(list)
    for r in db.records("SELECT tid, ts, from_cpu, to_cpu FROM migrations ORDER BY tid, ts"):
        mig[r["tid"]].append((r["ts"], r["from_cpu"], r["to_cpu"]))
    assert dict(mig) == o["migrations"] and sum(map(len, mig.values())) > 10
    assert {r["tid"]: r["name"] for r in db.records("SELECT tid, name FROM kernel_threads")} == o["names"]
    # the temporary tables are gone with the load
    assert not {"kernel_threads_raw", "ust_threads"} & set(db.tables())
    assert set(STATES) == {r["state"] for r in db.records("SELECT DISTINCT state FROM thread_states")}
