"""What to label next: an order of a run's samples that narrows the label-corrected interval fastest, and the
estimator that stays valid for labels taken in that order.

Why this rule (active statistical inference, Zrnic & Candes, ICML 2024): the corrected mean's variance is the
judge's term plus the rectifier's (people minus judge). When sample i is labelled with probability pi_i and
weighted by 1 / pi_i, the rectifier's variance is sum_i E[(Y_i - f_i)^2] (1 - pi_i) / pi_i / N^2, least for a given
number of labels when pi_i is proportional to sqrt(E[(Y_i - f_i)^2]): label where the judge is likely wrong.
Two signals of that, known before anyone labels:

- the judge's uncertainty: a score s over m item verdicts (items split) varies by s(1 - s) / m if each verdict
  were a coin at s; a sample the judge called wholly supported or wholly unsupported has none by that measure;
- disagreement: another instrument's score of the very same text (another judge, prompt or binding on the
  metric's timeline) differing by d; d^2 is a lower bound on one of the two judges' squared error.

Weight w_i = sqrt(s(1 - s) / m + d^2 + FLOOR). The floor keeps every sample's chance of being labelled at least
about a tenth of the likeliest's, so no sample is left out of the design (the weighted interval needs pi > 0).

An order, not a draw: the queue sorts samples by u_i / w_i, u_i uniform from a hash of the sample id and a seed
(sequential Poisson sampling, Ohlsson 1998). Whoever stops after the first n has taken a sample whose inclusion
probabilities are about min(1, c w_i) with sum n (`inclusion`), whatever n is: the labeller need not decide a
budget. A uniform u_i with equal weights is the random order the benchmark compares against.

Labels taken in this order are not a uniform sample: their plain mean of people-minus-judge is biased toward
the samples the judge is unsure of. `active_mean` weights each by 1 / pi_i (Horvitz-Thompson, with the
fixed-size variance), the estimator whose width and coverage the benchmark checks
(tests/benchmarks/bench_label_order.py).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from lib.diagnosis.agreement._ppi import CONFIDENCE, MIN_LABELS, Corrected

FLOOR = 0.01   # in squared-error units: w >= 0.1, against at most sqrt(0.25 + 1 + 0.01) ~ 1.12
SEED = 0       # the order's hash seed: one order per run, the same on every visit


def weights(scores: np.ndarray, disagreement: np.ndarray | None = None, items: np.ndarray | None = None
            ) -> np.ndarray:
    """Each sample's weight sqrt(s(1 - s) / m + d^2 + FLOOR) from the judge's score s over m items and the
    disagreement d (0 when None or NaN: no other instrument judged the same text; m 1 when None)."""
    s = np.clip(np.asarray(scores, dtype=float), 0.0, 1.0)
    d = np.zeros_like(s) if disagreement is None else np.nan_to_num(np.asarray(disagreement, dtype=float))
    m = np.ones_like(s) if items is None else np.maximum(np.asarray(items, dtype=float), 1.0)
    return np.sqrt(s * (1 - s) / m + d * d + FLOOR)


def uniforms(ids: Sequence[str], seed: int = 0) -> np.ndarray:
    """A uniform number in (0, 1) per id, from a hash of (seed, id): the same order on every visit and machine."""
    out = np.empty(len(ids))
    for k, sid in enumerate(ids):
        h = hashlib.blake2b(f"{seed}\0{sid}".encode(), digest_size=8).digest()
        out[k] = (int.from_bytes(h, "big") + 0.5) / 2.0**64
    return out


def order(ids: Sequence[str], w: np.ndarray, *, seed: int = 0) -> list[int]:
    """Positions of `ids` in labelling order: ascending u_i / w_i (sequential Poisson sampling)."""
    keys = uniforms(ids, seed) / np.asarray(w, dtype=float)
    return [int(k) for k in np.argsort(keys, kind="stable")]


def inclusion(w: np.ndarray, n: int) -> np.ndarray:
    """Inclusion probabilities of the first n of the order: min(1, c w_i) summing to n (c found by capping)."""
    w = np.asarray(w, dtype=float)
    pi = np.zeros_like(w)
    if n <= 0:
        return pi
    if n >= len(w):
        return np.ones_like(w)
    capped = np.zeros(len(w), dtype=bool)
    while True:
        free = ~capped
        c = (n - capped.sum()) / w[free].sum()
        over = free & (c * w >= 1)
        if not over.any():
            pi[free] = c * w[free]
            pi[capped] = 1.0
            return pi
        capped |= over


def active_mean(people: np.ndarray, judged: np.ndarray, pi: np.ndarray, all_scores: np.ndarray, *,
                confidence: float = CONFIDENCE) -> Corrected | None:
    """The corrected mean of a run's samples from the first n labels of an order, each with its inclusion
    probability `pi`.

    The target is what people would say of the run's own N samples on average: the judge's mean over them is
    known exactly; the rectifier's total is estimated by Horvitz-Thompson, sum of (people - judge) / pi over the
    labelled. Its variance is the fixed-size approximation (Hajek 1964; Berger 1998): n / (n - 1) sum of
    (1 - pi) (e - E)^2 with e = rectifier / pi and E their (1 - pi)-weighted mean. For equal pi = n / N this is
    plain PPI (share 1) with the finite-population factor 1 - n / N. The uncentred Poisson variance was tried
    and covered 99% in the benchmark: too wide, since n is fixed, not drawn.

    Args:
        people: people's scores of the labelled samples.
        judged: the judge's scores of the same samples.
        pi: each labelled sample's inclusion probability (`inclusion` of the order's weights, at n labelled).
        all_scores: the judge's scores of every sample of the run (labelled ones included), N of them.
        confidence: nominal coverage.

    Returns:
        The correction, or None with fewer than MIN_LABELS labels.

    Example:
        >>> c = active_mean(np.array([0.0, 1.0]), np.array([1.0, 1.0]), np.array([0.5, 0.5]), np.ones(4))
        >>> round(c.value, 2), c.n_labelled
        (0.5, 2)
    """
    y, f, p, a = (np.asarray(x, dtype=float).ravel() for x in (people, judged, pi, all_scores))
    n, big_n = len(y), len(a)
    if n < MIN_LABELS:
        return None
    r = y - f
    e = r / p
    c = 1 - p
    centre = float((c * e).sum() / c.sum()) if c.sum() > 0 else 0.0
    var = n / (n - 1) * float((c * (e - centre) ** 2).sum()) / big_n**2
    value = float(a.mean() + e.sum() / big_n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    se = math.sqrt(var)
    return Corrected(judge=float(a.mean()), value=value, low=value - z * se, high=value + z * se, n_labelled=n,
                     n_unlabelled=big_n - n, lam=1.0, confidence=confidence, spread_rectifier=float(r.var()),
                     weighted=True)


def labels_to_halve(w: np.ndarray, n: int) -> int | None:
    """How many labels in all, taken in the order of weights `w`, would halve the interval's width from n labels.

    The rectifier's squared error at sample i is modelled as kappa w_i^2 (the weights' own premise), so the
    variance at m labels is kappa / N^2 sum_i (1 - pi_i) / pi_i w_i^2 with pi = inclusion(w, m); kappa cancels in
    the ratio. Returns the smallest m where it is a quarter of the variance at n (None: fewer than MIN_LABELS
    labelled, or every sample already is). Equal weights give a uniform random order's answer.

    Example:
        >>> labels_to_halve(np.ones(1000), 100)   # (1 - n/N) / n falls to a quarter at m = 308
        308
    """
    w = np.asarray(w, dtype=float)
    big_n = len(w)
    if n < MIN_LABELS or n >= big_n:
        return None

    def var(m: int) -> float:
        pi = inclusion(w, m)
        return float(((1 - pi) / pi * w * w).sum())

    target = var(n) / 4
    lo, hi = n + 1, big_n   # var falls as m grows and is 0 at N: bisect for the first m at or below target
    while lo < hi:
        mid = (lo + hi) // 2
        if var(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo
