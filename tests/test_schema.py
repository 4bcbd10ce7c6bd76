"""The schema's migrations, recorded by name: conversion from the numbered past, Python steps, duplicate and unknown
names, and the archive tables kept in step with the live ones."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path

import duckdb
import pytest

from lib.core.errors import StoreError
from lib.store import MIGRATIONS, SCHEMA_VERSION, Migration, Store
from lib.store.schema import applied, build, check_names, is_current, migrate

SCHEMA = Path(__file__).resolve().parents[1] / "lib" / "store" / "schema.py"
FIXTURES = Path(__file__).parent / "fixtures"
NAMES = [m.name for m in MIGRATIONS]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    """An empty in-memory database."""
    with duckdb.connect(":memory:") as c:
        yield c


def _migrate_in_a_transaction(con: duckdb.DuckDBPyConnection, migrations: tuple[Migration, ...]) -> None:
    """As Store does: one transaction, rolled back when a step fails."""
    con.execute("BEGIN TRANSACTION")
    try:
        migrate(con, "test.duckdb", migrations)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def test_a_new_database_records_every_step_by_name_with_the_time_it_ran(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        done = applied(store.cursor())
        version = store.cursor().execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    assert sorted(done) == sorted(NAMES)
    assert all(at is not None for at in done.values())
    assert version == [(str(SCHEMA_VERSION),)]   # still written: an evaldrift from before names reads only that


def test_a_numbered_database_is_converted_once_without_taking_its_steps_again(tmp_path: Path) -> None:
    """tests/fixtures/schema2.duckdb.gz was written at schema 2 (two steps, no names recorded)."""
    path = tmp_path / "old.duckdb"
    path.write_bytes(gzip.decompress((FIXTURES / "schema2.duckdb.gz").read_bytes()))
    with Store(path) as store:
        first = applied(store.cursor())
    assert sorted(first) == sorted(NAMES)
    assert [n for n in NAMES if first[n] is None] == NAMES[:2]   # recorded by the conversion: when is not known
    with Store(path) as store:
        assert applied(store.cursor()) == first


def test_conversion_records_the_first_n_names_and_takes_only_the_rest(con: duckdb.DuckDBPyConnection) -> None:
    calls: list[str] = []

    def fill(cur: duckdb.DuckDBPyConnection) -> None:
        calls.append("ran")
        cur.execute("INSERT INTO t VALUES (1)")

    steps = (Migration("a table", ("CREATE TABLE t (x INTEGER)",)),   # no IF NOT EXISTS: a second run would fail
             Migration("a python step", run=fill))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("CREATE TABLE t (x INTEGER)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")   # as the numbered code left it after step 1
    _migrate_in_a_transaction(con, steps)
    done = applied(con)
    assert done["a table"] is None and done["a python step"] is not None
    assert calls == ["ran"] and con.execute("SELECT x FROM t").fetchall() == [(1,)]
    _migrate_in_a_transaction(con, steps)
    assert calls == ["ran"]


def test_a_python_step_runs_in_the_migrating_transaction(con: duckdb.DuckDBPyConnection) -> None:
    """A later step that fails takes back the Python step's work and every record: nothing is half-migrated."""
    steps = (Migration("a table", ("CREATE TABLE t (x INTEGER)",)),
             Migration("fill it", run=lambda cur: cur.execute("INSERT INTO t VALUES (1), (2)")),
             Migration("broken", ("ALTER TABLE nowhere ADD COLUMN y VARCHAR",)))
    with pytest.raises(duckdb.CatalogException):
        _migrate_in_a_transaction(con, steps)
    assert applied(con) == {}
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(0,)]
    _migrate_in_a_transaction(con, steps[:2])
    assert con.execute("SELECT x FROM t ORDER BY x").fetchall() == [(1,), (2,)]
    assert sorted(applied(con)) == ["a table", "fill it"]


def test_two_steps_with_one_name_cannot_both_apply(con: duckdb.DuckDBPyConnection) -> None:
    """Two branches that each append a step under one name: the second would never run on a database that took
    the first, so the list is refused before anything is written."""
    first = Migration("notes", ("CREATE TABLE t (x INTEGER)",))
    second = Migration("notes", ("CREATE TABLE u (y INTEGER)",))
    with pytest.raises(StoreError, match="two migrations are named 'notes'"):
        check_names((first, second))
    with pytest.raises(StoreError, match="two migrations are named 'notes'"):
        _migrate_in_a_transaction(con, (first, second))
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(0,)]
    check_names(MIGRATIONS)


