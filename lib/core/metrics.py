"""The metric registry: which artifacts each metric may see, as data.

Every metric labels each item of one artifact against another artifact, then
reduces the labels to a ratio. The registry below is the only place that says
which two artifacts those are; lint, typed inputs, ablation expectations, the
README table and the heatmap's expected cells all read it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields

from lib.core.errors import UnknownNameError, WiringError
from lib.core.samples import ANSWER, CONTEXTS, FIELDS, GROUND_TRUTH, QUESTION, EvalSample


@dataclass(frozen=True)
class FaithfulnessInput:
    answer: str
    contexts: tuple[str, ...]


@dataclass(frozen=True)
class RelevanceInput:
    answer: str
    question: str


@dataclass(frozen=True)
class PrecisionInput:
    contexts: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class RecallInput:
    contexts: tuple[str, ...]
    ground_truth: str


@dataclass(frozen=True)
class CorrectnessInput:
    answer: str
    ground_truth: str


RATIO = "ratio"
AVERAGE_PRECISION = "average_precision"


@dataclass(frozen=True)
class MetricSpec:
    """One row of the wiring table.

    Attributes:
        name: metric name.
        items_from: the artifact whose items get one verdict each.
        item_kind: what an item is called ("claim", "passage", "statement").
        against: the artifact each item is judged against.
        labels: (positive, negative) verdict words.
        aggregate: RATIO (positive/total) or AVERAGE_PRECISION (rank-weighted).
        input_type: the typed, lossy view of a sample this metric gets.
        control_from: the field whose text an ablation's positive control puts in `against` (every other field
            blanked): perfect support for the items, so a judge that reads its inputs rises above its floor
            (lib.diagnosis.ablation._arms.supported). The items' own field for every metric: the answer's own
            claims as the passages (faithfulness), as the question (answer_relevance) or as the reference
            (answer_correctness); the passages as the question (context_precision); the reference as the
            passages (context_recall).
    """

    name: str
    items_from: str
    item_kind: str
    against: str
    labels: tuple[str, str]
    aggregate: str
    input_type: type
    control_from: str

    @property
    def receives(self) -> frozenset[str]:
        """The artifacts in the metric's numerator or denominator."""
        return frozenset((self.items_from, self.against))

    @property
    def positive_control(self) -> str:
        """The positive control in words: what `against` is set to ('contexts set to the claims of answer')."""
        return f"{self.against} set to the {self.item_kind}s of {self.control_from}"

    @property
    def never(self) -> frozenset[str]:
        """The artifacts a model judge for this metric must never be shown."""
        return frozenset(FIELDS) - self.receives

    def project(self, sample: EvalSample):
        """Return the typed input: only the fields this metric receives."""
        return self.input_type(**{f.name: getattr(sample, f.name) for f in fields(self.input_type)})


METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec("faithfulness", ANSWER, "claim", CONTEXTS, ("supported", "unsupported"), RATIO,
                   FaithfulnessInput, ANSWER),
        MetricSpec("answer_relevance", ANSWER, "claim", QUESTION, ("relevant", "irrelevant"), RATIO,
                   RelevanceInput, ANSWER),
        MetricSpec("context_precision", CONTEXTS, "passage", QUESTION, ("relevant", "irrelevant"),
                   AVERAGE_PRECISION, PrecisionInput, CONTEXTS),
        MetricSpec("context_recall", GROUND_TRUTH, "statement", CONTEXTS, ("supported", "unsupported"),
                   RATIO, RecallInput, GROUND_TRUTH),
        MetricSpec("answer_correctness", ANSWER, "claim", GROUND_TRUTH, ("supported", "unsupported"),
                   RATIO, CorrectnessInput, ANSWER),
    )
}
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)


def get_metric(name: str) -> MetricSpec:
    """Look a metric up by name, with a clear error for an unknown one."""
    try:
        return METRICS[name]
    except KeyError:
        raise UnknownNameError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None



INVARIANT = "invariant"          # the blanked fields are all ones the metric must never receive
EXPECT_SENSITIVE = "sensitive"   # the blanked fields include one the metric receives


def expectation(metric: str, blanked: Sequence[str]) -> str:
    """What the wiring table expects of a correctly wired metric when `blanked` fields are blanked:
    INVARIANT when every one is a field it must never receive, else EXPECT_SENSITIVE."""
    return INVARIANT if set(blanked) <= get_metric(metric).never else EXPECT_SENSITIVE


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences (claims or statements); blank text has none."""
    text = " ".join(text.split())
    if not text:
        return []
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def items_of(spec: MetricSpec, view: object) -> list[str]:
    """The items one verdict each is asked for, read from the typed input."""
    if not hasattr(view, spec.items_from):
        raise WiringError(spec.name, spec.items_from)
    value = getattr(view, spec.items_from)
    if spec.items_from == CONTEXTS:
        return [p.strip() for p in value if p and p.strip()]
    return split_sentences(value)


def sample_score(spec: MetricSpec, labels: Sequence[bool]) -> float:
    """Reduce one sample's item labels to its score.

    RATIO: positives / items. AVERAGE_PRECISION: mean over relevant ranks k of
    precision@k (0.0 when no retrieved passage is relevant, which is a real
    outcome for precision, not a failure).
    """
    if not labels:
        raise ValueError("no items to score")
    if spec.aggregate == RATIO:
        return sum(labels) / len(labels)
    hits = 0
    total = 0.0
    for k, rel in enumerate(labels, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def wiring_table() -> list[dict[str, str]]:
    """The registry as rows for display (README, the dashboard)."""
    return [
        {
            "metric": s.name,
            "items judged": f"{s.item_kind}s of {s.items_from}",
            "judged against": s.against,
            "receives": ", ".join(sorted(s.receives, key=FIELDS.index)),
            "must never receive": ", ".join(sorted(s.never, key=FIELDS.index)),
            "positive control": s.positive_control,
        }
        for s in METRICS.values()
    ]


__all__ = [
    "GROUND_TRUTH",
    "METRICS",
    "METRIC_NAMES",
    "QUESTION",
    "MetricSpec",
    "get_metric",
    "items_of",
    "sample_score",
    "split_sentences",
    "wiring_table",
]


def wiring_markdown() -> str:
    """The wiring table as Markdown (README.md holds exactly this; a test checks it)."""
    rows = wiring_table()
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in rows]
    return "\n".join(lines)
