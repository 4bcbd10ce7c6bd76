"""The watcher's core: what one look at a store found (Observation, observe) and, given the facts already seen,
the messages to send with the cause first (events). Pure but for `observe`, which reads the store.

Private modules: _observe, _events.
"""

from lib.diagnosis.watch._events import (
    CLOSE,
    FAILURES,
    INSTRUMENT,
    KINDS,
    MISSING,
    NEW,
    UPDATE,
    Decision,
    Event,
    cadence,
    cause,
    events,
    failures_rising,
    missing_run,
)
from lib.diagnosis.watch._observe import (
    AblationVerdict,
    FailureShare,
    InstrumentChange,
    Observation,
    failure_shares,
    instrument_changes,
    observe,
    times_only,
)

__all__ = [
    "CLOSE", "FAILURES", "INSTRUMENT", "KINDS", "MISSING", "NEW", "UPDATE", "AblationVerdict", "Decision", "Event",
    "FailureShare", "InstrumentChange", "Observation", "cadence", "cause", "events", "failure_shares",
    "failures_rising", "instrument_changes", "missing_run", "observe", "times_only",
]
