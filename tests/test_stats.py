"""Statistics for paired re-judging, checked against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lib.diagnosis.stats import (
    Z_80_POWER,
    Z_95,
    flips,
    mcnemar_exact,
    mde,
    noise_band,
    paired_bootstrap,
    robust_step_sd,
    run_noise_sd,
    sample_mean,
    sample_variance,
    step_flags,
)

# A quiet series that alternates by 0.01, and the same series with one level shift of +0.4 at index 6.
QUIET = [0.50, 0.51, 0.50, 0.51, 0.50, 0.51, 0.50, 0.51, 0.50, 0.51, 0.50]
SHIFTED = [*QUIET[:6], *(v + 0.4 for v in QUIET[6:])]
# Every consecutive difference of QUIET is +-0.01, so its MAD about the median is 0.01.
HAND_STEP_SD = 1.4826 * 0.01 / math.sqrt(2)


# -- paired bootstrap ---------------------------------------------------------------------

def test_paired_bootstrap_of_a_constant_difference_collapses_to_it() -> None:
    a = [0.1 * i for i in range(30)]
    b = [x + 0.25 for x in a]
    d = paired_bootstrap(a, b)
    assert d.mean == pytest.approx(0.25)
    assert d.lo == pytest.approx(0.25)
    assert d.hi == pytest.approx(0.25)
    assert d.n == 30
    assert d.excludes_zero


def test_paired_bootstrap_is_the_mean_of_b_minus_a() -> None:
    a = [1.0, 0.0, 0.5, 0.5]
    b = [0.0, 0.0, 1.0, 0.5]
    # differences -1, 0, 0.5, 0 -> mean -0.125
    assert paired_bootstrap(a, b).mean == pytest.approx(-0.125)


def test_paired_bootstrap_is_reproducible_for_a_seed_and_varies_with_it() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(200)
    b = a + rng.normal(0.02, 0.1, 200)
    assert paired_bootstrap(a, b, seed=5) == paired_bootstrap(a, b, seed=5)
    other = paired_bootstrap(a, b, seed=6)
    assert (other.lo, other.hi) != (paired_bootstrap(a, b, seed=5).lo, paired_bootstrap(a, b, seed=5).hi)


def test_paired_bootstrap_interval_matches_the_normal_interval_for_large_n() -> None:
    # 400 paired 0/1 differences, 120 of them 1: mean 0.3, standard error sqrt(0.3 * 0.7 / 400).
    a = [0.0] * 400
    b = [1.0] * 120 + [0.0] * 280
    d = paired_bootstrap(a, b, n_boot=4000)
    half = Z_95 * math.sqrt(0.3 * 0.7 / 400)
    assert d.lo < 0.3 < d.hi
    assert (d.hi - d.lo) / 2 == pytest.approx(half, rel=0.1)


def test_paired_bootstrap_of_no_samples_is_nan() -> None:
    d = paired_bootstrap([], [])
    assert d.n == 0 and math.isnan(d.mean) and not d.excludes_zero


# -- flips and the exact McNemar test -------------------------------------------------------

@pytest.mark.parametrize(("b", "c", "expected"), [
    (0, 10, 2 / 1024),            # 2 * C(10,0) / 2^10
    (10, 0, 2 / 1024),            # symmetric
    (1, 9, 2 * (1 + 10) / 1024),  # 2 * (C(10,0) + C(10,1)) / 2^10
    (2, 3, 1.0),                  # 2 * (1 + 5 + 10) / 32 = 1, capped at 1
    (0, 0, 1.0),                  # no discordant items: no evidence either way
    (0, 1, 1.0),                  # 2 * 1/2
    (0, 5, 2 / 32),
])
def test_mcnemar_exact_matches_the_binomial_tail(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected)


def test_flips_count_each_direction_and_test_them() -> None:
    before = [True, True, False, False, True, False]
    after = [True, False, True, True, True, False]
    f = flips(before, after)
    assert (f.to_positive, f.to_negative, f.unchanged) == (2, 1, 3)
    assert f.discordant == 3
    assert f.p_value == pytest.approx(mcnemar_exact(2, 1))


def test_ten_flips_all_one_way_are_significant() -> None:
    f = flips([False] * 10 + [True] * 5, [True] * 15)
    assert (f.to_positive, f.to_negative, f.unchanged) == (10, 0, 5)
    assert f.p_value == pytest.approx(2 / 1024)


def test_flips_refuse_unaligned_lists() -> None:
    with pytest.raises(ValueError):
        flips([True, False], [True])


# -- noise band and minimum detectable effect -------------------------------------------------

def test_run_noise_sd_pools_within_sample_variance() -> None:
    # unbiased variances over repeats: [0, 1] -> 0.5, [1, 1] -> 0, [0.5, 0.5, 0.5] -> 0
    # run-mean noise variance = mean(0.5, 0, 0) / 3 samples = 1/18
    repeats = [[0.0, 1.0], [1.0, 1.0], [0.5, 0.5, 0.5]]
    assert run_noise_sd(repeats) == pytest.approx(math.sqrt(1 / 18))


def test_run_noise_sd_needs_two_repeats() -> None:
    assert math.isnan(run_noise_sd([[0.5], [1.0]]))
    assert run_noise_sd([[0.5, 0.5], [1.0, 1.0]]) == 0.0


def test_noise_band_is_two_sds() -> None:
    assert noise_band(0.0125) == pytest.approx(0.025)


def test_mde_is_about_2_8_sd_over_root_n() -> None:
    assert abs(Z_95 + Z_80_POWER - 2.8) < 0.002
    assert mde(0.2, 400) == pytest.approx(2.8 * 0.2 / 20, rel=1e-3)
    assert mde(0.2, 100) == pytest.approx(2 * mde(0.2, 400))
    assert mde(0.2, 0) == math.inf


# -- change points on a trend ------------------------------------------------------------------

def test_robust_step_sd_of_an_alternating_series_is_its_scaled_mad() -> None:
    assert robust_step_sd(QUIET) == pytest.approx(HAND_STEP_SD)


def test_robust_step_sd_is_unaffected_by_one_big_level_shift() -> None:
    assert robust_step_sd(SHIFTED) == pytest.approx(robust_step_sd(QUIET))
    # a plain sd of the differences would be inflated many times over by the one shift
    plain = float(np.std(np.diff(SHIFTED), ddof=1)) / math.sqrt(2)
    assert plain > 5 * robust_step_sd(SHIFTED)


def test_robust_step_sd_skips_missing_values_and_needs_three() -> None:
    assert robust_step_sd([0.5, math.nan, 0.51, 0.5, 0.51]) == pytest.approx(robust_step_sd([0.5, 0.51, 0.5, 0.51]))
    assert math.isnan(robust_step_sd([0.5, 0.6]))


def test_step_flags_flag_exactly_the_shift() -> None:
    flags, threshold = step_flags(SHIFTED)
    assert flags == [i == 6 for i in range(len(SHIFTED))]
    # k = 4 noise sds of a difference: 4 * sqrt(2) * sd
    assert threshold == pytest.approx(4 * math.sqrt(2) * HAND_STEP_SD)


def test_step_flags_on_a_quiet_series_flag_nothing() -> None:
    flags, _ = step_flags(QUIET)
    assert not any(flags)


def test_step_flags_floor_keeps_a_flat_series_from_flagging_rounding() -> None:
    flags, threshold = step_flags([0.8, 0.8, 0.8, 0.8001, 0.8])
    assert threshold == 0.005
    assert not any(flags)
    flags, _ = step_flags([0.8, 0.8, 0.8, 0.9, 0.9])
    assert flags == [False, False, False, True, False]


def test_step_flags_do_not_flag_across_a_missing_value() -> None:
    flags, _ = step_flags([*QUIET[:6], math.nan, *SHIFTED[7:]])
    assert not any(flags)


# -- small samples: an interval that holds its level at any n (issue 24 item 9) -------------------------------------
@pytest.mark.parametrize(("changes", "lo", "hi"), [
    ([-1.0] * 5, -1.0, 1.0),            # 2/32 > 5%: five pairs can reject nothing
    ([-1.0] * 6, -1.0, -1.0),           # 2/64 < 5%: six identical changes pin the mean
    ([-0.5, -0.2, -0.8, -0.3, -0.6, -0.4, -0.7, -0.5, -0.2, -0.6], -0.6333, -0.3333),
])
def test_the_sign_flip_interval_of_a_few_pairs(changes: list[float], lo: float, hi: float) -> None:
    from lib.diagnosis.stats import sign_flip_interval

    got = sign_flip_interval(changes)
    assert got == pytest.approx((lo, hi), abs=1e-3)


def test_below_twenty_pairs_the_interval_holds_its_level_where_the_bootstrap_does_not() -> None:
    from lib.diagnosis.stats import paired_interval

    rng = np.random.default_rng(3)
    exact = boot = 0
    for _ in range(300):
        a = np.zeros(8)
        b = rng.normal(0.0, 0.2, 8)
        exact += paired_interval(a, b).lo <= 0 <= paired_interval(a, b).hi
        boot += paired_bootstrap(a, b, n_boot=500).lo <= 0 <= paired_bootstrap(a, b, n_boot=500).hi
    assert exact / 300 >= 0.93 and boot / 300 < exact / 300
    big = paired_interval(np.zeros(20), np.full(20, 0.1))
    assert big == paired_bootstrap(np.zeros(20), np.full(20, 0.1))   # 20 pairs on: the bootstrap, as before


@pytest.mark.parametrize("n", range(1, 13))
def test_a_samples_mean_and_variance_over_its_repeats_are_numpys_to_the_last_bit(n: int) -> None:
    # every ablation figure is built on these; the plain sums below eight values must not move one of them
    rng = np.random.default_rng(n)
    for _ in range(200):
        repeats = rng.random(n).tolist() if n % 2 else (rng.integers(0, 7, n) / 7).tolist()
        assert sample_mean(repeats) == float(np.mean(repeats))
        if n >= 2:
            assert sample_variance(repeats) == float(np.var(repeats, ddof=1))
