"""A job's circuit breaker and deadline: stop paying for calls that can no longer give a verdict.

A judge that fails every call (a server answering 429 with `Retry-After: inf`,
a key that expired, a server that is down) would otherwise be waited on call
after call until the job ends INCONCLUSIVE days later. The breaker watches the
judge calls of one job and trips on the first of:

| rule | trips when | setting |
|---|---|---|
| consecutive | that many judge calls in a row failed (after retries) | EVALDRIFT_BREAKER_FAILURES (10; 0: off) |
| share | failed calls exceed the INCONCLUSIVE share of the job's judgings | lib.core.results.MAX_FAILED_SHARE |
| deadline | the job has run that many seconds | EVALDRIFT_JOB_DEADLINE (none) |

Tripping calls `on_trip` (the judge's `stop`: waits end, no new attempt
starts) and says why in one sentence. The job is then stopped, never scored
from what it did not ask: lib.jobs records it as stopped, and Resume asks the
failed calls again.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lib.core.calls import STOPPED_PREFIX, JudgeReply, JudgeRequest
from lib.core.errors import JudgeError
from lib.core.results import MAX_FAILED_SHARE
from lib.judging.base import Judge, judge_endpoint

DEFAULT_FAILURES = 10


@dataclass(frozen=True)
class Limits:
    """When a job stops on its own.

    Attributes:
        failures: consecutive failed judge calls that stop the job (0: never).
        deadline: seconds the job may run (None: no deadline).
        share: the failed share of the job's judgings that stops it (the INCONCLUSIVE share).
    """

    failures: int = DEFAULT_FAILURES
    deadline: float | None = None
    share: float = MAX_FAILED_SHARE

    @classmethod
    def from_settings(cls, settings: object) -> Limits:
        """The limits lib.core.settings.Settings names (breaker_failures, job_deadline)."""
        return cls(failures=int(getattr(settings, "breaker_failures", DEFAULT_FAILURES)),
                   deadline=getattr(settings, "job_deadline", None))


def trips(limits: Limits, *, in_a_row: int, failed: int, total: int, elapsed: float) -> str | None:
    """Which rule trips (None: none), first the deadline, then consecutive failures, then the share."""
    if limits.deadline is not None and elapsed >= limits.deadline:
        return "deadline"
    if limits.failures and in_a_row >= limits.failures:
        return "consecutive"
    if total and failed > limits.share * total:
        return "share"
    return None


class Breaker:
    """Counts one job's judge calls and trips on the first rule that holds (thread-safe).

    Args:
        limits: the limits.
        total: the job's judgings (a callable: known once the job has started).
        on_trip: called once, with the sentence, when the breaker trips.
        clock: monotonic seconds.
    """

    def __init__(self, limits: Limits, total: Callable[[], int], *,
                 on_trip: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._total = total
        self._on_trip = on_trip
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._failed = 0
        self._last = ""
        self.reason: str | None = None
        self._timer: threading.Timer | None = None
        if limits.deadline is not None and math.isfinite(limits.deadline):
            self._timer = threading.Timer(max(0.0, limits.deadline), self._deadline)
            self._timer.daemon = True
            self._timer.start()

    @property
    def tripped(self) -> bool:
        if self.reason is None and self.limits.deadline is not None:
            self._deadline()
        return self.reason is not None

    def record(self, ok: bool, reason: str = "") -> None:
        """One judge call ended: answered (ok) or failed after its retries, with the reason."""
        if ok:
            with self._lock:
                self._in_a_row = 0
            return
        total = self._total()
        # Counted, decided and tripped under one lock: of calls failing together, the one that reaches the
        # limit trips, and the sentence names the limit (not a count another thread moved on meanwhile).
        with self._lock:
            self._in_a_row += 1
            self._failed += 1
            self._last = reason
            in_a_row, failed = self._in_a_row, self._failed
            rule = trips(self.limits, in_a_row=in_a_row, failed=failed, total=total, elapsed=0.0)
            sentence = None
            if rule == "consecutive":
                sentence = f"stopped after {in_a_row} judge calls failed in a row (the last: {reason})"
            elif rule == "share":
                sentence = (f"stopped: {failed} judge calls failed, more than {self.limits.share:.0%} of the job's "
                            f"{total} judgings, so its result would be INCONCLUSIVE (the last: {reason})")
            if sentence is None or self.reason is not None:
                return
            self.reason = sentence
        if self._on_trip is not None:
            self._on_trip(sentence)

    def _deadline(self) -> None:
        elapsed = self._clock() - self._started
        if trips(Limits(0, self.limits.deadline, 1.0), in_a_row=0, failed=0, total=0, elapsed=elapsed):
            last = f"; the last failed call: {self._last}" if self._last else ""
            self.trip(f"stopped at the job's deadline of {self.limits.deadline:g} s "
                      f"(EVALDRIFT_JOB_DEADLINE){last}")

    def trip(self, sentence: str) -> None:
        """Trip (once): remember why and tell the judge to stop."""
        with self._lock:
            if self.reason is not None:
                return
            self.reason = sentence
        if self._on_trip is not None:
            self._on_trip(sentence)

    def close(self) -> None:
        """Cancel the deadline's timer (the job ended)."""
        if self._timer is not None:
            self._timer.cancel()


class GuardedJudge:
    """A judge whose calls a Breaker counts; once it trips, no call is made. It is the judge to the harness (model,
    concurrency, cacheable, endpoint); the judge's other abilities (stop, output mode, pacing) are asked of the
    judge itself, which the breaker already holds as its on_trip."""

    def __init__(self, judge: Judge, breaker: Breaker) -> None:
        self._judge = judge
        self._breaker = breaker
        self.model = judge.model
        self.concurrency = judge.concurrency
        self.cacheable = judge.cacheable
        self.endpoint = judge_endpoint(judge)

    def complete(self, request: JudgeRequest) -> JudgeReply:
        if self._breaker.tripped:
            raise JudgeError(STOPPED_PREFIX + str(self._breaker.reason), retryable=True)
        try:
            reply = self._judge.complete(request)
        except JudgeError as exc:
            if not exc.reason.startswith(STOPPED_PREFIX):
                self._breaker.record(False, exc.reason)
            raise
        self._breaker.record(True)
        return reply
