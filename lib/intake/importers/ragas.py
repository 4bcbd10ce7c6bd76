"""Ragas results: `EvaluationResult.to_pandas()` as CSV or Parquet, and an experiment's JSONL.

Ragas' column names (user_input, response, retrieved_contexts, reference and
the metric names) are the aliases lib.intake.ingest already knows. Two things are
Ragas' own: pandas writes a list column to CSV as a Python list
(`['p1', 'p2']`), read here as a literal (never evaluated as code); and no
Ragas file records the Ragas version, so it comes from the user.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from lib.core.samples import CONTEXTS
from lib.intake.importers.base import Imported
from lib.intake.ingest import FIELD_COLUMNS, METRIC_COLUMNS
from lib.intake.reading import read_table


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


def read_ragas(path: str | Path, *, version: str | None = None) -> Imported:
    """Read a Ragas result table or experiment file."""
    frame = read_table(path)
    if Path(path).suffix.lower() == ".csv":
        for name in FIELD_COLUMNS[CONTEXTS]:
            if name in frame.columns:
                frame[name] = frame[name].map(_python_list)
    columns = {str(c).strip() for c in frame.columns}
    sources = {metric: next(a for a in aliases if a in columns)
               for metric, aliases in METRIC_COLUMNS.items() if any(a in columns for a in aliases)}
    return Imported(frame, "ragas", version, sources)
