"""People's labels from a file (CSV or JSONL) or from the CLI, checked whole before any is stored.

| column | meaning | required |
|---|---|---|
| `sample_id` (or `id`) | the sample, as the store has it | this, or `question` + `ground_truth` |
| `question`, `ground_truth` | the sample by its content (both must match one stored sample) | or `sample_id` |
| `metric` | one of the five metrics | yes |
| `item` | 1-based claim, passage or statement number; empty for the whole sample | no |
| `label` | binary: true/false, 1/0, yes/no, or the metric's verdict words | this or `score` |
| `score` | a score in [0, 1] | this or `label` |
| `labeller` | who labelled (else the `--labeller` given) | yes |
| `labelled_at` | ISO time (default: now) | no |
| `suite` | default `main` | no |
| `run_id` | the run whose copy of the sample was labelled (default: the latest run holding it) | no |
| `note` | free text | no |

A bad row is refused with its row (1-based line or data row) and field named, and nothing is stored.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from lib.core.errors import InputError
from lib.core.labels import BINARY, SCORE, Label, check_value, content_key, label_items
from lib.core.metrics import METRICS
from lib.core.records import MAIN
from lib.intake.importers.base import parse_time
from lib.store import Store

COLUMNS = ("sample_id", "id", "question", "ground_truth", "metric", "item", "label", "score", "labeller",
           "labelled_at", "suite", "run_id", "note")
_YES = {"true", "1", "yes", "y", "1.0"}
_NO = {"false", "0", "no", "n", "0.0"}


def read_rows(path: str | Path) -> list[dict[str, object]]:
    """A labels file's rows (CSV with a header, or JSONL of objects), with their 1-based row numbers."""
    path = Path(path)
    source = path.name
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"not JSON: {exc.msg}", row=n, source=source) from None
                if not isinstance(obj, dict):
                    raise InputError("each line must be a JSON object", row=n, source=source)
                rows.append({"_row": n, **obj})
        return rows
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as fh:
            return [{"_row": n, **{k: v for k, v in r.items() if k is not None}}
                    for n, r in enumerate(csv.DictReader(fh), start=1)]
    raise InputError("a labels file is .csv or .jsonl", source=source)


def _text(row: Mapping[str, object], name: str) -> str:
    value = row.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _binary(value: object, metric: str) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and value in (0, 1):
        return float(value)
    text = str(value).strip().lower()
    pos, neg = METRICS[metric].labels
    if text in _YES or text == pos:
        return 1.0
    if text in _NO or text == neg:
        return 0.0
    return None


def labels_from_rows(store: Store, rows: Sequence[Mapping[str, object]], *, source: str,
                     labeller: str | None = None, now: datetime | None = None) -> list[Label]:
    """Check every row and make its Label; the first bad row raises InputError naming it and its field.

    Args:
        store: where the samples are (ids are resolved and content hashed against it).
        rows: mappings of the columns above; `_row` (if present) is the row number errors name.
        source: the door ("file:<name>", "cli", "dashboard"); file errors name the file.
        labeller: who labelled, for rows without a `labeller`.
        now: the time for rows without `labelled_at`.
    """
    now = now or datetime.now().replace(microsecond=0)
    where = source.removeprefix("file:")
    out: list[Label] = []
    seen: dict[tuple, int] = {}
    for k, row in enumerate(rows, start=1):
        n = int(str(row.get("_row", k)))

        def bad(message: str, field: str | None, n: int = n) -> InputError:
            return InputError(message, row=n, field=field, source=where)

        unknown = sorted(set(row) - set(COLUMNS) - {"_row"})
        if unknown:
            raise bad(f"unknown column {unknown[0]!r}; known: {', '.join(COLUMNS)}", unknown[0])
        suite = _text(row, "suite") or MAIN
        metric = _text(row, "metric")
        if metric not in METRICS:
            raise bad(f"unknown metric {metric!r}; known: {', '.join(METRICS)}" if metric else "missing metric",
                      "metric")
        sid = _text(row, "sample_id") or _text(row, "id")
        if not sid:
            question, truth = _text(row, "question"), _text(row, "ground_truth")
            if not question or not truth:
                raise bad("give sample_id, or question and ground_truth to find the sample by its content",
                          "sample_id")
            found = store.sample_ids_by_content(suite, question, truth)
            if len(found) != 1:
                raise bad(f"{'no' if not found else len(found)} samples of suite {suite!r} have this question "
                          f"and ground_truth{'' if not found else ': give sample_id'}", "question")
            sid = found[0]
        run_id = _text(row, "run_id") or None
        sample = store.latest_samples(suite, [sid], run_id).get(sid)
        if sample is None:
            what = f"run {run_id!r}" if run_id else f"suite {suite!r}"
            raise bad(f"no sample {sid!r} in {what}", "run_id" if run_id else "sample_id")
        item_text = _text(row, "item")
        item: int | None = None
        if item_text:
            try:
                item = int(float(item_text))
                if item != float(item_text):
                    raise ValueError
            except ValueError:
                raise bad(f"item must be a whole number, got {item_text!r}", "item") from None
            n_items = len(label_items(metric, sample))
            if not 1 <= item <= n_items:
                raise bad(f"sample {sid!r} has {n_items} items for {metric}; item {item} is not one", "item")
        has_label, has_score = _text(row, "label") != "", _text(row, "score") != ""
        if has_label == has_score:
            raise bad("give exactly one of label (binary) and score (in [0, 1])", "label")
        if has_label:
            kind, value = BINARY, _binary(row.get("label"), metric)
            if value is None:
                pos, neg = METRICS[metric].labels
                raise bad(f"a binary label is true/false, 1/0, yes/no, {pos}/{neg}; got {row.get('label')!r}",
                          "label")
        else:
            kind = SCORE
            try:
                value = float(row.get("score"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise bad(f"score must be a number, got {row.get('score')!r}", "score") from None
        problem = check_value(kind, value)
        if problem:
            raise bad(problem, "label" if kind == BINARY else "score")
        who = _text(row, "labeller") or (labeller or "").strip()
        if not who:
            raise bad("missing labeller (a column, or --labeller)", "labeller")
        when = now
        if _text(row, "labelled_at"):
            when = parse_time(_text(row, "labelled_at"))  # type: ignore[assignment]
            if when is None:
                raise bad(f"not an ISO time: {row.get('labelled_at')!r}", "labelled_at")
        label = Label(suite=suite, sample_id=sid, metric=metric, item=item, kind=kind, value=value,
                      content=content_key(metric, sample), labeller=who, labelled_at=when, source=source,
                      note=_text(row, "note"))
        if label.key in seen:
            raise bad(f"the same label twice in one file (first at row {seen[label.key]}); keep one", "sample_id")
        seen[label.key] = n
        out.append(label)
    return out


def import_labels(store: Store, path: str | Path, *, labeller: str | None = None) -> list[Label]:
    """Check a labels file whole and store its labels (all or none); returns what was stored, with seq."""
    rows = read_rows(path)
    if not rows:
        raise InputError("no labels in the file", source=Path(path).name)
    labels = labels_from_rows(store, rows, source=f"file:{Path(path).name}", labeller=labeller)
    seqs = store.add_labels(labels)
    return [replace(lab, seq=s) for lab, s in zip(labels, seqs, strict=True)]
