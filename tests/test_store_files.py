"""A database file opened in a DuckDB instance kept from an earlier open (lib/store/files.py): each store sees its own
file only, a file open twice in a process is shared, read-only and read-write still never mix, and a close leaves
the file whole, checkpointed and free for another process at once; forks and threads are each on their own."""

from __future__ import annotations

import hashlib
import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from lib.store import Store, files
from lib.store.databases import ForeignDatabaseError
from lib.store.snapshot import snapshot_path, write_snapshot
from tests.test_databases import foreign_duckdb_with_log
from tests.test_validate import good_run

ROOT = Path(__file__).resolve().parent.parent

# another process opens the file read-write, writes a row and prints the meta rows it then holds
WRITER = ("import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
          "c.execute(\"INSERT INTO meta VALUES ('written-by-another-process', 'yes')\"); "
          "print(c.execute('SELECT count(*) FROM meta').fetchall()[0][0]); c.close()")


def _tables(store: Store) -> set[str]:
    return {r[0] for r in store.cursor().execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def _meta(store: Store, key: str) -> list[tuple]:
    return store._rows("SELECT value FROM meta WHERE key = ?", [key])


def _another_process_writes(path: Path) -> int:
    out = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def _attached(path: Path) -> bool:
    """`path` is attached to one of this process's kept instances (other tests' stores may be open beside it)."""
    return str(path.resolve()) in files._open


def _digest(path: Path) -> tuple[str, ...]:
    return tuple(hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "absent"
                 for p in (path, Path(f"{path}.wal")))


def test_two_stores_open_at_once_see_only_their_own_tables(tmp_path: Path) -> None:
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        a.cursor().execute("CREATE TABLE only_in_a (i INTEGER)")
        assert "only_in_a" in _tables(a)
        assert "only_in_a" not in _tables(b)
        assert "runs" in _tables(b)
        assert a._rows("SELECT count(*) FROM only_in_a") == [(0,)]
        b.record_run(good_run("r1"))
        with Store(tmp_path / "b.duckdb") as again:   # b is evaldrift's while a foreign-looking table sits in a
            assert again.run_ids() == ["r1"]


def test_a_file_opened_twice_in_a_process_is_shared_until_its_last_close(tmp_path: Path) -> None:
    path = tmp_path / "twice.duckdb"
    first = Store(path)
    second = Store(path)
    first.cursor().execute("CREATE TABLE written_by_first (i INTEGER)")
    first.cursor().execute("INSERT INTO written_by_first VALUES (7)")
    assert second._rows("SELECT i FROM written_by_first") == [(7,)]
    first.close()
    assert second._rows("SELECT i FROM written_by_first") == [(7,)]   # still open for the other
    second.close()
    with Store(path, read_only=True) as snap:
        assert snap._rows("SELECT i FROM written_by_first") == [(7,)]


def test_a_foreign_file_with_a_log_is_looked_at_read_only_in_a_kept_instance_and_refused(tmp_path: Path) -> None:
    """A read-write attach replays a pending log into its file: another application's file with one is refused
    after a read-only look, and neither it nor its log is written (tests/test_databases.py checks the same
    through duckdb.connect's files); the next store opens in the instance the look used."""
    with Store(tmp_path / "idle.duckdb"):
        pass
    other = foreign_duckdb_with_log(tmp_path / "other.duckdb")
    before = _digest(other)
    with pytest.raises(ForeignDatabaseError, match="no evaldrift schema"):
        Store(other)
    assert _digest(other) == before and not _attached(other)
    with Store(tmp_path / "ours.duckdb") as ours:
        assert "orders" not in _tables(ours)


def test_a_second_open_of_a_file_with_a_pending_log_shares_the_open_one(tmp_path: Path) -> None:
    """The log of a file this process holds is its own: a second store shares the file, no look, no new instance."""
    path = tmp_path / "logged.duckdb"
    with Store(path) as first:
        first.record_run(good_run("r1"))
        assert Path(f"{path}.wal").stat().st_size > 0
        with Store(path) as second:
            assert second.run_ids() == ["r1"]
        assert first.run_ids() == ["r1"]   # the second close left it attached
    assert _another_process_writes(path) > 0


def test_a_file_this_process_holds_through_duckdb_connect_is_shared_as_before(tmp_path: Path) -> None:
    """A test's or a script's own duckdb.connect on the file: a store opened meanwhile shares that instance (as
    duckdb.connect did), where an attach would meet DuckDB's "Unique file handle conflict"."""
    path = tmp_path / "held.duckdb"
    with Store(path):
        pass
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO meta VALUES ('written-directly', 'yes')")
    with Store(path) as store:
        assert _meta(store, "written-directly") == [("yes",)]
        with pytest.raises(duckdb.ConnectionException, match="different configuration"):
            Store(path, read_only=True)
    assert con.execute("SELECT count(*) FROM meta WHERE key = 'written-directly'").fetchall() == [(1,)]
    con.close()
    assert _another_process_writes(path) > 0


def _duckdb_own_refusal(path: Path, *, first_read_only: bool) -> str:
    con = duckdb.connect(str(path), read_only=first_read_only)
    try:
        with pytest.raises(duckdb.ConnectionException) as refused:
            duckdb.connect(str(path), read_only=not first_read_only)
        return str(refused.value)
    finally:
        con.close()


@pytest.mark.parametrize("first_read_only", [False, True])
def test_read_only_and_read_write_of_one_file_never_mix_in_a_process(tmp_path: Path, first_read_only: bool) -> None:
    """One process never mixes the two (lib/store/README.md): the same refusal, word for word, as two
    duckdb.connect calls gave; the open store goes on, and once it is closed the other kind opens."""
    path = tmp_path / "mixed.duckdb"
    with Store(path) as store:
        store.record_run(good_run("r1"))
    expected = _duckdb_own_refusal(path, first_read_only=first_read_only)
    with Store(path, read_only=first_read_only) as first:
        with pytest.raises(duckdb.ConnectionException) as refused:
            Store(path, read_only=not first_read_only)
        assert str(refused.value) == expected
        assert first.run_ids() == ["r1"]
    with Store(path, read_only=not first_read_only) as other:
        assert other.run_ids() == ["r1"]


def test_a_closed_store_leaves_its_file_checkpointed_and_free_for_another_process(tmp_path: Path) -> None:
    path = tmp_path / "closed.duckdb"
    with Store(path) as store:
        store.record_run(good_run("r1"))
        assert Path(f"{path}.wal").exists()   # the run is in the log while the store is open
    assert not Path(f"{path}.wal").exists()   # detached: its log written into the file, as a closed instance did
    seen = _another_process_writes(path)    # read-write, at once
    with Store(path, read_only=True) as store:
        assert store.run_ids() == ["r1"] and _meta(store, "written-by-another-process") == [("yes",)]
        assert store._rows("SELECT count(*) FROM meta") == [(seen,)]


def test_a_store_closed_twice_leaves_the_other_store_of_its_file_open(tmp_path: Path) -> None:
    path = tmp_path / "twice.duckdb"
    first, second = Store(path), Store(path)
    first.close()
    first.close()   # as duckdb.connect's close, a second one does nothing: the file stays attached for `second`
    second.record_run(good_run("r1"))
    assert second.run_ids() == ["r1"]
    second.close()
    assert _another_process_writes(path) > 0


def test_a_store_opened_by_a_relative_path_is_freed_after_the_working_directory_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The close finds its file by its connection, not by the path resolved again (another file, now)."""
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    store = Store("relative.duckdb")
    store.record_run(good_run("r1"))
    monkeypatch.chdir(tmp_path / "elsewhere")
    store.close()
    assert not _attached(tmp_path / "relative.duckdb")
    assert _another_process_writes(tmp_path / "relative.duckdb") > 0


def test_a_closed_store_s_cursors_fail_and_never_reach_the_next_file_its_instance_holds(tmp_path: Path) -> None:
    """An instance a store left is the next open's: a cursor the closed store handed out must fail (as on a closed
    duckdb.connect), not read the other file now attached under the same name."""
    old = Store(tmp_path / "old.duckdb")
    old.record_run(good_run("kept-in-old"))
    kept_cursor = old.cursor()
    assert old.run_ids() == ["kept-in-old"]   # this thread's reader cursor made
    old.close()
    with Store(tmp_path / "new.duckdb") as new:
        new.record_run(good_run("in-new"))
        for read in (lambda: kept_cursor.execute("SELECT run_id FROM runs").fetchall(), old.run_ids,
                     lambda: old.cursor()):
            with pytest.raises(duckdb.ConnectionException):
                read()
        assert new.run_ids() == ["in-new"]


def test_a_path_with_a_quote_and_spaces_is_opened_written_and_copied(tmp_path: Path) -> None:
    """The path goes into ATTACH as a quoted literal."""
    folder = tmp_path / "o'brien's evals"
    path = folder / "it's a db; DROP TABLE runs.duckdb"
    with Store(path) as store:
        store.record_run(good_run("r1"))
        write_snapshot(store)
        assert store._rows("SELECT current_setting('temp_directory')") == [(f"{path.resolve()}.tmp",)]
    assert sorted(p.name for p in folder.iterdir()) == [path.name, snapshot_path(path).name]
    with Store(path) as store, Store(snapshot_path(path), read_only=True) as snap:
        assert store.run_ids() == ["r1"] and snap.run_ids() == ["r1"]
    assert _another_process_writes(path) > 0


def test_temporary_files_go_beside_the_file_as_duckdb_connect_put_them(tmp_path: Path) -> None:
    """A spilling query's files: `<file>.tmp`, as duckdb.connect set it, not a `.tmp` in the working directory
    (the in-memory instance's own default); each store of a kept instance has its own."""
    for name in ("first.duckdb", "second.duckdb", "first.duckdb"):
        path = tmp_path / name
        with duckdb.connect(str(path)) as con:
            expected = con.execute("SELECT current_setting('temp_directory')").fetchall()
        with Store(path) as store:
            assert store._rows("SELECT current_setting('temp_directory')") == expected


def _child_opens_its_own_store(path: str) -> None:
    with Store(path) as store:
        store.record_run(good_run("from-the-child"))


# A process with an idle instance and a file open forks; its child ends through the interpreter's finalisation
# (no os._exit, as multiprocessing's children take), then the parent writes on: prints the child's exit status.
FORKED_EXIT = """
import os, sys
from lib.store import Store
with Store(sys.argv[1] + "/idle.duckdb"):
    pass
parent = Store(sys.argv[1] + "/parent.duckdb")
with parent.transaction() as cur:
    cur.execute("INSERT INTO meta VALUES ('before the fork', 'yes')")
pid = os.fork()
if pid == 0:
    sys.exit(0)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
with parent.transaction() as cur:
    cur.execute("INSERT INTO meta VALUES ('after the fork', 'yes')")
parent.close()
"""


def test_a_forked_child_neither_uses_nor_tears_down_the_parents_instances(tmp_path: Path) -> None:
    """multiprocessing's fork (the demo build's workers) opens stores of its own; a child that ends through the
    interpreter's finalisation leaves the parent's instances alone, where tearing them down in the child killed
    it with SIGSEGV (-11: DuckDB joins worker threads the child does not have)."""
    with Store(tmp_path / "idle.duckdb"):   # one instance left idle, another holding the parent's open file
        pass
    parent = Store(tmp_path / "parent.duckdb")
    try:
        parent.record_run(good_run("from-the-parent"))
        before = _digest(parent.path)
        child = multiprocessing.get_context("fork").Process(target=_child_opens_its_own_store,
                                                           args=(str(tmp_path / "child.duckdb"),))
        child.start()
        child.join(120)
        assert child.exitcode == 0
        assert _digest(parent.path) == before   # the child wrote nothing to the parent's file
        parent.record_run(good_run("after-the-child"))
        assert parent.run_ids() == ["after-the-child", "from-the-parent"]
    finally:
        parent.close()
    with Store(tmp_path / "child.duckdb", read_only=True) as theirs:
        assert theirs.run_ids() == ["from-the-child"]
    assert _another_process_writes(tmp_path / "parent.duckdb") > 0
    out = subprocess.run([sys.executable, "-c", FORKED_EXIT, str(tmp_path)], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert (out.returncode, out.stdout.strip()) == (0, "0"), out.stderr
    with Store(tmp_path / "parent.duckdb", read_only=True) as parents:
        assert _meta(parents, "before the fork") == _meta(parents, "after the fork") == [("yes",)]


def test_threads_opening_and_closing_stores_at_once_each_read_their_own(tmp_path: Path) -> None:
    """Streamlit's session threads: 8 threads, 20 opens each, of 3 files written and 1 only read, some of them
    open in several threads at once; every write lands in its file, every read sees its file, and once all are
    closed each file is checkpointed and free for another process."""
    written = [tmp_path / f"w{i}.duckdb" for i in range(3)]
    read = tmp_path / "read only.duckdb"
    for path in [*written, read]:
        with Store(path) as store, store.transaction() as cur:
            cur.execute("INSERT INTO meta VALUES ('file', ?)", [path.name])
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(t: int) -> None:
        try:
            start.wait()
            for k in range(20):
                if t % 4 == 3:
                    with Store(read, read_only=True) as store:
                        assert _meta(store, "file") == [(read.name,)]
                    continue
                path = written[(t + k) % 3]
                with Store(path) as store:
                    with store.transaction() as cur:
                        cur.execute("INSERT INTO meta VALUES (?, 'x')", [f"t{t}-{k}"])
                    assert _meta(store, "file") == [(path.name,)]
                    assert _meta(store, f"t{t}-{k}") == [("x",)]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert errors == []
    keys: set[str] = set()
    for path in written:
        assert not Path(f"{path}.wal").exists()
        with duckdb.connect(str(path), read_only=True) as con:
            keys |= {k for (k,) in con.execute("SELECT key FROM meta WHERE value = 'x'").fetchall()}
        assert _another_process_writes(path) > 0
    assert keys == {f"t{t}-{k}" for t in range(8) if t % 4 != 3 for k in range(20)}
    assert _another_process_writes(read) > 0


def test_a_foreign_file_is_refused_and_the_next_open_works(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(theirs)) as con:
        con.execute("CREATE TABLE invoices (n INTEGER)")
    with pytest.raises(ForeignDatabaseError):
        Store(theirs)
    with Store(tmp_path / "ours.duckdb") as ours:   # the refused open left nothing attached in the kept instance
        assert "invoices" not in _tables(ours)
        assert "runs" in _tables(ours)
    with duckdb.connect(str(theirs)) as con:   # and the refused file is free in this process too
        assert con.execute("SELECT count(*) FROM invoices").fetchall() == [(0,)]


def test_memory_stores_are_each_their_own_and_write_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store(":memory:") as a, Store(":memory:") as b:
        a.cursor().execute("CREATE TABLE only_in_a (i INTEGER)")
        assert "only_in_a" in _tables(a) and "only_in_a" not in _tables(b)
    assert list(tmp_path.iterdir()) == []


def test_the_files_module_holds_a_file_only_while_a_store_has_it_open(tmp_path: Path) -> None:
    with Store(tmp_path / "a.duckdb"), Store(tmp_path / "a.duckdb"), Store(tmp_path / "b.duckdb"):
        assert _attached(tmp_path / "a.duckdb") and _attached(tmp_path / "b.duckdb")
    assert not _attached(tmp_path / "a.duckdb") and not _attached(tmp_path / "b.duckdb")
    assert len(files._idle) <= files.IDLE_MAX
