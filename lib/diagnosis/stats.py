"""Statistics for paired re-judging: bootstrap CIs, verdict flips, noise, jumps.

Every function here is pure: arrays in, numbers out. What each assumes is
said in its docstring; the unit of resampling is always the sample, because
the claims inside one sample share its answer and passages and are not
independent of each other.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z_95 = 1.959963984540054
Z_80_POWER = 0.8416212335729143


@dataclass(frozen=True)
class PairedDiff:
    """Mean paired difference (b - a) with its bootstrap interval."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, n_boot: int = 2000, seed: int = 0,
                     level: float = 0.95) -> PairedDiff:
    """Percentile bootstrap CI of mean(b - a) over paired samples.

    Assumes: a[i] and b[i] are the same sample under two conditions (each
    already averaged over its claims and repeats), samples are exchangeable,
    and n is large enough for a percentile interval (n >= 20 or so). Seeded,
    so the same inputs give the same interval.
    """
    x = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(x)
    if n == 0:
        return PairedDiff(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    tail = (1 - level) / 2
    return PairedDiff(float(x.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)), n)


SMALL_N = 20   # below this many pairs a percentile bootstrap is too narrow: paired_interval inverts a sign-flip test


def _sign_flip_p(x: np.ndarray, signs: np.ndarray, delta: float) -> float:
    """Two-sided p of H0 'the mean paired change is delta', by flipping the signs of (x - delta)."""
    y = x - delta
    observed = abs(float(y.mean()))
    flipped = np.abs((signs * y).mean(axis=1))
    return float(np.mean(flipped >= observed - 1e-12))


def sign_flip_interval(x: Sequence[float], *, level: float = 0.95, seed: int = 0, exact_up_to: int = 14,
                       n_flips: int = 20000, bounds: tuple[float, float] = (-1.0, 1.0)) -> tuple[float, float]:
    """The interval of mean(x) a paired sign-flip (permutation) test does not reject at 1 - level.

    Exact (all 2^n sign patterns) up to `exact_up_to` pairs, else `n_flips` seeded random patterns. Assumes the
    paired changes are symmetric about their mean under the null (exchangeable arms). With too few pairs to
    reject anything (n <= 5 at 95%), the interval is the whole range `bounds` of a change of two [0, 1] scores.
    """
    a = np.asarray(x, dtype=float)
    n = len(a)
    if n == 0:
        return bounds
    if n <= exact_up_to:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_flips, n))
    alpha = 1 - level
    centre = float(a.mean())

    def accepted(d: float) -> bool:
        return _sign_flip_p(a, signs, d) > alpha

    def edge(far: float) -> float:
        if accepted(far):
            return far
        inside, outside = centre, far
        for _ in range(40):
            mid = (inside + outside) / 2
            inside, outside = (mid, outside) if accepted(mid) else (inside, mid)
        return inside

    return edge(bounds[0]), edge(bounds[1])


def paired_interval(a: Sequence[float], b: Sequence[float], *, seed: int = 0, level: float = 0.95) -> PairedDiff:
    """The paired change mean(b - a) with a 95% interval: the bootstrap's from SMALL_N pairs on, below that the
    sign-flip test's (sign_flip_interval), which holds its level at any n where a bootstrap does not."""
    if len(a) >= SMALL_N:
        return paired_bootstrap(a, b, seed=seed, level=level)
    x = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(x) == 0:
        return PairedDiff(math.nan, math.nan, math.nan, 0)
    lo, hi = sign_flip_interval(x, level=level, seed=seed)
    return PairedDiff(float(x.mean()), lo, hi, len(x))


