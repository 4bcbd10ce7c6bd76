"""One judge call per distinct request, even when identical requests are in flight together (lib.judging.flights).

Real openai SDK over HTTP to a loopback server whose model is the offline judge.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.results import FAILED, OK
from lib.jobs._demo import demo_samples
from lib.judging import MemoryCache, OfflineJudge
from lib.judging.flights import Flights
from lib.judging.harness import Instrument, score_samples
from lib.judging.openai_judge import OpenAIJudge
from tests.conftest import offline_responder
from tests.support.openai_server import Fault, OpenAIServer

MODEL = "evaldrift-test-model"
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


def _copies(n: int, distinct: int) -> list:
    """n samples with different ids over `distinct` contents (each content repeated)."""
    main, _ = demo_samples()
    bases = [d.sample for d in main if d.sample.answer][:distinct]
    return [dataclasses.replace(bases[i % distinct], sample_id=f"copy-{i}") for i in range(n)]


def test_identical_requests_in_flight_together_make_one_call_each() -> None:
    samples = _copies(32, 4)
    with OpenAIServer(offline_responder, latency=0.05) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=16)
        judge.pacer = type(judge.pacer)(16, timeout=5.0, start=16)   # all 16 in flight from the first call
        results = score_samples(samples, FAITHFULNESS, judge, cache=MemoryCache())
        assert server.n_calls == 4
    assert all(r.status == OK for r in results)
    assert sum(r.calls for r in results) == 4 and sum(r.cached for r in results) == 28
    by_content = {}
    for s, r in zip(samples, results, strict=True):
        by_content.setdefault(s.answer, set()).add(r.score)
    assert all(len(scores) == 1 for scores in by_content.values())


def test_when_the_first_of_identical_requests_fails_the_next_asks_again_itself() -> None:
    samples = _copies(6, 1)
    with OpenAIServer(offline_responder, latency=0.05) as server:
        server.script(Fault("500"))   # the first caller's only attempt fails: its fault is not shared
        judge = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=6, max_attempts=1)
        judge.pacer = type(judge.pacer)(6, timeout=5.0, start=6)
        results = score_samples(samples, FAITHFULNESS, judge, cache=MemoryCache())
        assert server.n_calls == 2
    assert sorted(r.status for r in results) == [FAILED] + [OK] * 5
    assert sum(r.cached for r in results) == 4


def test_without_a_call_cache_or_with_a_free_judge_nothing_waits() -> None:
    samples = _copies(8, 1)
    with OpenAIServer(offline_responder, latency=0.02) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=8)
        score_samples(samples, FAITHFULNESS, judge)           # no cache: every sample is asked
        assert server.n_calls == 8
    results = score_samples(samples, FAITHFULNESS, OfflineJudge(), cache=MemoryCache())
    assert all(r.status == OK and not r.cached for r in results)   # the offline judge is not cached


def test_a_key_is_held_by_one_caller_at_a_time_and_forgotten_after() -> None:
    flights = Flights()
    inside = 0
    most = 0
    lock = threading.Lock()

    def enter(key: str) -> None:
        nonlocal inside, most
        with flights.hold(key):
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.005)
            with lock:
                inside -= 1

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(enter, ["same"] * 16))
    assert most == 1 and len(flights) == 0
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(enter, [f"k{i}" for i in range(16)]))
    assert most > 1 and len(flights) == 0


class CountingCache(MemoryCache):
    """A MemoryCache that can say which keys it holds in one go, counting the lookups it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.bulk = 0

    def held(self, keys: list[str]) -> set[str]:
        self.bulk += 1
        return {k for k in keys if k in self._replies}

    def get(self, key: str):
        self.gets += 1
        return super().get(key)


def test_a_job_asks_the_cache_which_requests_it_holds_once_not_before_every_call() -> None:
    samples = _copies(12, 12)
    cache = CountingCache()
    with OpenAIServer(offline_responder, latency=0.01) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=4)
        score_samples(samples[:4], FAITHFULNESS, judge, cache=cache)
        cache.gets = cache.bulk = 0
        results = score_samples(samples, FAITHFULNESS, judge, cache=cache)
        assert server.n_calls == 12
    assert cache.bulk == 1 and cache.gets == 4          # only the four it held were looked up
    assert sum(r.cached for r in results) == 4 and all(r.status == OK for r in results)


class BulkCache(CountingCache):
    """A CountingCache that can also hand over the replies it holds for many keys in one go (as the store's)."""

    def replies(self, keys: list[str]) -> dict:
        self.bulk += 1
        return {k: self._replies[k] for k in keys if k in self._replies}


def test_a_job_reads_the_replies_its_cache_holds_up_front_and_asks_again_for_none_of_them() -> None:
    samples = _copies(12, 12)
    cache = BulkCache()
    with OpenAIServer(offline_responder, latency=0.01) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=4)
        first = score_samples(samples[:4], FAITHFULNESS, judge, cache=cache)
        cache.gets = cache.bulk = 0
        results = score_samples(samples, FAITHFULNESS, judge, cache=cache)
        assert server.n_calls == 12
    assert cache.bulk == 1 and cache.gets == 0          # the four it held came with the one bulk read
    assert sum(r.cached for r in results) == 4 and all(r.status == OK for r in results)
    assert [r.score for r in results[:4]] == [r.score for r in first]


def test_the_store_hands_over_written_and_held_replies_for_many_keys_in_one_read(tmp_path) -> None:
    from lib.core.calls import JudgeReply, JudgeRequest, Message, Usage
    from lib.store import Store

    def request(i: int) -> JudgeRequest:
        return JudgeRequest(MODEL, (Message("user", f"prompt {i}"),), seed=i, endpoint="http://127.0.0.1:1/v1")

    with Store(tmp_path / "cache.duckdb") as store:
        store.put(request(0), JudgeReply("written", Usage(3, 4), fingerprint="fp0"))
        store.flush_cache()
        store.put(request(1), JudgeReply("held", Usage(5, 6)))            # still in memory, not written
        got = store.replies([request(i).key for i in range(3)])
    assert set(got) == {request(0).key, request(1).key}                   # the third was never answered
    assert (got[request(0).key].text, got[request(0).key].fingerprint) == ("written", "fp0")
    assert got[request(1).key].text == "held"
    assert all(r.cached and r.usage == Usage() for r in got.values())    # a cached reply costs no tokens
