"""Writing runs into the store: whole, in parts (staged, then swapped in one transaction), or in bulk."""

from __future__ import annotations

import itertools
import json
import math
import uuid
from array import array
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import duckdb

from lib.core.errors import InputError
from lib.core.metrics import METRICS
from lib.core.prompts import BINDINGS, placeholders
from lib.core.records import MetricRecord, RunRecord
from lib.core.results import EXCLUDED, FAILED, OK
from lib.core.validate import EARLIEST, LATEST, check_run

if TYPE_CHECKING:
    from typing import TypeAlias

    import pandas as pd
    import pyarrow as pa

    Frame: TypeAlias = pd.DataFrame | pa.Table
from lib.store.archive import ArchiveMixin
from lib.store.base import STATUSES, _now
from lib.store.lake import retrying


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
# $metrics, $statuses, $bindings (the known values), $earliest, $latest (lib.core.validate's start-time window).
# The same rules as lib.core.validate.check_run, in SQL.
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
                       "n", "n_failed", "n_excluded", "scorer", "output_mode", "served_model"]


_COPY_ID_SQL = "'c-' || left(replace(CAST(uuid() AS VARCHAR), '-', ''), 16)"   # new_copy_id, one per row


def new_copy_id() -> str:
    """A new copy's id: every recording of a run id is a copy of its own, whose ablations are its own."""
    return "c-" + uuid.uuid4().hex[:16]


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
    import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
    rows = []
    for m in head.metrics:
        ok, (n_failed, n_excluded) = totals.by.get((m.suite, m.metric), (array("d"), [0, 0]))
        score = math.fsum(ok) / len(ok) if ok else None
        rows.append((head.run_id, m.suite, m.metric, m.judge_model, m.prompt_hash, m.binding, m.fingerprint,
                     score, len(ok), n_failed, n_excluded, m.scorer, m.output_mode, m.served_model))
    return pd.DataFrame(rows, columns=_RUN_METRIC_COLUMNS)


def _samples_frame(run: RunRecord) -> pd.DataFrame:
    import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
    rows = [(run.run_id, suite, s.sample_id, s.question, s.answer, list(s.contexts), s.ground_truth)
            for suite, samples in run.samples.items() for s in samples]
    return pd.DataFrame(rows, columns=["run_id", "suite", "sample_id", "question", "answer", "contexts",
                                       "ground_truth"])


def _scores_frame(run: RunRecord) -> pd.DataFrame:
    import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
    rows = [(run.run_id, m.suite, m.metric, r.sample_id, r.status, r.score, r.reason, r.verdicts_json())
            for m in run.metrics for r in m.results]
    return pd.DataFrame(rows, columns=["run_id", "suite", "metric", "sample_id", "status", "score", "reason",
                                       "verdicts"])


