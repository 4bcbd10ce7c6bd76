"""The DuckDB run store: schema, migrations, transactional writes, the queries pages need.

One process owns a database file at a time (DuckDB locks the file against
every other process, even readers). Within the owning process one connection
is shared and every use takes its own `.cursor()`, so Streamlit's session
threads and the ablation worker can use it at once. Writes are serialised by
a lock and run in a transaction: a run, an ingest or a batch of ablation
results is wholly there or wholly absent. All SQL lives here and takes
parameters; no sample text is ever put into SQL text.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import uuid
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from lib.databases import check_evaldrift
from lib.errors import InputError, NotFoundError, StoreBusyError, StoreError
from lib.harness import EXCLUDED, FAILED, OK, SampleResult
from lib.judges.base import JudgeReply, JudgeRequest, Usage
from lib.metrics import METRICS
from lib.prompts import BINDINGS
from lib.records import MAIN, RunRecord
from lib.samples import FIELDS, EvalSample
from lib.validate import EARLIEST, LATEST, check_run

if TYPE_CHECKING:
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table

SCHEMA_VERSION = 2

_SCHEMA_V1 = [
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id VARCHAR PRIMARY KEY, started_at TIMESTAMP NOT NULL, label VARCHAR,
        pipeline VARCHAR NOT NULL, recorded_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS prompts (
        prompt_hash VARCHAR PRIMARY KEY, metric VARCHAR NOT NULL, template VARCHAR NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS run_metrics (
        run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        judge_model VARCHAR, prompt_hash VARCHAR, binding VARCHAR, fingerprint VARCHAR,
        score DOUBLE, n INTEGER NOT NULL, n_failed INTEGER NOT NULL, n_excluded INTEGER NOT NULL,
        PRIMARY KEY (run_id, suite, metric))""",
    """CREATE TABLE IF NOT EXISTS samples (
        run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, sample_id VARCHAR NOT NULL,
        question VARCHAR NOT NULL, answer VARCHAR NOT NULL, contexts VARCHAR[] NOT NULL,
        ground_truth VARCHAR NOT NULL, PRIMARY KEY (run_id, suite, sample_id))""",
    """CREATE TABLE IF NOT EXISTS sample_scores (
        run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL, status VARCHAR NOT NULL, score DOUBLE, reason VARCHAR,
        verdicts VARCHAR NOT NULL, PRIMARY KEY (run_id, suite, metric, sample_id))""",
    """CREATE TABLE IF NOT EXISTS judge_cache (
        key VARCHAR PRIMARY KEY, model VARCHAR NOT NULL, request VARCHAR NOT NULL, reply VARCHAR NOT NULL,
        prompt_tokens INTEGER, completion_tokens INTEGER, fingerprint VARCHAR, created_at TIMESTAMP)""",
    """CREATE TABLE IF NOT EXISTS ablations (
        ablation_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL,
        spec VARCHAR NOT NULL, judge_model VARCHAR NOT NULL, status VARCHAR NOT NULL,
        total INTEGER NOT NULL, done INTEGER NOT NULL, created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL, result VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS ablation_results (
        ablation_id VARCHAR NOT NULL, metric VARCHAR NOT NULL, arm VARCHAR NOT NULL, rep INTEGER NOT NULL,
        sample_id VARCHAR NOT NULL, status VARCHAR NOT NULL, score DOUBLE, reason VARCHAR,
        verdicts VARCHAR NOT NULL, calls INTEGER NOT NULL, cached BOOLEAN NOT NULL,
        PRIMARY KEY (ablation_id, metric, arm, rep, sample_id))""",
]
# v2: the fields a run's samples had (JSON list; NULL for older runs: all four), and per metric the scoring
# library that produced the scores ("ragas 0.2.6"; NULL: ours or unknown) and the judge's output mode.
_SCHEMA_V2 = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS fields VARCHAR",
    "ALTER TABLE run_metrics ADD COLUMN IF NOT EXISTS scorer VARCHAR",
    "ALTER TABLE run_metrics ADD COLUMN IF NOT EXISTS output_mode VARCHAR",
]
MIGRATIONS: dict[int, list[str]] = {1: _SCHEMA_V1, 2: _SCHEMA_V2}

STATUSES = (OK, FAILED, EXCLUDED)
CACHE_BATCH = 64   # judge replies put() holds before one write: a commit per call costs more than the call


def _now() -> datetime:
    return datetime.now().replace(microsecond=0)


@dataclass(frozen=True)
class RunBatch:
    """Runs as column frames (pandas DataFrames or Arrow tables), for Store.record_runs_bulk.

    Attributes:
        runs: run_id, started_at, label, pipeline (JSON text).
        samples: run_id, suite, sample_id, question, answer, contexts (list of text), ground_truth.
        sample_scores: run_id, suite, metric, sample_id, status, score, reason, verdicts (JSON text).
        instruments: run_id, suite, metric, judge_model, prompt_hash, binding, fingerprint: one row per
            scored (run, suite, metric). The metric rows' score, n and counts are aggregated from sample_scores.
        prompts: prompt_hash, metric, template (None: the templates are already stored, or unknown).
    """

    runs: Frame
    samples: Frame
    sample_scores: Frame
    instruments: Frame
    prompts: Frame | None = None


