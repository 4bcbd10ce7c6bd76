"""One noise vocabulary: the two quantities every page names, computed here and only here.

- **run-to-run spread**: how far a metric's score moves between consecutive
  runs when nothing changed, as the sd of one run's score. Measured on the
  trend itself, within comparable segments (one instrument), robustly (the
  median of the run-to-run differences), so genuine jumps and instrument
  changes do not inflate it. The Trends band is ±2 of it; the **jump
  threshold** (a run-to-run change beyond it is flagged) is k·√2 of it.
- **judge repeat spread**: how far the judge's score of one run's *fixed*
  outputs moves when the same samples are judged again (ablation repeats), as
  the sd of a run mean. Zero for a deterministic judge (a model at
  temperature 0 that repeats itself). The ablation's noise band is ±2 of it.

Pages print each number with its name (`label`) and its one-line meaning
(`HELP`, shown on hover), so "±0.010" on one page and "±0.028" on another are
seen to be different quantities of the same metric.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib.diagnosis.segments import segment_index
from lib.diagnosis.stats import jump_threshold as _threshold
from lib.diagnosis.stats import robust_step_sd, run_noise_sd

RUN_SPREAD = "run-to-run spread"
JUMP_THRESHOLD = "jump threshold"
JUDGE_SPREAD = "judge repeat spread"
JUMP_K = 4.0

HELP = {
    RUN_SPREAD: "Run-to-run spread: how much this metric moves between consecutive runs when nothing changed "
                "(sd of one run's score, robust median of run-to-run differences within runs of one instrument).",
    JUMP_THRESHOLD: f"Jump threshold: {JUMP_K:g} x √2 x the run-to-run spread; a change between consecutive runs "
                    "larger than this is flagged as a jump.",
    JUDGE_SPREAD: "Judge repeat spread: how much the judge's score of the same, fixed outputs moves when they are "
                  "judged again (sd of a run mean over the ablation's repeats); 0 for a judge that repeats itself.",
}


def run_spread(scores: Sequence[float], segments: Sequence[int] | None = None) -> float:
    """The run-to-run spread (sd of one run's score) of a series, oldest first.

    With `segments` (one id per score), differences across a change of
    instrument are left out: the spread is what happens while nothing changed.
    Returns nan with fewer than 3 scores (or 2 within-segment differences).
    """
    x = np.asarray(scores, dtype=float)
    if segments is None:
        return robust_step_sd(x.tolist())
    seg = np.asarray(segments)
    keep = ~np.isnan(x)
    x, seg = x[keep], seg[keep]
    if len(x) < 3:
        return math.nan
    d = np.diff(x)[seg[1:] == seg[:-1]]
    if len(d) < 2:
        return robust_step_sd(x.tolist())
    mad = float(np.median(np.abs(d - np.median(d))))
    return 1.4826 * mad / math.sqrt(2)


def jump_threshold(spread: float, *, k: float = JUMP_K) -> float:
    """The jump threshold for a run-to-run spread (k·√2·spread, with a small floor)."""
    return _threshold(spread, k=k)


def judge_spread(per_sample_repeats: Sequence[Sequence[float]]) -> float:
    """The judge repeat spread of a run mean, from each sample's scores over repeats (stats.run_noise_sd)."""
    return run_noise_sd(per_sample_repeats)


def band(spread: float) -> float:
    """The ±band drawn around a score: two of a spread (about 95%)."""
    return 2.0 * spread


@dataclass(frozen=True)
class MetricNoise:
    """A metric's run-to-run spread and jump threshold, from its history."""

    metric: str
    spread: float
    threshold: float


def metric_noise(history: pd.DataFrame) -> dict[str, MetricNoise]:
    """Per metric of a history: run-to-run spread within comparable segments, and the jump threshold."""
    if history.empty:
        return {}
    h = history.dropna(subset=["score"]).sort_values(["started_at", "run_id"]).copy()
    h["_seg"] = segment_index(h)
    out = {}
    for m, g in h.groupby("metric", sort=False):
        sd = run_spread(g["score"].tolist(), g["_seg"].tolist())
        out[str(m)] = MetricNoise(str(m), sd, jump_threshold(sd))
    return out


def label(name: str, value: float | None) -> str:
    """'run-to-run spread ±0.005' (a value) or 'run-to-run spread: not measured' (nan/None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{name}: not measured"
    return f"{name} ±{value:.3f}"
