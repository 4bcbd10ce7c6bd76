"""Ablations as jobs: run (or resume) one under a circuit breaker and a deadline, in the dashboard's runner or the
CLI's own thread.

An ablation's job runs in one of two lanes: the free offline judge's, and the model judges' and external
scorers' (which wait on servers), so a free ablation never queues behind a paid one that hangs. One that is
already done is answered from the store without new work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lib.core.endpoints import OFFLINE
from lib.diagnosis.ablation import AblationResult, AblationSpec, run_ablation
from lib.jobs import job_log
from lib.jobs._runner import Job, JobStatus, Runner, print_failure
from lib.judging.base import Judge, judge_stop
from lib.judging.breaker import Breaker, GuardedJudge, Limits
from lib.store import Store

STOPPED = job_log.STOPPED
FREE, MODEL = "free", "model"    # the lanes: the offline judge's, and the model judges' and scorers'


def lane_of(spec: AblationSpec) -> str:
    """FREE for the embedded offline judge, MODEL for a model judge or an external scorer."""
    return FREE if spec.scorer is None and spec.endpoint == OFFLINE else MODEL


@dataclass(frozen=True)
class Outcome:
    """What a guarded run came to: the result, or the sentence saying why it stopped; and the judge's info."""

    result: AblationResult | None
    stopped: str = ""
    judge: job_log.JudgeInfo = field(default_factory=job_log.JudgeInfo)


def run_guarded(store: Store, spec: AblationSpec, judge: Judge | None, *, limits: Limits | None = None,
                progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None,
                started: Callable[[Breaker], None] | None = None) -> Outcome:
    """Run (or resume) an ablation under a circuit breaker and a deadline (lib.judging.breaker).

    A tripped breaker stops the job: its failed calls are forgotten, so Resume
    asks them again (nothing is scored from a call that was not answered), and
    the job is recorded as stopped with the sentence saying why. A job stopped
    by `should_stop` (the process shutting down) is left to resume, as before.
    `started` is handed the job's breaker: tripping it (Stop) stops the job at
    once, cancelling the judge's calls in flight, and records it as stopped.
    """
    if judge is None:   # an external scorer: its own harness, no calls of ours to watch
        return Outcome(run_ablation(store, spec, None, progress=progress, should_stop=should_stop))
    aid = spec.ablation_id

    def total() -> int:
        row = store.ablation(aid)
        return int(row["total"]) if row else 0

    breaker = Breaker(limits or Limits(), total, on_trip=judge_stop(judge))
    if started is not None:
        started(breaker)
    try:
        result = run_ablation(store, spec, GuardedJudge(judge, breaker), progress=progress,
                              should_stop=lambda: breaker.tripped or bool(should_stop and should_stop()))
    finally:
        breaker.close()
    info = job_log.judge_info(judge)
    if result is None and breaker.reason:
        job_log.reopen_faults(store, aid)
        store.finish_ablation(aid, STOPPED, None)
        job_log.record(store, aid, job_log.JobNote(STOPPED, breaker.reason, info))
        return Outcome(None, breaker.reason, info)
    if result is not None and (info.output_mode or info.pacing is not None):
        job_log.record(store, aid, job_log.JobNote(job_log.DONE, "", info))
    return Outcome(result, "", info)


@dataclass(frozen=True)
class _Ablations:
    store: Store
    judge_for: Callable[[AblationSpec], Judge | None]
    limits: Limits | Callable[[], Limits] | None

    def job_id(self, spec: AblationSpec) -> str:
        return spec.ablation_id

    def lane(self, spec: AblationSpec) -> str:
        return lane_of(spec)

    def run(self, spec: AblationSpec, job: Job) -> AblationResult | None:
        limits = self.limits() if callable(self.limits) else self.limits
        return run_guarded(self.store, spec, self.judge_for(spec), limits=limits, should_stop=job.should_stop,
                           started=job.started).result

    def failed(self, spec: AblationSpec, exc: Exception) -> str:
        if self.store.ablation(spec.ablation_id) is not None:
            self.store.finish_ablation(spec.ablation_id, "failed", None)
        return print_failure(exc)


class JobRunner(Runner[AblationSpec, AblationResult | None]):
    """Runs ablations on background threads against one Store, in two lanes (FREE and MODEL).

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec (spec -> Judge or None for scorer specs).
        workers: ablations that may run at once in each lane.
        limits: the breaker's limits (or a function giving them when each job starts; default Limits()).
    """

    def __init__(self, store: Store, judge_for: Callable[[AblationSpec], Judge | None], *, workers: int = 1,
                 limits: Limits | Callable[[], Limits] | None = None) -> None:
        super().__init__(_Ablations(store, judge_for, limits), name="ablation", lanes=(FREE, MODEL), workers=workers)
        self._store = store

    def status(self, ablation_id: str) -> JobStatus:
        """Progress from the store (shared by every session), plus this runner's own errors."""
        return self.stored_status(ablation_id, self._store.ablation(ablation_id), self._store)
