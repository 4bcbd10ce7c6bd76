"""Re-judged history as jobs: a re-judge under a circuit breaker and a deadline, in a runner of its own.

Re-judging a range of runs takes minutes; a widget interaction would kill it
on the script thread. The dashboard holds one RejudgeRunner (st.cache_resource)
with its own worker, so a re-judge never queues behind an ablation. Progress
lives in the store (rejudges.done/total), which every session reads; a series
whose process died shows as stalled and resumes when launched again.

Each re-judge runs under the circuit breaker and deadline an ablation has
(lib.judging.breaker: EVALDRIFT_BREAKER_FAILURES, EVALDRIFT_JOB_DEADLINE): a
judge that keeps failing stops the series with the sentence saying why, kept
in the job log under the series id, instead of recording a failure for every
sample of every run. What was stored stays; launching it again resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge
from lib.jobs import job_log
from lib.jobs._runner import ONE, Job, JobStatus, Runner, print_failure
from lib.jobs.job_log import STOPPED
from lib.judging.base import Judge, judge_stop
from lib.judging.breaker import Breaker, GuardedJudge, Limits
from lib.store import Store
from lib.store import history as hs


def run_guarded_rejudge(store: Store, spec: RejudgeSpec, judge: Judge, *, limits: Limits,
                        should_stop: Callable[[], bool] | None = None,
                        started: Callable[[Breaker], None] | None = None) -> str:
    """Run (or resume) a re-judge under a circuit breaker and a deadline; returns why it stopped ('' if not).

    `started` is handed the breaker: tripping it (Stop) stops the series at once, its calls in flight cancelled.
    """
    def total() -> int:
        row = hs.series(store, spec.series_id)
        return int(row["total"]) if row else 0  # type: ignore[call-overload]

    breaker = Breaker(limits, total, on_trip=judge_stop(judge))
    if started is not None:
        started(breaker)
    try:
        run_rejudge(store, spec, GuardedJudge(judge, breaker),
                    should_stop=lambda: breaker.tripped or bool(should_stop and should_stop()))
    finally:
        breaker.close()
    info = job_log.judge_info(judge)
    if breaker.reason:
        hs.finish_series(store, spec.series_id, STOPPED)
        job_log.record(store, spec.series_id, job_log.JobNote(STOPPED, breaker.reason, info))
        return breaker.reason
    return ""


@dataclass(frozen=True)
class _Rejudges:
    store: Store
    judge_for: Callable[[RejudgeSpec], Judge]
    limits: Limits | None

    def job_id(self, spec: RejudgeSpec) -> str:
        return spec.series_id

    def lane(self, spec: RejudgeSpec) -> str:
        return ONE

    def run(self, spec: RejudgeSpec, job: Job) -> None:
        limits = self.limits
        if limits is None:
            from lib.core import settings

            limits = Limits.from_settings(settings.load())
        run_guarded_rejudge(self.store, spec, self.judge_for(spec), limits=limits, should_stop=job.should_stop,
                            started=job.started)

    def failed(self, spec: RejudgeSpec, exc: Exception) -> str:
        if hs.series(self.store, spec.series_id) is not None:
            hs.finish_series(self.store, spec.series_id, "failed")
        return print_failure(exc)


class RejudgeRunner(Runner[RejudgeSpec, None]):
    """Runs re-judges on a background thread against one Store.

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec.
        limits: the breaker's limits (default: from the settings when each job starts).
    """

    def __init__(self, store: Store, judge_for: Callable[[RejudgeSpec], Judge], *,
                 limits: Limits | None = None) -> None:
        super().__init__(_Rejudges(store, judge_for, limits), name="rejudge")
        self._store = store

    def status(self, series_id: str) -> JobStatus:
        """Progress from the store (shared by every session), plus this runner's own errors."""
        return self.stored_status(series_id, hs.series(self._store, series_id), self._store)  # type: ignore[arg-type]
