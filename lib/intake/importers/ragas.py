"""Ragas results: `EvaluationResult.to_pandas()` as CSV or Parquet, and an experiment's JSONL.

Ragas' column names (user_input, response, retrieved_contexts, reference and
the metric names) are the aliases lib.intake.ingest already knows. What is Ragas' own:
- pandas writes a list column to CSV as a Python list (`['p1', 'p2']`), read
  here as a literal (never evaluated as code);
- a metric built with parameters names its column with them
  (`factual_correctness(mode=f1)`): the name before the parenthesis maps;
- rows carry no id (the index is the row number): a sample's id is a hash of
  its question and reference, so a reordered file pairs the same samples;
- no Ragas file records the Ragas version or the grader, so both come from the user.
A numeric column that is neither a field nor a known metric is listed, never dropped in silence.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pandas as pd

from lib.core.samples import CONTEXTS, GROUND_TRUTH, QUESTION
from lib.intake.importers.base import Imported, content_id
from lib.intake.ingest import FIELD_COLUMNS, METRIC_COLUMNS, SAMPLE_ID
from lib.intake.reading import read_table

PARAMETERS = re.compile(r"^\s*([A-Za-z_][\w]*)\s*\(.*\)\s*$")   # factual_correctness(mode=f1)


def _python_list(cell: object) -> object:
    """A CSV cell holding a Python list literal -> the list; anything else unchanged (validation judges it)."""
    if not isinstance(cell, str) or not cell.lstrip().startswith("["):
        return cell
    try:
        return json.loads(cell)
    except json.JSONDecodeError:
        pass
    try:
        value = ast.literal_eval(cell)   # literals only: a list of strings, never code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return cell
    return value if isinstance(value, list) else cell


def _scores(column: pd.Series) -> bool:
    """A column that reads as scores: every value a number or missing (Ragas writes NaN where it failed)."""
    values = pd.to_numeric(column, errors="coerce")
    return bool((values.notna() | column.isna()).all())


def metric_of(column: str) -> str | None:
    """Our metric for a Ragas score column, parameters and all (None: not one we know)."""
    name = str(column).strip()
    match = PARAMETERS.match(name)
    base = match.group(1) if match else name
    return next((m for m, aliases in METRIC_COLUMNS.items() if base in aliases), None)


def read_ragas(path: str | Path, *, version: str | None = None) -> Imported:
    """Read a Ragas result table or experiment file."""
    frame = read_table(path)
    if Path(path).suffix.lower() == ".csv":
        for name in FIELD_COLUMNS[CONTEXTS]:
            if name in frame.columns:
                frame[name] = frame[name].map(_python_list)
    known_fields = {a for aliases in FIELD_COLUMNS.values() for a in aliases}
    sources: dict[str, str] = {}
    renames: dict[str, str] = {}
    unmapped: list[str] = []
    for column in frame.columns:
        name = str(column).strip()
        if name in known_fields:
            continue
        metric = metric_of(name)
        if metric is not None and metric not in sources:
            sources[metric] = name
            if name not in METRIC_COLUMNS[metric]:
                renames[column] = metric
        elif metric is not None or _scores(frame[column]):
            unmapped.append(name)
    frame = frame.rename(columns=renames)
    notes: dict[str, object] = {}
    columns = {str(c).strip() for c in frame.columns}
    if not any(a in columns for a in FIELD_COLUMNS[SAMPLE_ID]):
        question = next((frame[a] for a in FIELD_COLUMNS[QUESTION] if a in frame.columns), None)
        reference = next((frame[a] for a in FIELD_COLUMNS[GROUND_TRUTH] if a in frame.columns), None)
        if question is not None:
            refs = reference.tolist() if reference is not None else [None] * len(frame)
            ids = [content_id(q, r) for q, r in zip(question.tolist(), refs, strict=True)]
            frame.insert(0, "id", ids)
            notes["sample_ids"] = "hash of question and reference"
    if unmapped:
        notes["unmapped_columns"] = unmapped
    return Imported(frame, "ragas", version, sources, notes=notes)
