"""How many bytes a Parquet file's text columns hold once read, measured by DuckDB without expanding them.

A dictionary-encoded column keeps each value once and points every row at it: pyarrow hands each row a copy,
DuckDB a pointer. So DuckDB measures (strlen of each row's text, or of its passages together) in its own
streaming reader at the cost of a pointer a row, before lib.intake.parquetread lets pyarrow make a value of it.
The file's column names are never SQL text: they go in as expressions (duckdb.ColumnExpression), and the
queries name only the aliases made here. Prefix-encoded columns (DELTA_BYTE_ARRAY), which DuckDB would expand a
vector of 2,048 rows at a time, are left to the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import duckdb
from duckdb import ColumnExpression, FunctionExpression, LambdaExpression

from lib.core.errors import InputError

MEMORY_MB = 256   # what measuring may hold: a streaming read holds a page or two, never the file

# In-memory DuckDB databases that measured a file and are free to measure the next. Making one and closing it
# costs about 15 ms of CPU, a measure of a small file 2-3 ms: an ingest measures a Parquet file once or more.
# A measure takes a database of its own (its MEMORY_MB is that measure's alone, as when each made its own) and
# works in a cursor of it (its relations and views go with the cursor); one that failed is closed, not kept.
_idle: list[duckdb.DuckDBPyConnection] = []
_idle_lock = threading.Lock()


def _database() -> duckdb.DuckDBPyConnection:
    with _idle_lock:
        if _idle:
            return _idle.pop()
    con = duckdb.connect(":memory:")
    try:
        # a page whose header claims more than this is refused, not allocated: the footer's sizes are checked
        # first, but a footer can understate what a page header then asks for
        con.execute(f"SET memory_limit = '{MEMORY_MB}MB'")
    except BaseException:
        con.close()
        raise
    return con


def _unreadable(exc: duckdb.Error, source: str) -> InputError:
    if isinstance(exc, duckdb.OutOfMemoryException):
        return InputError(f"a page of the file needs more than {MEMORY_MB} MB to read (more than its footer says); "
                          f"refused before it was read", source=source)
    return InputError(f"not a readable Parquet file: {str(exc).splitlines()[0]}", source=source)


@dataclass(frozen=True)
class ColumnSizes:
    """A text column's largest row and all its rows together, in bytes (a list column: its items together)."""

    column: str
    largest: int
    total: int


def _size(name: str, kind: str) -> duckdb.Expression | None:
    column = ColumnExpression(name)
    if kind in ("VARCHAR", "BLOB"):
        return FunctionExpression("octet_length" if kind == "BLOB" else "strlen", column)
    if kind in ("VARCHAR[]", "BLOB[]"):
        item = FunctionExpression("octet_length" if kind == "BLOB[]" else "strlen", ColumnExpression("x"))
        return FunctionExpression("list_sum", FunctionExpression("list_transform", column, LambdaExpression("x", item)))
    return None   # numbers and other shapes: no larger than their pages (checked from the footer)


class _Measured:
    """One file's text columns as a relation of sizes: s0, s1, ... per row (and r, the row from 1, with rows)."""

    def __init__(self, path: str | Path, skip: Collection[str], source: str, *, rows: bool = False) -> None:
        self.source = source
        self.database = _database()
        self.con = self.database.cursor()
        self.failed = False
        try:
            # the row number only where a row is looked for (a file may have a column of that name itself)
            rel = self.con.read_parquet(str(path), file_row_number=rows)
            names = [c for c in rel.columns if not (rows and c == "file_row_number")]
            sizes = [(n, _size(n, str(t))) for n, t in zip(rel.columns, rel.types, strict=True) if n in names
                     and n not in skip]
            self.columns = [n for n, e in sizes if e is not None]
            exprs = [e.alias(f"s{k}") for k, (_, e) in enumerate((n, e) for n, e in sizes if e is not None)]
            if rows:
                exprs.append(FunctionExpression("+", ColumnExpression("file_row_number"),
                                                duckdb.ConstantExpression(1)).alias("r"))
            self.rel = rel.project(*exprs) if self.columns else None
        except duckdb.Error as exc:
            self.failed = True
            self.close()
            raise _unreadable(exc, source) from None

    def run(self, sql: str) -> list[tuple]:
        """A query over the sizes relation (named `sizes`); its text names only the aliases made here."""
        assert self.rel is not None
        try:
            result = self.rel.query("sizes", sql)
            assert result is not None   # a SELECT gives a relation
            return result.fetchall()
        except duckdb.Error as exc:
            self.failed = True
            raise _unreadable(exc, self.source) from None

    def close(self) -> None:
        self.con.close()
        if self.failed:
            self.database.close()
            return
        with _idle_lock:
            _idle.append(self.database)


def column_sizes(path: str | Path, *, skip: Collection[str] = (), source: str | None = None) -> list[ColumnSizes]:
    """Each text column's (text or list of text) largest row and total, in bytes, other than those in `skip`.

    Raises:
        InputError: DuckDB cannot read the file.
    """
    measured = _Measured(path, skip, source or str(path))
    try:
        if measured.rel is None:
            return []
        parts = ", ".join(f"coalesce(max(s{k}), 0), coalesce(sum(s{k}), 0)" for k in range(len(measured.columns)))
        [row] = measured.run(f"SELECT {parts} FROM sizes")
        return [ColumnSizes(name, int(row[2 * k]), int(row[2 * k + 1])) for k, name in enumerate(measured.columns)]
    finally:
        measured.close()


def first_row_over(path: str | Path, column: str, limit: int, *, source: str | None = None) -> int:
    """The first row (from 1) whose `column` holds more than `limit` bytes (0: none, or not found)."""
    try:
        measured = _Measured(path, (), source or str(path), rows=True)
    except InputError:
        return 0   # the refusal stands; only its row is not named
    try:
        k = measured.columns.index(column)
        rows = measured.run(f"SELECT min(r) FROM sizes WHERE s{k} > {int(limit)}")
        return int(rows[0][0] or 0)
    except InputError:
        return 0   # the refusal stands; only its row is not named
    finally:
        measured.close()


def first_row_past(path: str | Path, columns: Collection[str], start: int, limit: int, *,
                   source: str | None = None) -> int:
    """The first row (from 1) at which `start` plus the running total of `columns` passes `limit` (0: none, or
    not found)."""
    try:
        measured = _Measured(path, (), source or str(path), rows=True)
    except InputError:
        return 0   # the refusal stands; only its row is not named
    try:
        chosen = [k for k, name in enumerate(measured.columns) if name in columns]
        if not chosen:
            return 0
        row_total = " + ".join(f"coalesce(s{k}, 0)" for k in chosen)
        rows = measured.run(f"SELECT min(r) FROM (SELECT r, sum({row_total}) OVER (ORDER BY r ROWS UNBOUNDED "
                            f"PRECEDING) AS running FROM sizes) WHERE running > {int(limit) - int(start)}")
        return int(rows[0][0] or 0)
    except InputError:
        return 0   # the refusal stands; only its row is not named
    finally:
        measured.close()


__all__ = ["ColumnSizes", "column_sizes", "first_row_over", "first_row_past"]
