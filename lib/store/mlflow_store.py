"""Reading an MLflow tracking store (a SQLite file, `sqlite:///mlflow.db`): the evaluations' traces and scores.

Another program's database, opened read-only (SQLite's `mode=ro`): nothing is ever written to it. Only the
tables `mlflow.genai.evaluate` fills are read (checked with MLflow 3.17): `runs` and their `tags`, the traces a
run made (`trace_request_metadata` key `mlflow.sourceRun`, with the trace's inputs and outputs), the RETRIEVER
spans' outputs (the passages) and the assessments (the judges' feedback and the expectations). Every query takes
parameters; the interpretation is lib.intake.importers.mlflow's.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from lib.core.errors import InputError
from lib.core.settings import load as load_settings

NEEDED = ("runs", "tags", "trace_info", "trace_request_metadata", "spans", "assessments")


@dataclass(frozen=True)
class MlflowRun:
    """One MLflow run: its id, name, experiment, start (epoch ms) and run type tag (genai_evaluate, ...)."""

    run_id: str
    name: str
    experiment: str
    start_ms: int | None
    run_type: str | None


@dataclass(frozen=True)
class MlflowTrace:
    """One trace of an evaluation: its inputs and outputs (JSON text), the RETRIEVER spans' content (JSON text,
    in start order) and its assessments."""

    trace_id: str
    timestamp_ms: int | None
    inputs: str | None
    outputs: str | None
    retrievals: tuple[str, ...]
    assessments: tuple[MlflowAssessment, ...]


@dataclass(frozen=True)
class MlflowAssessment:
    """One assessment as MLflow stores it: feedback (a judge's) or expectation; value is JSON text."""

    name: str
    kind: str
    value: str | None
    error: str | None
    source_type: str | None
    source_id: str | None


def _connect(path: Path) -> sqlite3.Connection:
    source = str(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    if head != b"SQLite format 3\x00":
        raise InputError("not an MLflow tracking store (not a SQLite file)", source=source)
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise InputError(f"not a readable MLflow tracking store: {exc}", source=source) from None
    missing = [t for t in NEEDED if t not in tables]
    if missing:
        conn.close()
        raise InputError("not an MLflow tracking store with traces (no table " + ", ".join(missing) + "; "
                         "MLflow 3 keeps mlflow.genai.evaluate's results there)", source=source)
    return conn


def mlflow_runs(path: str | Path) -> list[MlflowRun]:
    """The store's runs that made traces (evaluations), oldest first.

    Raises:
        InputError: not a SQLite file, or not an MLflow store with traces.
    """
    conn = _connect(Path(path))
    try:
        rows = conn.execute(
            "SELECT r.run_uuid, r.name, e.name, r.start_time, "
            "  (SELECT t.value FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = 'mlflow.runType') "
            "FROM runs r LEFT JOIN experiments e ON e.experiment_id = r.experiment_id "
            "WHERE r.lifecycle_stage = 'active' AND EXISTS (SELECT 1 FROM trace_request_metadata m "
            "  WHERE m.key = 'mlflow.sourceRun' AND m.value = r.run_uuid) "
            "ORDER BY r.start_time, r.run_uuid").fetchall()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a readable MLflow tracking store: {exc}", source=str(path)) from None
    finally:
        conn.close()
    return [MlflowRun(run_id=r[0], name=r[1] or "", experiment=r[2] or "", start_ms=r[3], run_type=r[4])
            for r in rows]


# Each trace's text, measured by SQLite (length() of the bytes) before a byte of it is read, in the order the
# importer reads it: the run's traces come from a join, and a store whose ids repeat would give each row again.
_SIZES = (
    "SELECT i.request_id, "
    "  (SELECT coalesce(sum(length(CAST(v.value AS BLOB))), 0) FROM trace_request_metadata v "
    "   WHERE v.request_id = i.request_id AND v.key = 'mlflow.traceInputs'), "
    "  (SELECT coalesce(sum(length(CAST(v.value AS BLOB))), 0) FROM trace_request_metadata v "
    "   WHERE v.request_id = i.request_id AND v.key = 'mlflow.traceOutputs'), "
    "  (SELECT coalesce(sum(length(CAST(s.content AS BLOB))), 0) FROM spans s "
    "   WHERE s.trace_id = i.request_id AND s.type = 'RETRIEVER'), "
    "  (SELECT coalesce(sum(" + " + ".join(f"coalesce(length(CAST(a.{c} AS BLOB)), 0)"
                                        for c in ("name", "assessment_type", "value", "error", "source_type",
                                                  "source_id")) + "), 0) "
    "   FROM assessments a WHERE a.trace_id = i.request_id AND (a.valid IS NULL OR a.valid = 1)) "
    "FROM trace_info i JOIN trace_request_metadata m ON m.request_id = i.request_id "
    "WHERE m.key = 'mlflow.sourceRun' AND m.value = ? ORDER BY i.timestamp_ms, i.request_id")
_PARTS = ("inputs", "outputs", "spans", "assessments")   # the field an over-limit error names, in _SIZES' column order
# The same rows' trace ids alone, in the same order: a repeated id is found before _SIZES' measures run, which
# cost a scan of the metadata table per row (a store naming one trace 3,000 times: 1.5 CPU s, now 0.01)
_IDS = ("SELECT i.request_id FROM trace_info i JOIN trace_request_metadata m ON m.request_id = i.request_id "
        "WHERE m.key = 'mlflow.sourceRun' AND m.value = ? ORDER BY i.timestamp_ms, i.request_id")


def _check_sizes(conn: sqlite3.Connection, run_id: str, source: str) -> None:
    """Refuse an evaluation whose trace ids repeat, or whose text together passes EVALDRIFT_MAX_INPUT_BYTES,
    from SQLite's measure of it: nothing is read into Python before.

    Raises:
        InputError: naming the row (the trace's place in the evaluation), the field and the limit.
    """
    limit = load_settings().max_input_bytes
    first_row: dict[str, int] = {}
    for row, (trace_id,) in enumerate(conn.execute(_IDS, (run_id,)), start=1):
        if trace_id in first_row:
            raise InputError(f"rows {first_row[trace_id]} and {row} are one trace, {trace_id!r}: a trace id given "
                             f"twice (in trace_info, or the evaluation's mlflow.sourceRun metadata) is not a store "
                             f"MLflow writes", row=row, field="request_id", source=source)
        first_row[trace_id] = row
    total = 0
    for row, (_, *sizes) in enumerate(conn.execute(_SIZES, (run_id,)), start=1):
        for field, size in zip(_PARTS, sizes, strict=True):
            total += int(size or 0)
            if total > limit:
                raise InputError(f"the evaluation's text reaches more than {limit:,} bytes here, over the limit of "
                                 f"{limit:,} (EVALDRIFT_MAX_INPUT_BYTES; an operator can raise it); refused before "
                                 f"it was read", row=row, field=field, source=source)


def mlflow_traces(path: str | Path, run_id: str) -> list[MlflowTrace]:
    """The traces an MLflow run made, in time order, with their passages and assessments.

    Before any text is read, the traces' sizes are measured in SQLite: a trace id given twice, or text
    together over EVALDRIFT_MAX_INPUT_BYTES, is refused (a store's rows can repeat what a file holds once).

    Raises:
        InputError: not a SQLite file, not an MLflow store with traces, a trace id given twice, or over the limit.
    """
    conn = _connect(Path(path))
    try:
        _check_sizes(conn, run_id, str(path))
        traces = conn.execute(
            "SELECT i.request_id, i.timestamp_ms, "
            "  (SELECT v.value FROM trace_request_metadata v WHERE v.request_id = i.request_id "
            "   AND v.key = 'mlflow.traceInputs'), "
            "  (SELECT v.value FROM trace_request_metadata v WHERE v.request_id = i.request_id "
            "   AND v.key = 'mlflow.traceOutputs') "
            "FROM trace_info i JOIN trace_request_metadata m ON m.request_id = i.request_id "
            "WHERE m.key = 'mlflow.sourceRun' AND m.value = ? ORDER BY i.timestamp_ms, i.request_id",
            (run_id,)).fetchall()
        out = []
        for trace_id, timestamp, inputs, outputs in traces:
            spans = conn.execute("SELECT content FROM spans WHERE trace_id = ? AND type = 'RETRIEVER' "
                                 "ORDER BY start_time_unix_nano", (trace_id,)).fetchall()
            marks = conn.execute(
                "SELECT name, assessment_type, value, error, source_type, source_id FROM assessments "
                "WHERE trace_id = ? AND (valid IS NULL OR valid = 1) ORDER BY created_timestamp, assessment_id",
                (trace_id,)).fetchall()
            out.append(MlflowTrace(trace_id=trace_id, timestamp_ms=timestamp, inputs=inputs, outputs=outputs,
                                   retrievals=tuple(s[0] for s in spans if s[0]),
                                   assessments=tuple(MlflowAssessment(name=a[0], kind=a[1], value=a[2],
                                                                      error=a[3], source_type=a[4],
                                                                      source_id=a[5]) for a in marks)))
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a readable MLflow tracking store: {exc}", source=str(path)) from None
    finally:
        conn.close()
    return out
