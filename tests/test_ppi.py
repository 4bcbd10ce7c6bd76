"""The label-corrected metric (prediction-powered inference of a mean; lib.diagnosis.agreement._ppi).

Expected values from the definition (hand-computed) and scipy's normal quantile; the estimator gave what
ppi-python 0.2.3's ppi_mean_ci / ppi_mean_pointestimate give (worst difference 2.2e-16 over 400 random cases,
plain and tuned) when checked by hand: the package is not a test requirement because it pulls numba,
statsmodels, scikit-learn and gdown for two formulas. Coverage is checked by simulation, vectorised."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from lib.diagnosis.agreement._ppi import Corrected, ppi_mean, ppi_mean_arrays, tuned_lambda


@functools.cache
def z() -> float:
    """scipy's 97.5% normal quantile. scipy is imported here, not at the top: every xdist worker imports every test
    file when it collects, and scipy.stats costs about 1 CPU s a process that two files use."""
    from scipy.stats import norm

    return float(norm.ppf(0.975))


PEOPLE = np.array([0.0, 1.0, 1.0, 0.0])
JUDGE = np.array([1.0, 1.0, 1.0, 0.0])
REST = np.array([1.0, 0.0])


def test_plain_ppi_is_the_judges_mean_plus_the_mean_rectifier_by_hand() -> None:
    c = ppi_mean(PEOPLE, JUDGE, REST, tune=False)
    assert c is not None
    # 0.5 (judge on the unlabelled) + mean(people - judge) = 0.5 - 0.25
    assert c.value == pytest.approx(0.25)
    se = math.sqrt(0.25 / 2 + 0.1875 / 4)   # var(unlabelled)/N + var(people - judge)/n, population variances
    assert (c.low, c.high) == pytest.approx((0.25 - z() * se, 0.25 + z() * se))
    assert c.judge == pytest.approx(4 / 6) and (c.n_labelled, c.n_unlabelled, c.lam) == (4, 2, 1.0)


def test_tuned_share_by_hand() -> None:
    # cov(people, judge) with 1/n = 0.125; var(judge over all six) with 1/5 = 4/15; 1 + n/N = 3
    lam = 0.125 / (3 * 4 / 15)
    c = ppi_mean(PEOPLE, JUDGE, REST)
    assert c is not None and c.lam == pytest.approx(lam)
    assert c.value == pytest.approx(lam * 0.5 + (0.5 - lam * 0.75))


@pytest.mark.parametrize(("people", "judged", "rest", "expected"), [
    (np.array([0.0, 1, 0, 1]), np.array([0.0, 1, 0, 1]), np.full(100, 0.5), 1.0),  # above 1: clipped to 1
    (np.array([0.0, 1, 0, 1]), np.array([1.0, 0, 1, 0]), np.array([0.0, 1, 1]), 0.0),     # against people: 0
    (np.array([0.0, 1, 0, 1]), np.array([0.5, 0.5, 0.5, 0.5]), np.array([0.5, 0.5]), 0.0),  # constant judge: 0
])
def test_tuned_share_is_clipped_and_safe(people: np.ndarray, judged: np.ndarray, rest: np.ndarray,
                                         expected: float) -> None:
    assert float(tuned_lambda(people, judged, rest)) == pytest.approx(expected)


def test_a_useless_judge_gives_the_labels_own_interval() -> None:
    people, judged = np.array([0.0, 1, 1, 1, 0, 1]), np.array([1.0, 0, 0, 0, 1, 0])   # share 0: labels alone
    c = ppi_mean(people, judged, np.ones(50))
    assert c is not None and c.lam == 0.0
    se = people.std() / math.sqrt(6)
    assert (c.value, c.low, c.high) == pytest.approx((4 / 6, 4 / 6 - z() * se, 4 / 6 + z() * se))


@pytest.mark.parametrize(("people", "judged", "rest", "expected"), [
    (np.array([1.0]), np.array([1.0]), np.ones(10), None),                         # one label: no interval
    (np.array([]), np.array([]), np.ones(10), None),                               # none
    (np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([]), (0.5, 0)),          # all labelled: labels' mean
])
def test_few_labels(people: np.ndarray, judged: np.ndarray, rest: np.ndarray,
                    expected: tuple[float, int] | None) -> None:
    c = ppi_mean(people, judged, rest)
    assert (None if c is None else (c.value, c.n_unlabelled)) == expected


def test_mismatched_pairs_are_refused() -> None:
    with pytest.raises(ValueError, match="3 people's scores but 2 judge's"):
        ppi_mean(np.ones(3), np.ones(2), np.ones(5))


def test_sentence() -> None:
    c = ppi_mean(PEOPLE, JUDGE, REST, tune=False)
    assert c is not None
    assert c.sentence("faithfulness") == (f"faithfulness 0.67 by the judge; 0.25 [{c.low:.2f}, {c.high:.2f}] "
                                          "corrected by 4 labels")


def _draws(rng: np.random.Generator, draws: int, n: int, big_n: int) -> tuple[np.ndarray, ...]:
    """People's sample scores ~ Beta(2, 3) (mean 0.4); a judge that flatters by about 0.3 and is noisy."""
    truth = rng.beta(2, 3, size=(draws, n + big_n))
    judge = np.clip(0.6 * truth + 0.45 + rng.normal(0, 0.12, size=truth.shape), 0, 1)
    return truth[:, :n], judge[:, :n], judge[:, n:]


