"""When the store writes the judge replies it holds (lib/store/calls.py put): the rule, a row per branch.

A reply is held in memory (the store's get() answers from it at once) and written to the file in batches: a
commit per reply would cost more than the call. What is written survives a crash; what is held is called again.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import duckdb
import pytest

from lib.core.calls import JudgeReply, JudgeRequest, Message, Usage
from lib.store import Store
from lib.store.base import CACHE_BATCH, CACHE_MAX, CACHE_SECONDS


def _request(i: int) -> JudgeRequest:
    return JudgeRequest("judge-model", (Message("system", "judge"), Message("user", f"prompt {i}")), 0.0, 0,
                        endpoint="http://127.0.0.1:9/v1")


def _written(db: Path) -> int:
    """Replies in the file, as another process opening it after a crash would find them."""
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM judge_cache").fetchone()[0]


@pytest.mark.parametrize(("held_before", "last_write_age", "written"), [
    (CACHE_BATCH - 2, None, False),                   # fewer than a batch, never written: held
    (CACHE_BATCH - 1, None, True),                    # a batch, never written before: written
    (CACHE_BATCH - 1, CACHE_SECONDS / 5, False),      # a batch, but the last write was just now: held
    (CACHE_BATCH - 1, CACHE_SECONDS * 1.2, True),     # a batch, and the last write a while ago: written
    (CACHE_MAX - 1, 0.0, True),                       # the most ever held, however recent the last write
], ids=["under-a-batch", "first-batch", "batch-written-recently", "batch-after-interval", "at-the-cap"])
def test_held_replies_are_written_by_batch_at_most_so_often(tmp_path: Path, held_before: int,
                                                           last_write_age: float | None, written: bool) -> None:
    db = tmp_path / "cache.duckdb"
    reply = JudgeReply(text='{"verdicts": ["yes"]}', usage=Usage(), fingerprint=None)
    store = Store(db)
    try:
        store._pending_replies.update(   # the held replies before this put, as earlier puts would leave them
            {r.key: (r.key, r.model, r.to_json(), reply.text, 0, 0, None, None, None)
             for r in map(_request, range(held_before))})
        if last_write_age is not None:
            store._replies_written = time.monotonic() - last_write_age
        store.put(_request(held_before), reply)
        assert store.get(_request(held_before).key) is not None   # held or written, get() answers at once
        in_file = store._rows("SELECT count(*) FROM judge_cache", [])[0][0]
        assert in_file == (held_before + 1 if written else 0)
        assert len(store._pending_replies) == (0 if written else held_before + 1)
    finally:
        store.close()
    assert _written(db) == held_before + 1   # closing writes whatever is still held


def test_a_steady_stream_of_replies_makes_a_few_writes_not_one_per_batch(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten batches' worth put within one interval: the first batch is written, the rest wait for the interval
    (or close); before, every batch of CACHE_BATCH was a commit of its own."""
    commits = []
    store = Store(tmp_path / "cache.duckdb")
    real = store._write_replies

    def counted(cur):
        written = real(cur)
        commits.append(len(written))
        return written

    monkeypatch.setattr(store, "_write_replies", counted)
    reply = JudgeReply(text='{"verdicts": ["yes"]}', usage=Usage(), fingerprint=None)
    start = time.monotonic()
    for i in range(10 * CACHE_BATCH):
        store.put(_request(i), reply)
    within_interval = time.monotonic() - start < CACHE_SECONDS
    store.close()
    if within_interval:   # a slow machine may cross an interval; the rule's rows above hold regardless
        assert commits == [CACHE_BATCH, 9 * CACHE_BATCH]
    assert sum(commits) == 10 * CACHE_BATCH


def test_putting_a_reply_does_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    """A judging thread hands its reply over and goes on judging while another thread commits a batch (the
    ablation stores results with the replies they cost); before, every put waited for the commit to end."""
    reply = JudgeReply(text='{"verdicts": ["yes"]}', usage=Usage(), fingerprint=None)
    store = Store(tmp_path / "cache.duckdb")
    try:
        store.put(_request(0), reply)   # below a batch: held
        done = threading.Event()
        with store._write_lock:   # a write transaction in progress on another thread's behalf
            worker = threading.Thread(target=lambda: (store.put(_request(1), reply), done.set()))
            worker.start()
            finished = done.wait(timeout=5)
        worker.join()
        assert finished, "put() waited for the write in progress"
        assert store.get(_request(1).key) is not None
        store.flush_cache()
        assert store._rows("SELECT count(*) FROM judge_cache", [])[0][0] == 2
    finally:
        store.close()
