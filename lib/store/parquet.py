"""The store as a Parquet dataset partitioned by run date, and a read-only Store over one.

A DuckDB file holds one process's history on one disk. Past that, the same
tables go to a Parquet dataset, one folder per table and one sub-folder per
run date (hive layout), which DuckDB reads in place, from a local folder or
from object storage through its httpfs extension:

    <dataset>/runs/run_date=2026-09-01/data_0.parquet
    <dataset>/sample_scores/run_date=2026-09-01/data_0.parquet
    <dataset>/prompts/data_0.parquet          (tables without a run are not partitioned)

run_date is the run's start date truncated to the month (the default) or the
day (granularity='day').

`ParquetStore` opens such a dataset: an in-memory DuckDB connection whose
tables and views carry the store's table names and columns, so every Store
query (the trend, jumps, canaries, lint, samples and verdicts) runs over it
unchanged. The per-run tables (runs, run_metrics, ablations, prompts: a few
rows a run) are read into memory when it opens, because a query over
thousands of one-row files pays for opening each; the per-sample tables
(samples, sample_scores, ablation_results, judge_cache, rejudge_scores and
the batch requests and replies: the bulk) stay views read in place. Every
table the migrations make is exported, so what a team writes (incident states
and notes, re-judged series, job notes, batch jobs) travels with the runs.
It is read-only: writes raise StoreError. Record runs in a
DuckDB store and export again (a nightly export is seconds per million score
rows).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from lib.core.errors import StoreError
from lib.store import SCHEMA_VERSION, RunBatch, Store
from lib.store.ablations import AblationsMixin
from lib.store.calls import CallCacheMixin
from lib.store.labels import LabelsMixin
from lib.store.recording import RecordingMixin
from lib.store.runs import RunsMixin
from lib.store.schema import MIGRATIONS, build

Setup = Callable[[duckdb.DuckDBPyConnection], None]

PARTITION = "run_date"
GRANULARITIES = ("month", "day")
_FALLBACK_DATE = "DATE '1970-01-01'"   # rows whose run is gone still land somewhere
_SHAPE = "_shape"

# The SQL that gives a table's rows plus the partition column, for the tables partitioned other than by their
# own run_id (`_run_dates` maps run_id -> run_date: a temporary view made per export).
_BY_RUN = "SELECT t.*, d.run_date FROM {table} t LEFT JOIN _run_dates d ON d.run_id = t.run_id"
_PARTITIONED: dict[str, str] = {
    "ablation_results": """SELECT t.*, d.run_date FROM ablation_results t
                           LEFT JOIN ablations a ON a.ablation_id = t.ablation_id
                           LEFT JOIN _run_dates d ON d.run_id = a.run_id""",
    "judge_cache": "SELECT t.*, CAST(date_trunc('{unit}', t.created_at) AS DATE) AS run_date FROM judge_cache t",
}


def _shapes() -> dict[str, tuple[str, ...]]:
    """Every table the migrations make, with its columns in order (read from an in-memory database)."""
    con = duckdb.connect(":memory:")
    try:
        build(con)
        rows = con.execute("""SELECT c.table_name, c.column_name FROM duckdb_columns() c
                              JOIN duckdb_tables() t ON t.table_oid = c.table_oid
                              ORDER BY c.table_oid, c.column_index""").fetchall()
    finally:
        con.close()
    shapes: dict[str, tuple[str, ...]] = {}
    for table, column in rows:
        shapes[table] = (*shapes.get(table, ()), column)
    return shapes


_SHAPES = _shapes()
# Every table of the schema goes to the dataset: one with a run (a run_id column, or a row reached through one)
# is partitioned by its run's date, any other is written whole. A table a new migration adds is exported as it is.
for _table, _columns in _SHAPES.items():
    if _table not in _PARTITIONED and "run_id" in _columns:
        _PARTITIONED[_table] = _BY_RUN.format(table=_table)
_WHOLE = tuple(t for t in _SHAPES if t not in _PARTITIONED)
TABLES: tuple[str, ...] = tuple(_SHAPES)
_STEP_NAMES = frozenset(m.name for m in MIGRATIONS)
# read into memory on open: the per-run and per-job tables (a few rows a run); the per-sample ones stay views
RESIDENT = frozenset(TABLES) - {"samples", "sample_scores", "ablation_results", "judge_cache", "rejudge_scores",
                                "batch_requests", "batch_replies"}


def _literal(text: str) -> str:
    """A SQL string literal (file locations only: COPY and views take no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def is_remote(location: str | Path) -> bool:
    """True for a URL (s3://, gs://, r2://, az://, https://...): read through DuckDB's httpfs."""
    return "://" in str(location)


def _join(location: str, *parts: str) -> str:
    return "/".join([location.rstrip("/"), *parts])


def _load_httpfs(con: duckdb.DuckDBPyConnection) -> None:
    """httpfs, already loaded by the caller's `setup` (lib.store.lake.object_storage loads it from its wheel), or
    installed beside this duckdb some other way. Never INSTALLed here: that downloads, which a closed network
    refuses (measured with duckdb 2.0.1: `INSTALL httpfs` fails in 2.3 s, "Failed to download extension")."""
    if con.execute("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'httpfs' AND loaded"
                   ).fetchall()[0][0]:
        return
    try:
        con.execute("LOAD httpfs")
    except duckdb.Error as exc:
        raise StoreError("object storage needs DuckDB's httpfs extension, which the package index has for duckdb "
                         "1.5.5 only (duckdb-extension-httpfs): export or read from the team store's environment "
                         "(lib/store/requirements-lake.txt) with setup=lib.store.lake.object_storage "
                         f"({str(exc).splitlines()[0]})") from None


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote.

    Attributes:
        location: the dataset's folder or URL.
        rows: rows written per table.
        partitions: distinct run dates written (folders per partitioned table).
        seconds: wall time of the export.
    """

    location: str
    rows: dict[str, int]
    partitions: int
    seconds: float

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


def export_parquet(store: Store, location: str | Path, *, granularity: str = "month", overwrite: bool = False,
                   setup: Setup | None = None) -> ExportSummary:
    """Write every table of `store` to a Parquet dataset partitioned by run date.

    A local dataset is written beside its final place and renamed into it, so
    readers see the old dataset or the new one, never half of one. A remote
    one (a URL; needs httpfs and credentials, e.g. a DuckDB secret made in
    `setup`) is written in place, overwriting files of the same name.

    Args:
        store: the DuckDB store to export (it stays usable; the export only reads).
        location: a folder, or an object-storage URL such as s3://bucket/evaldrift.
        granularity: 'month' (run_date is the month's first day) or 'day' (one partition per run date).
            Month is the default: a reader opens every file of a table on a query that cannot prune by
            date (every Store query), and at 2,000 nightly runs that is 66 files a table, not 2,000.
        overwrite: replace an existing local dataset.
        setup: called with the export's cursor first (e.g. to LOAD httpfs and CREATE SECRET).

    Raises:
        StoreError: the local destination exists and `overwrite` is False, or
            the granularity is unknown.
    """
    if granularity not in GRANULARITIES:
        raise StoreError(f"unknown granularity {granularity!r}; use {' or '.join(GRANULARITIES)}")
    t0 = time.perf_counter()
    remote = is_remote(location)
    final = str(location).rstrip("/") if remote else str(Path(location).resolve())
    if not remote and Path(final).exists() and not overwrite:
        raise StoreError(f"{final} exists; pass overwrite=True to replace it")
    target = final if remote else f"{final}.partial-{time.time_ns()}"
    cur = store.cursor()
    if setup is not None:
        setup(cur)
    if remote:
        _load_httpfs(cur)
    store.flush_cache()  # judge replies the store still holds belong in the export
    try:
        if not remote:
            Path(target).mkdir(parents=True)
        rows, partitions = _copy_tables(cur, target, granularity, remote=remote)
    except BaseException:
        with suppress(duckdb.Error):
            cur.execute("ROLLBACK")
        if not remote:
            shutil.rmtree(target, ignore_errors=True)
        raise
    if not remote:
        _swap_into_place(target, final)
    return ExportSummary(final, rows, partitions, time.perf_counter() - t0)



def _copy_tables(cur: duckdb.DuckDBPyConnection, target: str, granularity: str, *,
                 remote: bool) -> tuple[dict[str, int], int]:
    """Copy every table under `target` from one snapshot; returns rows per table and the partitions made."""
    rows: dict[str, int] = {}
    cur.execute("BEGIN TRANSACTION")  # one snapshot: a run recorded meanwhile is wholly in or wholly out
    cur.execute(f"""CREATE OR REPLACE TEMP VIEW _run_dates AS
                    SELECT run_id, CAST(date_trunc('{granularity}', started_at) AS DATE) AS run_date FROM runs""")
    for table in TABLES:
        rows[table] = cur.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        if rows[table] == 0:
            continue  # the reader gives an absent table its empty, typed shape
        dest = _join(target, table)
        if table in _WHOLE:
            if not remote:
                Path(dest).mkdir()
            cur.execute(f"COPY (SELECT * FROM {table}) TO {_literal(_join(dest, 'data_0.parquet'))} "
                        "(FORMAT parquet)")
            continue
        query = _PARTITIONED[table].replace("{unit}", granularity)
        query = f"SELECT * REPLACE (coalesce(run_date, {_FALLBACK_DATE}) AS run_date) FROM ({query})"
        option = ", OVERWRITE_OR_IGNORE" if remote else ""
        cur.execute(f"COPY ({query}) TO {_literal(dest)} (FORMAT parquet, PARTITION_BY ({PARTITION}){option})")
    partitions = cur.execute("SELECT count(DISTINCT run_date) FROM _run_dates").fetchall()[0][0]
    cur.execute("DROP VIEW IF EXISTS _run_dates")
    cur.execute("COMMIT")
    return rows, int(partitions)


def _swap_into_place(target: str, final: str) -> None:
    """Replace `final` by the finished `target` folder, so a reader never sees half an export."""
    old = f"{final}.old-{time.time_ns()}"
    if Path(final).exists():
        Path(final).rename(old)
    Path(target).rename(final)
    shutil.rmtree(old, ignore_errors=True)


class ParquetStore(RunsMixin, RecordingMixin, CallCacheMixin, AblationsMixin, LabelsMixin):
    """A read-only store over a dataset written by export_parquet.

    It is made of the same parts as Store, over its own in-memory connection, so every query method
    of Store works unchanged and every write ends in `transaction`, which refuses: in an in-memory DuckDB,
    each table is read_parquet('<dataset>/<table>/**/*.parquet',
    hive_partitioning = true) with the store's exact column names and order
    (the partition column left out): copied into memory on open for the
    per-run tables (RESIDENT), a view read in place for the per-sample ones.
    A table the export had no rows for is empty, with the right types. The
    store shows the dataset as it was when opened. Writes raise StoreError.

    Args:
        location: the dataset's folder, or an object-storage URL (needs httpfs).
        setup: called with the connection before the views are made (e.g. CREATE SECRET for S3).

    Raises:
        StoreError: no dataset there, or one written by a different schema version.
    """

    def __init__(self, location: str | Path, *, setup: Setup | None = None) -> None:
        remote = is_remote(location)
        self.location = str(location).rstrip("/") if remote else str(Path(location).resolve())
        self.path = Path(self.location) if not remote else self.location  # type: ignore[assignment]
        if not remote and not Path(self.location).is_dir():
            raise StoreError(f"no Parquet dataset at {self.location}")
        self._con = duckdb.connect(":memory:")
        self._write_lock = threading.RLock()
        self._hold_replies()
        if setup is not None:
            setup(self._con)
        if remote:
            _load_httpfs(self._con)
        self._make_views()

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> ParquetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _make_views(self) -> None:
        con = self._con
        con.execute(f"CREATE SCHEMA {_SHAPE}")
        con.execute(f"SET schema = '{_SHAPE}'")
        build(con)
        con.execute("SET schema = 'main'")
        con.execute("SET parquet_metadata_cache = true")
        for table in TABLES:
            cols = ", ".join(_SHAPES[table])
            pattern = _join(self.location, table, "**", "*.parquet")
            n_files = con.execute("SELECT count(*) FROM glob(?)", [pattern]).fetchall()[0][0]
            source = (f"read_parquet({_literal(pattern)}, hive_partitioning = true)" if n_files
                      else f"{_SHAPE}.{table}")
            kind = "TABLE" if table in RESIDENT else "VIEW"
            con.execute(f"CREATE {kind} main.{table} AS SELECT {cols} FROM {source}")
        rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        if not rows:
            raise StoreError(f"{self.location} is not an evaldrift dataset (no meta table)")
        version = int(rows[0][0])
        if version != SCHEMA_VERSION:
            raise StoreError(f"{self.location} was exported with schema {version}; this evaldrift reads "
                             f"{SCHEMA_VERSION}: export the store again")
        # by name too: an export from before steps were recorded by name has none, and its number alone decides
        taken = {r[0] for r in con.execute("SELECT name FROM migrations").fetchall()} or _STEP_NAMES
        missing, unknown = [m.name for m in MIGRATIONS if m.name not in taken], sorted(taken - _STEP_NAMES)
        if missing or unknown:
            raise StoreError(f"{self.location} was exported by another evaldrift schema ("
                             + "; ".join(f"{what}: {', '.join(names)}" for what, names in
                                         (("steps it lacks", missing), ("steps this evaldrift does not know", unknown))
                                         if names) + "): export the store again")

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """No writes: a Parquet dataset is read-only (record in the DuckDB store, then export)."""
        raise StoreError(f"{self.location} is a read-only Parquet dataset: record runs and ablations in the "
                         "DuckDB store and export it again")
        yield self._con  # pragma: no cover (makes this a generator for contextmanager)


def history_batch(store: Store) -> RunBatch:
    """A store's run history (runs, samples, scores, instruments, prompts) as one RunBatch of Arrow tables.

    The inverse of an export, for Store.record_runs_bulk: `Store(path).record_runs_bulk([history_batch(
    ParquetStore(dataset))])` restores a dataset's history into a DuckDB file (ablations and the call cache
    are not part of the history and stay behind). Metric scores are re-aggregated from the sample scores.
    """
    cur = store.cursor()

    def table(sql: str) -> pa.Table:
        return cur.sql(sql).to_arrow_table()

    return RunBatch(
        runs=table("SELECT run_id, started_at, label, pipeline FROM runs"),
        samples=table("SELECT run_id, suite, sample_id, question, answer, contexts, ground_truth FROM samples"),
        sample_scores=table("SELECT run_id, suite, metric, sample_id, status, score, reason, verdicts "
                            "FROM sample_scores"),
        instruments=table("SELECT run_id, suite, metric, judge_model, prompt_hash, binding, fingerprint "
                          "FROM run_metrics"),
        prompts=table("SELECT prompt_hash, metric, template FROM prompts"),
    )


def is_dataset(location: str | Path) -> bool:
    """True when `location` is a URL or a folder holding an exported dataset."""
    return is_remote(location) or (Path(location) / "meta").is_dir()


def open_store(location: str | Path) -> Store | ParquetStore:
    """A DuckDB file as a Store (read-write), an exported dataset as a read-only ParquetStore."""
    return ParquetStore(location) if is_dataset(location) else Store(location)
