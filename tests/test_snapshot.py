"""The read-only snapshot a database's owner keeps for readers in other processes (lib.store.snapshot)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from lib.store import Store
from lib.store.snapshot import snapshot_path, snapshot_time, write_snapshot
from tests.test_validate import good_run


def _other_process_opens(path: Path) -> bool:
    code = f"import duckdb; duckdb.connect({str(path)!r}).close()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60).returncode == 0


def test_the_snapshot_holds_what_was_committed_and_the_owner_keeps_its_lock(tmp_path: Path) -> None:
    db = tmp_path / "evals.duckdb"
    with Store(db) as store:
        store.record_run(good_run("r1"))
        assert snapshot_time(db) is None
        write_snapshot(store)
        store.record_run(good_run("r2"))   # after the snapshot: not in it until the next one
        # A copy made by this process would close a descriptor of the file and drop DuckDB's lock on it.
        assert not _other_process_opens(db)
        with Store(snapshot_path(db), read_only=True) as snap:
            assert snap.run_ids() == ["r1"]
        write_snapshot(store)
        with Store(snapshot_path(db), read_only=True) as snap:
            assert snap.run_ids() == ["r1", "r2"]
    assert snapshot_time(db) is not None


def test_a_read_only_store_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "evals.duckdb"
    with Store(db) as store:
        store.record_run(good_run("r1"))
        write_snapshot(store)
    with Store(snapshot_path(db), read_only=True) as snap, pytest.raises(duckdb.Error):
        snap.record_run(good_run("r3"))


def test_closing_a_store_while_its_keeper_is_copying_waits_for_the_copy(tmp_path: Path) -> None:
    """The dashboard's keeper thread may be mid-copy when the store closes (a test's teardown, a restart):
    close() stops the keeper first and never fails with 'connection is busy' (CI stop 30)."""
    from lib.app.snapshots import SnapshotKeeper

    db = tmp_path / "evals.duckdb"
    with Store(db) as store:
        for i in range(30):
            store.record_run(good_run(f"r{i}"))
    for _ in range(15):
        store = Store(db)
        keeper = SnapshotKeeper(store, every=0.0)
        store.close()   # the keeper is reading or copying right now, most of the time
        assert not keeper._thread.is_alive()
    assert snapshot_time(db) is not None


# A dashboard process that exits with a store open: its keeper, a daemon thread, is looking at the store when the
# interpreter shuts down (every=0: it always is). Python ends a daemon thread that wants its lock back by unwinding
# it, and DuckDB's C++ frames, which catch everything, turned that into an abort ("FATAL: exception not rethrown",
# exit 134 in 6 of 8 runs before the keepers were stopped at exit).
EXIT_WITH_A_KEEPER = """import sys, time
from lib.app.snapshots import SnapshotKeeper
from lib.store import Store
SnapshotKeeper(Store(sys.argv[1]), every=0.0)
time.sleep(0.2)
"""


def test_a_process_that_exits_with_a_keeper_running_exits_cleanly(tmp_path: Path) -> None:
    for n in range(4):
        db = tmp_path / f"evals{n}.duckdb"
        proc = subprocess.run([sys.executable, "-c", EXIT_WITH_A_KEEPER, str(db)], capture_output=True, text=True,
                              timeout=60, cwd=Path(__file__).resolve().parents[1])
        assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-500:]}"
        assert snapshot_time(db) is not None   # it kept the snapshot while it ran
