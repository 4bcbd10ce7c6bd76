"""The verdict on one ablation cell: a pure function of what was measured and what the wiring renders.

A cell is one metric with one set of fields blanked. What decides its verdict,
and nothing else:

- what the wiring table expects (the blanked fields are ones the metric must
  never receive: "invariant"; or include one it receives: "sensitive");
- the static evidence: the fields the run's template or binding renders
  (None when the scorer is external code that nobody reads);
- the paired interval of (blanked - as wired) over samples;
- the judge's repeat noise band (None: not measured; 0: repeats identical);
- the headroom: how far the score can fall (blanking removes support, so an
  effect shows as a fall; a score already at the floor cannot show it);
- failures and the number of paired samples;
- whether the re-judged baseline reproduced the stored score (replay);
- whether blanking changed the judge's prompt at all: when every blanked
  prompt is byte-identical to the baseline's, the arm is not re-judged and
  its verdict rests on that fact alone (UNCHANGED), never on a measurement.

A move of a received field counts when its interval lies wholly beyond the
smallest effect worth naming (so it excludes zero too); a move of a field the
metric must never receive counts when its interval excludes zero, whatever its
size (a small leak is still a leak: a CI gate must fail on it, and its size is
said). Either way its mean must exceed the judge repeat band when the band is
not zero (a move within it is what re-judging the same outputs does on its
own: not a measured dependence, and not a null either, so INCONCLUSIVE), at
any number of samples (a small n's interval is exact). So CLEAN needs an
interval that holds zero and rules out the effect. A null needs MIN_PAIRED
samples and an interval within `null_bound`: `rule_out`, or HEADROOM_SHARE
of the room the score has above the judge's floor when that is smaller; a
received field whose interval excludes zero on the side of a fall is never
INSENSITIVE. A wiring that renders a must-never-receive field is a LEAK
whatever was measured (the measurement, failures included, is said beside
it), and nothing clears a run whose instrument the ablation did not reproduce
(a CLEAN or SENSITIVE cell becomes REPLAY MISMATCH; a finding against the
wiring stands). `classify` returns the verdict and the branch that decided it;
`lib.diagnosis.ablation._verdict_words` turns both into a sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

from lib.core.metrics import EXPECT_SENSITIVE, INVARIANT
from lib.core.results import MAX_FAILED_SHARE

LEAK = "LEAK"
CLEAN = "CLEAN"
SENSITIVE = "SENSITIVE"
INSENSITIVE = "INSENSITIVE"
INCONCLUSIVE = "INCONCLUSIVE"
REPLAY_MISMATCH = "REPLAY MISMATCH"
AS_EXPECTED = frozenset({CLEAN, SENSITIVE})


MIN_PAIRED = 20          # fewer paired samples and a cell says nothing measured
MIN_EFFECT = 0.02        # the smallest effect worth naming (default; AblationSpec.min_effect)
RULE_OUT = 0.05          # a null must rule out a move this large (the interval's far end)

# Why a verdict was reached: the branch of `classify` (tests name them; the wording reads them).
NOTHING_TO_JUDGE = "nothing to judge"
FAILURES = "failures"
TOO_FEW = "too few samples"
MEASURED = "measured move"
STATIC = "renders the field"
REPLAY = "replay not reproduced"
WITHIN_NOISE = "within noise"
FLOOR = "no room to fall"
NULL = "null measured"
WIDE = "interval too wide"
UNCHANGED = "prompt unchanged"
SMALL_FALL = "a fall below the effect"
BELOW_EFFECT = "a dependence below the effect"   # a forbidden field's move the interval shows, not wholly beyond
HEADROOM_SHARE = 0.5     # a null must rule out a fall of this share of the room above the judge's floor


@dataclass(frozen=True)
class CellEvidence:
    """Everything a cell's verdict may rest on.

    Attributes:
        metric: the metric.
        fields: the blanked fields.
        expected: INVARIANT or EXPECT_SENSITIVE (from the wiring table).
        renders: the fields the run's wiring puts in front of the judge; None
            when it cannot be read (an external scorer).
        n: samples scored in both arms.
        mean, lo, hi: the paired change (blanked - as wired) and its 95% interval.
        noise: the judge's repeat noise band (None: one repeat; 0.0: identical repeats).
        baseline: the as-wired mean; blanking can lower the score by at most this much.
        n_failed, n_units: failed judgings and all judgings of both arms.
        nothing_to_judge: blanking removed every item the metric judges.
        replay_mismatch: the re-judged baseline did not reproduce the stored score.
        min_effect: the smallest effect worth naming.
        rule_out: the move a null must rule out.
        unchanged: the samples whose prompts blanking left byte-identical, when that is every sample (0: the
            prompt changed, and the cell was judged).
        sequence: (lo, hi) is a confidence sequence at the look that stopped a sequential ablation's arm,
            not a fixed-n interval (the words say so; the decision reads the interval the same way).
        floor: the judge's floor for the metric: its mean score with all of the metric's inputs blanked,
            measured in the same ablation (None: not measured, and 0 is used).
    """

    metric: str
    fields: tuple[str, ...]
    expected: str
    renders: frozenset[str] | None
    n: int
    mean: float | None
    lo: float | None
    hi: float | None
    noise: float | None
    baseline: float | None
    n_failed: int = 0
    n_units: int = 0
    nothing_to_judge: bool = False
    replay_mismatch: bool = False
    min_effect: float = MIN_EFFECT
    rule_out: float = RULE_OUT
    unchanged: int = 0
    sequence: bool = False
    floor: float | None = None

    @property
    def headroom(self) -> float | None:
        """How far the score can fall when the fields are blanked: the baseline above the judge's floor for the
        metric (its score with all the metric's inputs blanked, when the ablation measured it; else 0)."""
        if self.baseline is None:
            return None
        return self.baseline - (self.floor if _real(self.floor) else 0.0)

    @property
    def null_bound(self) -> float:
        """The move a null must rule out: rule_out, or HEADROOM_SHARE of the headroom when that is smaller."""
        room = self.headroom
        return self.rule_out if room is None else min(self.rule_out, HEADROOM_SHARE * max(room, 0.0))

    @property
    def falls(self) -> bool:
        """The interval excludes zero on the side of a fall (blanking a received field removes support)."""
        return _real(self.hi) and self.hi < 0

    @property
    def rendered_forbidden(self) -> tuple[str, ...]:
        """Blanked fields that the metric must never receive and that its wiring renders."""
        if self.expected != INVARIANT or self.renders is None:
            return ()
        return tuple(f for f in self.fields if f in self.renders)

    @property
    def far(self) -> float | None:
        """The largest move the interval allows (what a null rules out)."""
        if self.lo is None or self.hi is None:
            return None
        return max(abs(self.lo), abs(self.hi))

    @property
    def beyond_effect(self) -> bool:
        """The interval lies wholly beyond the smallest effect worth naming (so it excludes zero)."""
        return _real(self.lo) and _real(self.hi) and (self.lo > self.min_effect or self.hi < -self.min_effect)

    @property
    def excludes_zero(self) -> bool:
        """The interval excludes zero: it shows a move (an interval that ends at 0 holds it)."""
        return _real(self.lo) and _real(self.hi) and (self.lo > 0 or self.hi < 0)

    @property
    def shows_move(self) -> bool:
        """The interval shows a move that counts for this cell: any move for a field the metric must never
        receive (excludes zero), a move wholly beyond the smallest effect for a field it receives."""
        return self.excludes_zero if self.expected == INVARIANT else self.beyond_effect

    @property
    def beyond_noise(self) -> bool:
        """The mean move exceeds the noise band; a zero or unmeasured band leaves it to the interval."""
        return not self.noise or (_real(self.mean) and abs(self.mean) > self.noise)


@dataclass(frozen=True)
class Decision:
    """A cell's verdict and the branch of `classify` that reached it."""

    kind: str
    why: str


def _real(x: float | None) -> TypeGuard[float]:
    return x is not None and not math.isnan(x)


def classify(e: CellEvidence) -> Decision:
    """The verdict on one cell. Pure: the same evidence always gives the same decision.

    The order is the rule: what the wiring shows decides before any count (a rendered forbidden field is a
    LEAK whatever the failures or the number of samples, with the measurement beside it); a move that counts
    (any move of a must-never-receive field the interval shows; a received field's beyond the smallest effect)
    decides at any n (a small n's interval is exact: stats.paired_interval);
    only a null (CLEAN, INSENSITIVE) needs MIN_PAIRED samples and room to fall.
    """
    static = bool(e.rendered_forbidden)
    if e.unchanged:  # the judge was asked nothing new: what that proves depends only on the wiring
        if static:   # rendered, yet empty in every sample: nothing to measure, and never cleared
            return Decision(INCONCLUSIVE, UNCHANGED)
        if e.expected != INVARIANT:
            return Decision(INSENSITIVE, UNCHANGED)
        return Decision(REPLAY_MISMATCH, UNCHANGED) if e.replay_mismatch else Decision(CLEAN, UNCHANGED)
    if e.nothing_to_judge and e.expected == EXPECT_SENSITIVE:
        return Decision(SENSITIVE, NOTHING_TO_JUDGE)
    failed = bool(e.n_units) and e.n_failed / e.n_units > MAX_FAILED_SHARE
    moved = _real(e.mean) and e.shows_move and e.beyond_noise
    leak = Decision(LEAK, MEASURED if e.beyond_effect else BELOW_EFFECT)
    if static:
        return leak if moved and not failed else Decision(LEAK, STATIC)
    if failed:
        return Decision(INCONCLUSIVE, FAILURES)
    if not _real(e.mean):
        return Decision(INCONCLUSIVE, TOO_FEW)
    if moved:
        if e.expected == INVARIANT:
            return leak
        return Decision(REPLAY_MISMATCH, REPLAY) if e.replay_mismatch else Decision(SENSITIVE, MEASURED)
    if e.shows_move:
        return Decision(INCONCLUSIVE, WITHIN_NOISE)
    if e.expected != INVARIANT and e.falls:
        return Decision(INCONCLUSIVE, SMALL_FALL)
    if e.n < MIN_PAIRED:
        return Decision(INCONCLUSIVE, TOO_FEW)
    if e.headroom is not None and (e.headroom < e.rule_out or (e.far is not None and e.far > e.null_bound
                                                               and e.far <= e.rule_out)):
        return Decision(INCONCLUSIVE, FLOOR)
    if e.far is not None and e.far <= e.null_bound:
        if e.expected != INVARIANT:
            return Decision(INSENSITIVE, NULL)
        return Decision(REPLAY_MISMATCH, REPLAY) if e.replay_mismatch else Decision(CLEAN, NULL)
    return Decision(INCONCLUSIVE, WIDE)


# -- the positive control (lib.diagnosis.ablation._arms): does the score rise when the items get perfect support? --
ROSE = "rises with perfect support"
IGNORES_INPUTS = "does not read its inputs"
SMALL_RISE = "a rise below the effect"


@dataclass(frozen=True)
class ControlEvidence:
    """A metric's positive control: its score with the items given perfect support against its floor, paired.

    Attributes:
        metric: the metric.
        n: samples scored in both the floor arm and the control.
        mean, lo, hi: the paired change (perfect support - floor) and its 95% interval.
        noise: the judge's repeat noise band (None: one repeat; 0.0: identical repeats).
        floor: the floor's mean (every field but the items' own blanked).
        supported: the control's mean (the field the items are judged against set to the items themselves).
        n_failed, n_units: failed judgings and all judgings of both arms.
        min_effect: the smallest effect worth naming.
        rule_out: the rise a "does not read its inputs" must rule out.
    """

    metric: str
    n: int
    mean: float | None
    lo: float | None
    hi: float | None
    noise: float | None
    floor: float | None
    supported: float | None
    n_failed: int = 0
    n_units: int = 0
    min_effect: float = MIN_EFFECT
    rule_out: float = RULE_OUT


def classify_control(e: ControlEvidence) -> Decision:
    """The positive control's verdict: SENSITIVE when perfect support raises the score beyond the smallest effect
    (and the noise band), INSENSITIVE when on MIN_PAIRED samples the interval rules out a rise of `rule_out` and
    shows none (the judge does not read its inputs), else INCONCLUSIVE with the reason. Pure."""
    if e.n_units and e.n_failed / e.n_units > MAX_FAILED_SHARE:
        return Decision(INCONCLUSIVE, FAILURES)
    if not (_real(e.mean) and _real(e.lo) and _real(e.hi)):
        return Decision(INCONCLUSIVE, TOO_FEW)
    if e.lo > e.min_effect:
        return Decision(SENSITIVE, ROSE) if not e.noise or e.mean > e.noise else Decision(INCONCLUSIVE, WITHIN_NOISE)
    if e.lo > 0:
        return Decision(INCONCLUSIVE, SMALL_RISE)
    if e.n < MIN_PAIRED:
        return Decision(INCONCLUSIVE, TOO_FEW)
    if e.hi <= e.rule_out:
        return Decision(INSENSITIVE, IGNORES_INPUTS)
    return Decision(INCONCLUSIVE, WIDE)


def with_control(d: Decision, expected: str, control: Decision | None) -> Decision:
    """A cell's verdict once its metric's positive control is read.

    A cell with no room to fall (FLOOR) about a field the metric receives (`expected`: EXPECT_SENSITIVE) becomes
    INSENSITIVE when the control
    shows the judge does not read its inputs (its score does not rise with perfect support: a constant scorer);
    when the control rises, or was not decided, the floor case stays INCONCLUSIVE. Every other verdict stands.
    """
    if control is None or d.why != FLOOR or expected == INVARIANT or control.kind != INSENSITIVE:
        return d
    return Decision(INSENSITIVE, IGNORES_INPUTS)
