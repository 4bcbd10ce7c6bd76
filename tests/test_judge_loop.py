"""The model judge's calls on one event loop (lib.judging.loop), and what a judge learns of its endpoint.

Real openai SDK over HTTP to a loopback server whose model is the offline judge.
"""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.results import EXCLUDED, OK
from lib.jobs._demo import demo_samples
from lib.judging.harness import Instrument, score_samples
from lib.judging.loop import LoopThread
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.pacing import LimitBook
from tests.conftest import offline_responder
from tests.support.openai_server import Fault, OpenAIServer
from tests.test_pacing import Clock

MODEL = "evaldrift-test-model"
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"judge:{MODEL}"]


def _samples(n: int) -> list:
    main, _ = demo_samples()
    return [d.sample for d in main[:n]]


def test_calls_from_many_threads_run_on_one_loop_thread_that_closes_with_the_judge() -> None:
    # threads of this test's judge only: an earlier test's collected judge may still be stopping its loop
    earlier = set(_loop_threads())
    with OpenAIServer(offline_responder, latency=0.02, keep_alive=True) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", timeout=5.0, concurrency=8)
        results = score_samples(_samples(24), FAITHFULNESS, judge)
        assert {r.status for r in results} == {OK, EXCLUDED}   # the demo has empty answers: no call for them
        started = [t for t in _loop_threads() if t not in earlier]
        assert len(started) == 1                          # eight callers, one loop
        assert judge.pacing.peak == 8
        del judge
        gc.collect()
        started[0].join(timeout=5)
        assert not started[0].is_alive()                  # collected judge: its loop stopped


def test_a_new_judge_on_an_endpoint_starts_at_the_concurrency_the_last_one_reached() -> None:
    """The first judge's pacer reads its latencies off a clock that stands still (test_pacing's Clock): it grows
    by its count of successes alone, never by how long a call took on a loaded machine (at load 12-14 the real
    clock read some calls as queued or slow, and the limit stopped short of 8, 2 runs in 18)."""
    book = LimitBook()
    with OpenAIServer(offline_responder, latency=0.02) as server:
        first = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=8, limits=book, clock=Clock())
        assert first.pacer.limit == 1
        score_samples(_samples(40), FAITHFULNESS, first)
        assert first.pacer.limit == 8
        second = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=16, limits=book)
        assert second.pacer.limit == 8                   # no ramp from one again
        narrow = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=4, limits=book)
        assert narrow.pacer.limit == 4                   # never above its own ceiling
        other = OpenAIJudge("another-model", base_url=server.base_url, timeout=5.0, concurrency=8, limits=book)
        assert other.pacer.limit == 1                    # another model on the server is another judge


def test_a_lowered_limit_is_what_the_next_judge_starts_at() -> None:
    book = LimitBook()
    with OpenAIServer(offline_responder, latency=0.02) as server:
        first = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=8, limits=book,
                            sleep=lambda s: None)
        score_samples(_samples(30), FAITHFULNESS, first)
        server.fail_always(Fault("429", retry_after=0.01))
        score_samples(_samples(30)[:8], FAITHFULNESS, first, concurrency=8)
        server.fail_always(None)
        assert first.pacer.limit < 8
        second = OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, concurrency=8, limits=book)
        assert second.pacer.limit == first.pacer.limit


def test_a_loop_thread_serves_callers_on_many_threads_and_restarts_after_close() -> None:
    loop = LoopThread("test-loop", setup=lambda: "state")

    async def name() -> str:
        return threading.current_thread().name

    with ThreadPoolExecutor(8) as pool:
        names = set(pool.map(lambda _: loop.run(name()), range(32)))
    assert names == {"test-loop"} and loop.state == "state"
    loop.close()
    assert loop.run(name()) == "test-loop"               # started again on demand
    loop.close()
