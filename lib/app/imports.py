"""The Import page's writes: an uploaded table recorded as a run, scored off the page thread when a judge scores it.

A widget interaction reruns the page script and would kill scoring running on
it, so a file scored with the configured judge (a paid one, perhaps) is scored
by the process' ImportRunner on a thread of its own, as ablations are by
lib.app.jobs.JobRunner; the page shows its progress from `status`. A file
recorded with its own scores has no calls to make and is recorded at once.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from lib.core.errors import EvaldriftError
from lib.intake.uploads import record_import
from lib.judging.scoring import record_frame

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd

    from lib.core.records import RunRecord
    from lib.intake.importers import ImportPlan
    from lib.judging.base import Judge
    from lib.store import Store

RUNNING, DONE, FAILED = "running", "done", "failed"


class HasStore(Protocol):
    """A page's context (lib.app.ui.Context), of which recording needs only the store."""

    @property
    def store(self) -> Store: ...


@dataclass(frozen=True)
class ImportStatus:
    """Where an upload's scoring is: RUNNING (done of total samples judged), DONE (the run recorded) or FAILED."""

    run_id: str
    state: str
    done: int = 0
    total: int = 0
    error: str = ""
    samples: int = 0
    metrics: tuple[str, ...] = ()

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


def record_upload(ctx: HasStore, frame: pd.DataFrame, *, source: str, run_id: str,
                  started_at: datetime | None = None, pipeline: Mapping[str, object] | None = None) -> RunRecord:
    """Record an uploaded table as one run with the scores it carries (no judge: nothing to wait for)."""
    return record_frame(ctx.store, frame, source=source, run_id=run_id, started_at=started_at, pipeline=pipeline)


def record_tool_upload(ctx: HasStore, plan: ImportPlan) -> None:
    """Record another tool's file, read and checked as `plan` (lib.intake.uploads.prepare_tool_upload)."""
    record_import(ctx.store, plan)


class ImportRunner:
    """Scores uploaded tables with a judge and records them, one at a time, on a background thread.

    Args:
        store: the store the process owns.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import")
        self._lock = threading.Lock()
        self._status: dict[str, ImportStatus] = {}

    def submit(self, frame: pd.DataFrame, *, source: str, run_id: str, metrics: Sequence[str], judge: Judge,
               started_at: datetime | None = None, pipeline: Mapping[str, object] | None = None) -> None:
        """Start scoring and recording `frame` as run `run_id`; a run already being scored is left to finish."""
        with self._lock:
            now = self._status.get(run_id)
            if now is not None and now.state == RUNNING:
                return
            self._status[run_id] = ImportStatus(run_id, RUNNING)
        self._pool.submit(self._run, frame, source, run_id, tuple(metrics), judge, started_at, pipeline)

    def _set(self, run_id: str, **changes: object) -> None:
        with self._lock:
            self._status[run_id] = replace(self._status[run_id], **changes)  # type: ignore[arg-type]

    def _run(self, frame: pd.DataFrame, source: str, run_id: str, metrics: tuple[str, ...], judge: Judge,
             started_at: datetime | None, pipeline: Mapping[str, object] | None) -> None:
        try:
            run = record_frame(self._store, frame, source=source, run_id=run_id, metrics=metrics, judge=judge,
                               started_at=started_at, pipeline=pipeline,
                               progress=lambda done, total: self._set(run_id, done=done, total=total))
        except EvaldriftError as exc:   # bad input or a judge that failed: said on the page
            self._set(run_id, state=FAILED, error=str(exc))
        except Exception as exc:        # recorded and shown, never lost in a thread
            self._set(run_id, state=FAILED, error=f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
        else:
            self._set(run_id, state=DONE, samples=sum(len(s) for s in run.samples.values()),
                      metrics=tuple(m.metric for m in run.metrics))

    def status(self, run_id: str) -> ImportStatus | None:
        """The scoring's status (None: no scoring of that run id in this process)."""
        with self._lock:
            return self._status.get(run_id)

    def wait(self) -> None:
        """Block until every submitted scoring has ended (for tests and shutdown)."""
        self._pool.submit(lambda: None).result()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
