"""The judge sentinel: a pinned probe set judged again on a schedule, paired against its pinned verdicts, with an
e-process on the nightly disagreement that stays valid however often it is looked at. It sees the judge behind an
unchanged name change (issue 45, A2).

Private modules: _eprocess (the test, pure), _run (pin, night, status), _marks (the Trends marker, the incident).
"""

from lib.diagnosis.sentinel._eprocess import ALPHA, PIN_ALPHA, Look, e_process, first_drift, null_bound
from lib.diagnosis.sentinel._marks import Drift, drift_events, drifts, with_drift
from lib.diagnosis.sentinel._run import (
    DRIFT,
    FROM_LABELS,
    FROM_RUN,
    MAX_FAILED,
    PROBES,
    REPEATS,
    SOURCES,
    Pin,
    Status,
    current_pin,
    disagreement,
    night_calls,
    night_seed,
    pin,
    pin_seed,
    probe_samples,
    run_night,
    status,
    statuses,
)

__all__ = [
    "ALPHA",
    "DRIFT",
    "FROM_LABELS",
    "FROM_RUN",
    "MAX_FAILED",
    "PIN_ALPHA",
    "PROBES",
    "REPEATS",
    "SOURCES",
    "Drift",
    "Look",
    "Pin",
    "Status",
    "current_pin",
    "disagreement",
    "drift_events",
    "drifts",
    "e_process",
    "first_drift",
    "night_calls",
    "night_seed",
    "null_bound",
    "pin",
    "pin_seed",
    "probe_samples",
    "run_night",
    "status",
    "statuses",
    "with_drift",
]
