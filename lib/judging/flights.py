"""One call per distinct request in flight: identical requests wait for the first, then read the call cache.

Two samples of a run (or of two runs, or two arms of an ablation) can render
to the very same request. The call cache answers the second once the first is
answered, but when both are in flight together neither is answered yet, and
both would be paid for. `FLIGHTS.hold(key)` is a lock per request key: the
first caller asks the judge and puts a valid reply in the cache before it
lets go; the others, let in one by one, find the reply there. When the first
failed (no reply, or one that could not be read), the next asks again itself:
a fault is retried, never shared.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class Flights:
    """Locks by request key, made on demand and dropped when nobody holds or waits for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, list] = {}   # key -> [lock, holders and waiters]

    @contextlib.contextmanager
    def hold(self, key: str | None) -> Iterator[None]:
        """Hold `key` (wait while another caller holds it); None holds nothing."""
        if key is None:
            yield
            return
        with self._lock:
            entry = self._held.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        entry[0].acquire()
        try:
            yield
        finally:
            entry[0].release()
            with self._lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._held[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


FLIGHTS = Flights()
