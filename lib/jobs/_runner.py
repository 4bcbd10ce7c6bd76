"""Long work off the page thread: one process-wide runner, parameterised by what a job does.

A Streamlit widget interaction reruns the page script and would kill work
running on it, so jobs (ablations, re-judges, scored uploads, new-judge gates)
run on small thread pools owned by the process (the dashboard holds one runner
of each kind through st.cache_resource). Workers never call Streamlit; a job's
progress lives in the store (ablations.done/total, rejudges.done/total), which
any session can read, or in the runner for work the store does not track.
Submitting a job that is already running returns the running job.

Jobs may run in lanes, each with its own workers (an ablation's: the free
offline judge's, and the model judges' and external scorers', which wait on
servers), so a free job never queues behind a paid one that hangs. `stop(id)`
stops a running or queued job within seconds: its judge's calls in flight are
cancelled through the breaker the job hands over (`Job.started`), what was
judged stays, and Resume asks the rest. When the process exits (SIGTERM
included) every job is stopped the same way before the workers are joined,
so the database is released promptly, not when a hung judge lets go.
"""

from __future__ import annotations

import threading
import traceback
import weakref
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from lib.jobs.job_log import STOPPED, read
from lib.judging.breaker import Breaker

S = TypeVar("S")
R = TypeVar("R")
S_contra = TypeVar("S_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)

ONE = "one"    # the lane of work that has one
STOP_SENTENCE = "stopped on request (Stop); Resume continues it"
SHUTDOWN_SENTENCE = "stopped: the dashboard was shutting down; Resume continues it"


@dataclass(frozen=True)
class JobStatus:
    ablation_id: str    # the job's id (an ablation's, or a re-judged series')
    state: str          # 'queued' | 'running' | 'done' | 'stopped' | 'stalled' | 'failed' | 'unknown'
    done: int
    total: int
    error: str = ""
    reason: str = ""    # why a stopped job stopped (its breaker or deadline), in a sentence

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


class Job:
    """What a running job is handed: whether to stop, where to hand its breaker, where to report progress."""

    def __init__(self, runner: Runner, job_id: str, asked: threading.Event) -> None:
        self._runner = runner
        self.job_id = job_id
        self._asked = asked

    def should_stop(self) -> bool:
        """True once Stop was asked for this job or the process is going."""
        return self._runner._halting.is_set() or self._asked.is_set()

    def started(self, breaker: Breaker) -> None:
        """Hand over the job's breaker: Stop trips it, cancelling the judge's calls in flight."""
        with self._runner._lock:
            self._runner._breakers[self.job_id] = breaker
        if self._asked.is_set():   # Stop came between submit and now
            breaker.trip(SHUTDOWN_SENTENCE if self._runner._halting.is_set() else STOP_SENTENCE)

    def progress(self, done: int, total: int) -> None:
        """Progress the store does not keep (read back with Runner.progress)."""
        with self._runner._lock:
            self._runner._progress[self.job_id] = (done, total)


class Work(Protocol[S_contra, R_co]):
    """What a kind of job does: its id, its lane, the work, and how a failure is recorded."""

    def job_id(self, spec: S_contra) -> str: ...

    def lane(self, spec: S_contra) -> str: ...

    def run(self, spec: S_contra, job: Job) -> R_co: ...

    def failed(self, spec: S_contra, exc: Exception) -> str:
        """Record the failure where the job's progress lives; return the sentence the page shows."""
        ...


class Runner(Generic[S, R]):
    """Runs one kind of job on background threads, in the work's lanes.

    Args:
        work: what a job does (its id, lane, run, and how its failure is recorded).
        name: the worker threads' name (and, with several lanes, `name-lane`).
        lanes: the lanes, each with its own pool.
        workers: jobs that may run at once in each lane.
        rerun_done: submitting a finished job runs it again (its store answers what is done); when False the
            finished job is joined, and only a failed one runs again.
    """

    def __init__(self, work: Work[S, R], *, name: str, lanes: Sequence[str] = (ONE,), workers: int = 1,
                 rerun_done: bool = True) -> None:
        self._work = work
        self._rerun_done = rerun_done
        self._pools = {lane: ThreadPoolExecutor(max_workers=workers,
                                                thread_name_prefix=name if len(lanes) == 1 else f"{name}-{lane}")
                       for lane in lanes}
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._errors: dict[str, str] = {}
        self._breakers: dict[str, Breaker] = {}
        self._stops: dict[str, threading.Event] = {}
        self._progress: dict[str, tuple[int, int]] = {}
        self._halting = threading.Event()
        # runs before concurrent.futures joins its workers at exit (SIGTERM included): a hung call would hold
        # the join, and with it the database, until the judge let go
        _register_exit(weakref.WeakMethod(self._halt_all))

    def submit(self, spec: S) -> str:
        """Start (or join) the job in its lane; returns its id at once."""
        jid = self._work.job_id(spec)
        with self._lock:
            fut = self._futures.get(jid)
            if fut is not None and (not fut.done() or not (self._rerun_done or jid in self._errors)):
                return jid
            self._errors.pop(jid, None)
            self._progress.pop(jid, None)
            self._stops[jid] = threading.Event()
            self._futures[jid] = self._pools[self._work.lane(spec)].submit(self._run, spec, jid)
        return jid

    def stop(self, job_id: str, sentence: str = STOP_SENTENCE) -> bool:
        """Stop a running or queued job: its calls in flight are cancelled; Resume continues it.

        Returns:
            True when there was a job of this runner to stop.
        """
        with self._lock:
            fut = self._futures.get(job_id)
            if fut is None or fut.done():
                return False
            self._stops[job_id].set()
            breaker = self._breakers.get(job_id)
        if breaker is not None:
            breaker.trip(sentence)
        return True

    def _run(self, spec: S, jid: str) -> R | None:
        asked = self._stops[jid]
        if asked.is_set():   # stopped while queued: nothing was started
            return None
        try:
            return self._work.run(spec, Job(self, jid, asked))
        except Exception as exc:  # recorded and shown on the page, never lost in a thread
            self._errors[jid] = self._work.failed(spec, exc)
            return None
        finally:
            with self._lock:
                self._breakers.pop(jid, None)

    def running(self, job_id: str) -> bool:
        """True while the job is queued or running in this runner."""
        fut = self._futures.get(job_id)
        return fut is not None and not fut.done()

    def known(self, job_id: str) -> bool:
        """True when this runner was asked for the job."""
        return job_id in self._futures

    def error(self, job_id: str) -> str:
        """The sentence of the job's failure ('' when it has not failed)."""
        return self._errors.get(job_id, "")

    def progress(self, job_id: str) -> tuple[int, int]:
        """(done, total) as the job reported it to its Job (0, 0 before any report)."""
        with self._lock:
            return self._progress.get(job_id, (0, 0))

    def result(self, job_id: str) -> R | None:
        """The finished job's result (None: not finished, failed, stopped or unknown)."""
        fut = self._futures.get(job_id)
        return fut.result() if fut is not None and fut.done() else None

    def stored_status(self, job_id: str, row: dict[str, object] | None, store: object) -> JobStatus:
        """A job's status from its row in the store (status, done, total; shared by every session), plus this
        runner's own errors; a stopped job's reason from the job log."""
        err = self.error(job_id)
        if row is None:
            state = "queued" if self.running(job_id) else ("failed" if err else "unknown")
            return JobStatus(job_id, state, 0, 0, err)
        state = str(row["status"])
        if state == "running" and not self.running(job_id) and not err:
            state = "stalled"  # started by a process that is gone: submit again to resume
        note = read(store, job_id) if state == STOPPED else None   # type: ignore[arg-type]
        return JobStatus(job_id, "failed" if err else state, int(row["done"]), int(row["total"]),  # type: ignore[call-overload]
                         err, note.reason if note is not None else "")

    def wait(self, job_id: str | None = None, timeout: float | None = None) -> R | None:
        """Block until the job (every job, without an id) has ended; the job's result."""
        if job_id is None:
            for each in list(self._futures.values()):
                each.result(timeout=timeout)
            return None
        fut = self._futures.get(job_id)
        return fut.result(timeout=timeout) if fut is not None else None

    def _halt_all(self) -> None:
        """Stop every job now: the process is going (its calls in flight cancelled)."""
        self._halting.set()
        with self._lock:
            running = [jid for jid, fut in self._futures.items() if not fut.done()]
        for jid in running:
            self.stop(jid, SHUTDOWN_SENTENCE)

    def shutdown(self) -> None:
        self._halt_all()
        for pool in self._pools.values():
            pool.shutdown(wait=True, cancel_futures=True)


def print_failure(exc: Exception) -> str:
    """The trace to the server log, and the sentence the page shows: `TypeName: message`."""
    traceback.print_exception(exc)
    return f"{type(exc).__name__}: {exc}"


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

