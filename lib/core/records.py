"""The values a run is recorded as: what a nightly eval job hands the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from lib.core.prompts import prompt_hash
from lib.core.results import SampleResult
from lib.core.samples import FIELDS, EvalSample

MAIN = "main"
CANARY = "canary"


@dataclass(frozen=True)
class RunHeader:
    """A stored run's header: when it started, its label and its pipeline config."""

    run_id: str
    started_at: datetime
    label: str | None
    pipeline: Mapping[str, object]


@dataclass(frozen=True)
class RecordedInstrument:
    """What produced a stored metric score: the judge model, the template (by hash) and the binding."""

    judge_model: str | None
    prompt_hash: str | None
    template: str | None
    binding: str | None
    score: float | None
    n: int
    n_failed: int


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
    served_model: str | None = None   # the model the server said it served, most of the metric's calls

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
