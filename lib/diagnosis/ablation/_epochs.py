"""A replay like for like: the re-run reduced over a sample's judgings as the tool reduced its epochs.

An imported Inspect run stores each sample's score as Inspect's epoch reducer made it (max, median, mode, ...:
the run notes' `epochs_reducer`, over `repeats` epochs). One re-judging, or the mean of several, is not that score:
max over 2 epochs of a grader that says C then I is 1.0, one judging of it 1.0 or 0.0, their mean 0.5. So the
replay check reduces the baseline's first `epochs` judgings of a sample with the same reducer; with fewer
judgings than epochs a reduced score cannot be replayed (said, with the repeats it needs), unless the judge was
shown to repeat itself exactly (then every epoch would have given the one judging). The mean needs no count: the
mean of any judgings estimates the mean of the epochs without bias.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence

from lib.diagnosis.stats import sample_mean

MEAN = "mean"
_COUNTED = re.compile(r"(pass_at|at_least|pass)_(\d+)$")


def recorded_reduction(notes: Mapping[str, object], metric: str) -> tuple[str, int] | None:
    """(reducer, epochs) the run's stored scores of `metric` were reduced with, or None: not reduced, or by the
    mean (as a repeat's mean is read anyway)."""
    reducers = notes.get("epochs_reducer")
    reducer = reducers.get(metric) if isinstance(reducers, Mapping) else None
    epochs = notes.get("repeats")
    if not isinstance(reducer, str) or reducer == MEAN or not isinstance(epochs, int) or epochs < 2:
        return None
    return reducer, epochs


def reduce_epochs(values: Sequence[float], reducer: str) -> float | None:
    """Inspect's epoch reducer over one sample's scalar scores (grades already read as 1 / 0.5 / 0); None for a
    reducer not known here or a reduction Inspect leaves unscored (no strict majority)."""
    if not values:
        return None
    if reducer == MEAN:
        return sample_mean(values)
    if reducer == "max":
        return max(values)
    if reducer == "median":
        return float(statistics.median(values))
    if reducer in ("mode", "majority"):
        value, count = Counter(values).most_common(1)[0]   # the first seen of the most common, as Inspect
        return value if reducer == "mode" or count * 2 > len(values) else None
    counted = _COUNTED.match(reducer)
    if counted is None:
        return None
    kind, k = counted.group(1), int(counted.group(2))
    correct = sum(1 for v in values if v >= 1.0)
    if kind == "at_least":
        return 1.0 if correct >= k else 0.0
    if len(values) < k:
        return None
    if kind == "pass":
        return math.comb(correct, k) / math.comb(len(values), k)
    if len(values) - correct < k:   # pass_at: 1 - C(n - c, k) / C(n, k)
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(len(values) - correct + 1, len(values) + 1))


def replayed(judgings: Sequence[float], reduction: tuple[str, int] | None, *, repeats_exact: bool = False
             ) -> float | None:
    """The re-run's value of one sample, like for like with its stored score: the mean of its judgings, or (a
    reduced score) the reducer over its first `epochs` judgings; None when it has fewer (and the judge was not
    shown to repeat itself exactly) or the reducer is not known here."""
    if not judgings:
        return None
    if reduction is None:
        return sample_mean(judgings)
    reducer, epochs = reduction
    if len(judgings) >= epochs:
        return reduce_epochs(judgings[:epochs], reducer)
    if repeats_exact:   # the probe's repeats were identical: each epoch would have given this judging
        return reduce_epochs([judgings[0]] * epochs, reducer)
    return None


def reduction_words(metric: str, reduction: tuple[str, int]) -> str:
    """'faithfulness's stored score is each sample's max over 2 epochs (the tool's epoch reducer)'."""
    reducer, epochs = reduction
    return f"{metric}'s stored score is each sample's {reducer} over {epochs} epochs (the tool's epoch reducer)"


__all__ = ["MEAN", "recorded_reduction", "reduce_epochs", "reduction_words", "replayed"]
