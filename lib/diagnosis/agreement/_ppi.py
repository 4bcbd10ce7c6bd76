"""A metric corrected by people's labels: prediction-powered inference of a mean (PPI, and PPI++'s power tuning).

The judge scores every sample; people label a few. The judge's mean over the samples people did not label,
plus the mean of people-minus-judge on the labelled ones, estimates what people would say of all of them, with a
95% interval that holds however biased the judge is (Angelopoulos et al., Science 2023; PPI++ arXiv 2311.01453).
Power tuning scales the judge's share by lambda in [0, 1] (1: plain PPI; 0: the labels alone), chosen from the
data to narrow the interval when the judge tracks people well and to fall back on the labels when it does not.

The rectifier is calibrated on one instrument's judgings only: people-minus-judge measured with one judge says
nothing of another (arXiv 2605.06939), so callers pass the labels paired with the judgings being corrected.
Pure functions on arrays; `ppi_mean_arrays` works on a batch of draws at once (the last axis is the samples),
so its coverage can be simulated in milliseconds. It gives what `ppi_py.ppi_mean_ci` and
`ppi_py.ppi_mean_pointestimate` give (checked in tests/test_ppi.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
MIN_LABELS = 2   # a rectifier's spread needs two labels; fewer give no interval


@dataclass(frozen=True)
class Corrected:
    """A metric by the judge, and as people's labels correct it.

    Attributes:
        judge: the judge's mean over all its scored samples (labelled and not).
        value: the label-corrected mean (PPI / PPI++).
        low: lower end of the interval.
        high: upper end of the interval.
        n_labelled: samples with both a people's score and the judge's.
        n_unlabelled: samples with the judge's score only.
        lam: the judge's share (1: plain PPI; 0: the labels alone).
        confidence: the interval's nominal coverage.
        spread_judge: population variance of lam x the judge's unlabelled scores (the imputed term's spread).
        spread_rectifier: population variance of people - lam x judge over the labelled samples.
        weighted: the labels were taken in the Labels page's queue order and weighted by 1 / their inclusion
            probability (lib.diagnosis.agreement._active.active_mean), not drawn uniformly.
    """

    judge: float
    value: float
    low: float
    high: float
    n_labelled: int
    n_unlabelled: int
    lam: float
    confidence: float = CONFIDENCE
    spread_judge: float = 0.0
    spread_rectifier: float = 0.0
    weighted: bool = False

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def short(self) -> str:
        """'0.78 by the judge; 0.80 [0.78, 0.83] corrected'."""
        return f"{self.judge:.2f} by the judge; {self.value:.2f} [{self.low:.2f}, {self.high:.2f}] corrected"

    def labels_to_halve(self) -> int | None:
        """How many labels in all would halve the interval's width, taken from the unlabelled samples, at this
        judge's share and spreads; None when labelling alone cannot (the judge's term is already more than a
        quarter of the variance, and labelling every sample would leave no judge to tune).

        The interval's variance is spread_judge / N + spread_rectifier / n; halving the width quarters it. Moving
        k samples from the unlabelled to the labelled side gives spread_judge / (N - k) + spread_rectifier /
        (n + k), the smallest k that reaches a quarter is returned as n + k.
        """
        n, big_n = self.n_labelled, self.n_unlabelled
        if big_n == 0:
            return None
        target = (self.spread_judge / big_n + self.spread_rectifier / n) / 4
        k = np.arange(1, big_n)
        var = self.spread_judge / (big_n - k) + self.spread_rectifier / (n + k)
        reached = np.flatnonzero(var <= target)
        return int(n + k[reached[0]]) if len(reached) else None

    def sentence(self, metric: str) -> str:
        """'faithfulness 0.94 by the judge; 0.79 [0.74, 0.84] corrected by 150 labels'."""
        labels = f"{self.n_labelled} label{'s' if self.n_labelled != 1 else ''}"
        if self.weighted:
            labels += " (taken in the queue's order, weighted by it)"
        return (f"{metric} {self.judge:.2f} by the judge; {self.value:.2f} [{self.low:.2f}, {self.high:.2f}] "
                f"corrected by {labels}")


def tuned_lambda(people: np.ndarray, judged: np.ndarray, unlabelled: np.ndarray) -> np.ndarray:
    """PPI++'s power-tuning lambda per draw (last axis: samples), clipped to [0, 1].

    cov(people, judge) over the labelled samples / ((1 + n/N) var(judge) over all samples): the variance of the
    corrected mean is least there. The same moments as ppi_py._calc_lam_glm (covariance with 1/n, the judge's
    variance with 1/(n+N-1)).
    """
    n, big_n = people.shape[-1], unlabelled.shape[-1]
    cov = ((people - people.mean(-1, keepdims=True)) * (judged - judged.mean(-1, keepdims=True))).mean(-1)
    var = np.concatenate([judged, unlabelled], axis=-1).var(-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + n / big_n) * var)
    return np.clip(np.where(np.isfinite(lam), lam, 0.0), 0.0, 1.0)


def ppi_mean_arrays(people: np.ndarray, judged: np.ndarray, unlabelled: np.ndarray, *,
                    lam: float | np.ndarray | None = None, confidence: float = CONFIDENCE
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """PPI mean estimates and intervals for a batch of draws (the last axis is the samples).

    Args:
        people: people's scores of the labelled samples, shape (..., n).
        judged: the judge's scores of the same samples, shape (..., n).
        unlabelled: the judge's scores of the samples people did not label, shape (..., N), N >= 1.
        lam: the judge's share; None: tuned per draw (PPI++), 1.0: plain PPI.
        confidence: nominal coverage of the interval.

    Returns:
        (value, low, high, lam), each of shape (...,).
    """
    n, big_n = people.shape[-1], unlabelled.shape[-1]
    share = tuned_lambda(people, judged, unlabelled) if lam is None else np.broadcast_to(
        np.asarray(lam, dtype=float), people.shape[:-1])
    s = share[..., None] if np.ndim(share) else share
    value = (s * unlabelled).mean(-1) + (people - s * judged).mean(-1)
    # the two terms are independent (disjoint samples): their variances add; ddof=0 as ppi_py's
    se = np.sqrt((s * unlabelled).var(-1) / big_n + (people - s * judged).var(-1) / n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return value, value - z * se, value + z * se, np.asarray(share, dtype=float)


def ppi_mean(people: np.ndarray, judged: np.ndarray, unlabelled: np.ndarray, *, tune: bool = True,
             confidence: float = CONFIDENCE) -> Corrected | None:
    """The label-corrected mean of one instrument's scores, with its interval.

    Args:
        people: people's scores of the labelled samples.
        judged: the judge's scores of the same samples, in the same order.
        unlabelled: the judge's scores of the samples people did not label.
        tune: choose the judge's share from the data (PPI++); False: plain PPI (share 1).
        confidence: nominal coverage of the interval.

    Returns:
        The correction, or None with fewer than MIN_LABELS labels. With every sample labelled the labels'
        own mean and its normal interval are returned (there is nothing for the judge to add).

    Example:
        >>> c = ppi_mean(np.array([0.0, 1.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0]), np.array([1.0, 0.0]))
        >>> round(c.value, 3), c.n_labelled
        (0.461, 4)
    """
    y, f, u = (np.asarray(a, dtype=float).ravel() for a in (people, judged, unlabelled))
    if len(y) != len(f):
        raise ValueError(f"{len(y)} people's scores but {len(f)} judge's scores of the labelled samples")
    if len(y) < MIN_LABELS:
        return None
    judge = float(np.concatenate([f, u]).mean())
    if len(u) == 0:
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        m, se = float(y.mean()), float(y.std() / math.sqrt(len(y)))
        return Corrected(judge=judge, value=m, low=m - z * se, high=m + z * se, n_labelled=len(y), n_unlabelled=0,
                         lam=0.0, confidence=confidence, spread_rectifier=float(y.var()))
    value, low, high, lam = ppi_mean_arrays(y, f, u, lam=None if tune else 1.0, confidence=confidence)
    share = float(lam)
    return Corrected(judge=judge, value=float(value), low=float(low), high=float(high), n_labelled=len(y),
                     n_unlabelled=len(u), lam=share, confidence=confidence, spread_judge=float((share * u).var()),
                     spread_rectifier=float((y - share * f).var()))
