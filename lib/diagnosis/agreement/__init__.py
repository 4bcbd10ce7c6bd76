"""Is the judge right? Agreement of each instrument with people's labels, on the timeline, and the gate for a new
judge.

Private modules: _stats (pure agreement statistics), _agreement, _trend (per segment and per instrument change),
_calibrate (the new-judge gate), _ppi (a metric corrected by people's labels: prediction-powered inference),
_active (what to label next: the order that narrows the corrected interval fastest, and its estimator), _design
(how the labelled samples were drawn, and which estimator holds for them).
"""

from lib.diagnosis.agreement._active import active_mean
from lib.diagnosis.agreement._active import labels_to_halve as active_labels_to_halve
from lib.diagnosis.agreement._active import order as active_order
from lib.diagnosis.agreement._active import weights as active_weights
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
from lib.diagnosis.agreement._design import Withheld
from lib.diagnosis.agreement._ppi import Corrected, ppi_mean
from lib.diagnosis.agreement._stats import Estimate
from lib.diagnosis.agreement._trend import (
    AUC_DROPPED,
    SegmentCorrected,
    agreements_frame,
    corrected_by_segment,
    corrected_frame,
    segments_frame,
    trend_agreement,
)

__all__ = [
    "AUC_DROPPED", "MARGIN", "SEED", "Agreement", "Calibration", "Contender", "Corrected", "CurrentInstrument",
    "Estimate", "SegmentCorrected", "Withheld", "active_labels_to_halve", "active_mean", "active_order",
    "active_weights", "agreement_by_instrument", "agreements_frame", "calibrate", "calibration_samples", "compare",
    "corrected_at_steps", "corrected_by_segment", "corrected_frame", "corrected_of_run", "current_contender",
    "current_instrument", "labelled_pairs", "ppi_mean", "segments_frame", "trend_agreement",
]
