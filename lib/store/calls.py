"""The judge call cache: a reply per request key, so an identical request is never paid for twice."""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

import duckdb

from lib.core.calls import JudgeReply, JudgeRequest, Usage

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table
from lib.store.base import CACHE_BATCH, CACHE_MAX, CACHE_SECONDS, StoreBase, _now, retried


class CallCacheMixin(StoreBase):
    """The judge call cache (a lib.judging CallCache): replies by request key, written in batches.

    The held replies have a lock of their own (`_pending_lock`), taken only to read or change the dict: a
    judging thread that puts a reply never waits for a write transaction (a batch of results and replies
    being committed), and a reply stays held until its write has committed, so get() always finds it.
    """

    _pending_replies: dict[str, tuple[object, ...]]
    _pending_lock: threading.Lock
    _replies_written: float = -math.inf   # when held replies were last written (time.monotonic)

    def _hold_replies(self) -> None:
        """Start with no reply held (each store's constructor calls this)."""
        self._pending_replies = {}
        self._pending_lock = threading.Lock()

    def get(self, key: str) -> JudgeReply | None:
        held = self._pending_replies.get(key)
        if held is not None:
            return JudgeReply(text=str(held[3]), usage=Usage(), fingerprint=held[6], cached=True,  # type: ignore[arg-type]
                              served_model=held[8])  # type: ignore[arg-type]
        rows = self._rows("SELECT reply, fingerprint, served_model FROM judge_cache WHERE key = ?", [key])
        if not rows:
            return None
        return JudgeReply(text=rows[0][0], usage=Usage(), fingerprint=rows[0][1], cached=True, served_model=rows[0][2])

    def replies(self, keys: list[str]) -> dict[str, JudgeReply]:
        """The replies held for these keys (written or held in memory), in one query: a job reads its cached
        replies up front instead of one query per call."""
        with self._pending_lock:
            pending = {k: self._pending_replies[k] for k in keys if k in self._pending_replies}
        out = {k: JudgeReply(text=str(row[3]), usage=Usage(), fingerprint=row[6], cached=True,  # type: ignore[arg-type]
                             served_model=row[8])  # type: ignore[arg-type]
               for k, row in pending.items()}
        if keys:
            rows = self._rows("SELECT key, reply, fingerprint, served_model FROM judge_cache "
                              "WHERE key IN (SELECT unnest(?::VARCHAR[]))", [list(keys)])
            for key, text, fingerprint, served in rows:
                out.setdefault(key, JudgeReply(text=text, usage=Usage(), fingerprint=fingerprint, cached=True,
                                               served_model=served))
        return out

    def put(self, request: JudgeRequest, reply: JudgeReply) -> None:
        """Keep a valid reply. Held in memory (get() sees it at once) and written with each stored batch of
        ablation results, by flush_cache() and on close(), and by put() itself once CACHE_BATCH are held and
        CACHE_SECONDS have passed since the last write (or CACHE_MAX are held): one commit per call would cost
        more than a model call. A crash loses at most the held replies (at most CACHE_MAX, about CACHE_SECONDS'
        worth or CACHE_BATCH, whichever is more): they are called again."""
        key = request.key
        row = (key, request.model, request.to_json(), reply.text, reply.usage.prompt_tokens,
               reply.usage.completion_tokens, reply.fingerprint, _now(), reply.served_model)
        with self._pending_lock:
            self._pending_replies[key] = row
            held = len(self._pending_replies)
            due = held >= CACHE_MAX or (
                held >= CACHE_BATCH and time.monotonic() - self._replies_written >= CACHE_SECONDS)
            if due:
                self._replies_written = time.monotonic()   # this thread writes: the others go on judging
        if due:
            self.flush_cache()

    @retried("writing cached judge replies")
    def flush_cache(self) -> None:
        """Write the replies put() holds, in one transaction."""
        with self._write_lock:
            with self._pending_lock:
                if not self._pending_replies:
                    return
            with self.transaction() as cur:
                written = self._write_replies(cur)
            self._forget_written(written)

    def _write_replies(self, cur: duckdb.DuckDBPyConnection) -> dict[str, tuple[object, ...]]:
        """Insert the replies held now within the transaction `cur`; returns them, to be forgotten
        (_forget_written) once the transaction has committed."""
        import pandas as pd  # only here: a look with nothing new never loads pandas (lib.store)
        with self._pending_lock:
            rows = dict(self._pending_replies)
        if not rows:
            return rows
        frame = pd.DataFrame(list(rows.values()),
                             columns=["key", "model", "request", "reply", "prompt_tokens", "completion_tokens",
                                      "fingerprint", "created_at", "served_model"])
        self._put_frame(cur, "judge_cache", frame, ("key",), replace=False)   # a reply already kept stays
        self._replies_written = time.monotonic()
        return rows

    def _forget_written(self, written: dict[str, tuple[object, ...]]) -> None:
        """Stop holding replies whose write has committed (the file answers for them now)."""
        with self._pending_lock:
            for key, row in written.items():
                if self._pending_replies.get(key) is row:
                    del self._pending_replies[key]
