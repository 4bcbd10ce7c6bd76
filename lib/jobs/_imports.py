"""Uploaded tables scored with a judge as jobs: one at a time, on a thread of the process' import runner.

A file scored with the configured judge (a paid one, perhaps) is scored off the
page thread, as ablations are; the Import page shows its progress from `status`
(kept by the runner: the store holds the run only once it is recorded whole).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lib.core.errors import EvaldriftError
from lib.jobs._runner import ONE, Job, Runner, print_failure
from lib.judging.scoring import record_frame

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    import pandas as pd

    from lib.core.records import RunRecord
    from lib.judging.base import Judge
    from lib.store import Store

RUNNING, DONE, FAILED = "running", "done", "failed"


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


@dataclass(frozen=True)
class Upload:
    """One uploaded table to score with `judge` and record as run `run_id`."""

    frame: pd.DataFrame
    source: str
    run_id: str
    metrics: tuple[str, ...]
    judge: Judge
    started_at: datetime | None = None
    pipeline: Mapping[str, object] | None = None


@dataclass(frozen=True)
class _Uploads:
    store: Store

    def job_id(self, spec: Upload) -> str:
        return spec.run_id

    def lane(self, spec: Upload) -> str:
        return ONE

    def run(self, spec: Upload, job: Job) -> RunRecord:
        return record_frame(self.store, spec.frame, source=spec.source, run_id=spec.run_id, metrics=spec.metrics,
                            judge=spec.judge, started_at=spec.started_at, pipeline=spec.pipeline,
                            progress=job.progress)

    def failed(self, spec: Upload, exc: Exception) -> str:
        if isinstance(exc, EvaldriftError):   # bad input or a judge that failed: said on the page
            return str(exc)
        return print_failure(exc)


class ImportRunner(Runner[Upload, "RunRecord"]):
    """Scores uploaded tables with a judge and records them, one at a time, on a background thread.

    Args:
        store: the store the process owns.
    """

    def __init__(self, store: Store) -> None:
        super().__init__(_Uploads(store), name="import")

    def submit(self, frame: pd.DataFrame, *, source: str, run_id: str,  # type: ignore[override]
               metrics: Sequence[str], judge: Judge, started_at: datetime | None = None,
               pipeline: Mapping[str, object] | None = None) -> str:
        """Start scoring and recording `frame` as run `run_id`; a run already being scored is left to finish."""
        return super().submit(Upload(frame, source, run_id, tuple(metrics), judge, started_at, pipeline))

    def status(self, run_id: str) -> ImportStatus | None:
        """The scoring's status (None: no scoring of that run id in this process)."""
        if not self.known(run_id):
            return None
        done, total = self.progress(run_id)
        if self.running(run_id):
            return ImportStatus(run_id, RUNNING, done, total)
        if self.error(run_id):
            return ImportStatus(run_id, FAILED, done, total, self.error(run_id))
        run = self.result(run_id)
        if run is None:   # stopped before it started: the process was going
            return ImportStatus(run_id, FAILED, done, total, "stopped before it was scored: the server was stopping")
        return ImportStatus(run_id, DONE, done, total, samples=sum(len(s) for s in run.samples.values()),
                            metrics=tuple(m.metric for m in run.metrics))
