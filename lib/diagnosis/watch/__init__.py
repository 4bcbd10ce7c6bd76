"""The watcher's core: what one look at a store found (Observation, observe) and, given the facts already seen,
the messages to send with the cause first (events). Pure but for `observe`, which reads the store.

Private modules: _observe, _events.
"""

from lib.diagnosis.watch._events import (
    AGREEMENT,
    CLOSE,
    FAILURES,
    INSTRUMENT,
    KINDS,
    MISSING,
    NEW,
    UPDATE,
    Decision,
    Event,
    Wanted,
    ablations_wanted,
    agreement_falling,
    agreement_words,
    cause,
    events,
    failures_rising,
    with_notes,
)
from lib.diagnosis.watch._observe import (
    AblationVerdict,
    AgreementChange,
    FailureShare,
    InstrumentChange,
    Observation,
    agreement_changes,
    failure_shares,
    instrument_changes,
    observe,
    times_only,
    verdict_word,
)

__all__ = [
    "AGREEMENT", "CLOSE", "FAILURES", "INSTRUMENT", "KINDS", "MISSING", "NEW", "UPDATE", "AblationVerdict",
    "AgreementChange", "Decision", "Event", "FailureShare", "InstrumentChange", "Observation", "Wanted",
    "ablations_wanted", "agreement_changes", "agreement_falling", "agreement_words", "cause", "events",
    "failure_shares", "failures_rising", "instrument_changes", "observe", "times_only",
    "verdict_word", "with_notes",
]
