"""Long work off the page thread for re-judged history: a process-wide runner, like lib.app.jobs for ablations.

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

import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from lib.app import job_log
from lib.app.jobs import STOP_SENTENCE, STOPPED, JobStatus
from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge
from lib.judging.base import Judge
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

    breaker = Breaker(limits, total, on_trip=getattr(judge, "stop", None))
    if started is not None:
        started(breaker)
    try:
        run_rejudge(store, spec, GuardedJudge(judge, breaker),  # type: ignore[arg-type]
                    should_stop=lambda: breaker.tripped or bool(should_stop and should_stop()))
    finally:
        breaker.close()
    info = job_log.judge_info(judge)
    if breaker.reason:
        hs.finish_series(store, spec.series_id, STOPPED)
        job_log.record(store, spec.series_id, job_log.JobNote(STOPPED, breaker.reason, info))
        return breaker.reason
    return ""


class RejudgeRunner:
    """Runs re-judges on a background thread against one Store.

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec.
        limits: the breaker's limits (default: from the settings when each job starts).
    """

    def __init__(self, store: Store, judge_for: Callable[[RejudgeSpec], Judge], *,
                 limits: Limits | None = None) -> None:
        self._store = store
        self._judge_for = judge_for
        self._limits = limits
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rejudge")
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._errors: dict[str, str] = {}
        self._breakers: dict[str, Breaker] = {}
        self._stop = threading.Event()

    def stop(self, series_id: str) -> bool:
        """Stop a running re-judge: its calls in flight are cancelled; launching it again resumes.

        Returns:
            True when a running series of this runner was stopped.
        """
        with self._lock:
            breaker = self._breakers.get(series_id)
        if breaker is None:
            return False
        breaker.trip(STOP_SENTENCE)
        return True

    def submit(self, spec: RejudgeSpec) -> str:
        """Start (or join, or resume) the re-judge; returns its series id at once."""
        sid = spec.series_id
        with self._lock:
            fut = self._futures.get(sid)
            if fut is not None and not fut.done():
                return sid
            self._errors.pop(sid, None)
            self._futures[sid] = self._pool.submit(self._run, spec)
        return sid

    def _run(self, spec: RejudgeSpec) -> None:
        try:
            limits = self._limits
            if limits is None:
                from lib.core import settings

                limits = Limits.from_settings(settings.load())
            def started(breaker: Breaker) -> None:
                with self._lock:
                    self._breakers[spec.series_id] = breaker

            run_guarded_rejudge(self._store, spec, self._judge_for(spec), limits=limits,
                                should_stop=self._stop.is_set, started=started)
        except Exception as exc:  # recorded and shown on the page, never lost in a thread
            self._errors[spec.series_id] = f"{type(exc).__name__}: {exc}"
            if hs.series(self._store, spec.series_id) is not None:
                hs.finish_series(self._store, spec.series_id, "failed")
            traceback.print_exc()
        finally:
            with self._lock:
                self._breakers.pop(spec.series_id, None)

    def status(self, series_id: str) -> JobStatus:
        """Progress from the store (shared by every session), plus this runner's own errors."""
        row = hs.series(self._store, series_id)
        fut = self._futures.get(series_id)
        err = self._errors.get(series_id, "")
        if row is None:
            state = "queued" if fut is not None and not fut.done() else ("failed" if err else "unknown")
            return JobStatus(series_id, state, 0, 0, err)
        state = str(row["status"])
        if state == "running" and (fut is None or fut.done()) and not err:
            state = "stalled"
        note = job_log.read(self._store, series_id) if state == STOPPED else None
        return JobStatus(series_id, "failed" if err else state, int(row["done"]), int(row["total"]), err,
                         note.reason if note is not None else "")

    def wait(self, series_id: str, timeout: float | None = None) -> None:
        fut = self._futures.get(series_id)
        if fut is not None:
            fut.result(timeout=timeout)

    def shutdown(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
