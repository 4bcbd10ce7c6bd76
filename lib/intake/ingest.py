"""Files and frames -> validated run records -> the store, for runs scored elsewhere.

A nightly job or a Ragas export hands over one table, one row per sample:

| column | also accepted | value | required |
|---|---|---|---|
| `sample_id` | `id` | text (an integer is read as text); unique | no: absent everywhere, ids are `row-<n>` |
| `question` | `user_input` | text | when a metric receives it |
| `answer` | `response` | text | yes |
| `contexts` | `retrieved_contexts` | list of passages (text), in rank order | when a metric receives it |
| `ground_truth` | `reference` | text | when a metric receives it |
| `faithfulness` | | score in [0, 1], or empty/null = not scored | no |
| `answer_relevance` | `answer_relevancy`, `response_relevancy` | as above | no |
| `context_precision` | `llm_context_precision_with_reference` | as above | no |
| `context_recall` | | as above | no |
| `answer_correctness` | `factual_correctness` | as above | no |

A field column may be left out of the file when no metric in play receives it
(the wiring table): a faithfulness-only file needs no `ground_truth` and no
`question`. The metrics in play are the file's score columns, plus those
asked for (`metrics=`, e.g. by `python -m lib score`). The run records the
fields its file had (`RunRecord.fields`); an absent one is stored as empty
text, and an ablation does not offer to blank it.

Columns not named above are ignored. A name and its alias in the same table
(say `question` and `user_input`) is an error: which one is meant is not ours
to guess.

Formats, chosen by the file extension:
- `.jsonl`, `.json`: JSON Lines, one object per line. `contexts` is a JSON
  array; `null` (or a missing key) is a missing value. Blank lines are
  skipped; the bare tokens `NaN` and `Infinity` are not JSON and are refused,
  and so are a key given twice in one object, an integer of more than 30
  digits and nesting too deep to be a record (lib.core.jsontext).
- `.csv`: UTF-8, one header line naming each column once. `contexts` is a JSON array in a cell, e.g.
  `["p1", "p2"]`. An empty cell is a missing value; CSV cannot tell it from an
  empty string, so a sample with an empty answer needs JSONL or Parquet.
- `.parquet`: `contexts` is a list-of-string column; null is a missing value,
  and so is a NaN score (Ragas writes NaN for a metric it failed to compute).

Rows are 1-based data rows, and every error names one: for JSONL the row is
the line number; for CSV the header is not a row, so the first data record is
row 1 (a quoted cell may span lines, so row n is the n-th record, not line
n); for Parquet and frames, the n-th row. An error is an `InputError` with
`.row`, `.field` (the column as the source spells it) and `.source`.

Values:
- Text fields must be text. A missing value (null, NaN, an empty CSV cell), a
  NUL character (it breaks downstream tools) or an unpaired surrogate is an
  error. Anything else (huge strings, emoji, right-to-left text) is kept intact.
- `contexts` must be a list of text. A string is accepted only when it is a
  JSON array of strings; any other string is an error.
- A score is a number in [0, 1] (a numeric string such as "0.5" too). A
  missing value means "not scored": the sample is stored as failed with the
  reason "no score in source", never as 0. Infinity, out-of-range numbers,
  text such as "nan" or "inf", and non-numbers are errors.

Run-level facts (run id, start time, pipeline config, judge model, the
templates and their binding) are arguments, not columns. What is not given is
stored as None: such scores are unattributed, and every page flags them.

The run-level arguments follow lib.core.validate (the rules every door shares):
`started_at` between 1970 and 2199, `pipeline` a JSON object.

Validation is total: every row is checked before anything is written, and the
run is recorded in one transaction, so on any error the store is unchanged.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import pandas as pd

from lib.core.errors import InputError
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import FAILED, OK, SampleResult
from lib.core.samples import ANSWER, CONTEXTS, FIELDS, GROUND_TRUTH, QUESTION, EvalSample
from lib.core.validate import check_run, field_limit, sample_length_problem, text_problem
from lib.intake.reading import ROW_INDEX, describe_value, read_table

SAMPLE_ID = "sample_id"
NO_SCORE = "no score in source"

# Canonical name -> every column name that means it (our name first).
FIELD_COLUMNS: dict[str, tuple[str, ...]] = {
    SAMPLE_ID: (SAMPLE_ID, "id"),
    QUESTION: (QUESTION, "user_input"),
    ANSWER: (ANSWER, "response"),
    CONTEXTS: (CONTEXTS, "retrieved_contexts"),
    GROUND_TRUTH: (GROUND_TRUTH, "reference"),
}
METRIC_COLUMNS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("faithfulness",),
    "answer_relevance": ("answer_relevance", "answer_relevancy", "response_relevancy"),
    "context_precision": ("context_precision", "llm_context_precision_with_reference"),
    "context_recall": ("context_recall",),
    "answer_correctness": ("answer_correctness", "factual_correctness"),
}
assert tuple(METRIC_COLUMNS) == METRIC_NAMES, "METRIC_COLUMNS must follow the metric registry"

_Fail = Callable[..., InputError]  # (message, canonical field) -> the error naming row and column


# -- validating -----------------------------------------------------------------------
def records_from_frame(df: pd.DataFrame, *, source: str, metrics: Sequence[str] = (), repeats: bool = False
                       ) -> tuple[list[EvalSample], dict[str, list[SampleResult]]]:
    """Validate every row of a frame and turn it into samples and per-metric results.

    Works on `read_table`'s frames and on frames built elsewhere (e.g. a Ragas
    result's `to_pandas()`, where NaN in a score column means not scored).

    Args:
        df: one row per sample, columns as in the module docstring.
        source: the file name or frame description errors carry.
        metrics: metrics to be scored from the samples; the fields they receive
            must be present (as must those of the file's own score columns).
        repeats: rows sharing a sample id are repeats of one sample (a tool's
            epochs or --repeat), each validated as a single row is; they must
            ask the same question against the same reference (one id, one
            sample), else the later row is refused naming both. False: a
            shared id is refused as a duplicate.

    Returns:
        The samples in row order (with repeats: one per row, ids repeated),
        and for each metric column present its results keyed by canonical
        metric name, in the same order.

    Raises:
        InputError: for the first bad cell in row order (row = the frame's
            "row" index when it has one, else the 1-based position; field =
            the column as spelled in the source), or a bad column set (row None).
    """
    columns = _resolve_columns(df, source, metrics)
    n = len(df)
    if n == 0:
        raise InputError("no rows: a run needs at least one sample", source=source)
    row_numbers = [int(r) for r in df.index] if df.index.name == ROW_INDEX else list(range(1, n + 1))
    values = {canon: df[col].tolist() for canon, col in columns.items()}
    metrics = [m for m in METRIC_NAMES if m in columns]

    samples: list[EvalSample] = []
    results: dict[str, list[SampleResult]] = {m: [] for m in metrics}
    first_row_of: dict[str, int] = {}
    first_sample_of: dict[str, EvalSample] = {}
    limit = field_limit()
    for i, row in enumerate(row_numbers):
        def bad(message: str, canon: str, row: int = row) -> InputError:
            return InputError(message, row=row, field=columns[canon], source=source)

        if SAMPLE_ID in columns:
            sample_id = _sample_id(values[SAMPLE_ID][i], bad)
        else:
            sample_id = f"row-{row}"
        if sample_id in first_row_of and not repeats:
            raise bad(f"duplicate sample id {sample_id!r} (first at row {first_row_of[sample_id]})", SAMPLE_ID)
        texts = {name: _text(values[name][i], name, bad) if name in columns else ""
                 for name in (QUESTION, ANSWER, GROUND_TRUTH)}
        contexts = _contexts(values[CONTEXTS][i], bad) if CONTEXTS in columns else ()
        ground_truth = texts[GROUND_TRUTH]
        sample = EvalSample(sample_id, texts[QUESTION], texts[ANSWER], contexts, ground_truth)
        if long := sample_length_problem(sample, limit):  # names the sample fields as canon does
            raise bad(long[1], long[0])
        if sample_id in first_row_of:  # a repeat: the same sample, asked again (its answer may differ)
            first = first_row_of[sample_id]
            earlier = first_sample_of[sample_id]
            for name in (QUESTION, GROUND_TRUTH):
                if name in columns and getattr(earlier, name) != getattr(sample, name):
                    raise bad(f"rows {first} and {row} share the id {sample_id!r} but differ in this field: one id "
                              f"is one sample (give each its own id)", name)
        else:
            first_row_of[sample_id] = row
            first_sample_of[sample_id] = sample
        samples.append(sample)
        for metric in metrics:
            score = _score(values[metric][i], metric, bad)
            results[metric].append(SampleResult(sample_id, OK, score) if score is not None
                                   else SampleResult(sample_id, FAILED, reason=NO_SCORE))
    return samples, results


def fields_needed(df_columns: Sequence[object], metrics: Sequence[str] = ()) -> dict[str, str]:
    """Each sample field that must be present -> why (the metric that receives it, or 'every sample')."""
    names = {str(c).strip() for c in df_columns}
    in_play = list(dict.fromkeys([*metrics, *(m for m, aliases in METRIC_COLUMNS.items()
                                               if any(a in names for a in aliases))]))
    need = {ANSWER: "every sample"}
    for m in in_play:
        for f in sorted(get_metric(m).receives, key=FIELDS.index):
            need.setdefault(f, f"{m} receives it")
    return need


def present_fields(df: pd.DataFrame) -> tuple[str, ...]:
    """The sample fields a frame gives (by our name or an alias), in FIELDS order."""
    names = {str(c).strip() for c in df.columns}
    return tuple(f for f in FIELDS if any(a in names for a in FIELD_COLUMNS[f]))


def _resolve_columns(df: pd.DataFrame, source: str, metrics: Sequence[str] = ()) -> dict[str, str]:
    """Canonical name -> the frame's column that gives it; errors for missing or doubled ones."""
    names = [str(c).strip() for c in df.columns]
    doubled = sorted({c for c in names if names.count(c) > 1})
    if doubled:
        raise InputError(f"column {doubled[0]!r} appears more than once", field=doubled[0], source=source)
    by_name = {str(c).strip(): c for c in df.columns}
    need = fields_needed(df.columns, metrics)
    out: dict[str, str] = {}
    for canon, aliases in {**FIELD_COLUMNS, **METRIC_COLUMNS}.items():
        present = [a for a in aliases if a in by_name]
        if len(present) > 1:
            raise InputError(f"columns {' and '.join(map(repr, present))} both give {canon}; keep one",
                             field=present[1], source=source)
        if present:
            out[canon] = by_name[present[0]]
        elif canon in need:
            raise InputError(f"missing column ({need[canon]}); give one of: {', '.join(aliases)}", field=canon,
                             source=source)
    return out


def _is_missing(value: object) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(float(value))


def _text(value: object, canon: str, bad: _Fail) -> str:
    if _is_missing(value):
        raise bad("missing value: every sample needs this text", canon)
    if not isinstance(value, str):
        raise bad(f"must be text, got {describe_value(value)}", canon)
    problem = text_problem(value)
    if problem:
        raise bad(problem, canon)
    return str(value)


def _sample_id(value: object, bad: _Fail) -> str:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    text = _text(value, SAMPLE_ID, bad)
    if not text.strip():
        raise bad("sample id is empty", SAMPLE_ID)
    return text


def _contexts(value: object, bad: _Fail) -> tuple[str, ...]:
    if _is_missing(value):
        raise bad("missing value: every sample needs its list of passages ([] for none)", CONTEXTS)
    if isinstance(value, str):
        if not value.lstrip().startswith("["):
            raise bad("contexts must be a list of passages, got a string (write a JSON array: [\"p1\", \"p2\"])",
                      CONTEXTS)
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise bad(f"contexts is not a valid JSON array: {exc.msg} (column {exc.colno})", CONTEXTS) from None
    elif hasattr(value, "tolist") and not isinstance(value, list | tuple):
        value = value.tolist()  # a numpy array, as pandas gives list columns
    if not isinstance(value, list | tuple):
        raise bad(f"contexts must be a list of passages, got {describe_value(value)}", CONTEXTS)
    passages = []
    for k, passage in enumerate(value, start=1):
        if not isinstance(passage, str):
            raise bad(f"passage {k} must be text, got {describe_value(passage) if passage is not None else 'null'}",
                      CONTEXTS)
        problem = text_problem(passage)
        if problem:
            raise bad(f"passage {k} {problem}", CONTEXTS)
        passages.append(str(passage))
    return tuple(passages)


def _score(value: object, metric: str, bad: _Fail) -> float | None:
    """A score in [0, 1], or None when the source left it empty (not scored)."""
    if _is_missing(value):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            number = float(value)
        except ValueError:
            raise bad(f"score must be a number in [0, 1], got the text {value!r}", metric) from None
        if not math.isfinite(number):
            raise bad(f"score must be a number in [0, 1], got the text {value!r} "
                      f"(leave the cell empty or null for not scored)", metric)
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer too large for a float
            raise bad(f"score must be a number in [0, 1], got an integer of {len(str(value))} digits",
                      metric) from None
    else:
        raise bad(f"score must be a number in [0, 1], got {describe_value(value)}", metric)
    if not (0.0 <= number <= 1.0):  # also refuses infinity
        raise bad(f"score must be a number in [0, 1], got {value!r}", metric)
    return number


# -- building and recording -------------------------------------------------------------
def run_from_frame(df: pd.DataFrame, *, source: str, run_id: str, started_at: datetime | None = None,
                   pipeline: Mapping[str, object] | None = None, judge_model: str | None = None,
                   templates: Mapping[str, str] | None = None, binding: str | None = None,
                   suite: str = MAIN, scorer: str | None = None) -> RunRecord:
    """Validate a frame and build the run record it describes (nothing is written).

    Args:
        df: one row per sample (see the module docstring).
        source: the file name or frame description errors carry.
        run_id: the run's id; recording it again replaces the earlier copy.
        started_at: when the run happened (default: now).
        pipeline: the pipeline config, JSON-serialisable (default: empty).
        judge_model: the judge model that scored the file, or None (unattributed).
        templates: metric name (or its Ragas alias) -> the judge template text
            that produced its scores; metrics without one are unattributed.
            Templates for metrics the file does not score are ignored.
        binding: how the templates were bound ("projected" or "replay"), or None; recorded for the metrics
            given a template only.
        suite: the suite the samples belong to.
        scorer: the scoring library and version that computed the scores, if not ours.

    Raises:
        InputError: a bad argument (row None) or the first bad cell.
    """
    by_alias = {alias: canon for canon, aliases in METRIC_COLUMNS.items() for alias in aliases}
    chosen: dict[str, str] = {}
    for name, text in (templates or {}).items():
        canon = by_alias.get(name)
        if canon is None:
            raise InputError(f"template for unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}",
                             field="templates", source=source)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"template for {name!r} must be non-empty text", field="templates", source=source)
        chosen[canon] = text
    if binding is not None and not chosen:   # it would bind nothing, in silence
        raise InputError(f"a binding ({binding}) says how the given templates were bound: give the template it "
                         f"bound (--template METRIC=FILE)", field="binding", source=source)
    samples, results = records_from_frame(df, source=source)
    run = RunRecord(
        run_id=run_id,
        started_at=started_at if started_at is not None else datetime.now().replace(microsecond=0),
        pipeline=pipeline if pipeline is not None else {},
        samples={suite: samples},
        # a binding is how a template was bound: a metric given no template records none (it would be five
        # binding markers on Trends for one metric's template)
        metrics=[MetricRecord(metric=m, results=rs, judge_model=judge_model, template=chosen.get(m),
                              binding=binding if m in chosen else None, suite=suite, scorer=scorer)
                 for m, rs in results.items()],
        fields=present_fields(df),
    )
    check_run(run, source=source)  # the run-level arguments, by the rules every door shares
    return run


__all__ = ["FIELD_COLUMNS", "METRIC_COLUMNS", "NO_SCORE", "fields_needed", "present_fields",
           "read_table", "records_from_frame", "run_from_frame"]
