"""The store's plumbing: one shared DuckDB connection, a cursor per use, serialised write transactions."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import duckdb

from lib.core.errors import StoreError
from lib.core.results import EXCLUDED, FAILED, OK
from lib.store.lake import refusal as lake_refusal
from lib.store.lake import retrying as lake_retrying

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table


P = ParamSpec("P")
T = TypeVar("T")
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
    _known_prompts: frozenset[str] = frozenset()   # prompt hashes this store committed (recording.py), never deleted
    _con: duckdb.DuckDBPyConnection
    _lake_name: str = ""   # a team store's name in this process's DuckDB (lib.store.lake.connect)
    _db_name: str = ""   # the store's database in its DuckDB instance (a file's: lib.store.files; a team store's)
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
        if self._db_name:   # a cursor is a connection of its own, whose default database is the in-memory one
            cur.execute(f"USE {self._db_name}")
        return cur

    def _reader(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor for reads fetched whole at once (`_df`, `_rows`), made on its first read: a new
        cursor each time took a `USE` of the store's database (0.15-0.3 ms of CPU, a read's half). It holds no
        result between reads, so it holds no transaction open either."""
        readers = self.__dict__.get("_readers")
        if readers is None:
            readers = self.__dict__.setdefault("_readers", threading.local())
        cur = getattr(readers, "cursor", None)
        if cur is None:
            cur = readers.cursor = self.cursor()
        return cur

    def _df(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        return self._reader().execute(sql, list(params)).df()

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self._reader().execute(sql, list(params)).fetchall()

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
            try:
                cur.execute("COMMIT")
            except duckdb.Error as exc:
                refused = lake_refusal(exc) if self.lake else None
                if refused is None:
                    raise
                # one line, never the catalog query DuckLake quotes (it holds the rows' text)
                raise StoreError(f"the team store {self.path} refused the write ({refused}): the role its URL names "
                                 "may only read; nothing was written (writers use a role with write grants, "
                                 "lib/store/README.md)") from None

    def _numbering(self, cur: duckdb.DuckDBPyConnection) -> None:
        """Call in a transaction that numbers its rows after the store's highest (labels, incident states): on a
        team store two such transactions at once would both commit the same number (two inserts never conflict),
        so each also takes the one numbering row (meta's schema version, rewritten unchanged), which makes the
        second commit conflict and be retried (`retried`) with the number after the first's. A file's single
        writer needs nothing."""
        if self.lake:
            cur.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")

    def _put_frame(self, cur: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, keys: Sequence[str], *,
                   replace: bool) -> None:
        """Merge a frame's rows into `table` by `keys` within the caller's transaction (see `merge`)."""
        if frame.empty:
            return
        cur.register("_incoming", frame)
        try:
            merge(cur, table, "_incoming", tuple(frame.columns), keys, replace=replace)
        finally:
            cur.unregister("_incoming")

    def _insert_frame(self, cur: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        cols = ", ".join(frame.columns)
        cur.register("_incoming", frame)
        try:
            cur.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _incoming")
        finally:
            cur.unregister("_incoming")


def retried(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A write whose body is one whole transaction, on a store given first (a method's self, or a function's
    store): on a team store it runs again, whole, while another writer's commit conflicts with it (lib.store.lake
    retrying: bounded, counted in `store.conflicts`, said when it gives up); on a file it runs once.

    DuckLake fails the second of two commits that update or delete rows of one table, even other rows (measured:
    two ablation jobs advancing their own progress rows), where two inserts both commit.
    """
    def wrap(write: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(write)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            store = args[0]
            if not isinstance(store, StoreBase) or not store.lake:
                return write(*args, **kwargs)
            return lake_retrying(f"{what} in {store.path}", lambda: write(*args, **kwargs),
                                 on_retry=store._conflicted)
        return run
    return wrap


def merge(cur: duckdb.DuckDBPyConnection, table: str, source: str, columns: Sequence[str], keys: Sequence[str], *,
          replace: bool, params: Sequence[object] = ()) -> None:
    """Put `source`'s rows into `table`: a row whose `keys` are there already replaces the stored one (`replace`)
    or is left out (not `replace`), in one MERGE statement.

    The store's one upsert, the same on a DuckDB file and on a team store (lib.store.lake), whose tables hold no
    key: `INSERT OR REPLACE` and `OR IGNORE` need a PRIMARY KEY and DuckLake refuses them ("no UNIQUE/PRIMARY KEY
    constraints that refer to this table"). Measured (2026-12-06, 30 merges of 64 rows each, 3 of them already
    there): a file 29 ms a MERGE against 45 ms for a delete and an insert; a lake on Postgres 15 at load 12,
    354 against 300 ms, both dominated by the catalog's round trips.

    Args:
        cur: a cursor in the caller's transaction.
        table: the table (a name from the store's code, never from input).
        source: a registered frame's name, or a subquery (see `values`).
        columns: the source's columns (each a column of `table`).
        keys: the columns that identify a row.
        replace: a row already there is replaced (else left as it is, and the source's row dropped).
        params: the subquery's parameters.
    """
    on = " AND ".join(f"{table}.{k} = _src.{k}" for k in keys)
    sets = ", ".join(f"{c} = _src.{c}" for c in columns if c not in keys)
    matched = f" WHEN MATCHED THEN UPDATE SET {sets}" if replace and sets else ""
    cur.execute(f"MERGE INTO {table} USING {source} AS _src ON {on}{matched} WHEN NOT MATCHED THEN INSERT BY NAME",
                list(params))


def values(columns: Sequence[str]) -> str:
    """A one-row subquery of parameters named `columns`, for `merge` (the values go as its params)."""
    return f"(SELECT * FROM (VALUES ({', '.join('?' * len(columns))})) AS _v({', '.join(columns)}))"
