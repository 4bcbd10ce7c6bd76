"""The Import page's work, without Streamlit: an uploaded file's column mapping, every bad row, the run.

A page shows what these return; a test calls them with bytes. The upload is
written to a private temporary file (only so the readers of lib.intake.ingest can read
it by its extension) and removed at once; nothing the browser sends chooses a
path, and nothing is recorded until the page asks.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from lib.core.errors import InputError
from lib.intake.ingest import FIELD_COLUMNS, METRIC_COLUMNS, SAMPLE_ID, fields_needed, records_from_frame
from lib.intake.reading import read_table

if TYPE_CHECKING:
    from lib.intake.importers import ImportPlan
    from lib.store import Store

MAX_ERRORS = 200       # a file with more bad rows than this shows the first 200
SUFFIXES = (".jsonl", ".json", ".csv", ".parquet", ".eval", ".db")
TABLE = "table"        # our own format: one row per sample (lib.intake.ingest)
READ_AS = {TABLE: "your own table (one row per sample)", "ragas": "a Ragas result (to_pandas() or an experiment)",
           "inspect": "an Inspect AI log", "promptfoo": "a promptfoo results.json",
           "deepeval": "a DeepEval test run (test_run_*.json)", "mlflow": "an MLflow tracking store (mlflow.db)"}
RAGAS_COLUMNS = ("user_input", "response", "retrieved_contexts")


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
        return Upload(name, None, (_renamed(exc, name, tmp),))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return Upload(name, frame, tuple(validate_rows(frame, name, metrics)))


def _renamed(exc: InputError, name: str, spooled: str | Path) -> InputError:
    """The error as the page shows it: the upload's name where the reader named its private temporary file."""
    return InputError(exc.reason.replace(str(spooled), name), row=exc.row, field=exc.field, source=name)


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


@contextlib.contextmanager
def _spooled(name: str, data: bytes) -> Iterator[Path]:
    """The upload's bytes in a private temporary file with the upload's extension (removed on exit)."""
    fd, tmp = tempfile.mkstemp(suffix=Path(name).suffix.lower(), prefix="evaldrift-upload-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        yield Path(tmp)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def detect_upload(name: str, data: bytes) -> str:
    """How to read an upload: TABLE (our format) or a tool's format, as the CLI's import detects.

    A table whose columns are Ragas' own names (user_input, response, retrieved_contexts) is a Ragas result.
    """
    from lib.intake.importers import detect

    suffix = Path(name).suffix.lower()
    if suffix in (".eval", ".json", ".db"):
        with _spooled(name, data) as path, contextlib.suppress(InputError):
            return detect(path)
        return TABLE
    head = data[:65536].decode("utf-8", "replace")
    if suffix == ".parquet":
        with _spooled(name, data) as path, contextlib.suppress(Exception):
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
            return "ragas" if any(c in names for c in RAGAS_COLUMNS) else TABLE
        return TABLE
    first = head.splitlines()[0] if head else ""
    return "ragas" if any(f'"{c}"' in first or f"{c}," in first or first.endswith(c) for c in RAGAS_COLUMNS) \
        else TABLE


def promptfoo_targets(name: str, data: bytes) -> list[str]:
    """The providers (each one run) a promptfoo upload holds ([] when unreadable: reading it says why)."""
    from lib.intake.importers.promptfoo import targets

    with _spooled(name, data) as path, contextlib.suppress(InputError):
        return targets(path)
    return []


def mlflow_evaluations(name: str, data: bytes) -> list[str]:
    """The evaluations (each one run) an uploaded MLflow store holds ([] when unreadable: reading it says why)."""
    from lib.intake.importers.mlflow import runs_in

    with _spooled(name, data) as path, contextlib.suppress(InputError):
        return runs_in(path)
    return []


# The Import page's own fields, named where the CLI would name a flag (lib.intake.importers.CLI_ASKS)
PAGE_ASKS = {"grader": "the Grader model field", "tool_version": "the Tool version field",
             "metric_map": "the Metric map field (SCORER=METRIC)", "started_at": "the Start time field"}


def prepare_tool_upload(name: str, data: bytes, *, fmt: str, run_id: str, started_at: datetime | None = None,
                        pipeline: Mapping[str, object] | None = None, version: str | None = None,
                        grader: str | None = None, provider: str | None = None,
                        metric_map: Mapping[str, str] | None = None) -> ImportPlan:
    """An uploaded tool file read into a run with what was detected (lib.intake.importers.prepare_import).

    Raises:
        InputError: as the CLI's import, naming the upload.
    """
    from lib.intake.importers import prepare_import

    with _spooled(name, data) as path:
        try:
            return prepare_import(path, run_id=run_id, fmt=fmt, started_at=started_at, pipeline=pipeline,
                                  version=version or None, grader=grader or None, provider=provider or None,
                                  metric_map=metric_map or None, source=name, asks=PAGE_ASKS)
        except InputError as exc:   # a reader names the file it read: the server's temporary path, never shown
            raise _renamed(exc, name, path) from None


def run_facts(started_at: str, pipeline: str) -> tuple[datetime | None, dict | None]:
    """The start time (ISO) and pipeline (a JSON object) typed on the page; empty text is 'not given'.

    Raises:
        InputError: naming the field that does not parse.
    """
    when = None
    if started_at.strip():
        try:
            when = datetime.fromisoformat(started_at.strip())
        except ValueError:
            raise InputError(f"not an ISO date-time such as 2026-10-03T02:00: {started_at.strip()[:40]!r}",
                             field="started_at") from None
        when = when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when
    config = None
    if pipeline.strip():
        try:
            config = json.loads(pipeline)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg} (column {exc.colno})", field="pipeline") from None
        if not isinstance(config, dict):
            raise InputError('must be a JSON object, e.g. {"retriever": {"top_k": 3}}', field="pipeline")
    return when, config


