"""The ablation engine: blank an artifact, re-judge the same samples paired, and say in words what moved.

Private modules, in import order: _verdicts (the pure verdict rule), _sequential (the confidence
sequence), _spec (what an ablation asks for), _result (what it found), _verdict_words, _plan (its samples and
the arms that need no call), _lead (the summary split for a page), _judging (judging its units), _analysis
(stored results to verdicts), _sequential_run, _engine (run_ablation and the replay helpers).
"""

from lib.diagnosis.ablation._analysis import four_readings_gap
from lib.diagnosis.ablation._arm_words import arm_label
from lib.diagnosis.ablation._arms import (
    CONTROL,
    SWAPPABLE,
    blanked_fields,
    is_control,
    is_swap,
    swap_arm,
    tested_fields,
)
from lib.diagnosis.ablation._engine import (
    four_readings_spec,
    load_scorer,
    per_sample_deltas,
    recorded_judge,
    run_ablation,
)
from lib.diagnosis.ablation._lead import Headline, split_headline
from lib.diagnosis.ablation._plan import BASELINE, plan
from lib.diagnosis.ablation._result import AblationResult
from lib.diagnosis.ablation._sequential import CHUNK, confidence_sequence
from lib.diagnosis.ablation._spec import AblationSpec
from lib.diagnosis.ablation._verdicts import (
    CLEAN,
    INCONCLUSIVE,
    INSENSITIVE,
    LEAK,
    MIN_EFFECT,
    REPLAY_MISMATCH,
    SENSITIVE,
)

__all__ = [
    "BASELINE",
    "CHUNK",
    "CLEAN",
    "CONTROL",
    "INCONCLUSIVE",
    "INSENSITIVE",
    "LEAK",
    "MIN_EFFECT",
    "REPLAY_MISMATCH",
    "SENSITIVE",
    "SWAPPABLE",
    "AblationResult",
    "AblationSpec",
    "Headline",
    "arm_label",
    "blanked_fields",
    "confidence_sequence",
    "four_readings_gap",
    "four_readings_spec",
    "is_control",
    "is_swap",
    "load_scorer",
    "per_sample_deltas",
    "plan",
    "recorded_judge",
    "run_ablation",
    "split_headline",
    "swap_arm",
    "tested_fields",
]
