"""MLflow GenAI evaluations (`mlflow.genai.evaluate`) from a local tracking store (`mlflow.db`) -> one run.

MLflow keeps an evaluation as a run whose traces each hold one sample: the trace's inputs give the question
(the `question`, `query`, `input` or `request` input, or the only one), its outputs the answer, its RETRIEVER
spans' documents the passages (`page_content`, in order), and its `expected_response` expectation the
reference (else `expected_facts`, joined). Each judge's feedback is a score (`yes` 1, `no` 0, a number as it
is; one with an error is not scored):

| MLflow scorer | our metric |
|---|---|
| `retrieval_groundedness` | faithfulness |
| `relevance_to_query` | answer_relevance |
| `retrieval_sufficiency` | context_recall |
| `correctness` | answer_correctness |

Other feedback (`retrieval_relevance`, guidelines, custom scorers) maps with metric_map (NAME=METRIC) or is
listed as not read. The grader is the feedback's source (`openai:/gpt-4o-mini`); the start time is the run's.
A store holding several evaluations is several runs: one is chosen (`run`: its id or name), never averaged.
An error's row is the trace's place in the evaluation, oldest first.
MLflow records neither its version in the store nor a sample id: the version comes from the user, and a sample's
id is a hash of its question and reference, so a reordered dataset pairs the same samples and a question asked
twice is one sample repeated.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError, cut
from lib.core.jsontext import loads
from lib.core.validate import EARLIEST, LATEST
from lib.intake.importers.base import Imported, content_id
from lib.store.mlflow_store import MlflowRun, MlflowTrace, mlflow_runs, mlflow_traces

SCORERS = {"retrieval_groundedness": "faithfulness", "relevance_to_query": "answer_relevance",
           "retrieval_sufficiency": "context_recall", "correctness": "answer_correctness"}
QUESTION_KEYS = ("question", "query", "input", "request", "user_input")
ANSWER_KEYS = ("response", "output", "answer", "content")
GRADER_PLACE = "the assessments' source (LLM_JUDGE)"


@dataclass(frozen=True)
class _Where:
    """The trace being read, for an error that names the file, the row and the field."""

    source: str
    row: int


def _json(text: str | None, where: _Where, field: str) -> object:
    """A JSON value MLflow stored as text, read strictly (a doubled key or deep nesting is refused by name)."""
    if text is None:
        return None
    if not isinstance(text, str):   # SQLite keeps whatever a column is given: an integer is no JSON text
        raise InputError(f"must be JSON text as MLflow writes it, got {_kind(text)}", row=where.row, field=field,
                         source=where.source)
    try:
        return loads(text)
    except ValueError as exc:
        raise InputError(f"not JSON as MLflow writes it: {exc}", row=where.row, field=field,
                         source=where.source) from None


def _pick(value: object, keys: tuple[str, ...]) -> object:
    """The text in a trace's inputs or outputs: a string as it is, else the named key or the only one."""
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                return value[key]
        if len(value) == 1:
            return next(iter(value.values()))
    return value


def _passages(span: str, where: _Where) -> list[object]:
    content = _json(span, where, "retriever span")
    attributes = content.get("attributes") if isinstance(content, dict) else None
    outputs = attributes.get("mlflow.spanOutputs") if isinstance(attributes, dict) else None
    documents = _json(outputs, where, "retriever span outputs") if isinstance(outputs, str) else None
    if not isinstance(documents, list):
        return []
    return [d.get("page_content") if isinstance(d, dict) else d for d in documents]


def _score(value: object) -> object:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return 1.0 if value.strip().lower() == "yes" else 0.0
    return value   # a number, or what validation refuses with its row and field


def _started(start_ms: object, source: str) -> datetime | None:
    """The run's start time (epoch milliseconds, as MLflow stores it) as naive UTC; anything else refused by name."""
    if start_ms is None:
        return None
    lowest, highest = (int((t - datetime(1970, 1, 1)).total_seconds() * 1000) for t in (EARLIEST, LATEST))
    if isinstance(start_ms, bool) or not isinstance(start_ms, int) or not lowest <= start_ms < highest:
        raise InputError(f"must be a time in milliseconds since 1970 (between {EARLIEST.year} and "
                         f"{LATEST.year - 1}), got {cut(start_ms)}", field="start_time", source=source)
    return datetime.fromtimestamp(start_ms / 1000, UTC).replace(tzinfo=None, microsecond=0)


