"""The Import page's writes: an uploaded table recorded as a run, scored off the page thread when a judge scores it.

A widget interaction reruns the page script and would kill scoring running on
it, so a file scored with the configured judge (a paid one, perhaps) is scored
by the process' lib.jobs.ImportRunner on a thread of its own, as ablations are;
the page shows its progress from its `status` (RUNNING, DONE, FAILED). A file
recorded with its own scores has no calls to make and is recorded at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from lib.intake.uploads import record_import
from lib.jobs import DONE as DONE
from lib.jobs import FAILED as FAILED
from lib.jobs import RUNNING as RUNNING
from lib.judging.scoring import record_frame

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd

    from lib.core.records import RunRecord
    from lib.intake.importers import ImportPlan
    from lib.store import Store



class HasStore(Protocol):
    """A page's context (lib.app.ui.Context), of which recording needs only the store."""

    @property
    def store(self) -> Store: ...


def record_upload(ctx: HasStore, frame: pd.DataFrame, *, source: str, run_id: str,
                  started_at: datetime | None = None, pipeline: Mapping[str, object] | None = None) -> RunRecord:
    """Record an uploaded table as one run with the scores it carries (no judge: nothing to wait for)."""
    return record_frame(ctx.store, frame, source=source, run_id=run_id, started_at=started_at, pipeline=pipeline)


def record_tool_upload(ctx: HasStore, plan: ImportPlan) -> None:
    """Record another tool's file, read and checked as `plan` (lib.intake.uploads.prepare_tool_upload)."""
    record_import(ctx.store, plan)
