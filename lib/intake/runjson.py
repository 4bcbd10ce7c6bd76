"""A run hand-over file: `run_to_json` writes it, `run_from_json` reads it back, strictly.

Every key is type-checked before a value object is built, so a file with
`"template": 5` or `"contexts": "abc"` is refused naming the file, the row
(the sample or result, 1-based) and the field, instead of failing later
inside the store or being stored as three one-letter passages. The built run
then goes through `lib.core.validate.check_run`, the rules every door shares.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime

from lib.core.calls import Usage
from lib.core.errors import InputError
from lib.core.jsontext import HugeNumber, JsonProblem, loads
from lib.core.records import MetricRecord, RunRecord
from lib.core.results import SampleResult, Verdict
from lib.core.samples import FIELDS, EvalSample
from lib.core.validate import check_run


def run_to_json(run: RunRecord, *, target: str | None = None) -> str:
    """Serialise a run (the inbox hand-over format); `target`, the database it is for, is written first."""
    return json.dumps({
        **({"target": target} if target is not None else {}),
        "run_id": run.run_id,
        "started_at": run.started_at.isoformat(),
        "pipeline": run.pipeline,
        "label": run.label,
        "fields": list(run.fields),
        "notes": dict(run.notes),
        "samples": {suite: [{"sample_id": s.sample_id, "question": s.question, "answer": s.answer,
                             "contexts": list(s.contexts), "ground_truth": s.ground_truth} for s in ss]
                    for suite, ss in run.samples.items()},
        "metrics": [{"metric": m.metric, "suite": m.suite, "judge_model": m.judge_model, "template": m.template,
                     "binding": m.binding, "fingerprint": m.fingerprint, "scorer": m.scorer,
                     "output_mode": m.output_mode,
                     "results": [{"sample_id": r.sample_id, "status": r.status, "score": r.score,
                                  "reason": r.reason, "verdicts": [v.to_dict() for v in r.verdicts]}
                                 for r in m.results]}
                    for m in run.metrics],
    }, ensure_ascii=False)


class _Reader:
    """Typed access to one JSON object, with errors that say where it sits."""

    def __init__(self, obj: object, *, source: str, path: str, row: int | None = None) -> None:
        if not isinstance(obj, dict):
            raise InputError(f"must be a JSON object, got {_kind(obj)}", row=row, field=path or None, source=source)
        self.obj, self.source, self.path, self.row = obj, source, path, row

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str, kind: type | tuple[type, ...], *, default: object = ..., nullable: bool = False):
        if key not in self.obj:
            if default is ...:
                raise InputError(f"missing key {key!r}", row=self.row, field=self._where(key), source=self.source)
            return default
        value = self.obj[key]
        if value is None and nullable:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            raise InputError(f"must be {_name(kind)}, got {_kind(value)}", row=self.row, field=self._where(key),
                             source=self.source)
        return value

    def text(self, key: str, **kw) -> str:
        return self.get(key, str, **kw)

    def child(self, value: object, path: str, row: int | None = None) -> _Reader:
        return _Reader(value, source=self.source, path=path, row=row)


def run_from_json(text: str | bytes, *, source: str = "run file") -> RunRecord:
    """Parse and check a run hand-over file.

    Raises:
        InputError: not JSON, a key of the wrong type, or a rule of `check_run` broken.
    """
    return read_handover(text, source=source)[1]


def read_handover(text: str | bytes, *, source: str = "run file") -> tuple[str | None, RunRecord]:
    """Parse and check a run hand-over file; returns the database it names (None: none) and the run.

    Raises:
        InputError: not JSON, a key of the wrong type, or a rule of `check_run` broken.
    """
    try:
        top = _Reader(loads(text), source=source, path="")
    except JsonProblem as exc:
        raise InputError(str(exc), field=exc.field, source=source) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", source=source) from None
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", source=source) from None
    target = top.text("target", default=None)
    run_id = top.text("run_id")
    started_text = top.text("started_at")
    try:
        started = datetime.fromisoformat(started_text)
    except ValueError:
        raise InputError(f"not an ISO date-time: {started_text[:40]!r}", field="started_at", source=source) from None
    if started.tzinfo is not None:
        started = started.astimezone(UTC).replace(tzinfo=None)  # stored naive, in UTC
    suites = top.get("samples", dict)
    run = RunRecord(
        run_id=run_id, started_at=started, pipeline=top.get("pipeline", dict),
        label=top.text("label", default=""), fields=_fields(top), notes=top.get("notes", dict, default={}),
        samples={suite: _samples(top, suite, ss) for suite, ss in suites.items()},
        metrics=[_metric(top.child(m, f"metrics[{k}]")) for k, m in enumerate(top.get("metrics", list), start=1)],
    )
    check_run(run, source=source)
    return target, run


def _samples(top: _Reader, suite: str, items: object) -> list[EvalSample]:
    if not isinstance(items, list):
        raise InputError(f"must be a list of samples, got {_kind(items)}", field=f"samples.{suite}",
                         source=top.source)
    out = []
    for i, item in enumerate(items, start=1):
        s = top.child(item, f"samples.{suite}", row=i)
        contexts = s.get("contexts", list)
        out.append(EvalSample(s.text("sample_id"), s.text("question"), s.text("answer"), tuple(contexts),
                              s.text("ground_truth")))
    return out


def _metric(m: _Reader) -> MetricRecord:
    results = []
    for i, item in enumerate(m.get("results", list), start=1):
        r = m.child(item, f"{m.path}.results", row=i)
        score = r.get("score", (int, float), nullable=True, default=None)
        verdicts = tuple(_verdict(r.child(v, f"{r.path}.verdicts[{k}]", row=i))
                         for k, v in enumerate(r.get("verdicts", list, default=[]), start=1))
        results.append(SampleResult(r.text("sample_id"), r.text("status"), score, verdicts,
                                    r.text("reason", default="", nullable=True) or "", usage=Usage()))
    return MetricRecord(metric=m.text("metric"), suite=m.text("suite"), results=results,
                        judge_model=m.text("judge_model", nullable=True, default=None),
                        template=m.text("template", nullable=True, default=None),
                        binding=m.text("binding", nullable=True, default=None),
                        fingerprint=m.text("fingerprint", nullable=True, default=None),
                        scorer=m.text("scorer", nullable=True, default=None),
                        output_mode=m.text("output_mode", nullable=True, default=None))


def _fields(top: _Reader) -> tuple[str, ...]:
    names = top.get("fields", list, default=list(FIELDS))
    bad = [n for n in names if n not in FIELDS]
    if bad or len(set(names)) != len(names):
        raise InputError(f"must list sample fields, each once, from {', '.join(FIELDS)}", field="fields",
                         source=top.source)
    return tuple(names)


def _verdict(v: _Reader) -> Verdict:
    return Verdict(v.text("item"), v.get("label", bool), v.text("verdict"), v.text("evidence", default=""))


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _name(kind: type | tuple[type, ...]) -> str:
    names = {str: "text", dict: "a JSON object", list: "a list", bool: "true or false", int: "a number",
             float: "a number"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in _as_tuple(kind)))


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, HugeNumber):
        return repr(value)
    if isinstance(value, Mapping):
        return "an object"
    return {bool: "a boolean", str: "a string", list: "a list", int: "an integer", float: "a number"}.get(
        type(value), type(value).__name__)