@pytest.mark.parametrize("lam", [None, 1.0], ids=["tuned", "plain"])
def test_the_interval_covers_the_truth_95_times_in_100(lam: float | None) -> None:
    people, judged, rest = _draws(np.random.default_rng(45), 2000, 150, 250)
    value, low, high, _ = ppi_mean_arrays(people, judged, rest, lam=lam)
    coverage = float(((low <= 0.4) & (high >= 0.4)).mean())
    assert abs(coverage - 0.95) <= 0.02, coverage
    naive = judged.mean(-1)   # the judge alone is far off: the correction is doing the work
    assert abs(float(naive.mean()) - 0.4) > 0.25 and abs(float(value.mean()) - 0.4) < 0.005


def test_tuning_narrows_the_interval_when_the_judge_tracks_people() -> None:
    people, judged, rest = _draws(np.random.default_rng(7), 500, 150, 250)
    _, lo_t, hi_t, _ = ppi_mean_arrays(people, judged, rest)
    _, lo_c, hi_c, _ = ppi_mean_arrays(people, judged, rest, lam=0.0)   # the labels alone
    assert float((hi_t - lo_t).mean()) < 0.9 * float((hi_c - lo_c).mean())


@pytest.mark.parametrize(("spreads", "n", "big_n", "expected"), [
    ((0.0, 1.0), 10, 100, 40),      # the labels' term alone: quartered by 4x the labels
    ((0.04, 0.04), 100, 400, None),  # the judge's term is 0.0001 of 0.0005: a quarter (0.000125) is out of reach
    # a quarter of 0.01/950 + 0.09/50 is 0.0004526; 0.01/795 + 0.09/205 = 0.0004516 reaches it, 0.0004537 at 204 not
    ((0.01, 0.09), 50, 950, 205),
    ((0.0, 1.0), 10, 0, None),       # every sample labelled: nothing left to label
])
def test_labels_to_halve(spreads: tuple[float, float], n: int, big_n: int, expected: int | None) -> None:
    c = Corrected(judge=0.9, value=0.8, low=0.7, high=0.9, n_labelled=n, n_unlabelled=big_n, lam=1.0,
                  spread_judge=spreads[0], spread_rectifier=spreads[1])
    assert c.labels_to_halve() == expected


def test_labels_to_halve_halves_the_simulated_width() -> None:
    people, judged, rest = _draws(np.random.default_rng(11), 1, 60, 4000)
    c = ppi_mean(people[0], judged[0], rest[0], tune=False)
    assert c is not None
    more = c.labels_to_halve()
    assert more is not None and more > 60
    wider, halved = (ppi_mean_arrays(*_draws(np.random.default_rng(12), 500, k, 4060 - k), lam=1.0)
                     for k in (60, more))
    ratio = float((halved[2] - halved[1]).mean() / (wider[2] - wider[1]).mean())
    assert 0.45 <= ratio <= 0.55, ratio
