"""A database file opened in a DuckDB instance kept from an earlier open (lib/store/files.py): each store sees its own
file only, a file open twice in a process is shared, and a close leaves the file whole and unlocked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from lib.store import Store
from lib.store.databases import ForeignDatabaseError, check_evaldrift


def _tables(store: Store) -> set[str]:
    return {r[0] for r in store.cursor().execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_two_stores_open_at_once_see_only_their_own_tables(tmp_path: Path) -> None:
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        a.cursor().execute("CREATE TABLE only_in_a (i INTEGER)")
        assert "only_in_a" in _tables(a)
        assert "only_in_a" not in _tables(b)
        assert "runs" in _tables(b)
        assert a._rows("SELECT count(*) FROM only_in_a") == [(0,)]
        check_evaldrift(tmp_path / "b.duckdb")   # b is evaldrift's while a foreign-looking table sits in a


def test_a_file_opened_twice_in_a_process_is_shared_until_its_last_close(tmp_path: Path) -> None:
    path = tmp_path / "twice.duckdb"
    first = Store(path)
    second = Store(path)
    first.cursor().execute("CREATE TABLE written_by_first (i INTEGER)")
    first.cursor().execute("INSERT INTO written_by_first VALUES (7)")
    assert second._rows("SELECT i FROM written_by_first") == [(7,)]
    first.close()
    assert second._rows("SELECT i FROM written_by_first") == [(7,)]   # still open for the other
    with pytest.raises(duckdb.ConnectionException):
        Store(path, read_only=True)   # the open one writes: the same refusal duckdb.connect gave
    second.close()
    with Store(path, read_only=True) as snap:
        assert snap._rows("SELECT i FROM written_by_first") == [(7,)]


def test_a_closed_store_leaves_its_file_checkpointed_and_free_for_another_process(tmp_path: Path) -> None:
    path = tmp_path / "closed.duckdb"
    with Store(path) as store:
        store.cursor().execute("CREATE TABLE kept AS SELECT range AS i FROM range(1000)")
    assert not Path(f"{path}.wal").exists()   # detached: its log written into the file, as a closed instance did
    code = ("import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); "
            "print(c.execute('SELECT count(*) FROM kept').fetchall()[0][0])")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1000"


def test_a_foreign_file_is_refused_and_the_next_open_works(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(theirs)) as con:
        con.execute("CREATE TABLE invoices (n INTEGER)")
    with pytest.raises(ForeignDatabaseError):
        Store(theirs)
    with Store(tmp_path / "ours.duckdb") as ours:   # the refused open left nothing attached in the kept instance
        assert "invoices" not in _tables(ours)
        assert "runs" in _tables(ours)


def test_memory_stores_are_each_their_own_and_write_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store(":memory:") as a, Store(":memory:") as b:
        a.cursor().execute("CREATE TABLE only_in_a (i INTEGER)")
        assert "only_in_a" in _tables(a) and "only_in_a" not in _tables(b)
    assert list(tmp_path.iterdir()) == []
