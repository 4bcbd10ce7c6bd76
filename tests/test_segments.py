"""Comparable segments (lib.diagnosis.trends) and the one noise vocabulary (lib.diagnosis.trends).

A score is comparable with another only under one instrument; the demo's
faithfulness has five. Each noise figure a page prints is one of two named
quantities, computed in lib.diagnosis.trends: the run-to-run spread (and the jump
threshold derived from it) and the judge repeat spread.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from lib.diagnosis import trends
from lib.diagnosis.stats import run_noise_sd
from lib.diagnosis.trends import _noise as noise
from lib.diagnosis.trends import _segments as segments
from lib.jobs._demo import run_plans
from lib.presentation import views
from lib.store import Store

PLANS = run_plans()


def history(scores: list[float], prompts: list[str], metric: str = "faithfulness") -> pd.DataFrame:
    t0 = datetime(2026, 1, 1)
    return pd.DataFrame({"run_id": [f"r{i:02d}" for i in range(len(scores))],
                         "started_at": [t0 + timedelta(days=i) for i in range(len(scores))],
                         "metric": metric, "score": scores, "judge_model": "j1", "prompt_hash": prompts,
                         "binding": "projected"})


@pytest.mark.parametrize(("prompts", "models", "boundaries"), [
    (["a"] * 4, ["j1"] * 4, set()),
    (["a", "a", "b", "b"], ["j1"] * 4, {"r02"}),
    (["a"] * 4, ["j1", "j1", "j1", "j2"], {"r03"}),
    (["a", "b", "a", "a"], ["j1"] * 4, {"r01", "r02"}),    # back to an old instrument: a new segment
])
def test_a_segment_ends_where_any_part_of_the_instrument_changes(prompts: list[str], models: list[str],
                                                                 boundaries: set[str]) -> None:
    h = history([0.5, 0.5, 0.5, 0.5], prompts).assign(judge_model=models)
    assert segments.boundary_runs(h).get("faithfulness", set()) == boundaries
    h2 = h.assign(binding=["projected", "projected", "replay", "replay"])
    assert "r02" in segments.boundary_runs(h2)["faithfulness"]


@pytest.mark.parametrize(("prompts", "expected"), [
    (["a", "a", "a", "a"], ("r02", 0.6)),
    (["a", "a", "a", "b"], None),                 # the latest is the first of its instrument
    (["a", "b", "a", "a"], ("r02", 0.6)),
    (["b", "a", "b", "a"], ("r01", 0.55)),
])
def test_now_is_compared_with_the_last_run_of_the_same_instrument(prompts: list[str], expected: object) -> None:
    h = history([0.5, 0.55, 0.6, 0.7], prompts)
    assert segments.last_same_instrument(h, "faithfulness") == expected


def test_the_demo_faithfulness_has_five_segments_and_its_jumps_say_which_cross_one(demo_db: Path) -> None:
    with Store(demo_db) as store:
        h = store.metric_history()
        jumps = trends.find_jumps(store, history=h)
    segs = [s for s in segments.segments(h) if s.metric == "faithfulness"]
    assert [s.first_run for s in segs] == [PLANS[i].run_id for i in (0, 18, 30, 45, 75)]
    assert segs[1].level == pytest.approx(0.785, abs=0.01)
    across = {j.run_id: j.across_instruments for j in jumps if j.metric == "faithfulness"}
    assert across == {PLANS[30].run_id: True, PLANS[45].run_id: True, PLANS[58].run_id: False,
                      PLANS[75].run_id: True}
    frame = views.jumps_frame([j for j in jumps if j.metric == "faithfulness"])
    crossing = frame[frame["across_instruments"]]
    assert crossing["first_suspect"].str.startswith("across instruments: test with the 2x2 split").all()


# -- one noise vocabulary ---------------------------------------------------------------------------------
def test_the_run_to_run_spread_leaves_out_the_step_between_instruments() -> None:
    wobble = [0.0, 0.01, -0.01, 0.005, -0.005, 0.01, 0.0, -0.01] * 2
    calm = [0.5 + w for w in wobble]
    stepped = [0.5 + w for w in wobble[:8]] + [0.9 + w for w in wobble[8:]]
    segs = [0] * 8 + [1] * 8
    assert noise.run_spread(stepped, segs) == pytest.approx(noise.run_spread(calm, segs))
    assert not math.isnan(noise.run_spread(calm, segs))
    assert math.isnan(noise.run_spread(stepped[:8], segs[:8]))   # seven differences: not yet measured
    assert noise.jump_threshold(0.005) == pytest.approx(4 * math.sqrt(2) * 0.005)
    assert noise.jump_threshold(0.0) == 0.005
    assert math.isnan(noise.jump_threshold(math.nan))
    assert noise.band(0.005) == 0.01
    assert noise.judge_spread([[0.5, 0.7], [0.2, 0.2]]) == run_noise_sd([[0.5, 0.7], [0.2, 0.2]])


def test_every_page_figure_of_a_metric_comes_from_one_place(demo_db: Path) -> None:
    with Store(demo_db) as store:
        h = store.metric_history()
        jumps = trends.find_jumps(store, history=h)
    spreads = noise.metric_noise(h)
    faith = spreads["faithfulness"]
    assert faith.threshold == pytest.approx(noise.jump_threshold(faith.spread))
    assert trends.trend_noise(h)["faithfulness"] == faith.spread                     # the Trends band's sd
    (card,) = [c for c in views.metric_cards(h) if c.metric == "faithfulness"]          # the Overview's card
    # the card's step is left out of its spread (spread_without), and without pairs the spread alone decides
    steps = noise.within_steps(h[h["metric"] == "faithfulness"]["score"].tolist(),
                               segments.segment_index(h[h["metric"] == "faithfulness"]).tolist())
    assert card.noise_sd == noise.spread_without(steps, len(steps) - 1)[0]
    assert card.threshold == pytest.approx(noise.jump_threshold(card.noise_sd))
    # each jump's threshold: the larger of its paired interval and the spread's part
    assert all(j.threshold >= faith.threshold * 0.95 and "paired change over 398 samples" in j.basis
               for j in jumps if j.metric == "faithfulness")
    for name in (noise.RUN_SPREAD, noise.JUMP_THRESHOLD, noise.JUDGE_SPREAD):
        assert noise.HELP[name].lower().startswith(name)
    assert noise.label(noise.RUN_SPREAD, 0.0044) == "run-to-run spread ±0.004"
    assert noise.label(noise.JUDGE_SPREAD, math.nan) == "judge repeat spread: not measured"
