"""What an importer hands on: one table in our column names, and the instrument the file records.

Also the rules every importer shares: a sample's identity from its content, a tool's repeats folded into
one sample, and scores a hair outside [0, 1] (floating point) clamped and counted.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from lib.core.results import OK

# a score this close outside [0, 1] is floating point (promptfoo's cosine similarity gives 1.0000000000000002)
FLOAT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Imported:
    """Another tool's run as a table for lib.intake.ingest.run_from_frame.

    Attributes:
        frame: one row per sample: id, question, answer, contexts, ground_truth (those the file has) and one
            column per metric, named as our metric; its index is the row number errors name.
        tool: the scoring library ("ragas", "inspect_ai", "promptfoo").
        version: its version, when the file records it (or the user gave it).
        sources: our metric -> the name the tool gave the score (a Ragas column, an Inspect scorer, a
            promptfoo assertion type).
        judge_model: the grader model the file names, if any.
        started_at: when the file says the run happened.
        grader_source: where in the file the grader was read (None: not found).
        templates: our metric -> the grading instrument's text (its template and options), when the file has it.
        graders: our metric -> its own grader, when the file names one per metric (an Inspect scorer's `model`, a
            promptfoo assertion's `provider`); `judge_model` is the run's grader, for the metrics not named here.
        grader_sources: our metric -> where in the file its grader was read.
        reduced: our metric -> sample id -> the sample's score as the tool reduced its repeats (Inspect's epoch
            reducer, when it is not the mean): it replaces the repeats' mean.
        notes: what reading changed or found, kept with the run (repeats, clamped scores, unmapped columns).
        warnings: what the user should know before recording (in words).
    """

    frame: pd.DataFrame
    tool: str
    version: str | None
    sources: dict[str, str] = field(default_factory=dict)
    judge_model: str | None = None
    started_at: datetime | None = None
    grader_source: str | None = None
    templates: dict[str, str] = field(default_factory=dict)
    notes: dict[str, object] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    graders: dict[str, str] = field(default_factory=dict)
    grader_sources: dict[str, str] = field(default_factory=dict)
    reduced: dict[str, dict[str, object]] = field(default_factory=dict)


def parse_time(text: object) -> datetime | None:
    """An ISO time from a file, as naive UTC (how runs are stored), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    from datetime import UTC

    return value.astimezone(UTC).replace(tzinfo=None, microsecond=0) if value.tzinfo else value


def content_id(question: object, reference: object) -> str:
    """A sample's id from what it asks and its reference: the same sample in a reordered file keeps its id.

    The passages and the answer are left out on purpose: they are what a pipeline change moves.
    """
    key = json.dumps([question if isinstance(question, str) else None,
                      reference if isinstance(reference, str) else None], ensure_ascii=False)
    return "c-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _number(value: object) -> float | None:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def clamp_scores(frame: pd.DataFrame, metrics: list[str]) -> tuple[pd.DataFrame, dict[str, int]]:
    """Scores within FLOAT_TOLERANCE outside [0, 1] set to the bound; how many per metric.

    A score further out is left as it is, for validation to refuse with its row and field.
    """
    clamped: dict[str, int] = {}
    out = frame.copy()
    for metric in metrics:
        if metric not in out.columns:
            continue
        values = []
        for value in out[metric].tolist():
            number = _number(value)
            if number is not None and (-FLOAT_TOLERANCE <= number < 0 or 1 < number <= 1 + FLOAT_TOLERANCE):
                clamped[metric] = clamped.get(metric, 0) + 1
                value = min(1.0, max(0.0, number))
            values.append(value)
        out[metric] = pd.Series(values, index=out.index, dtype=object)
    return out, clamped


def fold_repeats(frame: pd.DataFrame, metrics: list[str], id_column: str = "id", *, source: str
                 ) -> tuple[pd.DataFrame, dict[str, object]]:
    """Rows that share an id are repeats of one sample (Inspect epochs, promptfoo --repeat): one row each.

    Every row is first validated as a single row is (lib.intake.ingest.records_from_frame with repeats): a
    score in a repeat is read as in a single row ("0.5" in a CSV is 0.5; "high" or 9.5 is refused with its
    row), and rows sharing an id must ask the same question against the same reference, else the later one is
    refused naming both rows. The sample keeps its first repeat's fields and row number; each metric's score
    is the mean of its repeats' scores (not scored when none was). Notes say how many repeats there were and,
    per metric, the mean within-sample standard deviation: the tool's own repeat noise.

    Raises:
        InputError: a bad value in any row, or one id given to different samples (file, row and field named).
    """
    from lib.intake.ingest import METRIC_COLUMNS, records_from_frame

    counts = frame[id_column].value_counts(sort=False)
    if counts.empty or counts.max() < 2:
        return frame, {}
    samples, results = records_from_frame(frame, source=source, repeats=True)
    positions: dict[str, list[int]] = {}
    for k, sample in enumerate(samples):
        positions.setdefault(sample.sample_id, []).append(k)
    names = {str(c).strip(): c for c in frame.columns}
    column_of = {m: next(names[a] for a in METRIC_COLUMNS[m] if a in names) for m in results}
    firsts = [ks[0] for ks in positions.values()]
    out = frame.iloc[firsts].copy()
    spread: dict[str, list[float]] = {m: [] for m in metrics if m in results}
    for metric, rs in results.items():
        means: list[float | None] = []
        for ks in positions.values():
            scores = [s for k in ks if (s := rs[k].score) is not None and rs[k].status == OK]
            means.append(sum(scores) / len(scores) if scores else None)
            if len(scores) > 1 and metric in spread:
                mean = sum(scores) / len(scores)
                spread[metric].append(math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1)))
        out[column_of[metric]] = pd.Series(means, index=out.index, dtype=object)
    notes: dict[str, object] = {"repeats": max(len(ks) for ks in positions.values()), "rows_read": len(frame),
                                "samples": len(out)}
    notes["repeat_sd"] = {m: round(sum(v) / len(v), 6) for m, v in spread.items() if v}
    return out, notes
