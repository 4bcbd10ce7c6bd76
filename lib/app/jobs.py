"""Long work off the page thread: a process-wide runner for ablations.

A Streamlit widget interaction reruns the page script and would kill work
running on it, so ablations run on a small thread pool owned by the process
(the dashboard holds one JobRunner through st.cache_resource). Workers never
call Streamlit; progress lives in the store (ablations.done/total), which any
session can read, so an ablation launched in one browser is visible in all.
Submitting an ablation that is already running returns the running job;
one that is already done is answered from the store without new work.

Jobs run in two lanes, each with its own workers: the free offline judge's,
and the model judges' and external scorers' (which wait on servers), so a
free ablation never queues behind a paid one that hangs. `stop(id)` stops a
running job within seconds: its judge's calls in flight are cancelled, what
was judged stays, and Resume asks the rest. When the process exits (SIGTERM
included) every job is stopped the same way before the workers are joined,
so the database is released promptly, not when a hung judge lets go.
"""

from __future__ import annotations

import threading
import traceback
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from lib.app import job_log
from lib.core.endpoints import OFFLINE
from lib.diagnosis.ablation import AblationResult, AblationSpec, run_ablation
from lib.judging.base import Judge
from lib.judging.breaker import Breaker, GuardedJudge, Limits
from lib.store import Store

STOPPED = job_log.STOPPED
FREE, MODEL = "free", "model"    # the lanes: the offline judge's, and the model judges' and scorers'
STOP_SENTENCE = "stopped on request (Stop); Resume continues it"
SHUTDOWN_SENTENCE = "stopped: the dashboard was shutting down; Resume continues it"


def lane_of(spec: AblationSpec) -> str:
    """FREE for the embedded offline judge, MODEL for a model judge or an external scorer."""
    return FREE if spec.scorer is None and spec.endpoint == OFFLINE else MODEL


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

    breaker = Breaker(limits or Limits(), total, on_trip=getattr(judge, "stop", None))
    if started is not None:
        started(breaker)
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
    """Runs ablations on background threads against one Store, in two lanes (FREE and MODEL).

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec (spec -> Judge or None for scorer specs).
        workers: ablations that may run at once in each lane.
    """

    def __init__(self, store: Store, judge_for: Callable[[AblationSpec], Judge | None], *, workers: int = 1,
                 limits: Limits | Callable[[], Limits] | None = None) -> None:
        self._store = store
        self._judge_for = judge_for
        self._limits = limits
        self._pools = {lane: ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"ablation-{lane}")
                       for lane in (FREE, MODEL)}
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._errors: dict[str, str] = {}
        self._breakers: dict[str, Breaker] = {}
        self._stops: dict[str, threading.Event] = {}
        self._stop = threading.Event()
        # runs before concurrent.futures joins its workers at exit (SIGTERM included): a hung call would hold
        # the join, and with it the database, until the judge let go
        _register_exit(weakref.WeakMethod(self._halt_all))

    def submit(self, spec: AblationSpec) -> str:
        """Start (or join) the ablation in its lane; returns its id at once."""
        aid = spec.ablation_id
        with self._lock:
            fut = self._futures.get(aid)
            if fut is not None and not fut.done():
                return aid
            self._errors.pop(aid, None)
            self._stops[aid] = threading.Event()
            self._futures[aid] = self._pools[lane_of(spec)].submit(self._run, spec)
        return aid

    def stop(self, ablation_id: str, sentence: str = STOP_SENTENCE) -> bool:
        """Stop a running or queued job: its calls in flight are cancelled; Resume continues it.

        Returns:
            True when there was a job of this runner to stop.
        """
        with self._lock:
            fut = self._futures.get(ablation_id)
            if fut is None or fut.done():
                return False
            self._stops[ablation_id].set()
            breaker = self._breakers.get(ablation_id)
        if breaker is not None:
            breaker.trip(sentence)
        return True

    def _run(self, spec: AblationSpec) -> AblationResult | None:
        aid = spec.ablation_id
        asked = self._stops[aid]
        if asked.is_set():   # stopped while queued: nothing was started
            return None
        try:
            limits = self._limits() if callable(self._limits) else self._limits

            def started(breaker: Breaker) -> None:
                with self._lock:
                    self._breakers[aid] = breaker
                if asked.is_set():   # Stop came between submit and now
                    breaker.trip(SHUTDOWN_SENTENCE if self._stop.is_set() else STOP_SENTENCE)

            return run_guarded(self._store, spec, self._judge_for(spec), limits=limits,
                               should_stop=lambda: self._stop.is_set() or asked.is_set(), started=started).result
        except Exception as exc:  # recorded and shown on the page, never lost in a thread
            self._errors[aid] = f"{type(exc).__name__}: {exc}"
            if self._store.ablation(aid) is not None:
                self._store.finish_ablation(aid, "failed", None)
            traceback.print_exc()
            return None
        finally:
            with self._lock:
                self._breakers.pop(aid, None)

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

    def _halt_all(self) -> None:
        """Stop every job now: the process is going (its calls in flight cancelled)."""
        self._stop.set()
        with self._lock:
            running = [aid for aid, fut in self._futures.items() if not fut.done()]
        for aid in running:
            self.stop(aid, SHUTDOWN_SENTENCE)

    def shutdown(self) -> None:
        self._halt_all()
        for pool in self._pools.values():
            pool.shutdown(wait=True, cancel_futures=True)


def _register_exit(method: weakref.WeakMethod) -> None:
    """Call a runner's halt when the interpreter exits, before thread pools are joined (if it still lives)."""
    def call() -> None:
        halt = method()
        if halt is not None:
            halt()

    register = getattr(threading, "_register_atexit", None)   # runs before concurrent.futures' join
    if register is not None:
        try:
            register(call)
            return
        except RuntimeError:   # the interpreter is already shutting down
            return
    import atexit

    atexit.register(call)
