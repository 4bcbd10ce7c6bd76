"""The judge's floor for a metric, measured in the ablation: the room a null must rule out a fall of.

A null about a received field ("blanking contexts does not move faithfulness")
means something only if the score had room to fall. That room is the baseline
minus the judge's floor: what this judge gives these samples when nothing is
left to judge the items against. The floor is not 0: a noisy judge marks some
claims "supported by nothing", a lenient scorer credits a claim it cannot check.
So every ablation judges one more arm per metric, the floor arm, and the
verdicts read their headroom from it (lib.diagnosis.verdicts, CellEvidence.floor).

Which arm. A metric labels the items of one field (`items_from`) against
another (`against`). Blanking the items' own field leaves nothing to judge (the
metric is excluded, not scored: no level to read), so "all of the metric's
inputs blanked" is read as: the items kept, and every field they could be judged
against blanked, the metric's `against` field and every field a wiring could
put beside it (the must-never-receive ones, through which a leak supplies
support). Per metric, for a run with all four fields:

    faithfulness        claims of answer, nothing to check them against: question+contexts+ground_truth
    answer_relevance    claims of answer: question+contexts+ground_truth
    context_precision   passages of contexts: question+answer+ground_truth
    context_recall      statements of ground_truth: question+answer+contexts
    answer_correctness  claims of answer: question+contexts+ground_truth

The arm never depends on which cell it serves, so it is not the tested arm in
disguise: with a correctly wired faithfulness template (answer and contexts
only) the floor arm asks the judge what the contexts arm asks, and a null there
then leaves no room (INCONCLUSIVE, "no room to fall"), never INSENSITIVE;
INSENSITIVE needs a wiring whose other fields carry the support the blanked one
should (a reference read instead of the passages), which is what "miswired" means.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from lib.core.errors import EvaldriftError
from lib.core.metrics import get_metric
from lib.core.prompts import build_prompt
from lib.core.samples import BLANKABLE, EvalSample, arm_name, blank
from lib.judging.harness import Instrument


def floor_arm(metric: str, fields: Sequence[str] | None = None) -> str | None:
    """The arm that measures the metric's floor: every field the run has except the one its items come from.

    Args:
        metric: the metric.
        fields: the fields the run's samples came with (all four when None).

    Returns:
        The arm's name ("question+contexts+ground_truth" for faithfulness), or None when the run has no field
        but the items' own (nothing to blank).
    """
    items = get_metric(metric).items_from
    blanked = [f for f in BLANKABLE if f != items and (fields is None or f in fields)]
    return arm_name(blanked) if blanked else None


def floor_level(base: Mapping[str, Sequence[float]], floor: Mapping[str, Sequence[float]] | None) -> float | None:
    """The floor over the samples the baseline scored: the mean of the floor arm's per-sample means.

    Args:
        base: the baseline's scores per sample (a cell's, restricted to the samples it was decided on).
        floor: the floor arm's scores per sample (None: not measured).

    Returns:
        The floor, or None when no sample was scored in both (then the verdicts assume 0, and say nothing).
    """
    if floor is None:
        return None
    means = [sum(x) / len(x) for s, x in floor.items() if s in base and x]
    return sum(means) / len(means) if means else None


def floor_scores(arm: str | None, metric: str, unchanged: Collection[tuple[str, str]],
                 base: Mapping[str, Sequence[float]], arms: Mapping[tuple[str, str], object]
                 ) -> Mapping[str, Sequence[float]] | None:
    """The floor arm's scores per sample, as an ablation stored them.

    Args:
        arm: the metric's floor arm (Plan.floor_arm), or None.
        metric: the metric.
        unchanged: the (metric, arm) pairs whose prompts equal the baseline's (then the floor is the baseline).
        base: the baseline's scores per sample.
        arms: the ablation's arms by (metric, arm), each with `.scores` (lib.diagnosis.ablation_analysis.collect).

    Returns:
        Scores per sample, or None when the floor was not measured.
    """
    if arm is None:
        return None
    if (metric, arm) in unchanged:
        return base
    found = arms.get((metric, arm))
    return getattr(found, "scores", None) if found is not None else None


def same_prompts(samples: Sequence[EvalSample], instrument: Instrument, a: Sequence[str], b: Sequence[str]) -> bool:
    """True when blanking fields `a` and blanking fields `b` give every sample the same judge prompt: the floor
    arm then reads the other arm's results instead of asking the judge the same questions again."""
    for s in samples:
        try:
            if build_prompt(instrument.template, instrument.metric, blank(s, a), instrument.binding) != \
                    build_prompt(instrument.template, instrument.metric, blank(s, b), instrument.binding):
                return False
        except (EvaldriftError, ValueError):
            return False
    return bool(samples)


__all__ = ["floor_arm", "floor_level", "floor_scores", "same_prompts"]
