"""Adaptive concurrency: as many judge calls in flight as the server sustains, between 1 and a ceiling.

A local server (llama.cpp) often has a single slot: calls queue inside it, and
the client's timeout counts the queueing, so eight calls in flight against one
slot time out in the queue and fail. The Pacer gates every attempt:

- it starts at one call in flight and doubles while calls succeed (slow start),
  then adds one per window of successes, up to the ceiling; only calls that
  started while the limit was in full use count (a job's last few calls, a
  caller with fewer threads than the limit, or the calls that fill the places a
  rise opened say nothing about the limit: they met a server with less to do),
  and a window holds at least MIN_WINDOW of them (two calls read one slot's
  queue as a gain when one of them met the slot nearly free);
- a server that queues is found by what more calls in flight buy: at the first
  window of successes after a rise, the pacer measures the throughput at the
  new limit (by Little's law: the limit over the window's mean latency) and
  compares it with the mean throughput of the windows at the limit it rose
  from. A server with one slot (llama.cpp) serves one call at a time whatever
  the client sends, so its client latency rises with the calls in flight
  while its own time stays the same: throughput stays flat. When more calls
  in flight turned less than QUEUE_SHARE of their gain into throughput
  (doubling them must buy 1.3 times as much; five in flight instead of four,
  1.075 times), the limit goes back to the one it rose from and stays at most
  there ("queued"); against one slot the pacer settles at 1. A limit is judged
  once, against the one it rose from, not again at each window against the
  best of all lower ones: noisy latencies made a best-of-several look better
  than it was, and a server with room stepped down 8, 4, 2, 1 over a long job.
  Calls faster than QUEUE_FLOOR on average are not judged so: there the
  client's own CPU, not the server, sets the pace;
- a timeout, a 429 or a 503 halves the limit; a success that took at least half
  the timeout while clearly queued (1.5x the fastest call seen) takes one off,
  before the queue grows into a timeout;
- a change is made once per epoch: calls started before the last change do not
  change it again (eight timeouts from one burst halve it once).

It records what it measured: the limit reached at its peak and at the end,
the fastest and the median latency, and the back-offs with their reasons.

What a server sustained is remembered for the process (a LimitBook, keyed by
endpoint and model): the next judge on that endpoint starts at the limit the
last one reached, rather than ramping from one again for every job.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

OK = "ok"
OVERLOAD = "overload"     # timed out, 429 or 503: the server has more than it can take
OTHER = "other"           # any other failure: says nothing about load
SLOW_SHARE = 0.5          # a success this close to the timeout (share of it) is a warning...
QUEUED_RATIO = 1.5        # ...when it also took this much longer than the fastest call: it queued
QUEUE_SHARE = 0.3         # more calls in flight must turn this share of their gain into throughput, else they queue
QUEUE_FLOOR = 0.1         # s: windows of faster calls are not judged for queueing (the client's own CPU dominates)
MIN_WINDOW = 4            # successes a window needs at the least, whatever the limit
TIMEOUT_FACTOR = 4        # an attempt's timeout is at least this many median calls (see Pacer.timeout_for)


@dataclass(frozen=True)
class Ticket:
    """One attempt in flight: when it started and in which epoch."""

    started: float
    epoch: int
    in_flight: int = 1    # calls in flight once this one started, itself included


@dataclass(frozen=True)
class PacingReport:
    """What the pacer measured over a job.

    Attributes:
        ceiling: the configured maximum of calls in flight.
        peak: the highest limit reached.
        final: the limit at the end.
        calls: attempts that returned.
        fastest: the fastest successful call, seconds (None: no success).
        median: the median successful call, seconds (None: no success).
        backoffs: how often the limit was lowered, by reason.
    """

    ceiling: int
    peak: int
    final: int
    calls: int
    fastest: float | None
    median: float | None
    backoffs: dict[str, int] = field(default_factory=dict)

    @property
    def sentence(self) -> str:
        """E.g. 'concurrency 1 of 8 at the end (peak 2; lowered 3 times: 2 slow, 1 timed out); median call 0.4 s'."""
        text = f"concurrency {self.final} of {self.ceiling} at the end (peak {self.peak}"
        n = sum(self.backoffs.values())
        if n:
            why = ", ".join(f"{k} {reason}" for reason, k in sorted(self.backoffs.items()))
            text += f"; lowered {n} time{'s' if n != 1 else ''}: {why}"
        text += ")"
        if self.median is not None:
            text += f"; median call {self.median:.2g} s"
        return text


def queues(limit: int, rate: float, lower: int, lower_rate: float) -> bool:
    """Whether `limit` calls in flight, against `lower`, turned less than QUEUE_SHARE of their gain into
    throughput: the server queues the calls above `lower`."""
    return rate < lower_rate * (1 + QUEUE_SHARE * (limit / lower - 1))


class LimitBook:
    """The limit each endpoint last held, process-wide (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._limits: dict[str, int] = {}

    def get(self, key: str, default: int) -> int:
        with self._lock:
            return self._limits.get(key, default)

    def set(self, key: str, limit: int) -> None:
        with self._lock:
            self._limits[key] = limit

    def clear(self) -> None:
        with self._lock:
            self._limits.clear()


LIMITS = LimitBook()


class Pacer:
    """Gates judge attempts to an adaptive limit (thread-safe).

    Args:
        ceiling: the most calls in flight (the configured concurrency).
        timeout: the client's timeout for one attempt, seconds (what "slow" is measured against).
        start: the first limit (default 1), unless `book` holds one for `key`.
        clock: monotonic seconds (tests pass their own).
        book: where the limit is remembered between pacers of one endpoint (None: nowhere).
        key: the endpoint's key in `book`.
    """

    def __init__(self, ceiling: int, *, timeout: float, start: int = 1,
                 clock: Callable[[], float] = time.monotonic, book: LimitBook | None = None,
                 key: str = "") -> None:
        self._book, self._key = book, key
        if book is not None:
            start = book.get(key, start)
        self.ceiling = max(1, int(ceiling))
        self.timeout = float(timeout)
        self._clock = clock
        self._cond = threading.Condition()
        self._limit = max(1, min(int(start), self.ceiling))
        self._peak = self._limit
        self._in_flight = 0
        self._epoch = 0
        self._slow_start = True     # doubling until the first trouble
        self._fastest: float | None = None
        self._latencies: deque[float] = deque(maxlen=512)
        self._calls = 0
        self._backoffs: Counter[str] = Counter()
        self._closed = False
        self._window: list[float] = []               # latencies of this epoch's successes that count
        self._rates: dict[int, tuple[float, int]] = {}   # throughput at each limit: sum over windows, windows
        self._came_from: int | None = None               # the limit before the last rise, until it is judged
        self._cap = self.ceiling                     # the most the server was found to serve (queued above)

    @property
    def limit(self) -> int:
        with self._cond:
            return self._limit

    def acquire(self) -> Ticket | None:
        """Wait for a free place under the limit; None when the pacer was closed meanwhile."""
        with self._cond:
            while self._in_flight >= self._limit and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            self._in_flight += 1
            return Ticket(self._clock(), self._epoch, self._in_flight)

    def release(self, ticket: Ticket, outcome: str, reason: str = "") -> None:
        """End an attempt: OK (its latency counts), OVERLOAD (halve the limit) or OTHER (no change)."""
        elapsed = self._clock() - ticket.started
        with self._cond:
            self._in_flight -= 1
            self._calls += 1
            current = ticket.epoch == self._epoch
            if outcome == OK:
                self._success(elapsed, current, ticket.in_flight >= self._limit)
            elif outcome == OVERLOAD and current:
                self._lower(max(1, self._limit // 2), reason or "overloaded")
            self._cond.notify_all()

    def _success(self, elapsed: float, current: bool, full: bool) -> None:
        self._latencies.append(elapsed)
        if self._fastest is None or elapsed < self._fastest:
            self._fastest = elapsed
        queued = elapsed >= QUEUED_RATIO * self._fastest
        if elapsed >= SLOW_SHARE * self.timeout and queued:
            if current:
                self._lower(max(1, self._limit - 1), "slow")
            return
        if not (current and full):
            return
        self._window.append(elapsed)
        if len(self._window) < max(self._limit, MIN_WINDOW):
            return
        window, self._window = self._window, []
        latency = sum(window) / len(window)
        rate = self._limit / max(latency, 1e-9)   # Little's law: calls in flight over the time each takes
        total, n = self._rates.get(self._limit, (0.0, 0))
        self._rates[self._limit] = (total + rate, n + 1)
        came_from, self._came_from = self._came_from, None   # only a limit's first window after a rise is judged
        if came_from is not None and latency >= QUEUE_FLOOR:   # a limit rises only once its rate is measured
            lower_total, lower_n = self._rates[came_from]
            if queues(self._limit, rate, came_from, lower_total / lower_n):
                # more calls in flight bought no throughput: the server queues them; serve at the lower limit
                self._cap = came_from
                self._lower(came_from, "queued")
                return
        if self._limit < min(self.ceiling, self._cap):
            grown = self._limit * 2 if self._slow_start else self._limit + 1
            self._came_from = self._limit
            self._change(min(self.ceiling, self._cap, grown))

    def _lower(self, to: int, reason: str) -> None:
        self._slow_start = False
        self._came_from = None
        if to < self._limit:
            self._backoffs[reason] += 1
            self._change(to)

    def _change(self, to: int) -> None:
        if self._book is not None:
            self._book.set(self._key, to)
        self._limit = to
        self._peak = max(self._peak, to)
        self._epoch += 1
        self._window = []

    def timeout_for(self) -> float:
        """An attempt's timeout: the configured one, or TIMEOUT_FACTOR median calls when calls got that slow
        (a busy machine's model): a call the server is still computing is not abandoned for the queue's sake."""
        with self._cond:
            lat = list(self._latencies)
        if len(lat) < 3:
            return self.timeout
        return max(self.timeout, TIMEOUT_FACTOR * statistics.median(lat))

    def close(self) -> None:
        """Wake every waiting caller with None (the job is stopping)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def report(self) -> PacingReport:
        with self._cond:
            lat = list(self._latencies)
            return PacingReport(self.ceiling, self._peak, self._limit, self._calls, self._fastest,
                                statistics.median(lat) if lat else None, dict(self._backoffs))
