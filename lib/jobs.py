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
from dataclasses import dataclass

from lib.ablation import AblationResult, AblationSpec, run_ablation
from lib.judges.base import Judge
from lib.store import Store


@dataclass(frozen=True)
class JobStatus:
    ablation_id: str
    state: str          # 'queued' | 'running' | 'done' | 'failed' | 'unknown'
    done: int
    total: int
    error: str = ""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


class JobRunner:
    """Runs ablations on background threads against one Store.

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec (spec -> Judge or None for scorer specs).
        workers: ablations that may run at once.
    """

    def __init__(self, store: Store, judge_for: Callable[[AblationSpec], Judge | None], *, workers: int = 1) -> None:
        self._store = store
        self._judge_for = judge_for
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
            return run_ablation(self._store, spec, self._judge_for(spec), should_stop=self._stop.is_set)
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
        return JobStatus(ablation_id, "failed" if err else state, int(row["done"]), int(row["total"]), err)

    def wait(self, ablation_id: str, timeout: float | None = None) -> AblationResult | None:
        fut = self._futures.get(ablation_id)
        return fut.result(timeout=timeout) if fut is not None else None

    def shutdown(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
