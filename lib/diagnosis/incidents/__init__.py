"""Incidents: what is still open with its evidence and the team's state, each open episode's story, and where a
metric stands against its last trusted baseline.

Private modules: _incidents, _episodes, _standing.
"""

from lib.diagnosis.incidents._episodes import (
    episode_jumps,
    jump_line,
    likely_noise,
    needs_rejudge,
    rejudge_open_episodes,
    rejudge_spec,
)
from lib.diagnosis.incidents._incidents import STATES, Incident, first_open_jump, load, open_first, set_state
from lib.diagnosis.incidents._standing import Standing, standing

__all__ = [
    "STATES", "Incident", "Standing", "episode_jumps", "first_open_jump", "jump_line", "likely_noise", "load",
    "needs_rejudge", "open_first", "rejudge_open_episodes", "rejudge_spec", "set_state", "standing",
]