@dataclass(frozen=True)
class Flips:
    """Per-item verdict flips between two conditions, with McNemar's exact test."""

    to_positive: int
    to_negative: int
    unchanged: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.to_positive + self.to_negative


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts b and c (a sign test).

    Assumes the discordant items are independent; claims nested in a sample are
    not quite, so read it as a screening figure next to the bootstrap CI.
    """
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    # C(n, 0..k) each from the one before: the same exact integers as math.comb's each, which makes a product of
    # its own (900 discordant items: 3.3 -> 0.08 ms CPU)
    term = total = 1
    for i in range(1, k + 1):
        term = term * (n - i + 1) // i
        total += term
    tail = total / 2 ** n
    return min(1.0, 2 * tail)


def flips(before: Sequence[bool], after: Sequence[bool]) -> Flips:
    """Count verdicts that flipped between two aligned label lists."""
    up = sum((not x) and y for x, y in zip(before, after, strict=True))
    down = sum(x and (not y) for x, y in zip(before, after, strict=True))
    return Flips(up, down, len(before) - up - down, mcnemar_exact(up, down))


def sample_mean(repeats: Sequence[float]) -> float:
    """One sample's mean over its repeats: float(np.mean(repeats)), bit for bit, without numpy's per-call cost,
    which dominates a list of a few repeats and an ablation reads one such list per sample, arm and look. Below
    eight values numpy adds them in order, as sum() does; from eight on it sums pairwise, so numpy answers."""
    if 0 < len(repeats) < 8:
        return sum(repeats) / len(repeats)
    return float(np.mean(repeats))


def sample_variance(repeats: Sequence[float]) -> float:
    """One sample's unbiased variance over its repeats: float(np.var(repeats, ddof=1)), bit for bit (as
    sample_mean)."""
    if 2 <= len(repeats) < 8:
        m = sum(repeats) / len(repeats)
        return sum((v - m) * (v - m) for v in repeats) / (len(repeats) - 1)
    return float(np.var(repeats, ddof=1))


def run_noise_sd(per_sample_repeats: Sequence[Sequence[float]]) -> float:
    """Judge noise of a run-level mean, from re-judging the same samples k times.

    per_sample_repeats[i] holds sample i's scores over the repeats. The run
    mean's noise variance is mean_i(var_i) / n, with var_i the unbiased
    variance over sample i's repeats: pooling within-sample variance over all
    samples is far steadier than the spread of k run means. Assumes repeats
    differ only in the judge's sampling (seed), not in inputs.
    """
    variances = [sample_variance(r) for r in per_sample_repeats if len(r) >= 2]
    if not variances:
        return math.nan
    return math.sqrt(float(np.mean(variances)) / len(variances))


def noise_band(sd: float) -> float:
    """The noise band (half-width) drawn around a run score: two noise sds (~95%)."""
    return 2.0 * sd


def mde(sd_delta: float, n: int, *, z_alpha: float = Z_95, z_power: float = Z_80_POWER) -> float:
    """Minimum detectable mean paired difference: (z_a/2 + z_power) * sd(delta) / sqrt(n).

    About 2.8 sd/sqrt(n) at 80% power, 5% two-sided. Assumes roughly normal
    mean differences (fine for n in the hundreds).
    """
    if n <= 0:
        return math.inf
    return (z_alpha + z_power) * sd_delta / math.sqrt(n)


def robust_step_sd(values: Sequence[float]) -> float:
    """The noise sd of one run's score, from a trend, robust to level shifts.

    Uses the median absolute deviation of consecutive differences, scaled to a
    normal sd (1.4826) and divided by sqrt(2) because a difference of two
    noisy runs has twice the variance. A level shift shows up as one outlying
    difference, which the median ignores; a plain sd of the trend would be
    inflated by every genuine change. Returns nan with fewer than 3 values.
    """
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if len(x) < 3:
        return math.nan
    d = np.diff(x)
    mad = float(np.median(np.abs(d - np.median(d))))
    return 1.4826 * mad / math.sqrt(2)


def jump_threshold(sd: float, *, k: float = 4.0, floor: float = 0.005) -> float:
    """k noise sds of a difference of two runs (k·√2·sd), at least `floor` (nan sd counts as 0)."""
    return max(k * math.sqrt(2) * (sd if not math.isnan(sd) else 0.0), floor)


def step_flags(values: Sequence[float], *, k: float = 4.0, floor: float = 0.005,
               sd: float | None = None) -> tuple[list[bool], float]:
    """Flag consecutive changes larger than k noise sds of a difference.

    Returns (flags, threshold) with flags[i] for the step from values[i-1] to
    values[i] (flags[0] is False). k = 4 keeps false alarms rare over hundreds
    of steps (about 6 in 100,000 under normal noise); `floor` stops a perfectly
    quiet series from flagging rounding noise. `sd` is the noise sd of one run
    (default: robust_step_sd of the values; lib.diagnosis.trends._noise passes the spread measured
    within comparable segments).
    """
    threshold = jump_threshold(robust_step_sd(values) if sd is None else sd, k=k, floor=floor)
    flags = [False]
    for prev, cur in itertools.pairwise(values):
        ok = prev is not None and cur is not None and not (math.isnan(prev) or math.isnan(cur))
        flags.append(bool(ok and abs(cur - prev) > threshold))
    return flags, threshold
