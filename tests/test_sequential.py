"""The sequential ablation's statistics and stopping rule (lib.diagnosis.ablation), pure: values in, values out."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from lib.diagnosis.ablation._sequential import (
    ALPHA,
    EXHAUSTED,
    MOVE,
    NOTHING,
    NULL,
    Stop,
    confidence_sequence,
    cs_at_looks,
    first_stop,
    looks,
    seeded_order,
    stop_reason,
)
from lib.diagnosis.ablation._verdicts import EXPECT_SENSITIVE, INVARIANT, CellEvidence

# -- the confidence sequence --------------------------------------------------------------------------------


def test_the_cs_by_hand_for_two_observations() -> None:
    # y = (x + 1) / 2 = 0.75, 0.25; alpha 0.05: log(2/alpha) = log 40
    lo, hi = confidence_sequence([0.5, -0.5])
    L = math.log(40)
    lam1 = min(math.sqrt(2 * L / (0.25 * 1 * math.log(2))), 0.75)            # var_0 = 1/4
    mu1 = (0.5 + 0.75) / 2
    var1 = (0.25 + (0.75 - mu1) ** 2) / 2
    lam2 = min(math.sqrt(2 * L / (var1 * 2 * math.log(3))), 0.75)
    psi = lambda lam: (-math.log(1 - lam) - lam) / 4  # noqa: E731
    centre = (lam1 * 0.75 + lam2 * 0.25) / (lam1 + lam2)
    width = (L + 4 * (0.75 - 0.5) ** 2 * psi(lam1) + 4 * (0.25 - mu1) ** 2 * psi(lam2)) / (lam1 + lam2)
    assert lo[1] == pytest.approx(-1 + 2 * max(centre - width, 0))
    assert hi[1] == pytest.approx(-1 + 2 * min(centre + width, 1))


@pytest.mark.parametrize("mean", [0.0, 0.3, -0.6])
def test_the_cs_covers_the_mean_at_every_look_at_once(mean: float) -> None:
    # bounded differences, mostly ties (a judge that mostly repeats itself) around `mean`
    rng = np.random.default_rng(11)
    misses = 0
    sims = 400
    for _ in range(sims):
        x = np.clip(mean + rng.choice([0.0, 0.0, 0.0, 0.25, -0.25, 0.5, -0.5], size=400), -1, 1)
        truth = float(np.mean(np.clip(mean + np.array([0, 0, 0, 0.25, -0.25, 0.5, -0.5]), -1, 1)))
        lo, hi = confidence_sequence(x)
        misses += bool(((lo > truth) | (hi < truth)).any())
    assert misses / sims <= ALPHA


def test_the_cs_narrows_and_is_intersected_over_looks() -> None:
    x = [0.4] * 200
    lo, hi = confidence_sequence(x)
    assert hi[199] - lo[199] < hi[19] - lo[19] and lo[199] <= 0.4 <= hi[199]
    a, b = cs_at_looks(x, [20, 40, 200])
    assert (a, b) == (max(lo[19], lo[39], lo[199]), min(hi[19], hi[39], hi[199]))
    assert cs_at_looks([], [20]) == (-1.0, 1.0)


def test_looks_and_order() -> None:
    assert looks(50) == [20, 40, 50] and looks(40) == [20, 40] and looks(0) == []
    ids = [f"s{i}" for i in range(30)]
    assert seeded_order(ids, 3) == seeded_order(list(reversed(ids)), 3)
    assert seeded_order(ids, 3) != seeded_order(ids, 4) and sorted(seeded_order(ids, 3)) == sorted(ids)


# -- the stopping rule, one row per branch ------------------------------------------------------------------

BASE = CellEvidence("faithfulness", ("ground_truth",), INVARIANT, frozenset({"answer", "contexts"}), 40, 0.0,
                    -0.03, 0.03, 0.0, 0.8, 0, 120)


def ev(**kw: object) -> CellEvidence:
    return replace(BASE, **kw)  # type: ignore[arg-type]


RULE = [
    ("nothing left to judge in an arm that should move", ev(nothing_to_judge=True, expected=EXPECT_SENSITIVE, n=0,
                                                            mean=None, lo=None, hi=None), NOTHING),
    ("nothing to judge in an invariant arm decides nothing", ev(nothing_to_judge=True, n=0, mean=None, lo=None,
                                                                hi=None), None),
    ("too many failures: judge on", ev(n_failed=25, n_units=120), None),
    ("failures at the allowed share do not hold it", ev(n_failed=24, n_units=120), NULL),
    ("too few pairs", ev(n=19), None),
    ("no mean", ev(mean=math.nan), None),
    ("a rise beyond the effect and the noise", ev(mean=0.3, lo=0.1, hi=0.5, noise=0.05), MOVE),
    ("a fall beyond the effect and the noise", ev(mean=-0.3, lo=-0.5, hi=-0.1, noise=0.05), MOVE),
    ("beyond the effect, within the noise band", ev(mean=0.04, lo=0.03, hi=0.05, noise=0.06), None),
    ("a received field's CS reaches the effect worth naming", ev(expected=EXPECT_SENSITIVE, fields=("contexts",),
                                                                  mean=0.1, lo=0.02, hi=0.18), None),
    # issue 41 item 1: a must-never-receive field's CS that excludes 0 is never a null; judged on to size the leak
    ("a forbidden field's CS excludes 0 below the effect", ev(mean=0.01, lo=0.005, hi=0.015), None),
    ("a forbidden field's CS touches 0: a null", ev(mean=0.01, lo=0.0, hi=0.015), NULL),
    ("a forbidden field's CS excludes 0, the mean within the noise band", ev(mean=0.01, lo=0.005, hi=0.015,
                                                                             noise=0.02), None),
    ("no room to fall by the margin", ev(baseline=0.04), None),
    ("the CS within the margin", ev(lo=-0.05, hi=0.05), NULL),
    ("the CS just wider than the margin", ev(lo=-0.051, hi=0.03), None),
]


@pytest.mark.parametrize(("evidence", "stops"), [r[1:] for r in RULE], ids=[r[0] for r in RULE])
def test_each_branch_of_the_stopping_rule(evidence: CellEvidence, stops: str | None) -> None:
    assert stop_reason(evidence) == stops


def test_first_stop_replays_the_looks() -> None:
    seen: list[int] = []

    def at(k: int) -> CellEvidence:
        seen.append(k)
        return ev(lo=-0.5, hi=0.5) if k < 60 else ev(lo=-0.04, hi=0.01)

    assert first_stop(100, 100, at) == Stop(NULL, 60, -0.04, 0.01) and seen == [20, 40, 60]
    assert first_stop(100, 40, lambda k: ev(lo=-0.5, hi=0.5)) is None                 # undecided, samples left
    seen.clear()   # a running ablation looks once a chunk: looks already made are not made again
    assert first_stop(100, 60, at, since=40) == Stop(NULL, 60, -0.04, 0.01) and seen == [60]
    assert first_stop(100, 100, lambda k: ev(lo=-0.5, hi=0.5)) == Stop(EXHAUSTED, 100)
    assert not Stop(EXHAUSTED, 100).early and Stop(MOVE, 20).early
    # the last look is never a CS decision: an arm judged in full rests on the fixed-n interval
    assert first_stop(20, 20, lambda k: ev()) == Stop(EXHAUSTED, 20)


# -- which judgings a chunk makes -----------------------------------------------------------------------------

def test_a_chunk_judges_open_arms_and_the_baseline_the_replay_check_needs() -> None:
    from lib.core.samples import EvalSample
    from lib.diagnosis.ablation import AblationSpec
    from lib.diagnosis.ablation._plan import Plan
    from lib.diagnosis.ablation._sequential_run import REPLAY_MIN, chunk_units

    spec = AblationSpec("r", ("faithfulness",), ("ground_truth", "contexts"), repeats=2)
    samples = tuple(EvalSample(f"s{i:03d}", "q", "a", ("c",), "g") for i in range(200))
    plan = Plan(spec, samples, {}, ("question", "answer", "contexts", "ground_truth"),
                frozenset({("faithfulness", "question+ground_truth")}))

    def cells(stops: dict, start: int, done: set | None = None, **kw: object) -> set[tuple[str, int]]:
        units = chunk_units(plan, stops, start, start + 20, range(2), done or set(), **kw)  # type: ignore[arg-type]
        assert all(start <= int(u[3].sample_id[1:]) < start + 20 for u in units)
        return {(u[1], u[2]) for u in units}

    floor = "question+contexts+ground_truth"   # the judge's floor, judged beside the baseline while an arm is open
    # ... and the positive control ("support": the items given perfect support), read against that floor
    both = {(a, r) for a in ("none", "ground_truth", "contexts", floor, "support") for r in range(2)}
    assert cells({}, 0) == both                                            # every open arm, with its baseline
    assert cells({}, 0, baseline_only=True) == {("none", 0), ("none", 1)}  # the probe
    one = {("faithfulness", "contexts"): Stop(MOVE, 20)}
    assert cells(one, 20) == both - {("contexts", 0), ("contexts", 1)}    # a stopped arm is judged no more
    every = {("faithfulness", a): Stop(MOVE, 20) for a in ("ground_truth", "contexts")}
    assert cells(every, REPLAY_MIN - 20) == {("none", 0), ("none", 1)}     # the baseline up to REPLAY_MIN
    assert cells(every, REPLAY_MIN) == set()
    # past REPLAY_MIN the baseline goes on while the replay's own interval is undecided (replay_samples)
    assert cells(every, REPLAY_MIN, replaying={"faithfulness"}) == {("none", 0), ("none", 1)}
    assert cells(every, 40, replaying=set()) == set()
    done = {("faithfulness", "none", 0, f"s{i:03d}") for i in range(20)}
    assert cells({}, 0, done) == both - {("none", 0)}                      # a resumed chunk skips what is stored
