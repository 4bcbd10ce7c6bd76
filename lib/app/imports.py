"""The Import page's writes: an uploaded table recorded as a run, through the store this process owns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lib.judging.scoring import record_frame

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd

    from lib.app.ui import Context
    from lib.core.records import RunRecord
    from lib.judging.base import Judge


def record_upload(ctx: Context, frame: pd.DataFrame, *, source: str, run_id: str, metrics: Sequence[str] = (),
                  judge: Judge | None = None, started_at: datetime | None = None,
                  pipeline: dict[str, object] | None = None,
                  progress: Callable[[int, int], None] | None = None) -> RunRecord:
    """Record an uploaded table as one run in the page's store (lib.judging.scoring.record_frame)."""
    return record_frame(ctx.store, frame, source=source, run_id=run_id, metrics=metrics, judge=judge,
                        started_at=started_at, pipeline=pipeline, progress=progress)
