"""One set of rules for a run, whichever door it comes in by.

`ingest` (files), `record` (hand-over JSON), the Python API
(`Store.record_run`, `lib.intake.inbox.record`) and the inbox drain all end in
`check_run`; the bulk importer checks the same rules in SQL
(`lib.store._BULK_CHECKS`). A refusal is an `InputError` naming the source,
the row (the sample or result, 1-based) and the field.

Rules beyond the types:
- text (ids, artifacts, passages, templates, model names, reasons, evidence)
  carries no NUL character and no unpaired surrogate;
- `contexts` is a sequence of passages, never one string;
- `pipeline` is a JSON object (a mapping of text keys);
- `started_at` is a naive datetime (UTC) in [1970-01-01, 2200-01-01): dates
  outside make no sense on a time axis and overflow week arithmetic;
- an ok score is a finite number in [0, 1]; other statuses carry none;
- no text field is longer than EVALDRIFT_MAX_FIELD_CHARS characters (a
  sample's passages count together), so no page is asked to show a sample
  larger than it can send.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import cast

from lib.core.errors import InputError, cut
from lib.core.jsontext import HugeNumber
from lib.core.metrics import METRICS
from lib.core.prompts import BINDINGS, placeholders, prompt_hash
from lib.core.records import RunRecord
from lib.core.results import EXCLUDED, FAILED, OK, SampleResult, Verdict
from lib.core.samples import EvalSample
from lib.core.settings import load as load_settings

EARLIEST = datetime(1970, 1, 1)
LATEST = datetime(2200, 1, 1)
STATUS_NAMES = (OK, FAILED, EXCLUDED)


def text_problem(text: str) -> str | None:
    """Why a text cannot be stored (a NUL character, an unpaired surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains an unpaired surrogate {text[exc.start]!r}, which is not valid Unicode text"
    return None


LIMIT_SETTING = "EVALDRIFT_MAX_FIELD_CHARS"


def field_limit() -> int:
    """Characters one text field may hold (EVALDRIFT_MAX_FIELD_CHARS)."""
    return load_settings().max_field_chars


def too_long(length: int, limit: int) -> str | None:
    """Why a field of this many characters cannot be stored, or None."""
    if length <= limit:
        return None
    return (f"is {length:,} characters, over the limit of {limit:,} ({LIMIT_SETTING}; an operator can raise it)")


def sample_length_problem(sample: EvalSample, limit: int) -> tuple[str, str] | None:
    """(field, reason) of a sample's first text over the limit (passages counted together), or None."""
    for name in ("sample_id", "question", "answer", "ground_truth"):
        value = getattr(sample, name)
        if isinstance(value, str) and (problem := too_long(len(value), limit)):
            return name, problem
    total = sum(len(p) for p in sample.contexts if isinstance(p, str))
    if problem := too_long(total, limit):
        return "contexts", f"(its passages together) {problem}"
    return None


def check_text(value: object, *, field: str, source: str, row: int | None = None, optional: bool = False) -> None:
    """Refuse a value that is not storable text (None allowed when `optional`)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise InputError(f"must be text, got {_kind(value)}", row=row, field=field, source=source)
    problem = text_problem(value)
    if problem:
        raise InputError(problem, row=row, field=field, source=source)


def check_started_at(value: object, *, source: str) -> None:
    """Refuse a start time that is not a naive datetime within [EARLIEST, LATEST)."""
    if not isinstance(value, datetime):
        raise InputError(f"must be a datetime, got {_kind(value)}", field="started_at", source=source)
    if value.tzinfo is not None:
        raise InputError("must be a naive datetime in UTC (convert it first)", field="started_at", source=source)
    if not EARLIEST <= value < LATEST:
        raise InputError(f"{value.isoformat()} is out of range: a run starts between {EARLIEST.year} and "
                         f"{LATEST.year - 1}", field="started_at", source=source)


def check_pipeline(value: object, *, source: str) -> None:
    """Refuse a pipeline config that is not a JSON object of storable text keys and values."""
    if not isinstance(value, Mapping):
        raise InputError(f"pipeline config must be a JSON object, got {_kind(value)}", field="pipeline",
                         source=source)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"pipeline config is not JSON-serialisable: {exc}", field="pipeline",
                         source=source) from None
    if "\\u0000" in text:
        raise InputError("contains a NUL character", field="pipeline", source=source)


def check_run(run: RunRecord, *, source: str | None = None) -> None:
    """Check every field of a run against the rules above; nothing is written either way.

    Args:
        run: the run to check.
        source: the file it came from, for the message (default: "run <id>").

    Raises:
        InputError: the first field at fault, with source, row and field.
    """
    if not isinstance(run.run_id, str) or not run.run_id.strip():
        raise InputError("run id must be a non-empty string", field="run_id", source=source or "run")
    src = source or f"run {cut(run.run_id)}"
    check_text(run.run_id, field="run_id", source=src)
    check_text(run.label, field="label", source=src)
    check_started_at(run.started_at, source=src)
    check_pipeline(run.pipeline, source=src)
    if not isinstance(run.samples, Mapping):
        raise InputError(f"samples must map suite -> samples, got {_kind(run.samples)}", field="samples", source=src)
    ids_by_suite = {suite: _check_samples(suite, samples, src) for suite, samples in run.samples.items()}
    keys: set[tuple[str, str]] = set()
    clean: list[list[str] | None] = []   # per metric, its result texts when all are storable text (read once)
    for m in run.metrics:
        where = f"{src} metric {cut(m.metric)}"
        if m.metric not in METRICS:
            raise InputError(f"unknown metric; known: {', '.join(METRICS)}", field="metric", source=where)
        if (m.suite, m.metric) in keys:
            raise InputError("metric recorded twice for the same suite", field="metric", source=where)
        keys.add((m.suite, m.metric))
        for name in ("judge_model", "template", "fingerprint", "scorer", "output_mode"):
            check_text(getattr(m, name), field=name, source=where, optional=True)
        if m.binding is not None and m.binding not in BINDINGS:
            raise InputError(f"unknown binding {cut(m.binding)}", field="binding", source=where)
        known = ids_by_suite.get(m.suite)
        if known is None:
            raise InputError(f"suite {cut(m.suite)} has no samples", field="suite", source=where)
        clean.append(_check_results(m.results, known, where))
    _check_lengths(run, field_limit(), src, clean)  # after the types: every text is text by now
    for m in run.metrics:   # a template takes field names only: `{contexts:>1500000000}` would pad every prompt
        if m.template is not None:
            placeholders(m.template, source=f"{src} metric {m.metric!r} template {prompt_hash(m.template)}")


def _check_samples(suite: object, samples: object, src: str) -> set[str]:
    where = f"{src} suite {cut(suite)}"
    check_text(suite, field="suite", source=src)
    if isinstance(samples, str | bytes) or not isinstance(samples, Sequence):
        raise InputError(f"must be a list of samples, got {_kind(samples)}", field="samples", source=where)
    seen: set[str] = set()
    for i, s in enumerate(samples, start=1):
        if not isinstance(s, EvalSample):
            raise InputError(f"must be an EvalSample, got {_kind(s)}", row=i, field="sample", source=where)
        for name in ("sample_id", "question", "answer", "ground_truth"):
            check_text(getattr(s, name), field=name, source=where, row=i)
        if isinstance(s.contexts, str | bytes) or not isinstance(s.contexts, Sequence):
            raise InputError(f"must be a list of passages (text), got {_kind(s.contexts)}", row=i,
                             field="contexts", source=where)
        for k, passage in enumerate(s.contexts, start=1):
            check_text(passage, field=f"contexts[{k}]", source=where, row=i)
        if s.sample_id in seen:
            raise InputError(f"duplicate sample id {cut(s.sample_id)}", row=i, field="sample_id", source=where)
        seen.add(s.sample_id)
    return seen


def _check_lengths(run: RunRecord, limit: int, src: str, clean: Sequence[list[str] | None] = ()) -> None:
    """Refuse any text longer than the limit: the run's own, each sample's, each metric's and result's.

    `clean`: per metric of the run, its result texts when _check_results found them all text (None: gathered
    again here).
    """
    for name in ("run_id", "label"):
        if problem := too_long(len(getattr(run, name)), limit):
            raise InputError(problem, field=name, source=src)
    for suite, samples in run.samples.items():
        for i, sample in enumerate(samples, start=1):
            if found := sample_length_problem(sample, limit):
                raise InputError(found[1], row=i, field=found[0], source=f"{src} suite {cut(suite)}")
    for k, m in enumerate(run.metrics):
        where = f"{src} metric {cut(m.metric)}"
        for name in ("judge_model", "template", "fingerprint", "scorer", "output_mode"):
            value = getattr(m, name)
            if value is not None and (problem := too_long(len(value), limit)):
                raise InputError(problem, field=name, source=where)
        known_text = clean[k] if k < len(clean) else None
        longest = (max(map(len, known_text), default=0) if known_text is not None
                   else _longest(_result_texts(m.results)))
        if longest <= limit:   # the usual case: none is near it
            continue
        for i, r in enumerate(m.results, start=1):
            texts = [("reason", r.reason)] + [(f"verdicts[{k}].{n}", getattr(v, n))
                                              for k, v in enumerate(r.verdicts, start=1)
                                              for n in ("item", "verdict", "evidence")]
            for name, value in texts:
                if problem := too_long(len(value), limit):
                    raise InputError(problem, row=i, field=name, source=where)


def _all_text_clean(texts: list[object]) -> bool:
    """Are these all storable text? One check over them joined (a run holds some 10^5 of them); on False the
    caller checks field by field to name the first at fault, so the refusal is the same either way."""
    try:
        joined = "\n".join(texts)   # type: ignore[arg-type]   # a non-text value: TypeError
    except TypeError:
        return False
    return text_problem(joined) is None


def _longest(texts: Sequence[object]) -> float:
    """The longest text's length; infinite when one is not text (the field-by-field pass then names it)."""
    if not all(isinstance(t, str) or t is None for t in texts):
        return float("inf")
    return max((len(t) for t in texts if isinstance(t, str)), default=0)


def _result_texts(results: Sequence[SampleResult]) -> list[object]:
    out: list[object] = []
    try:   # a loop, not one comprehension: a run's 10^5 texts gathered in half the time
        for r in results:
            out += (r.sample_id, r.reason)
            for v in r.verdicts:
                out += (v.item, v.verdict, v.evidence)
    except (AttributeError, TypeError):   # not a result or a verdict: the field-by-field pass names it
        return [results]
    return out


def _check_results(results: Sequence[SampleResult], known: set[str], where: str) -> list[str] | None:
    """Check a metric's results; returns their texts when every one is storable text (else None)."""
    texts = _result_texts(results)
    texts_ok = _all_text_clean(texts)
    seen: set[str] = set()
    for i, r in enumerate(results, start=1):
        if not texts_ok:
            check_text(r.sample_id, field="sample_id", source=where, row=i)
        if r.sample_id not in known:
            raise InputError(f"score for unknown sample {cut(r.sample_id)}", row=i, field="sample_id", source=where)
        if r.sample_id in seen:
            raise InputError(f"sample {cut(r.sample_id)} scored twice", row=i, field="sample_id", source=where)
        seen.add(r.sample_id)
        if r.status not in STATUS_NAMES:
            raise InputError(f"unknown status {cut(r.status)}", row=i, field="status", source=where)
        if not texts_ok:
            check_text(r.reason, field="reason", source=where, row=i)
        if r.status == OK:
            if not _is_score(r.score):
                raise InputError(f"score must be a number in [0, 1], got {_short(r.score)}", row=i, field="score",
                                 source=where)
        elif r.score is not None:
            raise InputError(f"a {r.status} sample has no score", row=i, field="score", source=where)
        for k, v in enumerate(r.verdicts, start=1):
            if not isinstance(v, Verdict) or not isinstance(v.label, bool):
                raise InputError("must be a verdict (item, label true/false, verdict, evidence)", row=i,
                                 field=f"verdicts[{k}]", source=where)
            if not texts_ok:
                for name in ("item", "verdict", "evidence"):
                    check_text(getattr(v, name), field=f"verdicts[{k}].{name}", source=where, row=i)
    return cast("list[str]", texts) if texts_ok else None   # joined whole by _all_text_clean: every one is text


def _is_score(value: object) -> bool:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        number = float(value)
    except OverflowError:
        return False
    return math.isfinite(number) and 0.0 <= number <= 1.0


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{_kind(value)} of {len(text)} characters"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, HugeNumber):
        return repr(value)
    if isinstance(value, str):
        return "a string"
    return {bool: "a boolean", dict: "an object", list: "a list", int: "an integer",
            float: "a number"}.get(type(value), type(value).__name__)
