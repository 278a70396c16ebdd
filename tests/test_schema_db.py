"""The database a user gets is the schema that crates/model/src/schema.rs declares
(and docs/model.md documents, checked by crates/model/tests/schema_docs.rs): every
table `roscope load` writes and every table the analyses store with `store=True`
has exactly the declared columns, in order, with the declared types; and the
`codes` lookup table holds every code table's values."""
from __future__ import annotations

import json
import os

import pytest
from roscope import _core, executor, flow, loading

SCHEMA = json.loads(_core.schema())
TRACE = "ros2/caret-end-to-end-cyclonedds"


@pytest.fixture(scope="module")
def stored(shared_traces, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("schema") / "run.duckdb")
    db, _ = loading.load([os.path.join(shared_traces, TRACE)], path)
    flow.causal_links(db, store=True)
    flow.data_flows(db, "^/topic1$", "^/topic3$", store=True)
    executor.input_waits(db, store=True)
    return db


def _columns(db, table: str) -> list[tuple[str, str]]:
    return [tuple(r) for r in db.con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = ? AND table_schema = 'main' ORDER BY ordinal_position", [table]).fetchall()]


def test_every_declared_table_is_in_the_database_as_declared(stored):
    base = {r[0] for r in stored.con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema = 'main'").fetchall()}
    declared = {t["name"] for t in SCHEMA["tables"]}
    assert base == declared, f"in the database only: {base - declared}; declared only: {declared - base}"
    for t in SCHEMA["tables"]:
        want = [(c["name"], c["type"]) for c in t["columns"]]
        assert _columns(stored, t["name"]) == want, t["name"]


def test_codes_lookup_table_holds_every_code(stored):
    rows = {(r[0], r[1], r[2]) for r in stored.con.execute("SELECT code_table, code, name FROM codes").fetchall()}
    want = {(t["name"], v["code"], v["name"]) for t in SCHEMA["codes"] for v in t["values"]}
    assert rows == want


def test_text_columns_hold_only_declared_codes(stored):
    # Every value a coded text column holds is one of its code table's names.
    for t in SCHEMA["codes"]:
        names = {v["name"] for v in t["values"]}
        for used in t["used_in"]:
            table, column = used.split(".")
            got = {r[0] for r in stored.con.execute(f'SELECT DISTINCT "{column}" FROM "{table}"').fetchall()} - {None}
            assert got <= names, f"{used}: {got - names} not in code table {t['name']}"
