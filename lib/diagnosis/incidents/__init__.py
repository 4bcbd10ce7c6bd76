"""Incidents: what is still open with its evidence and the team's state, each open episode's story, and where a
metric stands against its last trusted baseline.

Private modules: _incidents, _episodes, _standing, _reading (a jump in words from its evidence).
"""

from lib.diagnosis.incidents._episodes import (
    episode_jumps,
    jump_line,
    needs_rejudge,
    rejudge_open_episodes,
    rejudge_spec,
)
from lib.diagnosis.incidents._incidents import STATES, Incident, first_open_jump, load, open_first, set_state
from lib.diagnosis.incidents._reading import (
    JumpEvidence,
    clean_score,
    instrument_changed,
    jump_evidence,
    leaky_now_words,
    likely_noise,
    load_jump_evidence,
    reading,
    reads_never,
)
from lib.diagnosis.incidents._standing import Standing, series_words, standing

__all__ = [
    "STATES", "Incident", "JumpEvidence", "Standing", "clean_score", "episode_jumps", "first_open_jump",
    "instrument_changed", "jump_evidence", "jump_line", "leaky_now_words", "likely_noise", "load", "load_jump_evidence",
    "needs_rejudge", "open_first", "reading", "reads_never", "rejudge_open_episodes", "rejudge_spec", "series_words",
    "set_state", "standing",
]
