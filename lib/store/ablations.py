"""Ablations in the store: the spec and progress, each judged sample as it lands, and the result."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from lib.core.results import FAILED, SampleResult

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table
from lib.store.base import StoreBase, _now, merge, retried, values

RAW_KEPT = 2000   # characters of an unreadable reply kept with its failed judging


class AblationsMixin(StoreBase):
    """Ablation records: spec, progress, per-sample results and the stored result."""

    def run_copy(self, run_id: str) -> str | None:
        """The id of the stored copy of `run_id` (None: no such run): what an ablation of it now measures."""
        rows = self._rows("SELECT copy_id FROM runs WHERE run_id = ?", [run_id])
        return rows[0][0] if rows else None

    def ablation(self, ablation_id: str, *, any_copy: bool = False) -> dict[str, Any] | None:
        """An ablation's row, when it measured the stored copy of its run (None otherwise, or when there is none).

        A run recorded again is another copy: an ablation of the copy it replaced says nothing of this one, so it
        is not returned (`any_copy=True` returns it, with `current` False, to say so).
        """
        rows = self._rows(f"""SELECT {_COLUMNS}, {_CURRENT} AS current FROM ablations a
                               LEFT JOIN runs r ON r.run_id = a.run_id WHERE a.ablation_id = ?""", [ablation_id])
        if not rows:
            return None
        keys = ("ablation_id", "run_id", "suite", "spec", "judge_model", "status", "total", "done", "created_at",
                "updated_at", "result", "current")
        d = dict(zip(keys, rows[0], strict=True))
        if not d["current"] and not any_copy:
            return None
        d["spec"] = json.loads(d["spec"])  # type: ignore[arg-type]
        d["result"] = json.loads(d["result"]) if d["result"] else None  # type: ignore[arg-type]
        return d

    def ablations(self, run_id: str | None = None) -> pd.DataFrame:
        """The ablations of the stored copies of runs (of `run_id` only, when given), newest first.

        An ablation of a replaced copy (or one stored before copies were told apart) is not listed: its verdict
        is about samples, templates and scores that are no longer the run's.
        """
        sql = f"""SELECT {_COLUMNS} FROM ablations a JOIN runs r ON r.run_id = a.run_id WHERE {_CURRENT}"""
        params: list[object] = []
        if run_id is not None:
            sql += " AND a.run_id = ?"
            params.append(run_id)
        return self._df(sql + " ORDER BY a.created_at DESC, a.ablation_id", params)

    @retried("starting ablation")
    def start_ablation(self, ablation_id: str, run_id: str, suite: str, spec: dict[str, object],
                       judge_model: str, total: int, *, copy: str | None = None) -> None:
        """Create the ablation row if absent (a resumed ablation keeps its row).

        Args:
            copy: the copy of the run the ablation measures (read before its samples were; default: the
                stored copy now). A row of the same id left by another copy (the run was recorded again since)
                is moved aside under an id of its own, with its results: it stays that copy's, and this ablation
                starts from nothing.
        """
        with self.transaction() as cur:
            if copy is None:
                found = cur.execute("SELECT copy_id FROM runs WHERE run_id = ?", [run_id]).fetchall()
                copy = found[0][0] if found else None
            held = cur.execute("SELECT run_copy FROM ablations WHERE ablation_id = ?", [ablation_id]).fetchall()
            if held and held[0][0] != copy:   # another copy's, or one stored before copies were told apart
                _set_aside(cur, ablation_id)
            merge(cur, "ablations", values(_NEW_ABLATION), _NEW_ABLATION, ("ablation_id",), replace=False,
                  params=[ablation_id, run_id, suite, json.dumps(spec, sort_keys=True), judge_model, "running", total,
                          0, _now(), _now(), copy])
            # a resumed ablation takes today's plan's total (its row may be from a plan that judged more)
            cur.execute("UPDATE ablations SET status = 'running', total = ?, updated_at = ? WHERE ablation_id = ? "
                        "AND status <> 'done'", [total, _now(), ablation_id])

    @retried("an ablation's total")
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
        self.add_ablation_batches(ablation_id, {(metric, arm, rep): results})

    @retried("storing ablation results")
    def add_ablation_batches(self, ablation_id: str,
                             batches: Mapping[tuple[str, str, int], Sequence[SampleResult]]) -> None:
        """Store batches of per-sample results keyed by (metric, arm, repeat) and advance the progress count, in
        one commit (one statement per flush, not one per arm: a commit costs more than its rows)."""
        import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
        rows = [(ablation_id, metric, arm, rep, r.sample_id, r.status, r.score, r.reason, r.verdicts_json(),
                 r.calls, r.cached, r.raw[:RAW_KEPT] if r.status == FAILED and r.raw else None)
                for (metric, arm, rep), results in batches.items() for r in results]
        if not rows:
            return
        frame = pd.DataFrame(rows, columns=["ablation_id", "metric", "arm", "rep", "sample_id", "status", "score",
                                            "reason", "verdicts", "calls", "cached", "raw"])
        with self._write_lock:
            with self.transaction() as cur:
                self._put_frame(cur, "ablation_results", frame, _RESULT_KEY, replace=False)
                _recount_done(cur, ablation_id)
                written = self._write_replies(cur)   # the calls these results cost go in the same commit
            self._forget_written(written)

    def ablation_failures(self, ablation_id: str, limit: int = 50) -> pd.DataFrame:
        """The failed judgings of an ablation: where, why, and what the judge wrote (truncated), first `limit`."""
        return self._df("""SELECT metric, arm, rep, sample_id, reason, raw FROM ablation_results
                           WHERE ablation_id = ? AND status = 'failed' ORDER BY metric, arm, rep, sample_id
                           LIMIT ?""", [ablation_id, limit])

    def ablation_results(self, ablation_id: str) -> pd.DataFrame:
        return self._df("""SELECT metric, arm, rep, sample_id, status, score, reason, verdicts, calls, cached
                           FROM ablation_results WHERE ablation_id = ? ORDER BY metric, arm, rep, sample_id""",
                        [ablation_id])

    @retried("forgetting ablation results")
    def forget_results(self, ablation_id: str, status: str, reason_prefix: str) -> int:
        """Delete the ablation's results of `status` whose reason starts with `reason_prefix`, and recount its
        progress, in one transaction; returns how many were deleted."""
        with self.transaction() as cur:
            row = cur.execute("""SELECT count(*) FROM ablation_results WHERE ablation_id = ? AND status = ?
                                 AND starts_with(reason, ?)""", [ablation_id, status, reason_prefix]).fetchone()
            cur.execute("DELETE FROM ablation_results WHERE ablation_id = ? AND status = ? AND starts_with(reason, ?)",
                        [ablation_id, status, reason_prefix])
            _recount_done(cur, ablation_id)
        return int(row[0]) if row else 0

    @retried("an ablation's job note")
    def record_job_note(self, ablation_id: str, *, state: str, reason: str, output_mode: str | None,
                        pacing: str | None) -> None:
        """Write (or replace) how an ablation job ended (lib.jobs.job_log); `pacing` is JSON or None."""
        with self.transaction() as cur:
            merge(cur, "job_log", values(_JOB_NOTE), _JOB_NOTE, ("ablation_id",), replace=True,
                  params=[ablation_id, state, reason, output_mode, pacing, _now()])

    def job_note(self, ablation_id: str) -> tuple[str, str | None, str | None, str | None] | None:
        """(state, reason, output mode, pacing JSON) of an ablation job's end, or None if none is recorded."""
        rows = self._rows("SELECT state, reason, output_mode, pacing FROM job_log WHERE ablation_id = ?",
                          [ablation_id])
        return (str(rows[0][0]), rows[0][1], rows[0][2], rows[0][3]) if rows else None

    @retried("finishing an ablation")
    def finish_ablation(self, ablation_id: str, status: str, result: dict[str, object] | None) -> None:
        with self.transaction() as cur:
            cur.execute("UPDATE ablations SET status = ?, result = ?, updated_at = ? WHERE ablation_id = ?",
                        [status, json.dumps(result) if result is not None else None, _now(), ablation_id])


