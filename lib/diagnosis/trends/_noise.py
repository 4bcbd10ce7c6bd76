"""One noise vocabulary: the two quantities every page names, computed here and only here.

- **run-to-run spread**: how far a metric's score moves between consecutive
  runs when nothing changed, as the sd of one run's score. Measured on the
  trend itself, within comparable segments (one instrument), robustly (the
  median of the run-to-run differences), so genuine jumps and instrument
  changes do not inflate it, and only once MIN_SPREAD_STEPS such differences
  exist besides the step being judged (from two or three differences that
  include a collapse, the "spread" is the collapse). The Trends band is ±2 of
  it, clipped to the metric's range [0, 1].
- **jump threshold**: a step between two runs is a jump when it lies beyond
  k standard errors of its own paired per-sample change (the samples scored
  in both runs, paired by id, as Compare pairs them) and, once the spread can
  be measured leaving the step out, beyond k·√2 spreads as well; never below
  FLOOR. With neither (no per-sample scores and too few runs) the step is not
  decided, and pages say so.
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
from statistics import NormalDist

import numpy as np
import pandas as pd

from lib.diagnosis.stats import jump_threshold as _threshold
from lib.diagnosis.stats import robust_step_sd, run_noise_sd
from lib.diagnosis.trends._segments import segment_index

RUN_SPREAD = "run-to-run spread"
JUMP_THRESHOLD = "jump threshold"
JUDGE_SPREAD = "judge repeat spread"
JUMP_K = 4.0
FLOOR = 0.005           # no step smaller than this is a jump (rounding)
MIN_SPREAD_STEPS = 8    # run-to-run differences within one instrument, besides the step judged, to measure a spread
MIN_PAIRS = 10          # samples scored in both runs for a step's paired standard error
SCORE_RANGE = (0.0, 1.0)

HELP = {
    RUN_SPREAD: "Run-to-run spread: how much this metric moves between consecutive runs when nothing changed "
                "(sd of one run's score, robust median of run-to-run differences within runs of one instrument; "
                f"measured once {MIN_SPREAD_STEPS} such differences exist).",
    JUMP_THRESHOLD: "Jump threshold: a change between two runs is a jump when its paired per-sample change (the "
                    "samples scored in both runs) clears a 95% interval held over all the metric's steps (1.96 "
                    f"standard errors for two runs, at most {JUMP_K:g}) and, once the run-to-run spread is measured, "
                    f"{JUMP_K:g} x √2 x that spread too.",
    JUDGE_SPREAD: "Judge repeat spread: how much the judge's score of the same, fixed outputs moves when they are "
                  "judged again (sd of a run mean over the ablation's repeats); 0 for a judge that repeats itself.",
}


def _mad_spread(d: np.ndarray) -> float:
    mad = float(np.median(np.abs(d - np.median(d))))
    return 1.4826 * mad / math.sqrt(2)


def within_steps(scores: Sequence[float], segments: Sequence[int]) -> np.ndarray:
    """Per score, its change from the score before when both are of one segment (nan otherwise, and at 0)."""
    x = np.asarray(scores, dtype=float)
    seg = np.asarray(segments)
    out = np.full(len(x), np.nan)
    if len(x) > 1:
        d = np.diff(x)
        out[1:] = np.where(seg[1:] == seg[:-1], d, np.nan)
    return out


def spread_of(steps: np.ndarray) -> float:
    """The run-to-run spread from within-instrument differences (nan ignored): nan below MIN_SPREAD_STEPS."""
    d = steps[~np.isnan(steps)]
    return _mad_spread(d) if len(d) >= MIN_SPREAD_STEPS else math.nan


def run_spread(scores: Sequence[float], segments: Sequence[int] | None = None) -> float:
    """The run-to-run spread (sd of one run's score) of a series, oldest first.

    With `segments` (one id per score), differences across a change of
    instrument are left out (the spread is what happens while nothing
    changed), and the spread is nan until MIN_SPREAD_STEPS differences exist.
    Without, stats.robust_step_sd of the series (a re-judged series).
    """
    x = np.asarray(scores, dtype=float)
    if segments is None:
        return robust_step_sd(x.tolist())
    seg = np.asarray(segments)
    keep = ~np.isnan(x)
    return spread_of(within_steps(x[keep], seg[keep]))


def jump_threshold(spread: float, *, k: float = JUMP_K) -> float:
    """The run-to-run part of the jump threshold (k·√2·spread, at least FLOOR); nan while the spread is not
    measured."""
    return math.nan if math.isnan(spread) else _threshold(spread, k=k, floor=FLOOR)


def judge_spread(per_sample_repeats: Sequence[Sequence[float]]) -> float:
    """The judge repeat spread of a run mean, from each sample's scores over repeats (stats.run_noise_sd)."""
    return run_noise_sd(per_sample_repeats)


def band(spread: float) -> float:
    """The ±band drawn around a score: two of a spread (about 95%)."""
    return 2.0 * spread


def clip_band(low: float, high: float) -> tuple[float, float]:
    """A band's edges within the metric's range (every metric here is a share, in [0, 1])."""
    lo, hi = SCORE_RANGE
    return max(low, lo), min(high, hi)


@dataclass(frozen=True)
class PairedStep:
    """The per-sample change between two runs, paired by sample (store.paired_steps)."""

    n: int
    mean: float
    sd: float

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n > 0 else math.nan


@dataclass(frozen=True)
class StepCall:
    """The decision on one step between two runs of a metric, and what it rests on."""

    delta: float
    threshold: float          # nan: not decided (no per-sample pairs and no measured spread)
    paired: PairedStep | None  # None: no (or too few) samples scored in both runs
    spread: float             # the run-to-run spread used (nan: not yet measured)
    n_steps: int              # the within-instrument differences it was measured from (the step left out)
    k: float = JUMP_K
    k_paired: float = JUMP_K  # standard errors the paired change must clear (paired_k)

    @property
    def decided(self) -> bool:
        return not math.isnan(self.threshold)

    @property
    def beyond(self) -> bool:
        return self.decided and abs(self.delta) > self.threshold

    @property
    def basis(self) -> str:
        """What the threshold rests on, in words."""
        parts = []
        if self.paired is not None:
            parts.append(f"{self.k_paired:.2f} standard errors of the paired change over {self.paired.n} samples "
                         f"(±{self.k_paired * self.paired.se:.3f})")
        else:
            parts.append("no per-sample scores paired between the two runs")
        if math.isnan(self.spread):
            parts.append(f"run-to-run spread not yet measured ({self.n_steps} of the {MIN_SPREAD_STEPS} "
                         f"within-instrument differences it needs)")
        else:
            parts.append(f"{self.k:g} x √2 x the run-to-run spread ±{self.spread:.3f} over {self.n_steps} "
                         f"differences (±{self.k * math.sqrt(2) * self.spread:.3f})")
        return "; ".join(parts)


def paired_k(m_steps: int, *, level: float = 0.95, cap: float = JUMP_K) -> float:
    """The standard errors a step's paired change must clear: a two-sided `level` interval held over the
    metric's `m_steps` steps together (Bonferroni), at most `cap`. One step (two runs): 1.96, Compare's 95%
    interval; four steps 2.50; past about 1,500 steps the cap, k = 4."""
    m = max(1, m_steps)
    return min(cap, NormalDist().inv_cdf(1 - (1 - level) / (2 * m)))


def call_step(delta: float, paired: PairedStep | None, spread: float, n_steps: int, *, k: float = JUMP_K,
              m_steps: int = 1) -> StepCall:
    """Decide one step: beyond paired_k(m_steps) paired standard errors (with MIN_PAIRS samples) and, once
    measured, beyond k·√2 run-to-run spreads; never a jump below FLOOR. With neither the step is not decided.

    Why the larger of the two: a step's variance is the per-sample part (the paired standard error) plus
    whatever run-level part the per-sample pairing misses; the spread measures both together, so the run-level
    part is at most 2·spread² - se², and se² plus that is the larger of se² and 2·spread².
    """
    usable = paired if paired is not None and paired.n >= MIN_PAIRS and not math.isnan(paired.sd) else None
    kp = paired_k(m_steps, cap=k)
    parts = []
    if usable is not None:
        parts.append(kp * usable.se)
    if not math.isnan(spread):
        parts.append(k * math.sqrt(2) * spread)
    threshold = max(FLOOR, *parts) if parts else math.nan
    return StepCall(delta, threshold, usable, spread, n_steps, k, kp)


def spread_without(steps: np.ndarray, i: int | None) -> tuple[float, int]:
    """The spread from within-instrument differences leaving out step `i` (None: all), and how many it used.

    Exact for up to 64 differences; beyond, one difference moves the median by at most one rank of 64, so the
    spread of all of them is used.
    """
    keep = ~np.isnan(steps)
    if i is not None and keep.sum() <= 64:
        keep = keep.copy()
        keep[i] = False
    d = steps[keep]
    return (_mad_spread(d) if len(d) >= MIN_SPREAD_STEPS else math.nan), len(d)


@dataclass(frozen=True)
class MetricNoise:
    """A metric's run-to-run spread (nan: not yet measured), its part of the jump threshold, and how many
    within-instrument differences it rests on."""

    metric: str
    spread: float
    threshold: float
    n_steps: int = 0


def metric_noise(history: pd.DataFrame) -> dict[str, MetricNoise]:
    """Per metric of a history: run-to-run spread within comparable segments, and its jump threshold."""
    if history.empty:
        return {}
    h = history.dropna(subset=["score"]).sort_values(["started_at", "run_id"]).copy()
    h["_seg"] = segment_index(h)
    out = {}
    for m, g in h.groupby("metric", sort=False):
        steps = within_steps(g["score"].tolist(), g["_seg"].tolist())
        sd, n = spread_without(steps, None)
        out[str(m)] = MetricNoise(str(m), sd, jump_threshold(sd), n)
    return out


def label(name: str, value: float | None) -> str:
    """'run-to-run spread ±0.005' (a value) or 'run-to-run spread: not measured' (nan/None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{name}: not measured"
    return f"{name} ±{value:.3f}"
