"""Long work off the page thread for re-judged history: a process-wide runner, like lib.app.jobs for ablations.

Re-judging a range of runs takes minutes; a widget interaction would kill it
on the script thread. The dashboard holds one RejudgeRunner (st.cache_resource)
with its own worker, so a re-judge never queues behind an ablation. Progress
lives in the store (rejudges.done/total), which every session reads; a series
whose process died shows as stalled and resumes when launched again.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from lib.app.jobs import JobStatus
from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge
from lib.judging.base import Judge
from lib.store import Store
from lib.store import history as hs


class RejudgeRunner:
    """Runs re-judges on a background thread against one Store.

    Args:
        store: the store the process owns.
        judge_for: builds the judge for a spec.
    """

    def __init__(self, store: Store, judge_for: Callable[[RejudgeSpec], Judge]) -> None:
        self._store = store
        self._judge_for = judge_for
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rejudge")
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._errors: dict[str, str] = {}
        self._stop = threading.Event()

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
            run_rejudge(self._store, spec, self._judge_for(spec), should_stop=self._stop.is_set)
        except Exception as exc:  # recorded and shown on the page, never lost in a thread
            self._errors[spec.series_id] = f"{type(exc).__name__}: {exc}"
            if hs.series(self._store, spec.series_id) is not None:
                hs.finish_series(self._store, spec.series_id, "failed")
            traceback.print_exc()

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
        return JobStatus(series_id, "failed" if err else state, int(row["done"]), int(row["total"]), err)

    def wait(self, series_id: str, timeout: float | None = None) -> None:
        fut = self._futures.get(series_id)
        if fut is not None:
            fut.result(timeout=timeout)

    def shutdown(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