_COLUMNS = ", ".join(f"a.{c}" for c in ("ablation_id", "run_id", "suite", "spec", "judge_model", "status", "total",
                                          "done", "created_at", "updated_at", "result"))
_NEW_ABLATION = ("ablation_id", "run_id", "suite", "spec", "judge_model", "status", "total", "done", "created_at",
                 "updated_at", "run_copy")
_RESULT_KEY = ("ablation_id", "metric", "arm", "rep", "sample_id")
_JOB_NOTE = ("ablation_id", "state", "reason", "output_mode", "pacing", "updated_at")
# an ablation measured the stored copy of its run (a.* ablations, r.* runs joined on run_id)
_CURRENT = "coalesce(a.run_copy = r.copy_id, false)"


def _set_aside(cur: duckdb.DuckDBPyConnection, ablation_id: str) -> None:
    """Move an ablation of another copy of its run, its results and job note, to a new id (`<id>~<6 hex>`), in the
    caller's transaction: the spec's id is then free for the copy stored now, and the old verdict stays with the
    copy it measured (listed again if that copy is restored)."""
    aside = f"{ablation_id}~{uuid.uuid4().hex[:6]}"
    cur.execute("""INSERT INTO ablations BY NAME SELECT * REPLACE (? AS ablation_id,
                          CASE WHEN result IS NULL THEN NULL
                               ELSE CAST(json_merge_patch(result, json_object('ablation_id', ?)) AS VARCHAR) END
                          AS result)
                   FROM ablations WHERE ablation_id = ?""", [aside, aside, ablation_id])
    for table in ("ablation_results", "job_log"):
        cur.execute(f"INSERT INTO {table} BY NAME SELECT * REPLACE (? AS ablation_id) FROM {table} "
                    "WHERE ablation_id = ?", [aside, ablation_id])
        cur.execute(f"DELETE FROM {table} WHERE ablation_id = ?", [ablation_id])
    cur.execute("DELETE FROM ablations WHERE ablation_id = ?", [ablation_id])


def _recount_done(cur: duckdb.DuckDBPyConnection, ablation_id: str) -> None:
    """An ablation's progress is the count of its stored results: the one place `ablations.done` is set."""
    cur.execute("""UPDATE ablations SET updated_at = ?,
                   done = (SELECT count(*) FROM ablation_results WHERE ablation_id = ?)
                   WHERE ablation_id = ?""", [_now(), ablation_id, ablation_id])
