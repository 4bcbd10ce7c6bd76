"""The Run page's frames: the metric table, the sample table and its filters, evidence and verdict records."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import pandas as pd

from lib.core.metrics import get_metric
from lib.presentation.clip import clip_cells
from lib.presentation.views.common import PROVENANCE_LOCATIONS, ordered_metrics


def metric_table(run_metrics: pd.DataFrame) -> pd.DataFrame:
    """A run's metrics in registry order, with the instrument (and how a model judge was asked for its verdicts:
    json_schema, json_object or text) and an `attributed` flag."""
    cols = ["metric", "score", "n", "n_failed", "n_excluded", "judge_model", "prompt_hash", "binding"]
    if "output_mode" in run_metrics and run_metrics["output_mode"].notna().any():
        cols.append("output_mode")
    if run_metrics.empty:
        return pd.DataFrame(columns=[*cols, "attributed"])
    order = {m: i for i, m in enumerate(ordered_metrics(run_metrics["metric"].tolist()))}
    t = run_metrics.assign(_o=run_metrics["metric"].map(order)).sort_values("_o")[cols].reset_index(drop=True)
    t["attributed"] = t[["judge_model", "prompt_hash", "binding"]].notna().all(axis=1)
    return t


NOT_RECORDED = "not recorded"


def metric_display(table: pd.DataFrame) -> pd.DataFrame:
    """A metric_table as the Run page shows it, narrow enough for 1024 px beside the sidebar: short count names,
    a missing part of the instrument said as NOT_RECORDED (what `attributed` flags), and a model judge's output
    mode beside its model ("gpt-4o-mini (json_schema)")."""
    said = table[["judge_model", "prompt_hash", "binding"]].astype(object).fillna(NOT_RECORDED)
    judge = said["judge_model"].tolist()
    if "output_mode" in table:
        judge = [f"{j} ({m})" if isinstance(m, str) and m else j for j, m in zip(judge, table["output_mode"],
                                                                                 strict=True)]
    return pd.DataFrame({"metric": table["metric"], "score": table["score"], "n": table["n"],
                         "failed": table["n_failed"], "excluded": table["n_excluded"], "judge model": judge,
                         "prompt hash": said["prompt_hash"], "binding": said["binding"]})


def verdict_list(text: object) -> list[dict[str, object]]:
    if not isinstance(text, str) or not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _passages(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    try:
        return tuple(str(p) for p in cast("Iterable[object]", value))
    except TypeError:
        return ()


def _contexts_text(value: object) -> str:
    return "\n\n".join(_passages(value))


def sample_table(samples: pd.DataFrame, scores: pd.DataFrame, provenance: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per sample: its texts, every metric's score, and for `metric` its verdict and evidence counts.

    Args:
        samples: store.samples_frame (sample_id, question, answer, contexts, ground_truth).
        scores: store.sample_scores for the run (all metrics).
        provenance: diagnose.provenance for the run and `metric`.
        metric: the metric whose verdicts are counted.

    Columns: sample_id, question, answer, contexts (passages joined by blank lines), ground_truth,
    one score column per metric, passages (the contexts as a tuple, in rank order), status (of
    `metric`), items, <positive label>, <negative label>, and one evidence-location count per
    PROVENANCE_LOCATIONS (positive verdicts of `metric` whose evidence was found there).
    """
    pos, neg = get_metric(metric).labels
    t = samples[["sample_id", "question", "answer", "ground_truth"]].copy()
    t.insert(3, "contexts", [_contexts_text(c) for c in samples["contexts"]])
    t["passages"] = [_passages(c) for c in samples["contexts"]]
    metrics = ordered_metrics(scores["metric"].unique().tolist()) if not scores.empty else []
    if metrics:
        wide = scores.pivot_table(index="sample_id", columns="metric", values="score", aggfunc="first",
                                  dropna=False)
        for m in metrics:
            t[m] = t["sample_id"].map(wide[m]) if m in wide else math.nan
    mine = scores[scores["metric"] == metric].set_index("sample_id")
    t["status"] = t["sample_id"].map(mine["status"]).fillna("unscored")
    counts = {sid: _count_labels(v) for sid, v in mine["verdicts"].items()}
    t["items"] = [counts.get(s, (0, 0))[0] + counts.get(s, (0, 0))[1] for s in t["sample_id"]]
    t[pos] = [counts.get(s, (0, 0))[0] for s in t["sample_id"]]
    t[neg] = [counts.get(s, (0, 0))[1] for s in t["sample_id"]]
    by_loc = (provenance.groupby(["sample_id", "location"]).size().unstack(fill_value=0)
              if not provenance.empty else pd.DataFrame())
    for loc in PROVENANCE_LOCATIONS:
        col = f"in_{loc}" if loc != "nowhere" else "nowhere"
        t[col] = t["sample_id"].map(by_loc[loc]).fillna(0).astype(int) if loc in by_loc else 0
    return t


