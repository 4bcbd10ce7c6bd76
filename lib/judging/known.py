"""A call cache seen through the keys it held when a job started: a key it did not hold is a miss with no query.

Asking the store's cache for a reply costs a DuckDB query (about 0.4 ms of CPU),
paid before every call of a job whose replies are mostly not there yet. A job
knows its requests up front, so one query finds which of them the cache holds;
`get` then asks the cache only for those, and for the replies put during the
job (by this job's own calls, e.g. an identical request answered first). A
cache that can hand over the replies themselves in one query (the store's
`replies`) is not asked again for the ones it held.

It also keeps, for the job only, the replies that could not be read: an
identical request (another arm whose prompt blanking left unchanged, the
same prompt twice) is answered by the same failure, not sent again; and the
job's allowance of repair requests (lib.judging.harness.Repairs).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from lib.core.calls import JudgeReply, JudgeRequest
from lib.judging.base import CallCache


class KnownCache:
    """A CallCache over another, knowing which keys it holds (caches without `held` are passed through).

    A cache that can also hand over its replies for many keys at once (`replies`, as the store's does) is
    read once up front: its held replies are then answered from memory, with no query per call.
    """

    def __init__(self, cache: CallCache, keys: Iterable[str], *, unreadable: dict[str, JudgeReply] | None = None,
                 repairs: object | None = None) -> None:
        self._cache = cache
        self._unreadable = unreadable if unreadable is not None else {}
        self.repairs = repairs   # the job's allowance of repair requests (lib.judging.harness.Repairs)
        wanted = list(dict.fromkeys(keys))
        replies, held = getattr(cache, "replies", None), getattr(cache, "held", None)
        self._read: dict[str, JudgeReply] = dict(replies(wanted)) if callable(replies) else {}
        if callable(replies):
            self._held: set[str] | None = set()   # replies put during the job: asked of the cache
        else:
            self._held = set(held(wanted)) if callable(held) else None
        self._lock = threading.Lock()

    def get(self, key: str) -> JudgeReply | None:
        read = self._read.get(key)
        if read is not None:
            return read
        if self._held is not None:
            with self._lock:
                if key not in self._held:
                    return None
        return self._cache.get(key)

    def unreadable(self, key: str) -> JudgeReply | None:
        """The unreadable reply this job already got for an identical request (None: none), marked cached."""
        with self._lock:
            bad = self._unreadable.get(key)
        return None if bad is None else JudgeReply(text=bad.text, fingerprint=bad.fingerprint, cached=True)

    def put_unreadable(self, request: JudgeRequest, reply: JudgeReply) -> None:
        """Keep an unreadable reply for the rest of the job: an identical request is answered by the same failure
        (a model at temperature 0 would write it again), never sent. Not written to the store: a later job asks
        afresh."""
        with self._lock:
            self._unreadable[request.key] = reply

    def put(self, request: JudgeRequest, reply: JudgeReply) -> None:
        self._cache.put(request, reply)
        if self._held is not None:
            with self._lock:
                self._held.add(request.key)
