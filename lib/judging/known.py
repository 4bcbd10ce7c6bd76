"""A call cache seen through the keys it held when a job started: a key it did not hold is a miss with no query.

Asking the store's cache for a reply costs a DuckDB query (about 0.4 ms of CPU),
paid before every call of a job whose replies are mostly not there yet. A job
knows its requests up front, so one query finds which of them the cache holds;
`get` then asks the cache only for those, and for the replies put during the
job (by this job's own calls, e.g. an identical request answered first).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from lib.core.calls import JudgeReply, JudgeRequest
from lib.judging.base import CallCache


class KnownCache:
    """A CallCache over another, knowing which keys it holds (caches without `held` are passed through)."""

    def __init__(self, cache: CallCache, keys: Iterable[str]) -> None:
        self._cache = cache
        held = getattr(cache, "held", None)
        self._held: set[str] | None = set(held(list(dict.fromkeys(keys)))) if callable(held) else None
        self._lock = threading.Lock()

    def get(self, key: str) -> JudgeReply | None:
        if self._held is not None:
            with self._lock:
                if key not in self._held:
                    return None
        return self._cache.get(key)

    def put(self, request: JudgeRequest, reply: JudgeReply) -> None:
        self._cache.put(request, reply)
        if self._held is not None:
            with self._lock:
                self._held.add(request.key)
