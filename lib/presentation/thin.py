"""Thinning a long trend for drawing: every jump and change kept, and each stretch of runs by its extremes.

A chart of 20,000 runs has more points than a screen has pixels across, and
its figure grows to tens of megabytes. Past `max_points` runs, the series is
cut into equal buckets of consecutive runs and each bucket is drawn by its
lowest and its highest score (so a spike or a dip inside a bucket still shows,
which a bucket mean would hide), plus the first and last run and every run
named in `keep` (the jumps and the recorded changes), which are never thinned
away.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd

MAX_POINTS = 1500   # runs drawn per metric before thinning (about two points per pixel of a wide chart)


@dataclass(frozen=True)
class Thinned:
    """A series ready to draw, and what was left out."""

    series: pd.DataFrame
    total: int          # runs in the series before thinning
    bucket: int         # consecutive runs per bucket (1: nothing thinned)

    @property
    def thinned(self) -> bool:
        return self.bucket > 1

    def caption(self) -> str:
        """What a reader of the chart must know, in words ('' when nothing was thinned)."""
        if not self.thinned:
            return ""
        return (f"{len(self.series):,} of {self.total:,} runs drawn: each {self.bucket} consecutive runs by their "
                "lowest and highest score; every jump and recorded change is drawn.")


def thin(series: pd.DataFrame, *, keep: Collection[str] = (), max_points: int = MAX_POINTS) -> Thinned:
    """At most about 2 x max_points rows of `series` (sorted by started_at), plus the runs in `keep`.

    Args:
        series: one metric's history rows (run_id, started_at, score, ...), any order.
        keep: run ids always drawn (jumps, changes).
        max_points: the longest series drawn whole.
    """
    s = series.dropna(subset=["score"]).sort_values("started_at", kind="stable").reset_index(drop=True)
    n = len(s)
    if n <= max_points:
        return Thinned(s, n, 1)
    bucket = math.ceil(n / max_points)
    group = pd.Series(range(n)) // bucket
    score = s["score"].astype(float)
    picked = set(score.groupby(group).idxmin()) | set(score.groupby(group).idxmax()) | {0, n - 1}
    wanted = set(map(str, keep))
    picked |= set(s.index[s["run_id"].astype(str).isin(wanted)])
    return Thinned(s.loc[sorted(picked)].reset_index(drop=True), n, bucket)
