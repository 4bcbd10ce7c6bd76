"""The Import page's work, without Streamlit: an uploaded file's column mapping, every bad row, the run.

A page shows what these return; a test calls them with bytes. The upload is
written to a private temporary file (only so the readers of lib.intake.ingest can read
it by its extension) and removed at once; nothing the browser sends chooses a
path, and nothing is recorded until the page asks.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError
from lib.intake.ingest import FIELD_COLUMNS, METRIC_COLUMNS, SAMPLE_ID, fields_needed, records_from_frame
from lib.intake.reading import read_table

MAX_ERRORS = 200       # a file with more bad rows than this shows the first 200
SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


@dataclass(frozen=True)
class Upload:
    """An uploaded file, read: its table (None when unreadable) and every problem found, by row and field."""

    name: str
    frame: pd.DataFrame | None
    errors: tuple[InputError, ...]

    @property
    def ok(self) -> bool:
        return self.frame is not None and not self.errors

    def error_table(self) -> pd.DataFrame:
        """One line per problem: row, field, message (text for a data grid, never HTML)."""
        return pd.DataFrame([{"row": e.row, "field": e.field, "problem": e.reason} for e in self.errors],
                            columns=["row", "field", "problem"])


def read_upload(name: str, data: bytes, *, metrics: Sequence[str] = ()) -> Upload:
    """Read an uploaded file's bytes and validate every row (the first MAX_ERRORS problems).

    Args:
        name: the uploaded file's name (only its extension is used).
        data: its bytes.
        metrics: metrics to be scored (their fields must be present).
    """
    suffix = Path(name).suffix.lower()
    if suffix not in SUFFIXES:
        return Upload(name, None, (InputError(f"unsupported file type {suffix or '(none)'!r}; use "
                                              f"{', '.join(SUFFIXES)}", source=name),))
    fd, tmp = tempfile.mkstemp(suffix=suffix, prefix="evaldrift-upload-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        frame = read_table(tmp)
    except InputError as exc:
        return Upload(name, None, (_renamed(exc, name),))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return Upload(name, frame, tuple(validate_rows(frame, name, metrics)))


def _renamed(exc: InputError, name: str) -> InputError:
    return InputError(exc.reason, row=exc.row, field=exc.field, source=name)


def validate_rows(frame: pd.DataFrame, source: str, metrics: Sequence[str] = ()) -> list[InputError]:
    """Every problem in a table: a column problem alone, else each bad row's first bad field, in row order.

    The table is validated whole; at a bad row the check goes on from the row after it, so a clean file
    costs one pass and each bad row one more pass over what follows it.
    """
    errors: list[InputError] = []
    rest = frame
    while len(errors) < MAX_ERRORS:
        try:
            records_from_frame(rest, source=source, metrics=metrics)
            return errors
        except InputError as exc:
            if exc.row is None:            # a column problem, or no rows: nothing row by row to add
                return errors or [exc]
            errors.append(exc)
            position = rest.index.get_loc(exc.row) if rest.index.name == "row" else exc.row - 1
            rest = rest.iloc[position + 1:]
            if rest.empty:
                return errors
    return errors


def column_mapping(frame: pd.DataFrame | None, metrics: Sequence[str] = ()) -> pd.DataFrame:
    """Our names, the aliases we recognise, the column of the file that gives each, and whether it is needed."""
    columns = [] if frame is None else [str(c).strip() for c in frame.columns]
    need = fields_needed(columns, metrics)
    rows = []
    for canon, aliases in {**FIELD_COLUMNS, **METRIC_COLUMNS}.items():
        found = [a for a in aliases if a in columns]
        if canon in FIELD_COLUMNS:
            why = need.get(canon, "optional: no metric in play receives it" if canon != SAMPLE_ID
                           else "optional: rows are numbered")
        else:
            why = "a score column (optional)"
        rows.append({"our name": canon, "also accepted": ", ".join(aliases[1:]) or "-",
                     "your column": ", ".join(found) or "-", "needed": why})
    return pd.DataFrame(rows)
