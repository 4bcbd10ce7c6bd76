"""The store's plumbing: one shared DuckDB connection, a cursor per use, serialised write transactions."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from lib.core.results import EXCLUDED, FAILED, OK
from lib.store.lake import ALIAS as LAKE_ALIAS

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table


STATUSES = (OK, FAILED, EXCLUDED)
CACHE_BATCH = 64   # judge replies put() holds before one write: a commit per call costs more than the call
CACHE_SECONDS = 0.5   # and at most one such write this often: a commit costs 6-9 ms of CPU, and a write every 64
#                       replies was a tenth of the client's CPU at 64 calls in flight on a fast judge
CACHE_MAX = 1024   # replies put() never holds more than


def _now() -> datetime:
    return datetime.now().replace(microsecond=0)


class StoreBase:
    """The connection, cursors and the serialised write transaction every part of the store uses."""

    path: Path
    lake: bool = False   # a team store (lib.store.lake): many processes write it at once
    conflicts: int = 0   # commit conflicts with other writers that this store retried (a team store only)
    _con: duckdb.DuckDBPyConnection
    _write_lock: threading.RLock

    # The call cache's (CallCacheMixin): the other parts write the replies it holds in their own commits.
    def flush_cache(self) -> None:
        raise NotImplementedError

    def _write_replies(self, cur: duckdb.DuckDBPyConnection) -> dict[str, tuple[object, ...]]:
        raise NotImplementedError

    def _forget_written(self, written: dict[str, tuple[object, ...]]) -> None:
        raise NotImplementedError

    def _conflicted(self, reason: str) -> None:
        self.conflicts += 1

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor for one use (one per thread, fetched before reuse)."""
        cur = self._con.cursor()
        if self.lake:   # a cursor is a connection of its own, whose default database is the in-memory one
            cur.execute(f"USE {LAKE_ALIAS}")
        return cur

    def _df(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        return self.cursor().execute(sql, list(params)).df()

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self.cursor().execute(sql, list(params)).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A serialised write transaction: committed whole, or rolled back whole."""
        with self._write_lock:
            cur = self.cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")

    def _insert_frame(self, cur: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        cols = ", ".join(frame.columns)
        cur.register("_incoming", frame)
        try:
            cur.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _incoming")
        finally:
            cur.unregister("_incoming")