def metric_map_from(text: str) -> dict[str, str]:
    """'SCORER=METRIC, ...' (the CLI's --metric-map, comma-separated) -> a mapping.

    Raises:
        InputError: a pair that is not SCORER=METRIC with a metric we know.
    """
    from lib.core.metrics import METRIC_NAMES

    out = {}
    for pair in (p.strip() for p in text.split(",") if p.strip()):
        scorer, sep, metric = pair.partition("=")
        if not sep or not scorer.strip() or metric.strip() not in METRIC_NAMES:
            raise InputError(f"wants SCORER=METRIC with METRIC one of {', '.join(METRIC_NAMES)}, got {pair!r}",
                             field="metric_map")
        out[scorer.strip()] = metric.strip()
    return out


def unknown_columns(frame: pd.DataFrame | None) -> list[tuple[str, str | None]]:
    """Columns no field or score of ours reads, each with the name it most likely meant (None: no close one)."""
    if frame is None:
        return []
    known = [a for aliases in {**FIELD_COLUMNS, **METRIC_COLUMNS}.values() for a in aliases]
    out = []
    for column in (str(c).strip() for c in frame.columns):
        if column not in known:
            close = difflib.get_close_matches(column.lower(), known, n=1, cutoff=0.6)
            out.append((column, close[0] if close else None))
    return out


def has_scores(frame: pd.DataFrame | None) -> bool:
    """True when the table carries at least one score column of ours."""
    if frame is None:
        return False
    names = {str(c).strip() for c in frame.columns}
    return any(a in names for aliases in METRIC_COLUMNS.values() for a in aliases)


def plan_table(plan: ImportPlan) -> pd.DataFrame:
    """What an import detected, one line per fact (text for a data grid, never HTML)."""
    run = plan.run
    notes = dict(plan.notes)
    rows = [("tool", f"{plan.tool} {plan.version or '(version not recorded)'}"),
            ("grader", f"{plan.grader} (from {plan.grader_source})" if plan.grader else "not recorded"),
            ("samples", str(len(run.samples["main"])) + (f" ({notes['rows_read']} rows: up to {notes['repeats']} "
                                                         f"repeats each)" if notes.get("repeats") else "")),
            ("sample ids", str(notes.get("sample_ids", "the file's own ids"))),
            ("started at", f"{run.started_at:%Y-%m-%d %H:%M}"),
            ("pipeline", json.dumps(dict(run.pipeline), sort_keys=True) if run.pipeline else "none recorded")]
    several = len({g for g in plan.graders.values() if g}) > 1   # metrics graded by different models: each named
    rows += [(f"metric {m}", f"from {source}" + (f", graded by {plan.graders[m]}" if several and plan.graders.get(m)
                                                 else "")) for m, source in plan.sources.items()]
    from lib.core.profiles import profile_lines

    rows += [("wiring profile", line) for line in profile_lines(plan.tool)]
    return pd.DataFrame(rows, columns=["what", "detected"])


def record_import(store: Store, plan: ImportPlan) -> None:
    """Record a prepared import (lib.intake.importers.ImportPlan) in the store, all or nothing."""
    store.record_run(plan.run)
