"""Comparable segments: runs of a metric measured with one instrument.

A score is comparable with another only while the instrument that produced
both is the same: judge model, prompt hash, binding, and (where recorded) the
scoring library and its version. A metric's history is cut wherever any of
these changes; a jump at a cut is a jump across instruments, and the test for
it is the 2x2 split (each run's instrument on each run's outputs), not a
reading of the trend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

INSTRUMENT_COLUMNS = ("judge_model", "prompt_hash", "binding", "scorer")


@dataclass(frozen=True)
class Segment:
    """Consecutive scored runs of one metric with one instrument."""

    metric: str
    index: int
    first_run: str
    last_run: str
    start: datetime
    end: datetime
    n_runs: int
    level: float           # median score over the segment
    instrument: tuple[str, ...]

    @property
    def label(self) -> str:
        return ", ".join(self.instrument)


def _key_columns(history: pd.DataFrame) -> list[str]:
    return [c for c in INSTRUMENT_COLUMNS if c in history.columns]


def _keys(g: pd.DataFrame) -> list[tuple[str, ...]]:
    cols = _key_columns(g)
    return [tuple(f"{c.replace('_', ' ')} {v}" for c, v in zip(cols, row, strict=True) if isinstance(v, str))
            for row in g[cols].itertuples(index=False, name=None)]


def segment_index(history: pd.DataFrame) -> pd.Series:
    """Per row of a metric history (scored rows), the number of its segment within its metric (0, 1, ...)."""
    out = pd.Series(-1, index=history.index, dtype=int)
    h = history.dropna(subset=["score"]).sort_values(["started_at", "run_id"])
    if h.empty:
        return out
    cols = _key_columns(h)
    keys = h[cols].astype(object)
    keys = keys.where(keys.map(lambda v: isinstance(v, str)), "")   # as _keys: only text names an instrument
    by_metric = h["metric"]
    changed = keys.ne(keys.groupby(by_metric).shift()).any(axis=1)   # a metric's first row counts as a change
    out.loc[h.index] = changed.astype(int).groupby(by_metric).cumsum().to_numpy() - 1
    return out


def segments(history: pd.DataFrame) -> list[Segment]:
    """Every metric's segments, oldest first within each metric."""
    if history.empty:
        return []
    h = history.dropna(subset=["score"]).sort_values(["started_at", "run_id"]).copy()
    h["_seg"] = segment_index(h)
    out = []
    for (metric, seg), g in h.groupby(["metric", "_seg"], sort=False):
        out.append(Segment(str(metric), int(seg), str(g["run_id"].iloc[0]), str(g["run_id"].iloc[-1]),
                           g["started_at"].iloc[0].to_pydatetime(), g["started_at"].iloc[-1].to_pydatetime(),
                           len(g), float(g["score"].median()), _keys(g.iloc[:1])[0]))
    return out


def boundary_runs(history: pd.DataFrame) -> dict[str, set[str]]:
    """Per metric, the runs that open a new segment (a change of instrument against the run before)."""
    out: dict[str, set[str]] = {}
    for s in segments(history):
        if s.index > 0:
            out.setdefault(s.metric, set()).add(s.first_run)
    return out


def last_same_instrument(history: pd.DataFrame, metric: str) -> tuple[str, float] | None:
    """The scored run before the latest that used the latest's instrument, with its score (None: there is none)."""
    g = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
    if len(g) < 2:
        return None
    keys = _keys(g)
    for i in range(len(g) - 2, -1, -1):
        if keys[i] == keys[-1]:
            score = float(g["score"].iloc[i])
            return (str(g["run_id"].iloc[i]), score) if not math.isnan(score) else None
    return None
