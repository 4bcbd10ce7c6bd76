"""History analysis: comparable segments, the noise vocabulary, jumps beyond noise, splits, the standing checks.

Private modules: _segments, _noise, _diagnose (what changed at a run, jumps), _splits, _checks, _series_jumps
(the same step rule for a re-judged series).
"""

from lib.diagnosis.trends._checks import CanaryStatus, canary_status, lint_status
from lib.diagnosis.trends._diagnose import (
    JUMP_K,
    Jump,
    RunChanges,
    Split,
    ablations_called_for,
    change_events,
    config_diff,
    find_jumps,
    run_changes,
    steps_beyond,
    trend_noise,
)
from lib.diagnosis.trends._noise import (
    HELP,
    JUDGE_SPREAD,
    JUMP_THRESHOLD,
    MIN_SPREAD_STEPS,
    RUN_SPREAD,
    SCORE_RANGE,
    PairedStep,
    band,
    call_step,
    label,
    run_spread,
    spread_without,
    within_steps,
)
from lib.diagnosis.trends._segments import INSTRUMENT_COLUMNS, Segment, last_same_instrument, segment_index, segments
from lib.diagnosis.trends._series_jumps import series_calls, series_threshold, step_thresholds
from lib.diagnosis.trends._splits import SplitPlan, plan_split, run_split

__all__ = [
    "HELP", "INSTRUMENT_COLUMNS", "JUDGE_SPREAD", "JUMP_K", "JUMP_THRESHOLD", "MIN_SPREAD_STEPS", "RUN_SPREAD",
    "SCORE_RANGE",
    "CanaryStatus", "Jump", "PairedStep", "RunChanges", "Segment", "Split", "SplitPlan", "ablations_called_for", "band",
    "call_step", "canary_status", "change_events", "config_diff", "find_jumps", "label", "last_same_instrument",
    "lint_status", "plan_split", "run_changes", "run_split", "run_spread", "segment_index", "segments",
    "series_calls", "series_threshold", "spread_without", "step_thresholds", "steps_beyond", "trend_noise",
    "within_steps",
]
