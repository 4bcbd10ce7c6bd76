"""Re-judged history: score a range of runs again with one chosen instrument, resume it, read it back with its
noise and jumps (lib.diagnosis.trends' vocabulary). One private module, _run.
"""

from lib.diagnosis.rejudge._run import (
    RejudgeCost,
    RejudgeSpec,
    Series,
    SeriesJump,
    estimate,
    finished_series,
    run_rejudge,
    runs_between,
    trusted_instrument,
)

__all__ = [
    "RejudgeCost", "RejudgeSpec", "Series", "SeriesJump", "estimate", "finished_series", "run_rejudge", "runs_between",
    "trusted_instrument",
]
