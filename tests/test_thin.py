"""Thinning a long trend for drawing: jumps and changes never dropped, each bucket's extremes kept."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from lib.presentation.thin import thin


def _series(n: int, *, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    start = datetime(2024, 1, 1)
    frame = pd.DataFrame({"run_id": [f"r{i}" for i in range(n)],
                          "started_at": [start + timedelta(days=i) for i in range(n)],
                          "score": rng.uniform(0.6, 0.9, n)})
    return frame.sample(frac=1.0, random_state=1)   # any order in


@pytest.mark.parametrize(("n", "max_points", "bucket"), [
    (10, 50, 1),        # short: drawn whole
    (50, 50, 1),        # exactly the limit: drawn whole
    (51, 50, 2),        # one over: buckets of two
    (20_000, 1500, 14),
])
def test_a_series_is_thinned_only_past_its_limit_and_stays_in_time_order(n: int, max_points: int, bucket: int) -> None:
    out = thin(_series(n), max_points=max_points)
    assert (out.total, out.bucket) == (n, bucket)
    assert out.series["started_at"].is_monotonic_increasing
    assert len(out.series) <= (n if bucket == 1 else 2 * max_points + 2)
    assert (out.caption() == "") is (bucket == 1)


def test_every_bucket_keeps_its_lowest_and_highest_score_and_the_ends() -> None:
    s = _series(3000).sort_values("started_at").reset_index(drop=True)
    s.loc[1234, "score"] = 0.05   # a dip inside a bucket: a bucket mean would hide it
    s.loc[2345, "score"] = 0.99
    out = thin(s, max_points=100)
    drawn = set(out.series["run_id"])
    assert {"r1234", "r2345", "r0", "r2999"} <= drawn
    for _, g in s.groupby(s.index // out.bucket):
        assert g.loc[g["score"].idxmin(), "run_id"] in drawn and g.loc[g["score"].idxmax(), "run_id"] in drawn


def test_jumps_and_changes_are_always_drawn() -> None:
    keep = {"r17", "r4242", "r9999"}
    out = thin(_series(10_000), keep=keep, max_points=200)
    assert keep <= set(out.series["run_id"])
    assert "10,000 runs" in out.caption() and "every jump and recorded change is drawn" in out.caption()


def test_runs_without_a_score_are_not_drawn() -> None:
    s = _series(5)
    s.loc[s["run_id"] == "r2", "score"] = None
    assert "r2" not in set(thin(s, max_points=10).series["run_id"])
