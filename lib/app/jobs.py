"""Long work off the page thread: a process-wide runner for ablations.

A Streamlit widget interaction reruns the page script and would kill work
running on it, so ablations run on a small thread pool owned by the process
(the dashboard holds one JobRunner through st.cache_resource). Workers never
call Streamlit; progress lives in the store (ablations.done/total), which any
session can read, so an ablation launched in one browser is visible in all.
Submitting an ablation that is already running returns the running job;
one that is already done is answered from the store without new work.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from lib.app import job_log
from lib.diagnosis.ablation import AblationResult, AblationSpec, run_ablation
from lib.judging.base import Judge
from lib.judging.breaker import Breaker, GuardedJudge, Limits
from lib.store import Store

STOPPED = job_log.STOPPED


@dataclass(frozen=True)
class JobStatus:
    ablation_id: str
    state: str          # 'queued' | 'running' | 'done' | 'stopped' | 'stalled' | 'failed' | 'unknown'
    done: int
    total: int
    error: str = ""
    reason: str = ""    # why a stopped job stopped (its breaker or deadline), in a sentence

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


@dataclass(frozen=True)
class Outcome:
    """What a guarded run came to: the result, or the sentence saying why it stopped; and the judge's info."""

    result: AblationResult | None
    stopped: str = ""
    judge: job_log.JudgeInfo = field(default_factory=job_log.JudgeInfo)


def run_guarded(store: Store, spec: AblationSpec, judge: Judge | None, *, limits: Limits | None = None,
                progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> Outcome:
    """Run (or resume) an ablation under a circuit breaker and a deadline (lib.judging.breaker).

    A tripped breaker stops the job: its failed calls are forgotten, so Resume
    asks them again (nothing is scored from a call that was not answered), and
    the job is recorded as stopped with the sentence saying why. A job stopped
    by `should_stop` (the process shutting down) is left to resume, as before.
    """
    if judge is None:   # an external scorer: its own harness, no calls of ours to watch
        return Outcome(run_ablation(store, spec, None, progress=progress, should_stop=should_stop))
    aid = spec.ablation_id

    def total() -> int:
        row = store.ablation(aid)
        return int(row["total"]) if row else 0

    breaker = Breaker(limits or Limits(), total, on_trip=getattr(judge, "stop", None))
    try:
        result = run_ablation(store, spec, GuardedJudge(judge, breaker), progress=progress,  # type: ignore[arg-type]
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


class JobRunner:
    """Runs ablations on background threads against one Store.

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec (spec -> Judge or None for scorer specs).
        workers: ablations that may run at once.
    """

    def __init__(self, store: Store, judge_for: Callable[[AblationSpec], Judge | None], *, workers: int = 1,
                 limits: Limits | Callable[[], Limits] | None = None) -> None:
        self._store = store
        self._judge_for = judge_for
        self._limits = limits
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ablation")
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._errors: dict[str, str] = {}
        self._stop = threading.Event()

    def submit(self, spec: AblationSpec) -> str:
        """Start (or join) the ablation; returns its id at once."""
        aid = spec.ablation_id
        with self._lock:
            fut = self._futures.get(aid)
            if fut is not None and not fut.done():
                return aid
            self._errors.pop(aid, None)
            self._futures[aid] = self._pool.submit(self._run, spec)
        return aid

    def _run(self, spec: AblationSpec) -> AblationResult | None:
        try:
            limits = self._limits() if callable(self._limits) else self._limits
            return run_guarded(self._store, spec, self._judge_for(spec), limits=limits,
                               should_stop=self._stop.is_set).result
        except Exception as exc:  # recorded and shown on the page, never lost in a thread
            self._errors[spec.ablation_id] = f"{type(exc).__name__}: {exc}"
            if self._store.ablation(spec.ablation_id) is not None:
                self._store.finish_ablation(spec.ablation_id, "failed", None)
            traceback.print_exc()
            return None

    def status(self, ablation_id: str) -> JobStatus:
        """Progress from the store (shared by every session), plus this runner's own errors."""
        row = self._store.ablation(ablation_id)
        fut = self._futures.get(ablation_id)
        err = self._errors.get(ablation_id, "")
        if row is None:
            state = "queued" if fut is not None and not fut.done() else ("failed" if err else "unknown")
            return JobStatus(ablation_id, state, 0, 0, err)
        state = str(row["status"])
        if state == "running" and (fut is None or fut.done()) and not err:
            state = "stalled"  # started by a process that is gone: submit again to resume
        note = job_log.read(self._store, ablation_id) if state == STOPPED else None
        return JobStatus(ablation_id, "failed" if err else state, int(row["done"]), int(row["total"]), err,
                         note.reason if note else "")

    def wait(self, ablation_id: str, timeout: float | None = None) -> AblationResult | None:
        fut = self._futures.get(ablation_id)
        return fut.result(timeout=timeout) if fut is not None else None

    def shutdown(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
