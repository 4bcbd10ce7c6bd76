"""`Store`: a DuckDB file or a team store opened, migrated and locked for writes; the parts' mixins in one class.

One process owns a database file at a time (DuckDB locks the file against
every other process, even readers). Within the owning process one connection
is shared and every use takes its own `.cursor()`, so Streamlit's session
threads and the ablation worker can use it at once. Writes are serialised by
a lock and run in a transaction: a run, an ingest or a batch of ablation
results is wholly there or wholly absent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import duckdb

from lib.core.errors import StoreBusyError, StoreError
from lib.store import files, lake
from lib.store.ablations import AblationsMixin
from lib.store.base import CACHE_BATCH, STATUSES
from lib.store.calls import CallCacheMixin
from lib.store.databases import ForeignDatabaseError, refuse_foreign
from lib.store.labels import LabelsMixin
from lib.store.recording import PreparedRun, RecordingMixin, RunBatch, prepare_run
from lib.store.runs import RunsMixin
from lib.store.schema import MIGRATIONS, SCHEMA_VERSION, Migration, applied, is_current, migrate

__all__ = ["CACHE_BATCH", "MIGRATIONS", "SCHEMA_VERSION", "STATUSES", "Migration", "PreparedRun", "RunBatch", "Store",
           "prepare_run"]


class Store(RunsMixin, RecordingMixin, CallCacheMixin, AblationsMixin, LabelsMixin):
    """A DuckDB run store (see module docstring for the threading and lock rules).

    Args:
        path: the database file (created with its schema when absent), or a team store's URL
            (`ducklake:postgres:...`, lib.store.lake: many processes write it at once; EVALDRIFT_DATA_PATH
            is the folder of its data when it is made).
        read_only: open an existing file only to read (a snapshot, lib.store.snapshot): no migration, and
            DuckDB refuses any write.
        as_of: a team store only: read it as it stood at this time (read-only; DuckLake's time travel).
    """

    def __init__(self, path: str | Path, *, read_only: bool = False, as_of: datetime | None = None) -> None:
        if lake.is_lake(path):
            self._open_lake(lake.parse(str(path)), as_of=as_of)
            return
        if as_of is not None:
            raise StoreError(f"{path} is a DuckDB file: only a team store (ducklake:...) keeps its history by date")
        self.lake = False
        self.path = Path(path)
        self.read_only = read_only
        memory = str(path) == ":memory:"
        existing = not read_only and self.path.is_file() and self.path.stat().st_size > 0
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if not read_only and self._empty_file():
            # An empty file is a new database (lib/app/README.md), but DuckDB refuses a 0-byte file as "not a valid
            # DuckDB database": it is removed so DuckDB creates the file in its place.
            self.path.unlink()
        try:
            # ":memory:" (a store for one process's use, e.g. a test's) is a DuckDB of its own, as duckdb.connect made
            self._con, self._db_name = (duckdb.connect(":memory:"), "") if memory else files.attach(
                self.path, read_only=read_only, look=self._foreign_refused if existing else None)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreBusyError(str(self.path)) from None
            if existing:
                raise ForeignDatabaseError(self.path, "not a DuckDB file") from None
            raise StoreError(f"cannot open database {self.path}: {exc}") from None
        self._write_lock = threading.RLock()
        self._on_close: list[Callable[[], None]] = []
        self._hold_replies()
        if read_only:   # a snapshot (lib.store.snapshot): written by this code's migrations, only read here
            return
        try:
            current = False
            if existing:   # another application's file is refused before anything is written to it
                with self.cursor() as cur:   # closed: a result left open would hold a transaction (and block
                    current = is_current(cur)   # every CHECKPOINT) for the store's life
                    if not current:   # (a current database carries the schema mark refuse_foreign looks for)
                        refuse_foreign(cur, self.path)
            if not current:   # a reopen of a current database, every command's and page's, takes one read
                with self.transaction() as cur:
                    migrate(cur, self.path)
            if existing:   # a file made just now holds no staging table
                self._drop_stale_staging()
        except BaseException:
            self._close_connection()   # a refused or failed migration must not keep the file locked in this process
            raise

    def _foreign_refused(self, cur: duckdb.DuckDBPyConnection) -> None:
        refuse_foreign(cur, self.path)

    def _empty_file(self) -> bool:
        """A regular file of 0 bytes with no write-ahead log beside it (a log would be another database's)."""
        try:
            return self.path.is_file() and self.path.stat().st_size == 0 and not Path(f"{self.path}.wal").exists()
        except OSError:
            return False

    def _open_lake(self, target: lake.LakeTarget, *, as_of: datetime | None) -> None:
        """A team store (lib.store.lake): the lake attached to an in-memory DuckDB, migrated by the same steps.

        Many processes open one lake, so the migration is retried on a commit conflict (two first opens at once)
        and staging tables left by others are not this process's to drop. As of a date it is only read, and
        only when it had taken every step of this code's schema by then.
        """
        self.lake = True
        self.read_only = as_of is not None
        self.path = Path(target.name)
        self._con, self._lake_name = lake.connect(target, as_of=as_of)
        self._db_name = self._lake_name
        self._write_lock = threading.RLock()
        self._on_close = []
        self._hold_replies()
        if as_of is not None:
            try:
                with self._con.cursor() as cur:
                    cur.execute(f"USE {self._lake_name}")
                    lacking = [m.name for m in MIGRATIONS if m.name not in applied(cur)]
            except BaseException:
                self._close_connection()
                raise
            if lacking:
                self._close_connection()
                raise StoreError(f"{target.name} as of {as_of:%Y-%m-%d %H:%M} lacks schema steps this evaldrift "
                                 f"reads ({', '.join(lacking)}): choose a later date")
            return
        try:
            with self._con.cursor() as cur:   # a current lake (every open but its first): one read, as a file's
                cur.execute(f"USE {self._lake_name}")   # reopen (an open 250 -> 120 ms of CPU, measured at load 22)
                current = is_current(cur)

            def take_steps() -> None:
                with self.transaction() as cur:
                    migrate(cur, target.name)
            if not current:
                lake.retrying(f"migrating {target.name}", take_steps, on_retry=self._conflicted)
        except BaseException:
            self._close_connection()
            raise

    def on_close(self, stop: Callable[[], None]) -> None:
        """Run `stop` before the connection closes: a thread that reads through this store ends first."""
        self._on_close.append(stop)

    def close(self) -> None:
        for stop in self._on_close:
            stop()
        self._on_close.clear()
        self.flush_cache()
        self._close_connection()

    def _close_connection(self) -> None:
        if self.lake:   # the lake detached; the process's DuckDB keeps the extensions for the next open
            lake.detach(self._con, self._lake_name)
        elif self._db_name:   # attached to a kept instance (lib.store.files): detached at the file's last close
            files.release(self._con)
        else:
            self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
