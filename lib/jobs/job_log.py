"""How an ablation job went: stopped and why, the judge's output mode, the concurrency its server sustained.

Beside the ablations table, never in it: a job's note is written when the job
ends (done, or stopped by its breaker or deadline) and read by the CLI and the
Ablation page. Its table is the store's (lib.store.schema's job log migration).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from lib.core.results import CALL_FAILED, FAILED
from lib.judging.base import Judge, Paced, ReportsOutputMode
from lib.judging.pacing import PacingReport
from lib.store import Store

DONE = "done"
STOPPED = "stopped"


@dataclass(frozen=True)
class JudgeInfo:
    """How the judge was asked and paced (None fields: not a model judge, or no call made)."""

    output_mode: str | None = None
    pacing: PacingReport | None = None

    @property
    def sentence(self) -> str:
        """E.g. 'verdicts asked as json_schema; concurrency 1 of 8 at the end (peak 2); median call 0.4 s'."""
        parts = []
        if self.output_mode:
            parts.append(f"verdicts asked as {self.output_mode}")
        if self.pacing is not None and self.pacing.calls:
            parts.append(self.pacing.sentence)
        return "; ".join(parts)


@dataclass(frozen=True)
class JobNote:
    """An ablation job's end: DONE or STOPPED, the sentence saying why it stopped, and its judge's info."""

    state: str
    reason: str = ""
    judge: JudgeInfo = field(default_factory=JudgeInfo)


def judge_info(judge: Judge) -> JudgeInfo:
    """What a judge reports about its calls (an OpenAIJudge: output mode and pacing; others: nothing)."""
    mode = judge.output_mode if isinstance(judge, ReportsOutputMode) else None
    pacing = judge.pacing if isinstance(judge, Paced) else None
    return JudgeInfo(str(mode) if mode else None, pacing if isinstance(pacing, PacingReport) else None)


def record(store: Store, ablation_id: str, note: JobNote) -> None:
    """Write (or replace) the job's note."""
    pacing = json.dumps(asdict(note.judge.pacing)) if note.judge.pacing is not None else None
    store.record_job_note(ablation_id, state=note.state, reason=note.reason, output_mode=note.judge.output_mode,
                          pacing=pacing)


def read(store: Store, ablation_id: str) -> JobNote | None:
    """The job's note (None: the job has not ended since job notes exist)."""
    row = store.job_note(ablation_id)
    if row is None:
        return None
    state, reason, mode, pacing = row
    report = None
    if pacing:
        d = json.loads(pacing)
        report = PacingReport(**{**d, "backoffs": dict(d.get("backoffs") or {})})
    return JobNote(str(state), str(reason or ""), JudgeInfo(mode, report))


def reopen_faults(store: Store, ablation_id: str) -> int:
    """Forget the job's judgings whose call failed (a stopped job's), so Resume asks them again.

    A reply that could not be read stays: the judge answered, unreadably. Returns how many were forgotten.
    """
    return store.forget_results(ablation_id, FAILED, CALL_FAILED)
