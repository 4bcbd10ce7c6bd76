"""What an ablation found: one verdict per cell, the replay checks, the four readings, the headline.

Values only (frozen dataclasses that round-trip through JSON, as the store
keeps them); `lib.diagnosis.ablation._analysis` computes them, `lib.diagnosis.ablation._verdicts` decides
each cell, `lib.diagnosis.ablation._verdict_words` says it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from lib.core.errors import InputError
from lib.diagnosis.ablation._sequential import EXHAUSTED
from lib.diagnosis.ablation._spec import AblationSpec
from lib.diagnosis.ablation._verdicts import AS_EXPECTED, INCONCLUSIVE, INSENSITIVE, LEAK, REPLAY_MISMATCH

# The stored result's format: 2 added the accounting (judgings, not re-judged, repeats skipped, probe); 3 the
# sequential ablation (per cell: why judging stopped and on how many samples; per result: sequential, judgings
# not needed once arms stopped). A change that a reader of the previous format cannot take (a renamed or retyped
# field) raises it and adds a migration.
RESULT_FORMAT = 3


@dataclass(frozen=True, kw_only=True)   # 27 fields: two swapped by position would pass unseen
class ArmVerdict:
    """The verdict on one (metric, blanked field(s)) cell, with every input that decided it.

    `expected` is what the wiring table expects ("invariant" or "sensitive");
    `renders` the fields the run's template or binding puts in front of the
    judge (None: an external scorer, not read); delta/lo/hi the paired change
    and its 95% interval; `noise` the repeat noise band (None: one repeat, 0:
    identical repeats); `ratio` |delta|/noise only when noise > 0;
    `headroom` how far the score can fall; `min_effect` the smallest effect
    worth naming; `rule_out` the move a null must rule out; `why` the branch
    of lib.diagnosis.ablation._verdicts.classify; `joint` True for the arm that blanks all the
    metric's must-never-receive fields together. A sequential ablation's cell
    says why judging it stopped (`stop`, lib.diagnosis.ablation._sequential: a look
    decided it, and lo/hi are then the confidence sequence at that look; or
    every sample was judged) and on how many samples of the order (`judged`);
    "" and 0 when every sample was judged by design.
    """

    metric: str
    arm: str
    kind: str
    expected: str
    baseline: float | None
    ablated: float | None
    delta: float | None
    lo: float | None
    hi: float | None
    noise: float | None
    ratio: float | None
    n: int
    n_failed: int
    n_units: int
    flips_to_positive: int
    flips_to_negative: int
    flips_p: float | None
    mde: float | None
    sentence: str
    why: str = ""
    renders: tuple[str, ...] | None = None
    headroom: float | None = None
    min_effect: float | None = None
    rule_out: float | None = None
    joint: bool = False
    stop: str = ""
    judged: int = 0

    @property
    def interval_words(self) -> str:
        """'95% CS' when lo/hi are a confidence sequence at a deciding look, else '95% CI'."""
        return "95% CS" if self.stop and self.stop != EXHAUSTED else "95% CI"

    @property
    def as_expected(self) -> bool:
        return self.kind in AS_EXPECTED


@dataclass(frozen=True)
class ReplayCheck:
    """Does the re-judged, unblanked baseline reproduce the stored score?"""

    metric: str
    stored: float | None
    rerun: float | None
    delta: float | None
    noise: float | None
    mismatch: bool
    sentence: str
    allowed: float | None = None


@dataclass(frozen=True)
class FourReadings:
    """Faithfulness under four wirings, and what they say together."""

    as_wired: float
    without_reference: float
    without_contexts: float
    without_both: float | None
    leak: float
    independence: float
    independence_gap: float
    noise: float | None
    sentence: str


def _known(cls: type, d: dict) -> dict:
    names = {f.name for f in fields(cls)}
    out = {k: val for k, val in d.items() if k in names}
    if "renders" in out and out["renders"] is not None:
        out["renders"] = tuple(out["renders"])
    return out


@dataclass(frozen=True)
class AblationResult:
    """An ablation's verdicts and what they cost.

    The accounting adds up: every judging the spec asks for (metrics x arms x
    repeats x samples) is one of `judgings` (stored results; of them `cached`
    were answered from the call cache, and `calls` counts the judge calls
    made, retries included), `not_rejudged` (arms whose prompts equal the
    baseline's) or `repeats_skipped` (repeats not made once the first `probe`
    samples repeated identically; `probe` 0: the repeats did not stop) or
    `stopped_early` (a `sequential` ablation's judgings not needed once the
    arms' verdicts were decided).
    """

    ablation_id: str
    spec: AblationSpec
    verdicts: list[ArmVerdict]
    replay: list[ReplayCheck]
    four: FourReadings | None
    summary: str
    calls: int
    cached: int
    failures: dict[str, int] = field(default_factory=dict)
    judge_note: str = ""
    judgings: int = 0
    not_rejudged: int = 0
    repeats_skipped: int = 0
    probe: int = 0
    sequential: bool = False
    stopped_early: int = 0
    from_store: bool = False   # this answer was read from the store: no judging, no call now (never stored)

    @property
    def planned(self) -> int:
        return self.judgings + self.not_rejudged + self.repeats_skipped + self.stopped_early

    @property
    def saved(self) -> str:
        """The judgings the ablation did not need, in words ('' when none)."""
        parts = []
        if self.not_rejudged:
            parts.append(f"{self.not_rejudged} judgings not re-judged (prompt unchanged)")
        if self.repeats_skipped:
            parts.append(f"{self.repeats_skipped} repeats skipped (identical repeats on the first {self.probe} "
                         f"samples)")
        if self.stopped_early:
            parts.append(f"{self.stopped_early} judgings not needed (arms stopped once their verdicts were decided)")
        return "; ".join(parts) + "." if parts else ""

    @property
    def accounting(self) -> str:
        """The cost line: judgings, calls, cache, not re-judged, repeats skipped."""
        calls = f"{self.calls} judge calls, {self.cached} answered from the call cache"
        head = f"{self.judgings} judgings: {calls}" if self.judgings else calls   # format 1 did not count them
        line = f"{head}; {self.saved[:-1]}" if self.saved else head
        return f"answered from the store: no judge call now (when it ran: {line})" if self.from_store else line

    @property
    def exit_code(self) -> int:
        """0 every cell as the wiring table expects; 1 a LEAK or INSENSITIVE; 3 nothing decided.

        A replay mismatch is never 0: an ablation that did not reproduce the
        run's instrument cannot clear the run.
        """
        kinds = {v.kind for v in self.verdicts}
        if kinds & {LEAK, INSENSITIVE}:
            return 1
        if kinds & {INCONCLUSIVE, REPLAY_MISMATCH} or any(r.mismatch for r in self.replay):
            return 3
        return 0

    def to_dict(self) -> dict[str, object]:
        d = {"format": RESULT_FORMAT, **asdict(self), "spec": self.spec.to_dict()}
        del d["from_store"]   # how this answer was reached, not what the ablation found
        return d

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> AblationResult:
        """Read a stored result of any format this version knows (older ones are migrated on the way in).

        Raises:
            InputError: a result written by a newer evaldrift, or not a result at all.
        """
        fmt = d.get("format", 1)
        if not isinstance(fmt, int) or not 1 <= fmt <= RESULT_FORMAT:
            raise InputError(f"this ablation result has format {fmt!r}; this evaldrift reads formats 1 to "
                             f"{RESULT_FORMAT} (a newer evaldrift wrote it: re-run the ablation or upgrade)",
                             field="result")
        try:
            return cls._read(d)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not an ablation result ({exc})", field="result") from None

    @classmethod
    def _read(cls, d: dict[str, object]) -> AblationResult:
        # Format 1 (before 2026-12-03) had no judgings/not_rejudged/repeats_skipped/probe: they read as 0, and
        # `accounting` then speaks only of calls and cache. Formats 1-2 judged every sample: sequential False,
        # stopped_early 0, and each cell's stop "" and judged 0. New verdict fields take their defaults (_known).
        return cls(
            ablation_id=d["ablation_id"], spec=AblationSpec.from_dict(d["spec"]),  # type: ignore[arg-type]
            verdicts=[ArmVerdict(**_known(ArmVerdict, v)) for v in d["verdicts"]],  # type: ignore[attr-defined]
            replay=[ReplayCheck(**_known(ReplayCheck, r)) for r in d["replay"]],  # type: ignore[attr-defined]
            four=FourReadings(**d["four"]) if d.get("four") else None,  # type: ignore[arg-type]
            summary=d["summary"], calls=d["calls"], cached=d["cached"],  # type: ignore[arg-type]
            failures=d.get("failures", {}), judge_note=d.get("judge_note", ""),  # type: ignore[arg-type]
            judgings=int(d.get("judgings", 0)), not_rejudged=int(d.get("not_rejudged", 0)),  # type: ignore[call-overload]
            repeats_skipped=int(d.get("repeats_skipped", 0)), probe=int(d.get("probe", 0)),  # type: ignore[call-overload]
            sequential=bool(d.get("sequential", False)),
            stopped_early=int(d.get("stopped_early", 0)),  # type: ignore[call-overload]
        )
