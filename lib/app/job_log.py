"""How an ablation job went: stopped and why, the judge's output mode, the concurrency its server sustained.

Beside the ablations table, never in it: a job's note is written when the job
ends (done, or stopped by its breaker or deadline) and read by the CLI and the
Ablation page. The table is created on first use, as lib.store.history's are,
so an older database gains it without a schema version. Statements take
parameters only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime

from lib.core.results import CALL_FAILED, FAILED
from lib.judging.pacing import PacingReport
from lib.store import Store

DONE = "done"
STOPPED = "stopped"

_TABLE = """CREATE TABLE IF NOT EXISTS job_log (
    ablation_id VARCHAR PRIMARY KEY, state VARCHAR NOT NULL, reason VARCHAR, output_mode VARCHAR,
    pacing VARCHAR, updated_at TIMESTAMP NOT NULL)"""


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


def judge_info(judge: object) -> JudgeInfo:
    """What a judge reports about its calls (an OpenAIJudge: output mode and pacing; others: nothing)."""
    mode = getattr(judge, "output_mode", None)
    pacing = getattr(judge, "pacing", None)
    return JudgeInfo(str(mode) if mode else None, pacing if isinstance(pacing, PacingReport) else None)


def _ensure(store: Store) -> Store:
    """Create this module's tables once per open store; returns the store."""
    return store.ensure_tables("job_log", (_TABLE,))


def record(store: Store, ablation_id: str, note: JobNote) -> None:
    """Write (or replace) the job's note."""
    pacing = json.dumps(asdict(note.judge.pacing)) if note.judge.pacing is not None else None
    with _ensure(store).transaction() as cur:
        cur.execute("INSERT OR REPLACE INTO job_log VALUES (?, ?, ?, ?, ?, ?)",
                    [ablation_id, note.state, note.reason, note.judge.output_mode, pacing,
                     datetime.now().replace(microsecond=0)])


def read(store: Store, ablation_id: str) -> JobNote | None:
    """The job's note (None: the job has not ended since job notes exist)."""
    rows = _ensure(store).cursor().execute(
        "SELECT state, reason, output_mode, pacing FROM job_log WHERE ablation_id = ?", [ablation_id]).fetchall()
    if not rows:
        return None
    state, reason, mode, pacing = rows[0]
    report = None
    if pacing:
        d = json.loads(pacing)
        report = PacingReport(**{**d, "backoffs": dict(d.get("backoffs") or {})})
    return JobNote(str(state), str(reason or ""), JudgeInfo(mode, report))


def reopen_faults(store: Store, ablation_id: str) -> int:
    """Forget the job's judgings whose call failed (a stopped job's), so Resume asks them again.

    A reply that could not be read stays: the judge answered, unreadably. Returns how many were forgotten.
    """
    with _ensure(store).transaction() as cur:
        n = cur.execute("""SELECT count(*) FROM ablation_results WHERE ablation_id = ? AND status = ?
                           AND starts_with(reason, ?)""", [ablation_id, FAILED, CALL_FAILED]).fetchone()[0]
        cur.execute("""DELETE FROM ablation_results WHERE ablation_id = ? AND status = ? AND starts_with(reason, ?)""",
                    [ablation_id, FAILED, CALL_FAILED])
        cur.execute("""UPDATE ablations SET done = (SELECT count(*) FROM ablation_results WHERE ablation_id = ?)
                       WHERE ablation_id = ?""", [ablation_id, ablation_id])
    return int(n)
