"""The sentinel's test: an e-process on the nightly disagreement with the pinned verdicts, valid at every look.

Each night the pinned probes are judged again with a seed of that night's own, and the night's observation is
its disagreement D (the mean, over the probes judged, of the share of each probe's items whose verdict differs
from the pinned one: in [0, 1]). The null is "the judge behaves as it did when pinned": then each night is a
fresh draw of the same judge on the same prompts, so E[D | past nights] is the judge's own repeat disagreement
with the pinned verdicts, p0. p0 is bounded from the repeats judged at pin time (`null_bound`: a one-sided
Chernoff bound, level PIN_ALPHA, that holds for any independent observations in [0, 1]); call it m0.

The test bets against H0: E[D] <= m0. K_0 = 1 and K_k = K_{k-1} (1 + lambda_k (D_k - m0)), with the bet
lambda_k chosen from earlier nights only (`bet`), 0 <= lambda_k <= BET_CAP / m0, so each factor stays positive
(D >= 0). Under H0, K is a non-negative supermartingale, and by Ville's inequality P(K ever reaches 1/ALPHA)
<= ALPHA however many nights are looked at and whenever one looks: the nightly check is not a fixed-n test
repeated. With the pin bound, the chance of ever calling drift on an unchanged judge is at most ALPHA +
PIN_ALPHA, over an unlimited number of nights.

(BET_CAP 0.8 and WINDOW 2 were chosen on simulated nights of 100 probes, before tests/benchmarks/bench_sentinel.py:
against a cap of 0.5, a 5% change to a judge that repeats itself was called in a median of 7 nights either way,
and at worst in 9 nights rather than 12, with no false alarm in either.)

The bet is the aGRAPA plug-in of Waudby-Smith and Ramdas ("Estimating means of bounded random variables by
betting", JRSS-B 86(1), 2024): (mu - m0) / (v + (mu - m0)^2), clipped, with mu the mean of the last WINDOW
nights (a short window: a judge that changes on night 60 is bet against from night 61 or 62, not after its mean over
60 nights has moved) and v their spread around mu plus a prior v0, the variance a night of n probes would have
if each probe disagreed wholly with probability m0. While the last nights sit at or below m0 the bet is 0 and K does
not decay, so a change late in the sentinel's life is found about as fast as an early one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lib.diagnosis.ablation import confidence_sequence

ALPHA = 0.05        # the e-process's level: drift is called when K reaches 1 / ALPHA = 20
PIN_ALPHA = 0.01    # the level of the bound on the judge's own repeat disagreement, from the pin's repeats
BET_CAP = 0.8       # the largest bet as a share of 1 / m0: a night that agrees wholly costs at most 80% of K
WINDOW = 2          # nights the bet reads


def kl_bernoulli(p: float, q: float) -> float:
    """KL(Bernoulli(p) || Bernoulli(q)), with 0 log 0 = 0."""
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q))
    return out


def chernoff_bound(observations: Sequence[float], alpha: float) -> float:
    """An upper confidence bound, level 1 - alpha, on the mean of independent observations in [0, 1].

    The Chernoff-Hoeffding bound: the largest m with n KL(mean || m) <= log(1 / alpha) (Hoeffding 1963,
    Theorem 1, which holds for any independent variables in [0, 1], not only 0/1 ones). No observation: 1.
    Tight when the observations are nearly all 0 (a judge that repeats itself).
    """
    n = len(observations)
    if n == 0:
        return 1.0
    mean = min(max(sum(observations) / n, 0.0), 1.0)
    target = math.log(1 / alpha) / n
    lo, hi = mean, 1.0
    for _ in range(60):   # bisection: kl(mean, m) grows with m above the mean
        mid = (lo + hi) / 2
        if mid >= 1.0 or kl_bernoulli(mean, mid) > target:
            hi = mid
        else:
            lo = mid
    return hi


def null_bound(observations: Sequence[float], alpha: float = PIN_ALPHA) -> float:
    """m0: an upper bound, level 1 - alpha, on the judge's repeat disagreement with its pinned verdicts.

    The smaller of two bounds each at alpha / 2 (a union bound): `chernoff_bound`, tight near 0, and the upper
    end of the empirical-Bernstein confidence sequence the ablations use (lib.diagnosis.ablation), tight when the
    per-probe shares spread below 1 (a noisy judge, several items a probe). No observation: 1.
    """
    if not observations:
        return 1.0
    _, hi = confidence_sequence(observations, alpha=alpha, lower=0.0, upper=1.0)   # two-sided: alpha / 2 above
    return min(chernoff_bound(observations, alpha / 2), float(hi[-1]))


def bet(past: Sequence[float], m0: float, v0: float, *, cap: float = BET_CAP, window: int = WINDOW) -> float:
    """The bet on the next night, from earlier nights only (aGRAPA over the last `window` nights).

    No earlier night: 0 (nothing says the judge moved yet).
    """
    recent = list(past[-window:])
    if not recent or m0 <= 0:
        return 0.0
    mu = sum(recent) / len(recent)
    excess = mu - m0
    if excess <= 0:
        return 0.0
    v = (v0 + sum((d - mu) ** 2 for d in recent)) / (1 + len(recent))
    return min(excess / (v + excess ** 2), cap / m0)


@dataclass(frozen=True)
class Look:
    """The e-process after one night.

    Attributes:
        night: the night's key.
        disagreement: D, the night's mean disagreement with the pinned verdicts.
        bet: lambda, the bet placed on this night (chosen before it was seen).
        e_value: K after this night.
        drift: K has reached 1 / alpha on this night or before.
    """

    night: str
    disagreement: float
    bet: float
    e_value: float
    drift: bool


def e_process(nights: Sequence[tuple[str, float]], m0: float, n_probes: int, *, alpha: float = ALPHA,
              cap: float = BET_CAP, window: int = WINDOW) -> list[Look]:
    """K after each counted night, in the order given (the nights' own order: by night key).

    Args:
        nights: (night key, D) for every counted night, oldest first.
        m0: the null bound on the judge's own repeat disagreement (`null_bound`), > 0.
        n_probes: probes a night judges (for the bet's prior variance).
        alpha: drift is called once K >= 1 / alpha; it stays called (the sentinel is pinned again to start over).
    """
    v0 = m0 * (1 - m0) / max(n_probes, 1)
    k = 1.0
    drift = False
    seen: list[float] = []
    out: list[Look] = []
    for night, d in nights:
        lam = bet(seen, m0, v0, cap=cap, window=window)
        k *= 1 + lam * (d - m0)
        drift = drift or k >= 1 / alpha
        out.append(Look(night, d, lam, k, drift))
        seen.append(d)
    return out


def first_drift(looks: Sequence[Look]) -> Look | None:
    """The night drift was called on (K first reached 1 / alpha), or None."""
    return next((look for look in looks if look.drift), None)
