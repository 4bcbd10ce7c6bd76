"""People's labels (table `labels`, migration v3 in lib.store.schema): written, superseded, read with judgings.

A label row is never updated or deleted. A new label from the same person for the same sample, metric, item and
content supersedes the older one, which stays in the history with what superseded it. A suite's calibration
set is its current labels; its version is the highest `seq` among its labels, so adding a label makes a new
version and `version=` reads a set as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lib.core.labels import Label
from lib.core.samples import EvalSample
from lib.store.base import StoreBase, retried

if TYPE_CHECKING:
    import pandas as pd

_COLUMNS = ("seq", "suite", "sample_id", "metric", "item", "kind", "value", "content", "labeller", "labelled_at",
            "source", "note", "queue_run", "queue_weight", "queue_total", "queue_size")
# The latest label of each (suite, sample, metric, item, labeller, content) up to a version; item NULL is one key.
_CURRENT = """
    SELECT * FROM (
        SELECT *, row_number() OVER (PARTITION BY suite, sample_id, metric, coalesce(item, -1), labeller, content
                                     ORDER BY seq DESC) AS _newest
        FROM labels WHERE seq <= ? {filters})
    WHERE _newest = 1"""


class LabelsMixin(StoreBase):
    """Writing and reading people's labels."""

    @retried("storing labels")
    def add_labels(self, labels: Sequence[Label]) -> list[int]:
        """Store labels, all or none, in order; returns their seq numbers.

        A label whose key (suite, sample, metric, item, labeller, content) already has one supersedes it; both stay.
        """
        import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
        if not labels:
            return []
        with self.transaction() as cur:
            self._numbering(cur)
            start = cur.execute("SELECT coalesce(max(seq), 0) FROM labels").fetchall()[0][0]
            frame = pd.DataFrame([{
                "seq": start + k + 1, "suite": lab.suite, "sample_id": lab.sample_id, "metric": lab.metric,
                "item": lab.item, "kind": lab.kind, "value": float(lab.value), "content": lab.content,
                "labeller": lab.labeller, "labelled_at": lab.labelled_at, "source": lab.source,
                "note": lab.note or None,
                "queue_run": lab.drawn.run_id if lab.drawn else None,
                "queue_weight": lab.drawn.weight if lab.drawn else None,
                "queue_total": lab.drawn.total if lab.drawn else None,
                "queue_size": lab.drawn.size if lab.drawn else None} for k, lab in enumerate(labels)],
                columns=list(_COLUMNS))
            frame["item"] = frame["item"].astype("Int64")
            frame["queue_size"] = frame["queue_size"].astype("Int64")
            for col in ("queue_weight", "queue_total"):
                frame[col] = frame[col].astype(float)
            self._insert_frame(cur, "labels", frame)
        return [start + k + 1 for k in range(len(labels))]

    def calibration_version(self, suite: str) -> int:
        """The version of a suite's calibration set: its highest label seq (0: no labels)."""
        return int(self._rows("SELECT coalesce(max(seq), 0) FROM labels WHERE suite = ?", [suite])[0][0])

    def labels(self, suite: str, *, metric: str | None = None, version: int | None = None,
               sample_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """The current labels of a suite (each person's newest per sample, metric and item), oldest first.

        Args:
            suite: the suite.
            metric: only this metric's labels.
            version: the calibration set as it was at this version (default: now).
            sample_ids: only these samples.
        """
        filters: list[str] = ["AND suite = ?"]
        params: list[object] = [suite]
        if metric is not None:
            filters.append("AND metric = ?")
            params.append(metric)
        if sample_ids is not None:
            filters.append("AND list_contains(?, sample_id)")
            params.append(list(sample_ids))
        sql = _CURRENT.replace("{filters}", " ".join(filters))
        cols = ", ".join(_COLUMNS)
        top = version if version is not None else 2**62
        return self._df(f"SELECT {cols} FROM ({sql}) ORDER BY seq", [top, *params])

    def label_history(self, suite: str, *, sample_id: str | None = None) -> pd.DataFrame:
        """Every label of a suite ever stored, oldest first, with `superseded_by` (the seq that replaced it)."""
        sql = """SELECT *, lead(seq) OVER (PARTITION BY suite, sample_id, metric, coalesce(item, -1), labeller, content
                                           ORDER BY seq) AS superseded_by
                 FROM labels WHERE suite = ?"""
        params: list[object] = [suite]
        if sample_id is not None:
            sql += " AND sample_id = ?"
            params.append(sample_id)
        return self._df(f"SELECT * FROM ({sql}) ORDER BY seq", params)

    def sample_ids_by_content(self, suite: str, question: str, ground_truth: str) -> list[str]:
        """The ids of a suite's samples with this question and reference (a file keyed by content)."""
        return [r[0] for r in self._rows(
            """SELECT DISTINCT sample_id FROM samples WHERE suite = ? AND question = ? AND ground_truth = ?
               ORDER BY sample_id""", [suite, question, ground_truth])]

    def latest_samples(self, suite: str, sample_ids: Sequence[str], run_id: str | None = None) -> dict[str, EvalSample]:
        """Each sample as its latest run (or `run_id`) holds it; ids no run holds are absent."""
        sql = """SELECT sample_id, question, answer, contexts, ground_truth FROM (
                     SELECT s.*, row_number() OVER (PARTITION BY s.sample_id ORDER BY r.started_at DESC,
                                                    r.run_id DESC) AS _newest
                     FROM samples s JOIN runs r USING (run_id)
                     WHERE s.suite = ? AND list_contains(?, s.sample_id) {run})
                 WHERE _newest = 1"""
        params: list[object] = [suite, list(sample_ids)]
        if run_id is not None:
            params.append(run_id)
        rows = self._rows(sql.replace("{run}", "AND s.run_id = ?" if run_id is not None else ""), params)
        return {r[0]: EvalSample(r[0], r[1], r[2], tuple(r[3]), r[4]) for r in rows}

    def labelled_judgings(self, suite: str, metric: str, sample_ids: Sequence[str],
                          run_ids: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The stored judgings of `metric` on these samples, every run (or `run_ids`), with each instrument.

        Returns (judgings, copies). judgings: run_id, started_at, sample_id, status, score, verdict_labels (the
        item verdicts as booleans, in item order), judge_model, prompt_hash, binding, scorer, copy (which copy
        of the sample's text the run judged). copies: copy, sample_id, question, answer, contexts,
        ground_truth, one row per distinct copy (a sample's text is read once, not once per run).
        """
        import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
        # a copy is named by a 64-bit hash of its text, within this call only (md5 of it took four times as long)
        copy = "hash(p.sample_id, p.question, p.answer, p.contexts, p.ground_truth)"
        base = """FROM sample_scores s
                   JOIN runs r USING (run_id)
                   JOIN run_metrics m ON m.run_id = s.run_id AND m.suite = s.suite AND m.metric = s.metric
                   JOIN samples p ON p.run_id = s.run_id AND p.suite = s.suite AND p.sample_id = s.sample_id
                   WHERE s.suite = ? AND s.metric = ? AND list_contains(?, s.sample_id)"""
        params: list[object] = [suite, metric, list(sample_ids)]
        if run_ids is not None:
            base += " AND list_contains(?, s.run_id)"
            params.append(list(run_ids))
        # Rows as Python objects: each verdict list a Python list (the caller explodes them), no Arrow-backed cells.
        cur = self.cursor().execute(
            f"""SELECT s.run_id, r.started_at, s.sample_id, s.status, s.score,
                       list_transform(from_json(s.verdicts, '[{{"label": "BOOLEAN"}}]'), lambda x: x.label)
                           AS verdict_labels,
                       m.judge_model, m.prompt_hash, m.binding, m.scorer, {copy} AS copy
                {base} ORDER BY r.started_at, s.run_id, s.sample_id""", params)
        judgings = pd.DataFrame(cur.fetchall(), columns=[d[0] for d in cur.description], dtype=object)
        cur = self.cursor().execute(
            f"""SELECT DISTINCT ON (copy) {copy} AS copy, p.sample_id, p.question, p.answer, p.contexts, p.ground_truth
                {base}""", params)
        copies = pd.DataFrame(cur.fetchall(), columns=[d[0] for d in cur.description], dtype=object)
        return judgings, copies
