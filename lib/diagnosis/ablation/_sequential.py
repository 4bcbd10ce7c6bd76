"""Sequential ablation: judge samples in a seeded order and stop an arm once its verdict is decided.

Judging every sample of every arm costs calls that a clear verdict does not
need: a blanked field that moves a score by 0.5 shows it in the first few
dozen samples. An arm is looked at after each chunk of `CHUNK` samples (the
chunk is judged in the judge's full concurrency); at each look, the paired
differences seen so far (blanked - as wired, per sample, in [-1, 1]) give an
anytime-valid confidence sequence (CS) for their mean. Unlike a fixed-n
interval recomputed at every look, a CS covers the mean at every look at
once with probability 1 - ALPHA, so stopping at whichever look decides does
not inflate false alarms.

The CS is the predictable plug-in empirical-Bernstein CS (PrPl-EB) of
Waudby-Smith and Ramdas, "Estimating means of bounded random variables by
betting", JRSS-B 86(1), 2024 (arXiv:2010.09686), Theorem 2 with its
recommended plug-in bets, implemented here from the paper's definitions;
it adapts to the variance of the differences, which is small when a judge
mostly repeats itself. Its intervals are intersected over the looks made
(a running intersection keeps the guarantee).

The stopping rule (`stop_reason`) reads the same evidence `lib.diagnosis.ablation._verdicts.classify`
reads, with the CS as the interval: an arm stops when a move beyond the
smallest effect worth naming (and beyond the repeat noise band) is decided,
when no move beyond the margin a null must rule out is left, or when
blanking left the metric nothing to judge. A must-never-receive field whose
CS excludes zero but not the smallest effect is a leak below the effect so
far: never a null, and judged on, so that its size is read as judging every
sample would read it. An arm that no look decides is judged on every sample,
and its verdict rests on the same fixed-n interval as judging all samples
would give. So the stated false-LEAK level, for a field the judge does not
depend on (a true move of 0; any true move of a must-never-receive field is
a leak), is FALSE_LEAK_LEVEL = 7.5%: at most ALPHA/2 from the looks (a CS
wholly beyond the effect on one side), plus the fixed-n interval's 5% at the
last one (it excludes zero on either side; a move within the judge repeat
band is not counted, so a noisy judge's rate is lower: 0 of 400 simulated).

Assumes what the paired bootstrap assumes: samples are exchangeable draws
from what the run stands for; the seeded order makes each judged prefix a
simple random sample of the run's samples.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lib.diagnosis.ablation._verdicts import (
    EXPECT_SENSITIVE,
    INVARIANT,
    MAX_FAILED_SHARE,
    MIN_PAIRED,
    CellEvidence,
)

ALPHA = 0.05            # the CS's two-sided miscoverage: it covers the mean at every look at once with 95%
FALSE_LEAK_LEVEL = 0.075  # stated: ALPHA/2 from the looks + 5% (two-sided) from the fixed-n interval at the end
CHUNK = 20              # samples judged between looks
BET_CAP = 0.75          # the largest bet (the paper's c; 1/2 or 3/4 are its suggestions)

MOVE = "move decided"
NULL = "no move beyond the margin"
NOTHING = "nothing to judge"
EXHAUSTED = "all samples judged"
STOPS = (MOVE, NULL, NOTHING, EXHAUSTED)


@dataclass(frozen=True)
class Stop:
    """Why and where an arm stopped.

    Attributes:
        reason: MOVE, NULL, NOTHING (decided at a look) or EXHAUSTED (every sample judged).
        samples: the samples of the seeded order judged in this arm.
        lo, hi: the CS at the deciding look (None when exhausted: the fixed-n interval decides).
    """

    reason: str
    samples: int
    lo: float | None = None
    hi: float | None = None

    @property
    def early(self) -> bool:
        return self.reason != EXHAUSTED


def seeded_order(ids: Sequence[str], seed: int) -> list[str]:
    """The order samples are judged in: a permutation fixed by the ablation's seed (and the ids)."""
    out = sorted(ids)
    random.Random(f"evaldrift-sequential-{seed}").shuffle(out)
    return out


def looks(total: int, chunk: int = CHUNK) -> list[int]:
    """Sample counts at which arms are looked at: every chunk, and the end."""
    marks = list(range(chunk, total, chunk))
    return [*marks, total] if total else []