# (query returning the first bad row as run_id, suite, metric, sample_id; field; message). Named parameters:
# $metrics, $statuses, $bindings (the known values), $earliest, $latest (lib.validate's start-time window).
# The same rules as lib.validate.check_run, in SQL.
_BULK_CHECKS: tuple[tuple[str, str, str], ...] = (
    ("SELECT run_id, NULL, NULL, NULL FROM _b_runs WHERE run_id IS NULL OR trim(run_id) = ''", "run_id",
     "run id must be a non-empty string"),
    ("SELECT run_id, NULL, NULL, NULL FROM _b_runs WHERE started_at IS NULL", "started_at", "must be a datetime"),
    ("SELECT run_id, NULL, NULL, NULL FROM _b_runs WHERE pipeline IS NULL OR NOT json_valid(pipeline)", "pipeline",
     "pipeline config is not JSON"),
    ("SELECT run_id, NULL, NULL, NULL FROM _b_runs WHERE json_type(pipeline) <> 'OBJECT'", "pipeline",
     "pipeline config must be a JSON object"),
    ("SELECT run_id, NULL, NULL, NULL FROM _b_runs WHERE started_at < $earliest OR started_at >= $latest",
     "started_at", "out of range: a run starts between 1970 and 2199"),
    ("""SELECT run_id, suite, NULL, sample_id FROM _b_samples
        WHERE contains(sample_id, chr(0)) OR contains(question, chr(0)) OR contains(answer, chr(0))
           OR contains(ground_truth, chr(0))
           OR list_bool_or(list_transform(contexts, lambda p: contains(p, chr(0))))""",
     "sample", "contains a NUL character"),
    ("SELECT run_id, suite, NULL, sample_id FROM _b_samples ANTI JOIN _b_runs USING (run_id)", "run_id",
     "sample of a run that is not in the batch"),
    ("""SELECT run_id, suite, NULL, sample_id FROM _b_samples WHERE sample_id IS NULL OR question IS NULL
        OR answer IS NULL OR ground_truth IS NULL OR contexts IS NULL OR list_contains(contexts, NULL)""", "sample",
     "a sample needs sample_id, question, answer, contexts (passages) and ground_truth as text"),
    ("SELECT run_id, suite, metric, sample_id FROM _b_scores WHERE metric NOT IN (SELECT unnest($metrics::VARCHAR[]))",
     "metric", "unknown metric"),
    ("SELECT run_id, suite, metric, sample_id FROM _b_scores WHERE status NOT IN (SELECT unnest($statuses::VARCHAR[]))",
     "status", "unknown status"),
    ("""SELECT run_id, suite, metric, sample_id FROM _b_scores
        WHERE status = 'ok' AND (score IS NULL OR isnan(score) OR score < 0 OR score > 1)""", "score",
     "an ok score must be a number in [0, 1]"),
    ("SELECT run_id, suite, metric, sample_id FROM _b_scores WHERE status <> 'ok' AND score IS NOT NULL", "score",
     "a failed or excluded sample has no score"),
    ("SELECT run_id, suite, metric, sample_id FROM _b_scores ANTI JOIN _b_samples USING (run_id, suite, sample_id)",
     "sample_id", "score for a sample that is not in the batch"),
    ("SELECT run_id, suite, metric, NULL FROM _b_scores ANTI JOIN _b_inst USING (run_id, suite, metric)", "metric",
     "scores without an instrument row (judge model, prompt hash, binding)"),
    ("SELECT run_id, suite, metric, NULL FROM _b_inst WHERE metric NOT IN (SELECT unnest($metrics::VARCHAR[]))",
     "metric", "unknown metric"),
    ("""SELECT run_id, suite, metric, NULL FROM _b_inst
        WHERE binding IS NOT NULL AND binding NOT IN (SELECT unnest($bindings::VARCHAR[]))""", "binding",
     "unknown binding"),
    ("SELECT run_id, suite, metric, NULL FROM _b_inst ANTI JOIN _b_runs USING (run_id)", "run_id",
     "instrument of a run that is not in the batch"),
)


_RUN_METRIC_COLUMNS = ["run_id", "suite", "metric", "judge_model", "prompt_hash", "binding", "fingerprint", "score",
                       "n", "n_failed", "n_excluded", "scorer", "output_mode"]


_STAGING: set[str] = set()   # staging tables of this process's record_run_parts in progress


