"""The values a run is recorded as: what a nightly eval job hands the store."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from lib.harness import SampleResult
from lib.prompts import prompt_hash
from lib.samples import FIELDS, EvalSample

MAIN = "main"
CANARY = "canary"


@dataclass(frozen=True)
class MetricRecord:
    """One metric of one run, with the instrument that produced it.

    `judge_model`, `template` and `binding` may be None for scores imported from
    an external harness that did not record them; such scores are flagged as
    unattributed on every page, never guessed. `scorer` names the scoring
    library and its version when another tool computed the scores ("ragas
    0.2.6"); `output_mode` is how the judge was asked for its JSON verdicts.
    """

    metric: str
    results: Sequence[SampleResult]
    judge_model: str | None
    template: str | None
    binding: str | None
    suite: str = MAIN
    fingerprint: str | None = None
    scorer: str | None = None
    output_mode: str | None = None

    @property
    def prompt_hash(self) -> str | None:
        return prompt_hash(self.template) if self.template is not None else None


@dataclass(frozen=True)
class RunRecord:
    """One eval run: its samples (per suite) and its metrics.

    `fields` are the sample fields the source had; an absent one is stored as
    empty text (no passages for contexts) and ablations do not offer blanking it.
    """

    run_id: str
    started_at: datetime
    pipeline: Mapping[str, object]
    samples: Mapping[str, Sequence[EvalSample]]
    metrics: Sequence[MetricRecord]
    label: str = ""
    notes: Mapping[str, object] = field(default_factory=dict)
    fields: tuple[str, ...] = FIELDS


def run_to_json(run: RunRecord) -> str:
    """Serialise a run (the inbox hand-over format)."""
    return json.dumps({
        "run_id": run.run_id,
        "started_at": run.started_at.isoformat(),
        "pipeline": run.pipeline,
        "label": run.label,
        "fields": list(run.fields),
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


def run_from_json(text: str | bytes, *, source: str = "run file") -> RunRecord:
    """Inverse of run_to_json, strict: see lib.runjson.parse_run (raises InputError)."""
    from lib.runjson import parse_run

    return parse_run(text, source=source)


def evaluate_run(run_id: str, samples: Sequence[EvalSample], judge, **options) -> RunRecord:
    """Score samples with our harness into a RunRecord: `lib.scoring.evaluate_run` (kept here for old callers)."""
    from lib.scoring import evaluate_run as _evaluate

    return _evaluate(run_id, samples, judge, **options)
