"""The values a run is recorded as: what a nightly eval job hands the store."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from lib.harness import SampleResult, Verdict
from lib.judges.base import Usage
from lib.prompts import prompt_hash
from lib.samples import EvalSample

MAIN = "main"
CANARY = "canary"


@dataclass(frozen=True)
class MetricRecord:
    """One metric of one run, with the instrument that produced it.

    `judge_model`, `template` and `binding` may be None for scores imported from
    an external harness that did not record them; such scores are flagged as
    unattributed on every page, never guessed.
    """

    metric: str
    results: Sequence[SampleResult]
    judge_model: str | None
    template: str | None
    binding: str | None
    suite: str = MAIN
    fingerprint: str | None = None

    @property
    def prompt_hash(self) -> str | None:
        return prompt_hash(self.template) if self.template is not None else None


@dataclass(frozen=True)
class RunRecord:
    """One eval run: its samples (per suite) and its metrics."""

    run_id: str
    started_at: datetime
    pipeline: Mapping[str, object]
    samples: Mapping[str, Sequence[EvalSample]]
    metrics: Sequence[MetricRecord]
    label: str = ""
    notes: Mapping[str, object] = field(default_factory=dict)


def run_to_json(run: RunRecord) -> str:
    """Serialise a run (the inbox hand-over format)."""
    return json.dumps({
        "run_id": run.run_id,
        "started_at": run.started_at.isoformat(),
        "pipeline": run.pipeline,
        "label": run.label,
        "samples": {suite: [{"sample_id": s.sample_id, "question": s.question, "answer": s.answer,
                             "contexts": list(s.contexts), "ground_truth": s.ground_truth} for s in ss]
                    for suite, ss in run.samples.items()},
        "metrics": [{"metric": m.metric, "suite": m.suite, "judge_model": m.judge_model, "template": m.template,
                     "binding": m.binding, "fingerprint": m.fingerprint,
                     "results": [{"sample_id": r.sample_id, "status": r.status, "score": r.score,
                                  "reason": r.reason, "verdicts": [v.to_dict() for v in r.verdicts]}
                                 for r in m.results]}
                    for m in run.metrics],
    }, ensure_ascii=False)


def run_from_json(text: str) -> RunRecord:
    """Inverse of run_to_json."""
    d = json.loads(text)
    return RunRecord(
        run_id=d["run_id"],
        started_at=datetime.fromisoformat(d["started_at"]),
        pipeline=d["pipeline"],
        label=d.get("label", ""),
        samples={suite: [EvalSample(s["sample_id"], s["question"], s["answer"], tuple(s["contexts"]),
                                    s["ground_truth"]) for s in ss]
                 for suite, ss in d["samples"].items()},
        metrics=[MetricRecord(
            metric=m["metric"], suite=m["suite"], judge_model=m["judge_model"], template=m["template"],
            binding=m["binding"], fingerprint=m.get("fingerprint"),
            results=[SampleResult(r["sample_id"], r["status"], r["score"],
                                  tuple(Verdict(v["item"], v["label"], v["verdict"], v.get("evidence", ""))
                                        for v in r["verdicts"]), r.get("reason", ""), usage=Usage())
                     for r in m["results"]])
            for m in d["metrics"]],
    )


def evaluate_run(run_id: str, samples: Sequence[EvalSample], judge, *, started_at: datetime | None = None,
                 pipeline: Mapping[str, object] | None = None, metrics: Sequence[str] | None = None,
                 templates: Mapping[str, str] | None = None, seed: int = 0, cache=None) -> RunRecord:
    """Score samples with our harness (projected binding: it cannot leak) into a RunRecord.

    This is what a nightly eval job calls before `Store.record_run` (or
    `lib.inbox.record` when the dashboard owns the database).

    Args:
        run_id: the run's id (recording it again replaces it).
        samples: the eval samples.
        judge: a lib.judges Judge.
        started_at: when the run started (default: now).
        pipeline: the pipeline config to record beside the scores.
        metrics: which metrics (default: all five).
        templates: per-metric template overrides (default: lib.prompts.DEFAULT_TEMPLATES).
        seed: the judge seed.
        cache: an optional call cache (e.g. the Store).
    """
    from lib.harness import Instrument, score_samples
    from lib.metrics import METRIC_NAMES
    from lib.prompts import DEFAULT_TEMPLATES, PROJECTED

    chosen = list(metrics or METRIC_NAMES)
    records = []
    for m in chosen:
        template = (templates or {}).get(m, DEFAULT_TEMPLATES[m])
        results = score_samples(samples, Instrument(m, template, PROJECTED), judge, seed=seed, cache=cache)
        prints = Counter(r.fingerprint for r in results if r.fingerprint)
        records.append(MetricRecord(m, results, judge.model, template, PROJECTED,
                                    fingerprint=prints.most_common(1)[0][0] if prints else None))
    return RunRecord(run_id, started_at or datetime.now().replace(microsecond=0), dict(pipeline or {}),
                     {MAIN: list(samples)}, records)
