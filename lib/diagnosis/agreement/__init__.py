"""Is the judge right? Agreement of each instrument with people's labels, on the timeline, and the gate for a new
judge.

Private modules: _stats (pure agreement statistics), _agreement, _trend (per segment and per instrument change),
_calibrate (the new-judge gate), _ppi (a metric corrected by people's labels: prediction-powered inference).
"""

from lib.diagnosis.agreement._agreement import (
    Agreement,
    agreement_by_instrument,
    compare,
    corrected_at_steps,
    corrected_of_run,
    labelled_pairs,
)
from lib.diagnosis.agreement._calibrate import (
    MARGIN,
    SEED,
    Calibration,
    Contender,
    CurrentInstrument,
    calibrate,
    calibration_samples,
    current_contender,
    current_instrument,
)
from lib.diagnosis.agreement._ppi import Corrected, ppi_mean
from lib.diagnosis.agreement._stats import Estimate
from lib.diagnosis.agreement._trend import agreements_frame, segments_frame, trend_agreement

__all__ = [
    "MARGIN", "SEED", "Agreement", "Calibration", "Contender", "Corrected", "CurrentInstrument", "Estimate",
    "agreement_by_instrument", "agreements_frame", "calibrate", "calibration_samples", "compare", "corrected_at_steps",
    "corrected_of_run", "current_contender", "current_instrument", "labelled_pairs", "ppi_mean", "segments_frame",
    "trend_agreement",
]