def confidence_sequence(x: Sequence[float], *, alpha: float = ALPHA, lower: float = -1.0, upper: float = 1.0,
                        cap: float = BET_CAP) -> tuple[np.ndarray, np.ndarray]:
    """The PrPl-EB confidence sequence for the mean of bounded observations, at every t = 1..n.

    With y = (x - lower) / (upper - lower) in [0, 1], t = 1..n:
    mu_t = (1/2 + sum_{i<=t} y_i) / (t + 1), var_t = (1/4 + sum_{i<=t} (y_i - mu_i)^2) / (t + 1)
    (mu_0 = 1/2, var_0 = 1/4); the bet lambda_t = min(sqrt(2 log(2/alpha) / (var_{t-1} t log(1 + t))), cap)
    uses only the past; with v_i = 4 (y_i - mu_{i-1})^2 and psi(l) = (-log(1 - l) - l) / 4 the CS is
    sum(lambda_i y_i) / sum(lambda_i) +- (log(2/alpha) + sum(v_i psi(lambda_i))) / sum(lambda_i),
    clipped to [0, 1] and mapped back to [lower, upper].

    Returns:
        (lo, hi): arrays of length n; lo[t-1], hi[t-1] the CS after t observations (not yet intersected).
    """
    y = (np.asarray(x, dtype=float) - lower) / (upper - lower)
    n = len(y)
    if n == 0:
        return np.empty(0), np.empty(0)
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(y)) / (t + 1)
    var = (0.25 + np.cumsum((y - mu) ** 2)) / (t + 1)
    mu_prev = np.concatenate(([0.5], mu[:-1]))
    var_prev = np.concatenate(([0.25], var[:-1]))
    log_term = math.log(2 / alpha)
    lam = np.minimum(np.sqrt(2 * log_term / (var_prev * t * np.log1p(t))), cap)
    psi = (-np.log1p(-lam) - lam) / 4
    weight = np.cumsum(lam)
    centre = np.cumsum(lam * y) / weight
    width = (log_term + np.cumsum(4 * (y - mu_prev) ** 2 * psi)) / weight
    lo = np.clip(centre - width, 0.0, 1.0)
    hi = np.clip(centre + width, 0.0, 1.0)
    return lower + lo * (upper - lower), lower + hi * (upper - lower)


def cs_at_looks(x: Sequence[float], at: Sequence[int], *, alpha: float = ALPHA) -> tuple[float, float]:
    """The CS after the last of `at` (counts of observations), intersected over all of them.

    Counts of 0 are skipped; with no observation the CS is the whole range [-1, 1].
    """
    lo_all, hi_all = confidence_sequence(x, alpha=alpha)
    lo, hi = -1.0, 1.0
    for k in at:
        if 0 < k <= len(lo_all):
            lo, hi = max(lo, float(lo_all[k - 1])), min(hi, float(hi_all[k - 1]))
    return lo, hi


def stop_reason(e: CellEvidence) -> str | None:
    """Whether a look decides the arm, and why; None: judge the next chunk.

    `e` is the cell's evidence so far with the CS as its interval (lo, hi). The
    branches follow `lib.diagnosis.ablation._verdicts.classify`, so a decided arm's verdict is the one
    classify gives that evidence; the replay check is not read here (it is the
    baseline's, and it is applied to the verdict afterwards).
    """
    if e.nothing_to_judge and e.expected == EXPECT_SENSITIVE:
        return NOTHING
    if e.n_units and e.n_failed / e.n_units > MAX_FAILED_SHARE:
        return None          # failures may yet thin out: the share at the end decides
    if e.n < MIN_PAIRED or e.mean is None or math.isnan(e.mean):
        return None
    if e.beyond_effect:
        return MOVE if e.beyond_noise else None   # within the noise band: more samples narrow the band
    if e.expected == INVARIANT and e.excludes_zero:
        return None          # a leak below the effect so far: never a null; judge on to size it (the last look's
                             # fixed-n interval decides it, as judging every sample would)
    if e.expected == EXPECT_SENSITIVE and e.falls:
        return None          # a fall below the effect is no null; more samples may show the effect
    if e.headroom is not None and e.headroom < e.rule_out:
        return None          # no room to fall by the margin: nothing a null could rule out yet
    if e.far is not None and e.far <= e.null_bound:
        return NULL
    return None


def first_stop(total: int, judged: int, evidence_at: Callable[[int], CellEvidence], *, since: int = 0,
               chunk: int = CHUNK) -> Stop | None:
    """Replay an arm's looks over its first `judged` samples (of `total`) and say where it stopped.

    Looks at `since` samples or fewer are known not to have decided (a running ablation looks once a chunk).

    `evidence_at(k)` is the evidence over the first k samples of the order, with the CS (intersected over
    the looks up to k) as its interval. The last look is never a decision by CS: an arm judged on every
    sample is EXHAUSTED, and its verdict rests on the fixed-n interval, as judging all samples gives.

    Returns:
        The Stop, or None while the arm is undecided and samples remain.
    """
    for k in looks(total, chunk):
        if k <= since:
            continue
        if k > judged:
            return None
        if k == total:
            return Stop(EXHAUSTED, total)
        e = evidence_at(k)
        reason = stop_reason(e)
        if reason is not None:
            return Stop(reason, k, e.lo, e.hi)
    return Stop(EXHAUSTED, total) if judged >= total else None