class _Totals:
    """Per (suite, metric): the ok scores (packed floats) and the failed and excluded counts, over parts."""

    def __init__(self) -> None:
        self.by: dict[tuple[str, str], tuple[array, list[int]]] = {}

    @classmethod
    def of(cls, runs: Iterable[RunRecord]) -> _Totals:
        t = cls()
        for run in runs:
            t.add(run)
        return t

    def add(self, run: RunRecord) -> None:
        for m in run.metrics:
            ok, counts = self.by.setdefault((m.suite, m.metric), (array("d"), [0, 0]))
            ok.extend(r.score for r in m.results if r.status == OK and r.score is not None)
            counts[0] += sum(r.status == FAILED for r in m.results)
            counts[1] += sum(r.status == EXCLUDED for r in m.results)


def _metrics_frame(head: RunRecord, totals: _Totals) -> pd.DataFrame:
    """run_metrics rows: each metric's score is the mean of its ok scores (harness.aggregate's rule)."""
    rows = []
    for m in head.metrics:
        ok, (n_failed, n_excluded) = totals.by.get((m.suite, m.metric), (array("d"), [0, 0]))
        score = math.fsum(ok) / len(ok) if ok else None
        rows.append((head.run_id, m.suite, m.metric, m.judge_model, m.prompt_hash, m.binding, m.fingerprint,
                     score, len(ok), n_failed, n_excluded, m.scorer, m.output_mode))
    return pd.DataFrame(rows, columns=_RUN_METRIC_COLUMNS)


def _samples_frame(run: RunRecord) -> pd.DataFrame:
    rows = [(run.run_id, suite, s.sample_id, s.question, s.answer, list(s.contexts), s.ground_truth)
            for suite, samples in run.samples.items() for s in samples]
    return pd.DataFrame(rows, columns=["run_id", "suite", "sample_id", "question", "answer", "contexts",
                                       "ground_truth"])


def _scores_frame(run: RunRecord) -> pd.DataFrame:
    rows = [(run.run_id, m.suite, m.metric, r.sample_id, r.status, r.score, r.reason, r.verdicts_json())
            for m in run.metrics for r in m.results]
    return pd.DataFrame(rows, columns=["run_id", "suite", "metric", "sample_id", "status", "score", "reason",
                                       "verdicts"])