def _concat(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class PreparedRun:
    """A checked run as the rows record_run writes: made by prepare_run, in any process (it pickles), and
    written by Store.record_prepared. A history scored in worker processes is checked and laid out there,
    and the one process that owns the file only writes."""

    head: RunRecord   # the run without its samples and results: run-level facts and each metric's instrument
    samples: pd.DataFrame
    sample_scores: pd.DataFrame
    run_metrics: pd.DataFrame


def prepare_run(run: RunRecord) -> PreparedRun:
    """Check a run (lib.core.validate.check_run) and lay it out as rows; nothing is written.

    Raises:
        InputError: naming the sample or metric and field at fault.
    """
    check_run(run)
    head = replace(run, samples={}, metrics=[replace(m, results=[]) for m in run.metrics])
    return PreparedRun(head, _samples_frame(run), _scores_frame(run), _metrics_frame(run, _Totals.of([run])))



class RecordingMixin(ArchiveMixin):
    """Writing runs: one at a time, in parts through staging tables, or in bulk; a replaced copy is archived."""

    def record_run(self, run: RunRecord) -> str | None:
        """Record a run in one transaction; an earlier copy of the same run id is moved to the archive.

        Returns:
            The archive id of the replaced copy (lib.store.archive), or None when the run id was new.

        Raises:
            InputError: naming the sample or metric and field at fault; nothing is written.
        """
        return self.record_run_parts([run])

    def record_run_parts(self, parts: Iterable[RunRecord]) -> str | None:
        """Record one run that arrives in parts, all or nothing; an earlier copy is moved to the archive.

        Each part is a RunRecord of the same run id and metrics, holding some
        of the samples and their results; the run-level facts are the first
        part's. A part is checked and written before the next is read, so a
        file larger than memory is recorded a chunk at a time: parts after the
        first go to staging tables (in small transactions, so DuckDB never
        holds the whole run in one), then one transaction replaces the run.
        Each metric's score is aggregated over all parts by the harness's rule.

        Returns:
            The archive id of the replaced copy, or None when the run id was new.

        Raises:
            InputError: naming the sample or metric and field at fault; nothing is written.
        """
        it = iter(parts)
        first = next(it, None)
        if first is None:
            raise InputError("no samples: a run needs at least one", field="samples")
        prepared = prepare_run(first)
        second = next(it, None)
        if second is None:   # one part (record_run): written directly, in one transaction
            return self.record_prepared([prepared])[0]
        token = uuid.uuid4().hex[:12]
        stage = {"samples": f"_stage_samples_{token}", "sample_scores": f"_stage_scores_{token}"}
        _STAGING.update(stage.values())
        try:
            return self._record_staged(first, itertools.chain([second], it), stage)
        finally:
            with self._write_lock:
                for name in stage.values():
                    self.cursor().execute(f"DROP TABLE IF EXISTS {name}")
            _STAGING.difference_update(stage.values())

    def record_prepared(self, runs: Sequence[PreparedRun]) -> list[str | None]:
        """Write runs laid out by prepare_run, in one transaction; an earlier copy of a run id is archived.

        Returns:
            Per run, the archive id of the copy it replaced, or None when its run id was new.
        """
        def write() -> list[str | None]:
            archived = []
            with self.transaction() as cur:
                if len({r.head.run_id for r in runs}) < len(runs):   # a run id twice: each copy archives the last
                    for run in runs:
                        archived.append(self._start_run(cur, run.head))
                        self._insert_frame(cur, "samples", run.samples)
                        self._insert_frame(cur, "sample_scores", run.sample_scores)
                        self._insert_frame(cur, "run_metrics", run.run_metrics)
                else:
                    # One statement a table for the whole batch, and each template once: a statement costs a few
                    # ms whatever its rows (a demo build writes 90 runs of 2,400 rows, 20 a transaction).
                    self._insert_prompts(cur, [m for run in runs for m in run.head.metrics])
                    archived = [self._start_run(cur, run.head, prompts=False) for run in runs]
                    for table in ("samples", "sample_scores", "run_metrics"):
                        self._insert_frame(cur, table, _concat([getattr(run, table) for run in runs]))
            self._prompts_stored(r.head for r in runs)
            return archived

        if not self.lake:
            return write()
        # a team store: another writer's commit can conflict with this one; the whole transaction runs again
        return retrying(f"recording run {', '.join(repr(r.head.run_id) for r in runs[:3])}", write,
                             on_retry=self._conflicted)

    def _record_staged(self, head: RunRecord, rest: Iterable[RunRecord], stage: dict[str, str]) -> str | None:
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
                archived = self._start_run(cur, head)
                for table, name in stage.items():
                    cur.execute(f"INSERT INTO {table} SELECT * FROM {name}")
                self._insert_frame(cur, "run_metrics", _metrics_frame(head, totals))
            self._prompts_stored([head])
            return archived
        except duckdb.ConstraintException:
            raise InputError(f"run {head.run_id!r} names a sample twice across its parts",
                             field="sample_id") from None

    def _drop_stale_staging(self) -> None:
        """Staging tables left by a process killed mid-record (none can be another's: one process owns the file)."""
        # this database's only: DuckDB filters by database within the catalog scan, where an unfiltered one
        # also makes the system catalog's built-in views (5 ms of CPU on a new connection)
        names = [r[0] for r in self._rows("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                          "current_database() AND starts_with(table_name, '_stage_')")]
        with self._write_lock:
            for name in names:
                if name not in _STAGING:
                    self.cursor().execute(f'DROP TABLE IF EXISTS "{name}"')

    def _start_run(self, cur: duckdb.DuckDBPyConnection, run: RunRecord, *, prompts: bool = True) -> str | None:
        archived = self._archive_run(cur, run.run_id, "recorded over")
        cur.execute("INSERT INTO runs (run_id, started_at, label, pipeline, recorded_at, fields, notes, copy_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [run.run_id, run.started_at, run.label, json.dumps(run.pipeline, sort_keys=True), _now(),
                     json.dumps(list(run.fields)), json.dumps(dict(run.notes), sort_keys=True) if run.notes else None,
                     new_copy_id()])
        if prompts:
            self._insert_prompts(cur, run.metrics)
        return archived

    def _insert_prompts(self, cur: duckdb.DuckDBPyConnection, metrics: Iterable[MetricRecord]) -> None:
        for row in dict.fromkeys((m.prompt_hash, m.metric, m.template) for m in metrics
                                 if m.template is not None and m.prompt_hash not in self._known_prompts):
            # written only when absent, with no key to lean on (a team store's tables have none, lib.store.lake)
            cur.execute("INSERT INTO prompts SELECT ?, ?, ? WHERE NOT EXISTS "
                        "(SELECT 1 FROM prompts WHERE prompt_hash = ?)", [*row, row[0]])

    def _prompts_stored(self, runs: Iterable[RunRecord]) -> None:
        """Note the templates of runs just committed: a prompt row is never deleted, so this store need not look
        for it again. A nightly records the same few templates run after run, and on a team store each look is a
        read of the lake (measured at load 30: 14 ms of a run's 103 ms of CPU, and Postgres's work besides)."""
        self._known_prompts = self._known_prompts | {m.prompt_hash for r in runs for m in r.metrics
                                                     if m.template is not None and m.prompt_hash is not None}

    def record_runs_bulk(self, batches: Iterable[RunBatch]) -> int:
        """Record many runs from column frames in one transaction: the bulk twin of record_run.

        For importers and synthetic histories, where building a RunRecord per
        run costs more than writing it. The same tables and rules as
        record_run: rows are checked in SQL (known metric, status and binding;
        an ok score in [0, 1], no score otherwise; a score only for a sample
        in the batch; an instrument for every scored metric), an earlier copy
        of a run id is moved to the archive, and each metric row is aggregated from its
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
            for (run_id,) in cur.execute("SELECT run_id FROM runs WHERE run_id IN (SELECT run_id FROM _b_runs)"
                                         ).fetchall():
                self._archive_run(cur, run_id, "recorded over (bulk)")
            cur.execute("INSERT INTO runs (run_id, started_at, label, pipeline, recorded_at, copy_id) "
                        f"SELECT run_id, started_at, label, pipeline, ?, {_COPY_ID_SQL} FROM _b_runs", [_now()])
            if batch.prompts is not None:
                cur.register("_b_prompts", batch.prompts)
                for h, text in cur.execute("SELECT DISTINCT prompt_hash, template FROM _b_prompts").fetchall():
                    placeholders(text, source=f"bulk runs prompt {h}")   # field names only, as at every door
                cur.execute("INSERT INTO prompts SELECT DISTINCT prompt_hash, metric, template FROM _b_prompts "
                            "WHERE prompt_hash NOT IN (SELECT prompt_hash FROM prompts)")
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
