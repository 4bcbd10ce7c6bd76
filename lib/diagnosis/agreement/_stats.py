"""Agreement statistics between a judge and people: pure functions over plain arrays, and a cluster bootstrap.

AUC of the judge's score against binary labels (Mann-Whitney, ties count one half), accuracy and Cohen's
kappa of binary verdicts, mean error (mean |judge - people|) and bias (mean judge - people) of scores. The
interval is a percentile bootstrap over samples: every pair of one sample (its items, its runs) is drawn
together, so a sample judged on thirty runs counts as one sample, not thirty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP = 400   # replicates: the interval's ends move by about 0.005 between seeds at 150 samples
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A figure with its bootstrap interval over samples (NaN when it cannot be computed)."""

    value: float
    low: float
    high: float

    @property
    def known(self) -> bool:
        return math.isfinite(self.value)


NONE = Estimate(math.nan, math.nan, math.nan)


def auc(scores: Sequence[float], labels: Sequence[bool], weights: Sequence[float] | None = None) -> float:
    """The probability that a positive's score exceeds a negative's (ties one half); NaN without both kinds."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    wp, wn = w * y, w * ~y
    if wp.sum() == 0 or wn.sum() == 0:
        return math.nan
    order = np.argsort(s, kind="mergesort")
    s, wp, wn = s[order], wp[order], wn[order]
    _, start = np.unique(s, return_index=True)
    pos_at = np.add.reduceat(wp, start)
    neg_at = np.add.reduceat(wn, start)
    below = np.concatenate([[0.0], np.cumsum(neg_at)[:-1]])   # negatives strictly below each distinct score
    total = float(np.sum(pos_at * (below + 0.5 * neg_at)))
    return total / (wp.sum() * wn.sum())


def _table(pred: np.ndarray, truth: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted 2x2 counts: [both yes, judge yes people no, judge no people yes, both no]."""
    return np.array([np.sum(w * (pred & truth)), np.sum(w * (pred & ~truth)), np.sum(w * (~pred & truth)),
                     np.sum(w * (~pred & ~truth))])


def kappa_of(table: np.ndarray) -> np.ndarray:
    """Cohen's kappa from 2x2 counts (last axis: yy, yn, ny, nn); NaN where chance agreement is total."""
    yy, yn, ny, nn = (table[..., k] for k in range(4))
    n = yy + yn + ny + nn
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (yy + nn) / n
        chance = ((yy + yn) * (yy + ny) + (ny + nn) * (yn + nn)) / (n * n)
        return np.where(chance < 1.0, (observed - chance) / (1.0 - chance), np.nan)


def accuracy(pred: Sequence[bool], truth: Sequence[bool]) -> float:
    """Share of verdicts that agree with the labels."""
    p, t = np.asarray(pred, dtype=bool), np.asarray(truth, dtype=bool)
    return float(np.mean(p == t)) if len(p) else math.nan


def cohen_kappa(pred: Sequence[bool] | np.ndarray, truth: Sequence[bool] | np.ndarray) -> float:
    """Cohen's kappa of two binary raters: agreement beyond what their base rates give by chance."""
    p, t = np.asarray(pred, dtype=bool), np.asarray(truth, dtype=bool)
    return float(kappa_of(_table(p, t, np.ones(len(p))))) if len(p) else math.nan


def bias(judge: Sequence[float] | np.ndarray, people: Sequence[float] | np.ndarray) -> float:
    """Mean of judge minus people: positive when the judge is more generous than people."""
    j, p = np.asarray(judge, dtype=float), np.asarray(people, dtype=float)
    return float(np.mean(j - p)) if len(j) else math.nan


def mean_error(judge: Sequence[float] | np.ndarray, people: Sequence[float] | np.ndarray) -> float:
    """Mean absolute difference between judge and people."""
    j, p = np.asarray(judge, dtype=float), np.asarray(people, dtype=float)
    return float(np.mean(np.abs(j - p))) if len(j) else math.nan


def replicate_weights(clusters: Sequence[str], *, reps: int = BOOTSTRAP,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate, how often each cluster (sample) is drawn; and each pair's cluster index.

    Returns (draws: reps x n_clusters counts, index: the cluster of each pair). Two figures bootstrapped with
    the same clusters and seed use the same draws: that is what makes a paired difference paired.
    """
    names, index = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(names), np.full(len(names), 1.0 / len(names)), size=reps) if len(names) else \
        np.zeros((reps, 0))
    return draws.astype(float), index


def interval(values: np.ndarray, point: float) -> Estimate:
    """The percentile interval of bootstrap replicates around a point estimate."""
    finite = values[np.isfinite(values)]
    if not math.isfinite(point) or len(finite) < len(values) / 2:
        return Estimate(point, math.nan, math.nan)
    tail = (1.0 - LEVEL) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return Estimate(point, float(lo), float(hi))


def boot(stat: Callable[[np.ndarray], float], n_pairs: int, draws: np.ndarray, index: np.ndarray) -> np.ndarray:
    """`stat(weights)` for every replicate, where weights give each pair its sample's draw count."""
    if n_pairs == 0:
        return np.full(len(draws), np.nan)
    return np.array([stat(d[index]) for d in draws])


def boot_mean(values: np.ndarray, draws: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The weighted mean of `values` for every replicate at once (what `boot` of weighted_mean gives)."""
    if len(values) == 0:
        return np.full(len(draws), np.nan)
    per_sample = np.bincount(index, weights=values, minlength=draws.shape[1])
    count = np.bincount(index, minlength=draws.shape[1]).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (draws @ per_sample) / (draws @ count)


def boot_kappa(pred: np.ndarray, truth: np.ndarray, draws: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Cohen's kappa for every replicate at once (what `boot` of weighted_kappa gives)."""
    if len(pred) == 0:
        return np.full(len(draws), np.nan)
    cells = np.stack([pred & truth, pred & ~truth, ~pred & truth, ~pred & ~truth], axis=1).astype(float)
    per_sample = np.stack([np.bincount(index, weights=cells[:, k], minlength=draws.shape[1]) for k in range(4)],
                          axis=1)
    return kappa_of(draws @ per_sample)


def weighted_mean(values: np.ndarray, w: np.ndarray) -> float:
    total = w.sum()
    return float(np.sum(values * w) / total) if total > 0 else math.nan


def weighted_kappa(pred: np.ndarray, truth: np.ndarray, w: np.ndarray) -> float:
    return float(kappa_of(_table(pred, truth, w)))
