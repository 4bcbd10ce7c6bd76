"""How often runs come, learned from their start times, and when the next one is missing: the watcher's rule for
a nightly job that did not run. Pure, and free of heavy imports (a look with nothing new checks it without
pandas: lib.store.watch.quiet)."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from datetime import datetime, timedelta

MISSING_FACTOR = 1.5   # a run is missing when the gap since the last exceeds 1.5 cadences (a nightly run 12 h late)
MIN_RUNS_FOR_CADENCE = 5
CADENCE_WINDOW = 20    # the cadence is the median of the latest 20 gaps between runs


def cadence(run_times: Sequence[tuple[str, datetime]]) -> timedelta | None:
    """The usual gap between runs: the median of the latest CADENCE_WINDOW gaps (None: too few runs)."""
    if len(run_times) < MIN_RUNS_FOR_CADENCE:
        return None
    ts = [t for _, t in run_times][-(CADENCE_WINDOW + 1):]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(ts)]
    median = statistics.median(gaps)
    return timedelta(seconds=median) if median > 0 else None


def missing_run(run_times: Sequence[tuple[str, datetime]], now: datetime) -> tuple[str, timedelta, timedelta] | None:
    """(last run, cadence, gap) when the gap since the last run exceeds MISSING_FACTOR cadences, else None."""
    every = cadence(run_times)
    if every is None:
        return None
    last, at = run_times[-1]
    gap = now - at
    return (last, every, gap) if gap > every * MISSING_FACTOR else None