class Store:
    """A DuckDB run store (see module docstring for the threading and lock rules).

    Args:
        path: the database file (created with its schema when absent).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_evaldrift(self.path)   # another application's file is refused before anything is written to it
        try:
            self._con = duckdb.connect(str(self.path))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreBusyError(str(self.path)) from None
            raise StoreError(f"cannot open database {self.path}: {exc}") from None
        self._write_lock = threading.RLock()
        self._pending_replies: dict[str, tuple[object, ...]] = {}
        self._migrate()
        self._drop_stale_staging()

    # -- plumbing -----------------------------------------------------------------
    def close(self) -> None:
        self.flush_cache()
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor for one use (one per thread, fetched before reuse)."""
        return self._con.cursor()

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

    def _migrate(self) -> None:
        with self.transaction() as cur:
            cur.execute(MIGRATIONS[1][0])
            row = cur.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path} has schema {version}, newer than this evaldrift ({SCHEMA_VERSION})")
            for v in range(version + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[v]:
                    cur.execute(stmt)
            cur.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])

    # -- writes -------------------------------------------------------------------
    def record_run(self, run: RunRecord) -> None:
        """Record a run, replacing any earlier copy of the same run id, in one transaction.

        Raises:
            InputError: naming the sample or metric and field at fault; nothing is written.
        """
        self.record_run_parts([run])

    def record_run_parts(self, parts: Iterable[RunRecord]) -> None:
        """Record one run that arrives in parts, all or nothing, replacing any earlier copy.

        Each part is a RunRecord of the same run id and metrics, holding some
        of the samples and their results; the run-level facts are the first
        part's. A part is checked and written before the next is read, so a
        file larger than memory is recorded a chunk at a time: parts after the
        first go to staging tables (in small transactions, so DuckDB never
        holds the whole run in one), then one transaction replaces the run.
        Each metric's score is aggregated over all parts by the harness's rule.

        Raises:
            InputError: naming the sample or metric and field at fault; nothing is written.
        """
        it = iter(parts)
        first = next(it, None)
        if first is None:
            raise InputError("no samples: a run needs at least one", field="samples")
        check_run(first)
        second = next(it, None)
        if second is None:   # one part (record_run): written directly, in one transaction
            with self.transaction() as cur:
                self._start_run(cur, first)
                self._insert_frame(cur, "samples", _samples_frame(first))
                self._insert_frame(cur, "sample_scores", _scores_frame(first))
                self._insert_frame(cur, "run_metrics", _metrics_frame(first, _Totals.of([first])))
            return
        token = uuid.uuid4().hex[:12]
        stage = {"samples": f"_stage_samples_{token}", "sample_scores": f"_stage_scores_{token}"}
        _STAGING.update(stage.values())
        try:
            self._record_staged(first, itertools.chain([second], it), stage)
        finally:
            with self._write_lock:
                for name in stage.values():
                    self.cursor().execute(f"DROP TABLE IF EXISTS {name}")
            _STAGING.difference_update(stage.values())

    def _record_staged(self, head: RunRecord, rest: Iterable[RunRecord], stage: dict[str, str]) -> None:
        with self.transaction() as cur:
            for table, name in stage.items():
                cur.execute(f"CREATE TABLE {name} AS SELECT * FROM {table} LIMIT 0")
        totals = _Totals()
        for run in itertools.chain([head], rest):
            if run is not head:
                check_run(run)
                if run.run_id != head.run_id:
                    raise InputError(f"a part of run {head.run_id!r} names run {run.run_id!r}", field="run_id")
            with self.transaction() as cur:
                self._insert_frame(cur, stage["samples"], _samples_frame(run))
                self._insert_frame(cur, stage["sample_scores"], _scores_frame(run))
            totals.add(run)
        try:
            with self.transaction() as cur:
                self._start_run(cur, head)
                for table, name in stage.items():
                    cur.execute(f"INSERT INTO {table} SELECT * FROM {name}")
                self._insert_frame(cur, "run_metrics", _metrics_frame(head, totals))
        except duckdb.ConstraintException:
            raise InputError(f"run {head.run_id!r} names a sample twice across its parts",
                             field="sample_id") from None

    def _drop_stale_staging(self) -> None:
        """Staging tables left by a process killed mid-record (none can be another's: one process owns the file)."""
        names = [r[0] for r in self._rows("SELECT table_name FROM duckdb_tables() "
                                          "WHERE starts_with(table_name, '_stage_')")]
        with self._write_lock:
            for name in names:
                if name not in _STAGING:
                    self.cursor().execute(f'DROP TABLE IF EXISTS "{name}"')

    def _start_run(self, cur: duckdb.DuckDBPyConnection, run: RunRecord) -> None:
        for table in ("sample_scores", "run_metrics", "samples", "runs"):
            cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [run.run_id])
        cur.execute("INSERT INTO runs (run_id, started_at, label, pipeline, recorded_at, fields) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [run.run_id, run.started_at, run.label, json.dumps(run.pipeline, sort_keys=True), _now(),
                     json.dumps(list(run.fields))])
        for row in dict.fromkeys((m.prompt_hash, m.metric, m.template) for m in run.metrics if m.template is not None):
            cur.execute("INSERT OR IGNORE INTO prompts VALUES (?, ?, ?)", list(row))

    def record_runs(self, runs: Iterable[RunRecord]) -> int:
        """Record several runs; each is its own transaction. Returns how many."""
        n = 0
        for run in runs:
            self.record_run(run)
            n += 1
        return n

    def record_runs_bulk(self, batches: Iterable[RunBatch]) -> int:
        """Record many runs from column frames in one transaction: the bulk twin of record_run.

        For importers and synthetic histories, where building a RunRecord per
        run costs more than writing it. The same tables and rules as
        record_run: rows are checked in SQL (known metric, status and binding;
        an ok score in [0, 1], no score otherwise; a score only for a sample
        in the batch; an instrument for every scored metric), an earlier copy
        of a run id is replaced, and each metric row is aggregated from its
        sample scores by the harness's rule (mean of the ok scores, failed and
        excluded counted). Every batch is written, or none.

        Returns:
            The number of runs recorded.

        Raises:
            InputError: naming the run, suite, metric, sample and field at fault; nothing is written.
        """
        n = 0
        with self.transaction() as cur:
            for batch in batches:
                n += self._record_batch(cur, batch)
        return n

    def _record_batch(self, cur: duckdb.DuckDBPyConnection, batch: RunBatch) -> int:
        frames = {"_b_runs": batch.runs, "_b_samples": batch.samples, "_b_scores": batch.sample_scores,
                  "_b_inst": batch.instruments}
        for name, frame in frames.items():
            cur.register(name, frame)
        known = {"metrics": list(METRICS), "statuses": list(STATUSES), "bindings": list(BINDINGS),
                 "earliest": EARLIEST, "latest": LATEST}
        try:
            for sql, field_name, message in _BULK_CHECKS:
                rows = cur.execute(sql + " LIMIT 1", {k: v for k, v in known.items() if f"${k}" in sql}).fetchall()
                if rows:
                    where = " ".join(f"{k} {v!r}" for k, v in zip(("run", "suite", "metric", "sample"), rows[0],
                                                                   strict=True) if v is not None)
                    raise InputError(message, field=field_name, source=where or "bulk runs")
            for table in ("sample_scores", "run_metrics", "samples", "runs"):
                cur.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM _b_runs)")
            cur.execute("INSERT INTO runs (run_id, started_at, label, pipeline, recorded_at) "
                        "SELECT run_id, started_at, label, pipeline, ? FROM _b_runs", [_now()])
            if batch.prompts is not None:
                cur.register("_b_prompts", batch.prompts)
                cur.execute("INSERT OR IGNORE INTO prompts SELECT DISTINCT prompt_hash, metric, template "
                            "FROM _b_prompts")
            cur.execute("""INSERT INTO samples SELECT run_id, suite, sample_id, question, answer, contexts, ground_truth
                           FROM _b_samples""")
            cur.execute("""INSERT INTO sample_scores SELECT run_id, suite, metric, sample_id, status, score, reason,
                           verdicts FROM _b_scores""")
            cur.execute("""INSERT INTO run_metrics (run_id, suite, metric, judge_model, prompt_hash, binding,
                                                   fingerprint, score, n, n_failed, n_excluded)
                           SELECT i.run_id, i.suite, i.metric, i.judge_model, i.prompt_hash, i.binding, i.fingerprint,
                                  avg(s.score) FILTER (s.status = 'ok'), count(s.score) FILTER (s.status = 'ok'),
                                  count(*) FILTER (s.status = 'failed'), count(*) FILTER (s.status = 'excluded')
                           FROM _b_inst i LEFT JOIN _b_scores s
                                ON s.run_id = i.run_id AND s.suite = i.suite AND s.metric = i.metric
                           GROUP BY ALL""")
            return cur.execute("SELECT count(*) FROM _b_runs").fetchall()[0][0]
        except duckdb.ConstraintException as exc:
            raise InputError(f"duplicate row: {str(exc).splitlines()[0]}", source="bulk runs") from None
        finally:
            for name in (*frames, "_b_prompts"):
                with suppress(duckdb.Error):  # an aborted transaction refuses; its cursor goes with it
                    cur.unregister(name)

    def delete_run(self, run_id: str) -> None:
        with self.transaction() as cur:
            for table in ("sample_scores", "run_metrics", "samples", "runs"):
                cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    def data_version(self) -> str:
        """Changes whenever runs or ablations are written (a cache key for page loaders)."""
        row = self._rows("""SELECT (SELECT count(*) FROM runs), (SELECT max(recorded_at) FROM runs),
                                   (SELECT count(*) FROM ablations), (SELECT max(updated_at) FROM ablations),
                                   (SELECT sum(done) FROM ablations)""")[0]
        return "|".join(str(x) for x in row)

    # -- reads: runs and metrics ----------------------------------------------------
    def runs(self) -> pd.DataFrame:
        """Every run: run_id, started_at, label, pipeline (JSON text), oldest first."""
        return self._df("SELECT run_id, started_at, label, pipeline FROM runs ORDER BY started_at, run_id")

    def run_ids(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT run_id FROM runs ORDER BY started_at, run_id")]

    def has_run(self, run_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM runs WHERE run_id = ?", [run_id]))

    def run(self, run_id: str) -> dict[str, object]:
        """One run's header: run_id, started_at, label, pipeline (dict)."""
        rows = self._rows("SELECT run_id, started_at, label, pipeline FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise NotFoundError(f"no run {run_id!r} in {self.path}")
        rid, started, label, pipeline = rows[0]
        return {"run_id": rid, "started_at": started, "label": label, "pipeline": json.loads(pipeline)}

    def run_fields(self, run_id: str) -> tuple[str, ...]:
        """The sample fields a run's file had (all four for runs recorded before fields were optional)."""
        rows = self._rows("SELECT fields FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise NotFoundError(f"no run {run_id!r} in {self.path}")
        return tuple(json.loads(rows[0][0])) if rows[0][0] else FIELDS

    def resolve_run(self, run_id: str) -> str:
        """'latest' or a run id -> an existing run id (NotFoundError otherwise)."""
        if run_id == "latest":
            rows = self._rows("SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1")
            if not rows:
                raise NotFoundError(f"{self.path} holds no runs")
            return rows[0][0]
        self.run(run_id)
        return run_id

    def previous_run(self, run_id: str) -> str | None:
        rows = self._rows(
            """SELECT run_id FROM runs WHERE started_at < (SELECT started_at FROM runs WHERE run_id = ?)
               ORDER BY started_at DESC, run_id DESC LIMIT 1""", [run_id])
        return rows[0][0] if rows else None

    def metric_history(self, *, suite: str = MAIN, metrics: Sequence[str] | None = None,
                       since: datetime | None = None, until: datetime | None = None) -> pd.DataFrame:
        """Each metric's score per run, oldest first, with the instrument that produced it."""
        sql = ["""SELECT r.run_id, r.started_at, r.label, r.pipeline, m.metric, m.score, m.n, m.n_failed,
                         m.n_excluded, m.judge_model, m.prompt_hash, m.binding, m.scorer
                  FROM run_metrics m JOIN runs r USING (run_id) WHERE m.suite = ?"""]
        params: list[object] = [suite]
        if metrics:
            sql.append("AND m.metric IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(metrics))
        if since is not None:
            sql.append("AND r.started_at >= ?")
            params.append(since)
        if until is not None:
            sql.append("AND r.started_at <= ?")
            params.append(until)
        sql.append("ORDER BY r.started_at, r.run_id, m.metric")
        return self._df(" ".join(sql), params)

    def run_metrics(self, run_id: str, suite: str = MAIN) -> pd.DataFrame:
        """One run's metrics with judge model, prompt hash, binding, score, n, failures."""
        return self._df("""SELECT metric, score, n, n_failed, n_excluded, judge_model, prompt_hash, binding,
                                  fingerprint, scorer, output_mode FROM run_metrics
                           WHERE run_id = ? AND suite = ? ORDER BY metric""",
                        [run_id, suite])

    def instrument(self, run_id: str, metric: str, suite: str = MAIN) -> dict[str, object]:
        """The judge model, template and binding that produced a stored score."""
        rows = self._rows(
            """SELECT m.judge_model, m.prompt_hash, p.template, m.binding, m.score, m.n, m.n_failed
               FROM run_metrics m LEFT JOIN prompts p USING (prompt_hash)
               WHERE m.run_id = ? AND m.suite = ? AND m.metric = ?""", [run_id, suite, metric])
        if not rows:
            raise NotFoundError(f"run {run_id!r} has no {metric!r} score in suite {suite!r}")
        model, h, template, binding, score, n, n_failed = rows[0]
        return {"judge_model": model, "prompt_hash": h, "template": template, "binding": binding,
                "score": score, "n": n, "n_failed": n_failed}

    def prompts(self) -> pd.DataFrame:
        return self._df("SELECT prompt_hash, metric, template FROM prompts ORDER BY metric, prompt_hash")

    def prompt(self, prompt_hash: str) -> str | None:
        rows = self._rows("SELECT template FROM prompts WHERE prompt_hash = ?", [prompt_hash])
        return rows[0][0] if rows else None

    def prompt_usage(self) -> dict[str, dict[str, object]]:
        """Per prompt hash: how many runs used it, the latest run, the bindings it was used with."""
        rows = self._rows("""SELECT m.prompt_hash, count(DISTINCT m.run_id), arg_max(m.run_id, r.started_at),
                                    string_agg(DISTINCT m.binding, ', ')
                             FROM run_metrics m JOIN runs r USING (run_id)
                             WHERE m.prompt_hash IS NOT NULL GROUP BY m.prompt_hash""")
        return {r[0]: {"runs": r[1], "last_run": r[2], "bindings": r[3] or ""} for r in rows}

    # -- reads: samples and verdicts ------------------------------------------------
    def samples(self, run_id: str, suite: str = MAIN) -> list[EvalSample]:
        """A run's samples, in sample-id order."""
        rows = self._rows("""SELECT sample_id, question, answer, contexts, ground_truth FROM samples
                             WHERE run_id = ? AND suite = ? ORDER BY sample_id""", [run_id, suite])
        return [EvalSample(r[0], r[1], r[2], tuple(r[3]), r[4]) for r in rows]

    def samples_frame(self, run_id: str, suite: str = MAIN) -> pd.DataFrame:
        return self._df("""SELECT sample_id, question, answer, contexts, ground_truth FROM samples
                           WHERE run_id = ? AND suite = ? ORDER BY sample_id""", [run_id, suite])

    def sample_scores(self, run_id: str, suite: str = MAIN, metric: str | None = None) -> pd.DataFrame:
        """Per-sample scores: metric, sample_id, status, score, reason, verdicts (JSON text)."""
        sql = """SELECT metric, sample_id, status, score, reason, verdicts FROM sample_scores
                 WHERE run_id = ? AND suite = ?"""
        params: list[object] = [run_id, suite]
        if metric is not None:
            sql += " AND metric = ?"
            params.append(metric)
        return self._df(sql + " ORDER BY metric, sample_id", params)

    def scores_without_passages(self, metrics: Sequence[str], run_id: str | None = None,
                                suite: str = MAIN) -> pd.DataFrame:
        """Stored scores of `metrics` on samples with no passage text (chance scores: see lib.degenerate).

        Columns: run_id, metric, sample_id, score; every run when run_id is None.
        """
        marks = ", ".join("?" for _ in metrics)
        sql = f"""SELECT s.run_id, s.metric, s.sample_id, s.score FROM sample_scores s
                  JOIN samples p USING (run_id, suite, sample_id)
                  WHERE s.status = 'ok' AND s.suite = ? AND s.metric IN ({marks})
                    AND len(list_filter(p.contexts, lambda x: trim(x) <> '')) = 0"""
        params: list[object] = [suite, *metrics]
        if run_id is not None:
            sql += " AND s.run_id = ?"
            params.append(run_id)
        return self._df(sql + " ORDER BY s.run_id, s.metric, s.sample_id", params)

    def suites(self, run_id: str) -> list[str]:
        return [r[0] for r in self._rows("SELECT DISTINCT suite FROM samples WHERE run_id = ? ORDER BY suite",
                                         [run_id])]

    def counts(self) -> dict[str, int]:
        """Row counts per table (for status lines and tests); judge replies put() holds are written first."""
        self.flush_cache()
        tables = ("runs", "prompts", "run_metrics", "samples", "sample_scores", "judge_cache", "ablations",
                  "ablation_results")
        return {t: self._rows(f"SELECT count(*) FROM {t}")[0][0] for t in tables}

    def supported_evidence(self, metric: str, suite: str = MAIN, run_id: str | None = None,
                           sample_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """Every positive verdict with where its evidence string occurs verbatim.

        Columns: run_id, sample_id, item, evidence, in_contexts, in_ground_truth,
        in_question, in_answer (case- and whitespace-insensitive substring tests,
        done in SQL), and the sample's texts for rows found nowhere (for fuzzy
        matching in Python).
        """
        norm = "lower(regexp_replace({}, '\\s+', ' ', 'g'))"
        sql = f"""
            WITH v AS (
                SELECT run_id, suite, sample_id, unnest(from_json(verdicts,
                    '[{{"item": "VARCHAR", "label": "BOOLEAN", "evidence": "VARCHAR"}}]')) AS v
                FROM sample_scores WHERE metric = ? AND suite = ? AND status = 'ok' {{run_filter}}
            ), e AS (
                SELECT v.run_id, v.suite, v.sample_id, v.v.item AS item, coalesce(v.v.evidence, '') AS evidence,
                       {norm.format("coalesce(v.v.evidence, '')")} AS ev
                FROM v WHERE v.v.label
            ), s AS (
                SELECT run_id, suite, sample_id, question, contexts, ground_truth,
                       {norm.format("array_to_string(contexts, ' ')")} AS ctx_n,
                       {norm.format("ground_truth")} AS gt_n, {norm.format("question")} AS q_n,
                       {norm.format("answer")} AS a_n
                FROM samples WHERE suite = ? {{run_filter}}
            )
            SELECT e.run_id, e.sample_id, e.item, e.evidence,
                   e.ev <> '' AND contains(s.ctx_n, e.ev) AS in_contexts,
                   e.ev <> '' AND contains(s.gt_n, e.ev) AS in_ground_truth,
                   e.ev <> '' AND contains(s.q_n, e.ev) AS in_question,
                   e.ev <> '' AND contains(s.a_n, e.ev) AS in_answer,
                   s.question, s.contexts, s.ground_truth
            FROM e JOIN s USING (run_id, suite, sample_id)
            ORDER BY e.run_id, e.sample_id
        """
        run_filter, extra = "", []   # the same filter on the verdicts and on the samples
        if run_id is not None:
            run_filter, extra = "AND run_id = ?", [run_id]
        if sample_ids is not None:   # only these samples (one page of the Run page)
            run_filter, extra = run_filter + " AND list_contains(?, sample_id)", [*extra, list(sample_ids)]
        return self._df(sql.replace("{run_filter}", run_filter), [metric, suite, *extra, suite, *extra])

    # -- judge call cache (a CallCache) ---------------------------------------------
    def get(self, key: str) -> JudgeReply | None:
        held = self._pending_replies.get(key)
        if held is not None:
            return JudgeReply(text=str(held[3]), usage=Usage(), fingerprint=held[6], cached=True)  # type: ignore[arg-type]
        rows = self._rows("SELECT reply, fingerprint FROM judge_cache WHERE key = ?", [key])
        if not rows:
            return None
        return JudgeReply(text=rows[0][0], usage=Usage(), fingerprint=rows[0][1], cached=True)

    def put(self, request: JudgeRequest, reply: JudgeReply) -> None:
        """Keep a valid reply. Held in memory (get() sees it at once) and written CACHE_BATCH at a time, with
        each stored batch of ablation results, by flush_cache() and on close(): one commit per call would
        cost more than a model call. A crash loses at most the held replies: they are called again."""
        row = (request.key, request.model, request.to_json(), reply.text, reply.usage.prompt_tokens,
               reply.usage.completion_tokens, reply.fingerprint, _now())
        with self._write_lock:
            self._pending_replies[request.key] = row
            if len(self._pending_replies) >= CACHE_BATCH:
                self.flush_cache()

    def flush_cache(self) -> None:
        """Write the replies put() holds, in one transaction."""
        with self._write_lock:
            if not self._pending_replies:
                return
            with self.transaction() as cur:
                self._write_replies(cur)
            self._pending_replies.clear()

    def _write_replies(self, cur: duckdb.DuckDBPyConnection) -> None:
        frame = pd.DataFrame(list(self._pending_replies.values()),
                             columns=["key", "model", "request", "reply", "prompt_tokens", "completion_tokens",
                                      "fingerprint", "created_at"])
        cur.register("_replies", frame)
        try:
            cur.execute("INSERT OR IGNORE INTO judge_cache SELECT * FROM _replies")
        finally:
            cur.unregister("_replies")

    # -- ablations ----------------------------------------------------------------
    def ablation(self, ablation_id: str) -> dict[str, object] | None:
        rows = self._rows("""SELECT ablation_id, run_id, suite, spec, judge_model, status, total, done,
                                    created_at, updated_at, result FROM ablations WHERE ablation_id = ?""",
                          [ablation_id])
        if not rows:
            return None
        keys = ("ablation_id", "run_id", "suite", "spec", "judge_model", "status", "total", "done", "created_at",
                "updated_at", "result")
        d = dict(zip(keys, rows[0], strict=True))
        d["spec"] = json.loads(d["spec"])  # type: ignore[arg-type]
        d["result"] = json.loads(d["result"]) if d["result"] else None  # type: ignore[arg-type]
        return d

    def ablations(self, run_id: str | None = None) -> pd.DataFrame:
        sql = """SELECT ablation_id, run_id, suite, spec, judge_model, status, total, done, created_at, updated_at,
                        result FROM ablations"""
        params: list[object] = []
        if run_id is not None:
            sql += " WHERE run_id = ?"
            params.append(run_id)
        return self._df(sql + " ORDER BY created_at DESC, ablation_id", params)

    def start_ablation(self, ablation_id: str, run_id: str, suite: str, spec: dict[str, object],
                       judge_model: str, total: int) -> None:
        """Create the ablation row if absent (a resumed ablation keeps its row)."""
        with self.transaction() as cur:
            cur.execute("""INSERT OR IGNORE INTO ablations VALUES (?, ?, ?, ?, ?, 'running', ?, 0, ?, ?, NULL)""",
                        [ablation_id, run_id, suite, json.dumps(spec, sort_keys=True), judge_model, total,
                         _now(), _now()])
            # a resumed ablation takes today's plan's total (its row may be from a plan that judged more)
            cur.execute("UPDATE ablations SET status = 'running', total = ?, updated_at = ? WHERE ablation_id = ? "
                        "AND status <> 'done'", [total, _now(), ablation_id])

    def set_ablation_total(self, ablation_id: str, total: int) -> None:
        """The judgings an ablation will make, when it learns it needs fewer (its repeats stopped)."""
        with self.transaction() as cur:
            cur.execute("UPDATE ablations SET total = ?, updated_at = ? WHERE ablation_id = ?",
                        [total, _now(), ablation_id])

    def ablation_done_keys(self, ablation_id: str) -> set[tuple[str, str, int, str]]:
        rows = self._rows("SELECT metric, arm, rep, sample_id FROM ablation_results WHERE ablation_id = ?",
                          [ablation_id])
        return {(r[0], r[1], int(r[2]), r[3]) for r in rows}

    def add_ablation_results(self, ablation_id: str, metric: str, arm: str, rep: int,
                             results: Sequence[SampleResult]) -> None:
        """Store a batch of per-sample results and advance the progress count, atomically."""
        if not results:
            return
        frame = pd.DataFrame(
            [(ablation_id, metric, arm, rep, r.sample_id, r.status, r.score, r.reason, r.verdicts_json(),
              r.calls, r.cached) for r in results],
            columns=["ablation_id", "metric", "arm", "rep", "sample_id", "status", "score", "reason", "verdicts",
                     "calls", "cached"])
        with self._write_lock:
            held = bool(self._pending_replies)  # the calls these results cost go in the same commit
            with self.transaction() as cur:
                cur.register("_incoming", frame)
                try:
                    cur.execute("""INSERT OR IGNORE INTO ablation_results SELECT * FROM _incoming""")
                finally:
                    cur.unregister("_incoming")
                cur.execute("""UPDATE ablations SET updated_at = ?,
                               done = (SELECT count(*) FROM ablation_results WHERE ablation_id = ?)
                               WHERE ablation_id = ?""", [_now(), ablation_id, ablation_id])
                if held:
                    self._write_replies(cur)
            if held:
                self._pending_replies.clear()

    def ablation_results(self, ablation_id: str) -> pd.DataFrame:
        return self._df("""SELECT metric, arm, rep, sample_id, status, score, reason, verdicts, calls, cached
                           FROM ablation_results WHERE ablation_id = ? ORDER BY metric, arm, rep, sample_id""",
                        [ablation_id])

    def finish_ablation(self, ablation_id: str, status: str, result: dict[str, object] | None) -> None:
        with self.transaction() as cur:
            cur.execute("UPDATE ablations SET status = ?, result = ?, updated_at = ? WHERE ablation_id = ?",
                        [status, json.dumps(result) if result is not None else None, _now(), ablation_id])