def test_a_duplicate_name_in_migrations_fails_at_import(tmp_path: Path) -> None:
    source = SCHEMA.read_text(encoding="utf-8")
    marker = "MIGRATIONS: tuple[Migration, ...] = (\n"
    assert marker in source
    copy = tmp_path / "schema_with_a_duplicate.py"
    copy.write_text(source.replace(marker, marker + f"    Migration({NAMES[-1]!r}, ()),\n"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("schema_with_a_duplicate", copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up while the class is made
    try:
        with pytest.raises(StoreError, match=f"two migrations are named {NAMES[-1]!r}"):
            spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]


def test_a_database_with_a_step_this_code_does_not_know_is_refused(fresh_db: Path) -> None:
    with Store(fresh_db) as store, store.transaction() as cur:
        cur.execute("INSERT INTO migrations VALUES ('watcher state', now())")
    with pytest.raises(StoreError, match=r"does not know \('watcher state'\): it was written by a newer evaldrift"):
        Store(fresh_db)
    with duckdb.connect(str(fresh_db), read_only=True) as con:   # refused, and its file closed again
        assert "watcher state" in applied(con)


TWO_STEPS = (Migration("a table", ("CREATE TABLE a (x INTEGER)",)),
             Migration("another", ("CREATE TABLE b (x INTEGER)",)))


@pytest.mark.parametrize(("change", "current"), [
    ("", True),   # both steps recorded, and their number: a reopen reads this and nothing else
    ("DELETE FROM migrations WHERE name = 'another'", False),   # a step to take
    ("INSERT INTO migrations VALUES ('watcher state', NULL)", False),   # a newer evaldrift's step: migrate refuses
    ("UPDATE meta SET value = '3' WHERE key = 'schema_version'", False),   # a newer number: migrate refuses
    ("DELETE FROM meta", False),   # no schema mark: refuse_foreign decides whose file it is
    ("DROP TABLE migrations", False),   # from before steps were named: converted by migrate
    ("DROP TABLE meta", False),
])
def test_only_a_database_with_every_step_and_its_number_skips_the_migration(con: duckdb.DuckDBPyConnection,
                                                                             change: str, current: bool) -> None:
    """Store skips refuse_foreign and migrate when is_current says so: any other state takes the whole path."""
    _migrate_in_a_transaction(con, TWO_STEPS)
    if change:
        con.execute(change)
    assert is_current(con, TWO_STEPS) is current
    assert not is_current(con, TWO_STEPS[:1])   # a code with other steps: the recorded ones are not its own


# The columns an archive table has beyond its live table's (lib.store.archive moves rows across by name).
ARCHIVE_EXTRA = {"archived_runs": {"archive_id": "VARCHAR", "archived_at": "TIMESTAMP", "reason": "VARCHAR"}}


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?",
                            [table]).fetchall())


def _archive_drift(con: duckdb.DuckDBPyConnection) -> list[str]:
    """How each archived_<table> differs from <table> plus its archive columns (empty: in step)."""
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
    drift = []
    for kept in (t for t in tables if t.startswith("archived_")):
        live = kept.removeprefix("archived_")
        want = {**ARCHIVE_EXTRA.get(kept, {"archive_id": "VARCHAR"}), **_columns(con, live)}
        have = _columns(con, kept)
        drift += [f"{kept} lacks {c} {t} (in {live})" for c, t in want.items() if have.get(c) != t]
        drift += [f"{kept} has {c}, which {live} lacks" for c in have if c not in want]
    return drift


def test_every_archive_table_has_its_live_tables_columns(con: duckdb.DuckDBPyConnection) -> None:
    build(con)
    assert {t for t in [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
            if t.startswith("archived_")} == {"archived_runs", "archived_run_metrics", "archived_samples",
                                              "archived_sample_scores"}
    assert _archive_drift(con) == []


@pytest.mark.parametrize(("step", "drift"), [
    ("ALTER TABLE runs ADD COLUMN owner VARCHAR", ["archived_runs lacks owner VARCHAR (in runs)"]),
    ("ALTER TABLE sample_scores ADD COLUMN cost DOUBLE",
     ["archived_sample_scores lacks cost DOUBLE (in sample_scores)"]),
    ("ALTER TABLE archived_samples ADD COLUMN stray INTEGER", ["archived_samples has stray, which samples lacks"]),
])
def test_the_archive_check_names_a_column_added_to_one_side_only(con: duckdb.DuckDBPyConnection, step: str,
                                                                  drift: list[str]) -> None:
    build(con, (*MIGRATIONS, Migration("one side only", (step,))))
    assert _archive_drift(con) == drift
