"""A submitted batch as the store holds it, read without the openai SDK (the dashboard shows these).

lib.diagnosis.batch submits, polls and finishes batches; this module only
reads what the last poll stored: status, counts, what was collected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lib.core.errors import InputError
from lib.store import Store
from lib.store import batches as bs

ENDED = frozenset({"completed", "expired", "cancelled", "failed"})


@dataclass(frozen=True)
class BatchJob:
    """A submitted batch as the store holds it: status, counts, what was collected."""

    batch_id: str
    kind: str
    job_id: str
    model: str
    endpoint: str
    status: str
    total: int
    completed: int
    failed: int
    collected: bool
    replies: int
    faults: int
    finished: bool
    polled_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def answered_share(self) -> float:
        """Requests the batch has answered (well or not), as a share of its total; 0 for an empty batch."""
        return min(1.0, (self.completed + self.failed) / self.total) if self.total else 0.0

    @property
    def sentence(self) -> str:
        """E.g. 'batch_1 (ablation ab-12, model m): in_progress, 120 of 800 answered, 2 failed'."""
        text = (f"{self.batch_id} ({self.kind} {self.job_id}, {self.model}): {self.status}, "
                f"{self.completed} of {self.total} answered, {self.failed} failed")
        if self.collected:
            text += f"; collected: {self.replies} replies in the call cache, {self.faults} faults recorded"
            text += " (asked live when the job finishes)" if self.faults and not self.finished else ""
        if self.finished:
            text += "; job finished"
        return text


def load(store: Store, batch_id: str) -> BatchJob:
    row = bs.job(store, batch_id)
    if row is None:
        raise InputError(f"no batch {batch_id!r} in this database", field="batch")
    return BatchJob(batch_id, str(row["kind"]), str(row["job_id"]), str(row["model"]), str(row["endpoint"]),
                    str(row["status"]), int(row["total"]), int(row["completed"]),  # type: ignore[arg-type]
                    int(row["failed"]), bool(row["collected"]), int(row["replies"]),  # type: ignore[arg-type]
                    len(bs.faults(store, batch_id)), bool(row["finished"]),
                    row["updated_at"])  # type: ignore[arg-type]


def newest(store: Store, limit: int = 10) -> list[BatchJob]:
    """The `limit` most recently submitted batch jobs, newest first."""
    return [load(store, b) for b in bs.job_ids(store)[::-1][:limit]]
