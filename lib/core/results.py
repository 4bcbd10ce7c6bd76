"""A judged sample's result and the aggregate rule: ok (scored), excluded or failed (counted, never scored).

The store keeps these and the harness makes them; the rule for a metric's value over a run lives here once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from lib.core.calls import Usage

OK = "ok"
FAILED = "failed"
EXCLUDED = "excluded"
MAX_FAILED_SHARE = 0.2   # more failed judgings than this share and nothing is measured (a cell, a job)
CALL_FAILED = "judge call failed: "   # a failed sample's reason when its call failed after the judge's retries


@dataclass(frozen=True)
class Verdict:
    """One item's verdict record."""

    item: str
    label: bool
    verdict: str
    evidence: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"item": self.item, "label": self.label, "verdict": self.verdict, "evidence": self.evidence}


@dataclass(frozen=True)
class SampleResult:
    """The outcome of judging one sample for one metric."""

    sample_id: str
    status: str
    score: float | None = None
    verdicts: tuple[Verdict, ...] = ()
    reason: str = ""
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cached: bool = False
    fingerprint: str | None = None
    served_model: str | None = None   # the model the server said it served (lib.core.calls.JudgeReply)

    def verdicts_json(self) -> str:
        try:
            return _verdicts_json(self.verdicts)
        except TypeError:   # verdicts given as a list: not hashable, written each time
            return _verdicts_json.__wrapped__(self.verdicts)


# Judges repeat themselves (temperature 0, the offline judge on most items): a history's replies are written once.
@lru_cache(maxsize=8192)
def _verdicts_json(verdicts: tuple[Verdict, ...]) -> str:
    return json.dumps([v.to_dict() for v in verdicts], ensure_ascii=False)


@dataclass(frozen=True)
class Aggregate:
    """A metric over a set of sample results."""

    score: float | None
    n: int
    n_failed: int
    n_excluded: int
    usage: Usage = field(default_factory=Usage)


def aggregate(results: Sequence[SampleResult]) -> Aggregate:
    """Mean of the scored samples; failures and exclusions counted, never scored."""
    scores = [r.score for r in results if r.status == OK and r.score is not None]
    usage = Usage()
    for r in results:
        usage = usage + r.usage
    return Aggregate(
        score=math.fsum(scores) / len(scores) if scores else None,
        n=len(scores),
        n_failed=sum(r.status == FAILED for r in results),
        n_excluded=sum(r.status == EXCLUDED for r in results),
        usage=usage,
    )
