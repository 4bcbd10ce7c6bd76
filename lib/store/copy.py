"""Moving a whole history between stores (a DuckDB file, a team store, or from an exported dataset), checked.

Every table the migrations make is copied in one transaction of the destination, and before it commits each
table's row count and checksum (an order-free sum of each row's hash, over the schema's columns in order) are
compared with the source's: a difference rolls the whole copy back and names the table. The destination must
hold no rows yet (a new file, or a new lake); its own migration record stays its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from lib.core.errors import StoreError
from lib.store import Store, lake
from lib.store.parquet import _SHAPES, TABLES, ParquetStore, is_dataset

# kept by each store for itself: the destination's migrations ran on it, and they wrote its schema version
OWN = ("migrations", "meta")


@dataclass(frozen=True)
class TableCheck:
    """One table as copied: its rows and its checksum, equal on both sides."""

    table: str
    rows: int
    checksum: int


def open_any(location: str | Path) -> Store | ParquetStore:
    """A store URL (ducklake:...), an exported dataset's folder, or a DuckDB file (made when absent)."""
    if lake.is_lake(str(location)):
        return Store(str(location))
    if is_dataset(location):
        return ParquetStore(location)
    return Store(location)


def _check_sql(table: str) -> str:
    cols = ", ".join(_SHAPES[table])
    return f"SELECT count(*), coalesce(sum(hash({cols})::HUGEINT), 0) FROM {table}"


def checks(cur: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """Rows and checksum of every copied table, as `cur` sees them."""
    out = {}
    for table in TABLES:
        if table not in OWN:
            rows, total = cur.execute(_check_sql(table)).fetchall()[0]
            out[table] = (int(rows), int(total))
    return out


def copy_store(src: Store | ParquetStore, dst: Store) -> list[TableCheck]:
    """Copy every table of `src` into the empty `dst`, in one transaction, checked before it commits.

    Returns:
        Per table, its rows and checksum (the same in both).

    Raises:
        StoreError: `dst` already holds rows, or a table's rows or checksum differ after the copy (nothing is
            then written).
    """
    src.flush_cache()
    held = {t: n for t, (n, _) in checks(dst.cursor()).items() if n}
    if held:
        raise StoreError(f"{dst.path} is not empty ({', '.join(f'{t}: {n} rows' for t, n in held.items())}): "
                         "copy into a new store")
    source = checks(src.cursor())
    with dst.transaction() as cur:
        for table in TABLES:
            if table in OWN or not source[table][0]:
                continue
            cols = ", ".join(_SHAPES[table])
            rows = src.cursor().sql(f"SELECT {cols} FROM {table}").to_arrow_table()
            cur.register("_copied", rows)
            try:
                cur.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _copied")
            finally:
                cur.unregister("_copied")
        copied = checks(cur)   # inside the transaction: a difference rolls the whole copy back
        wrong = [t for t in source if source[t] != copied[t]]
        if wrong:
            raise StoreError("the copy differs from its source in " + ", ".join(
                f"{t} ({source[t][0]} rows -> {copied[t][0]})" for t in wrong) + "; nothing was written")
    return [TableCheck(t, *source[t]) for t in source]