def _kind(value: object) -> str:
    return {int: "an integer", float: "a number", bytes: "bytes"}.get(type(value), type(value).__name__)


def runs_in(path: str | Path) -> list[str]:
    """The evaluations a store holds, as `name (run id)`: each is one run."""
    return [_label(r) for r in mlflow_runs(path)]


def _label(run: MlflowRun) -> str:
    return f"{run.name} ({run.run_id})" if run.name else run.run_id


def _choose(path: Path, run: str | None) -> MlflowRun:
    runs = mlflow_runs(path)
    if not runs:
        raise InputError("the MLflow store holds no evaluation with traces", source=str(path))
    if run is None:
        if len(runs) > 1:
            raise InputError(f"this store holds {len(runs)} evaluations ({', '.join(_label(r) for r in runs)}): "
                             f"import each as its own run with --mlflow-run (a run id or name); they are never "
                             f"averaged into one", field="mlflow_run", source=str(path))
        return runs[0]
    chosen = [r for r in runs if run in (r.run_id, r.name, _label(r))]
    if len(chosen) != 1:
        what = "names several evaluations" if chosen else "is not an evaluation there"
        raise InputError(f"{run!r} {what}; the store has: {', '.join(_label(r) for r in runs)}",
                         field="mlflow_run", source=str(path))
    return chosen[0]


def _row(trace: MlflowTrace, where: _Where, names: Mapping[str, str], sources: dict[str, str], graders: Counter,
         unmapped: list[str], errored: Counter) -> dict:
    question = _pick(_json(trace.inputs, where, "inputs"), QUESTION_KEYS)
    row: dict[str, object] = {"question": question,
                              "answer": _pick(_json(trace.outputs, where, "outputs"), ANSWER_KEYS)}
    if trace.retrievals:
        row["contexts"] = [p for span in trace.retrievals for p in _passages(span, where)]
    expectations = {a.name: _json(a.value, where, a.name) for a in trace.assessments if a.kind == "expectation"}
    reference = expectations.get("expected_response")
    facts = expectations.get("expected_facts")
    if reference is None and isinstance(facts, list):
        reference = " ".join(str(f) for f in facts)
    if reference is not None:
        row["ground_truth"] = reference
    for mark in trace.assessments:
        if mark.kind != "feedback":
            continue
        metric = names.get(mark.name)
        if metric is None or sources.setdefault(metric, mark.name) != mark.name:
            if mark.name not in unmapped:
                unmapped.append(mark.name)
            continue
        if mark.source_type == "LLM_JUDGE" and isinstance(mark.source_id, str) and mark.source_id:
            graders[mark.source_id] += 1
        if mark.error:
            errored[metric] += 1
            row[metric] = None
        else:
            row[metric] = _score(_json(mark.value, where, mark.name))
    row["id"] = content_id(question, reference)
    return row


def read_mlflow(path: str | Path, *, run: str | None = None, metric_map: Mapping[str, str] | None = None
                ) -> Imported:
    """Read one evaluation of an MLflow SQLite tracking store (`run`: its id or name, when it holds several)."""
    path = Path(path)
    chosen = _choose(path, run)
    names = {**SCORERS, **(metric_map or {})}
    sources: dict[str, str] = {}
    graders: Counter = Counter()
    unmapped: list[str] = []
    errored: Counter = Counter()
    rows = [_row(t, _Where(str(path), n), names, sources, graders, unmapped, errored)
            for n, t in enumerate(mlflow_traces(path, chosen.run_id), start=1)]
    frame = pd.DataFrame(rows, dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="row")
    grader = ", ".join(sorted(graders)) or None
    notes: dict[str, object] = {"sample_ids": "hash of question and reference", "mlflow_run": chosen.run_id,
                                "mlflow_experiment": chosen.experiment}
    if unmapped:
        notes["unmapped_columns"] = unmapped
    if errored:
        notes["errored_metrics"] = dict(errored)
    warnings: tuple[str, ...] = ()
    if len(graders) > 1:
        warnings = (f"the judges name {len(graders)} graders ({grader}): recorded together as one",)
    started = _started(chosen.start_ms, str(path))
    return Imported(frame, "mlflow", None, sources, grader, started,
                    grader_source=GRADER_PLACE if grader else None, notes=notes, warnings=warnings)
