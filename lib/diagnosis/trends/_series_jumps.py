"""Jumps in a re-judged series, by the rule the stored series use (lib.diagnosis.noise.call_step).

A re-judged series is one instrument over many runs, so every step is within
one instrument: each step is decided by its own paired per-sample change (the
samples scored in both runs, as Compare pairs them, held over the series'
steps together) and, once noise.MIN_SPREAD_STEPS other differences exist, by
the run-to-run spread measured leaving that step out. One rule for both series.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from lib.diagnosis.trends._noise import FLOOR, PairedStep, StepCall, call_step, spread_without, within_steps


def series_calls(scores: Sequence[float], run_ids: Sequence[str],
                 paired: Mapping[tuple[str, str], PairedStep]) -> list[StepCall | None]:
    """The decision on every step of a series (None for the first run, which has no step).

    Args:
        scores: the series' scores in run order.
        run_ids: the runs, in the same order.
        paired: (earlier run, later run) -> its paired per-sample change (absent: no samples in both).
    """
    steps = within_steps(list(scores), [0] * len(scores))
    out: list[StepCall | None] = [None] if len(scores) else []
    for i in range(1, len(scores)):
        spread, n = spread_without(steps, i)
        out.append(call_step(float(scores[i] - scores[i - 1]), paired.get((run_ids[i - 1], run_ids[i])), spread, n,
                             m_steps=len(scores) - 1))
    return out


def series_threshold(calls: Sequence[StepCall | None]) -> float:
    """One figure for the words 'no step beyond ±x': the widest threshold a decided step had (FLOOR at least;
    nan when no step was decided)."""
    decided = [c.threshold for c in calls if c is not None and c.decided]
    return max(FLOOR, *decided) if decided else math.nan


def step_thresholds(calls: Sequence[StepCall | None]) -> np.ndarray:
    """Each step's own threshold (nan for the first run and for undecided steps)."""
    return np.array([c.threshold if c is not None else math.nan for c in calls], dtype=float)


__all__ = ["series_calls", "series_threshold", "step_thresholds"]