def sample_list(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A sample_table as the Run page lists it, narrow enough for 1024 px beside the sidebar: short columns first,
    the verdict and evidence counts said in words, the question last (it wraps).

    Columns: sample_id, score (of `metric`), status, verdicts ("3 supported, 1 unsupported"; '' when none),
    evidence (where the positive verdicts' evidence was found: "contexts 3, ground_truth 1"; '' when none), question.
    """
    pos, neg = get_metric(metric).labels
    verdicts = [f"{p}\u00a0{pos}, {n}\u00a0{neg}" if p + n else ""   # no-break spaces: wrapped at the comma
                for p, n in zip(table[pos], table[neg], strict=True)]
    counts = table[[location_column(loc) for loc in PROVENANCE_LOCATIONS]].to_numpy().tolist()
    evidence = [", ".join(f"{loc}\u00a0{n}" for loc, n in zip(PROVENANCE_LOCATIONS, row, strict=True) if n)
                for row in counts]
    return pd.DataFrame({"sample_id": table["sample_id"], "score": table.get(metric, math.nan),
                         "status": table["status"], "verdicts": verdicts, "evidence": evidence,
                         "question": clip_cells(table["question"])})


def other_scores(scores: pd.DataFrame, metric: str, sample_id: str) -> list[tuple[str, float | None]]:
    """One sample's scores of the metrics other than `metric`, in registry order (None: not scored)."""
    mine = scores[(scores["sample_id"] == sample_id) & (scores["metric"] != metric)]
    by_metric = dict(zip(mine["metric"], mine["score"], strict=True))
    return [(m, None if pd.isna(by_metric[m]) else float(by_metric[m])) for m in ordered_metrics(list(by_metric))]


def _count_labels(text: object) -> tuple[int, int]:
    vs = verdict_list(text)
    positive = sum(1 for v in vs if v.get("label") is True)
    return positive, len(vs) - positive


@dataclass(frozen=True)
class EvidenceSummary:
    """Where a run's positive verdicts for one metric found their evidence."""

    metric: str
    positive: int
    counts: dict[str, int]      # location -> positive verdicts evidenced there (PROVENANCE_LOCATIONS)
    forbidden: dict[str, int]   # the subset in artifacts the metric must never receive, when non-zero

    @property
    def leak(self) -> bool:
        """Evidence in a must-never-receive artifact: a leak seen without a single new judge call."""
        return bool(self.forbidden)

    @property
    def sentence(self) -> str:
        where = ", ".join(f"{n} in {loc}" if loc != "nowhere" else f"{n} nowhere" for loc, n in self.counts.items())
        text = f"Evidence of the {self.positive} positive {self.metric} verdicts: {where}."
        if self.forbidden:
            bad = " and ".join(self.forbidden)
            text += (f" {self.metric} must never receive {bad}, so the judge was shown it: a wiring leak seen in "
                     "the verdicts themselves.")
        return text


def evidence_summary(provenance: pd.DataFrame, metric: str) -> EvidenceSummary:
    """Count a run's positive verdicts by where their evidence was found (diagnose.provenance rows)."""
    found = provenance["location"].value_counts() if not provenance.empty else pd.Series(dtype=int)
    counts = {loc: int(found.get(loc, 0)) for loc in PROVENANCE_LOCATIONS}
    never = get_metric(metric).never
    forbidden = {loc: n for loc, n in counts.items() if loc in never and n}
    return EvidenceSummary(metric, len(provenance), counts, forbidden)


def location_column(location: str) -> str:
    """The sample_table column counting evidence found in `location`."""
    return "nowhere" if location == "nowhere" else f"in_{location}"


def filter_samples(table: pd.DataFrame, metric: str, *, search: str = "",
                   score_range: tuple[float, float] = (0.0, 1.0), verdict: str | None = None,
                   location: str | None = None) -> pd.DataFrame:
    """The rows of a sample_table that pass every filter.

    Args:
        search: case-insensitive text looked for in the sample id and the four artifacts.
        score_range: inclusive bounds on `metric`'s score; unscored samples pass only the full range.
        verdict: keep samples with at least one item given this verdict word (e.g. "unsupported").
        location: keep samples with at least one positive verdict evidenced there (PROVENANCE_LOCATIONS).
    """
    keep = pd.Series(True, index=table.index)
    needle = search.strip().lower()
    if needle:
        hay = table[["sample_id", "question", "answer", "contexts", "ground_truth"]].astype(str)
        keep &= hay.apply(lambda col: col.str.lower().str.contains(needle, regex=False)).any(axis=1)
    lo, hi = score_range
    if (lo, hi) != (0.0, 1.0) and metric in table:
        keep &= table[metric].between(lo, hi).fillna(False).astype(bool)
    if verdict:
        keep &= table[verdict] > 0 if verdict in table else False
    if location:
        keep &= table[location_column(location)] > 0
    return table[keep]


def verdict_records(scores: pd.DataFrame, provenance: pd.DataFrame, metric: str, sample_id: str) -> pd.DataFrame:
    """One sample's verdict records for `metric`, each positive verdict with where its evidence was found.

    Columns: n, item, verdict, evidence, location ('' for negative verdicts), match ('exact' | 'fuzzy' | '').
    """
    cols = ["n", "item", "verdict", "evidence", "location", "match"]
    row = scores[(scores["metric"] == metric) & (scores["sample_id"] == sample_id)]
    if row.empty:
        return pd.DataFrame(columns=cols)
    prov = provenance[provenance["sample_id"] == sample_id] if not provenance.empty else provenance
    where: dict[str, tuple[str, str]] = {}
    for r in prov.itertuples(index=False) if not prov.empty else ():
        where.setdefault(str(r.item), (str(r.location), str(r.match)))
    rows = []
    for i, v in enumerate(verdict_list(row.iloc[0]["verdicts"]), start=1):
        loc, match = where.get(str(v.get("item", "")), ("", "")) if v.get("label") is True else ("", "")
        rows.append({"n": i, "item": str(v.get("item", "")), "verdict": str(v.get("verdict", "")),
                     "evidence": str(v.get("evidence", "") or ""), "location": loc, "match": match})
    table = pd.DataFrame(rows, columns=cols)
    for col in ("item", "verdict", "evidence"):   # a page never sends more than it can (lib.presentation.clip)
        table[col] = clip_cells(table[col])
    return table


def sample_status(scores: pd.DataFrame, metric: str, sample_id: str) -> dict[str, object]:
    """One sample's status, score and reason for `metric` (status 'unscored' when absent)."""
    row = scores[(scores["metric"] == metric) & (scores["sample_id"] == sample_id)]
    if row.empty:
        return {"status": "unscored", "score": None, "reason": ""}
    r = row.iloc[0]
    score = None if pd.isna(r["score"]) else float(r["score"])
    return {"status": str(r["status"]), "score": score, "reason": str(r["reason"] or "")}
