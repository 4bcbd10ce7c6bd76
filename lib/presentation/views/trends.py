"""The Trends page's frames: date ranges, change events and jumps as tables."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time

import pandas as pd

from lib.diagnosis.trends import Jump


def day_bounds(first: date, last: date) -> tuple[datetime, datetime]:
    """A date range as the datetimes that include every run on both days."""
    return datetime.combine(first, time.min), datetime.combine(last, time.max)


def in_range(frame: pd.DataFrame, since: datetime | None, until: datetime | None,
             column: str = "started_at") -> pd.DataFrame:
    """Rows whose `column` lies within [since, until] (either bound may be None)."""
    mask = pd.Series(True, index=frame.index)
    if since is not None:
        mask &= frame[column] >= pd.Timestamp(since)
    if until is not None:
        mask &= frame[column] <= pd.Timestamp(until)
    return frame[mask]


def run_days(history: pd.DataFrame) -> list[date]:
    """The distinct days with a run, oldest first (the Trends range picker's stops)."""
    return sorted(set(history["started_at"].dt.date))


def events_for(events: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Change events that concern any of `metrics`: theirs, plus pipeline changes (which concern all)."""
    return events[events["metric"].isna() | events["metric"].isin(list(metrics))]


ALL_METRICS = "all metrics"


def events_table(events: pd.DataFrame) -> pd.DataFrame:
    """Change events as a table: a pipeline change (no metric of its own) says it concerns all metrics."""
    return events.assign(metric=events["metric"].astype(object).where(events["metric"].notna(), ALL_METRICS))


def jumps_frame(jumps: Sequence[Jump]) -> pd.DataFrame:
    """Jumps as a table: when, metric, before, after, delta, ratio to threshold, first suspect."""
    rows = [{"started_at": j.started_at, "run_id": j.run_id, "metric": j.metric, "before": j.before,
             "after": j.after, "delta": j.delta, "x_threshold": j.ratio,
             "across_instruments": j.across_instruments,
             "first_suspect": ("across instruments: test with the 2x2 split; " if j.across_instruments else "")
             + (j.suspects[0].description if j.suspects else "")} for j in jumps]
    return pd.DataFrame(rows, columns=["started_at", "run_id", "metric", "before", "after", "delta", "x_threshold",
                                       "across_instruments", "first_suspect"])
