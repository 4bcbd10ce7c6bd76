"""The model judge's HTTP transport (lib.judging.transport) and the loop that owns its connections.

Real openai SDK over HTTP to a loopback server whose model is the offline judge.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.results import OK
from lib.jobs._demo import demo_samples
from lib.judging.harness import Instrument, score_sample
from lib.judging.loop import LoopThread
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.pacing import LimitBook
from tests.conftest import offline_responder
from tests.support.openai_server import Fault, OpenAIServer

aiohttp = pytest.importorskip("aiohttp")

MODEL = "evaldrift-test-model"
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


def _sample():
    main, _ = demo_samples()
    return next(d.sample for d in main if d.sample.answer.strip())


def _judge(server: OpenAIServer, **options: object) -> OpenAIJudge:
    options.setdefault("timeout", 5.0)
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", sleep=lambda s: None,
                       **options)  # type: ignore[arg-type]


def test_the_judge_talks_through_the_sdk_aiohttp_transport_and_closes_its_connections(
        caplog: pytest.LogCaptureFixture) -> None:
    from openai._vendor.httpx_aiohttp import Httpx2AiohttpClient

    with OpenAIServer(offline_responder, keep_alive=True) as server:
        judge = _judge(server, concurrency=4)
        assert score_sample(_sample(), FAITHFULNESS, judge).status == OK
        client = judge._loop.state
        assert isinstance(client._client, Httpx2AiohttpClient)
        judge.close()
        assert client.is_closed()                       # closed on its own loop, before the loop stopped
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            del judge, client
            gc.collect()
        assert "Unclosed" not in caplog.text
        again = _judge(server, concurrency=4)           # a judge closed and collected; a new one works
        assert score_sample(_sample(), FAITHFULNESS, again).status == OK
        again.close()


@pytest.mark.parametrize(("userinfo", "on_aiohttp"), [("", True), ("judge-user:pw@", False)])
def test_a_base_url_with_credentials_keeps_the_transport_that_can_send_them(userinfo: str, on_aiohttp: bool) -> None:
    from openai._vendor.httpx_aiohttp import Httpx2AiohttpClient

    with OpenAIServer(offline_responder, keep_alive=True) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url.replace("://", f"://{userinfo}"), api_key="sk-test",
                            timeout=5.0, max_attempts=1)
        assert score_sample(_sample(), FAITHFULNESS, judge).status == OK
        assert isinstance(judge._loop.state._client, Httpx2AiohttpClient) is on_aiohttp and server.n_calls == 1
        judge.close()


# fault, judge timeout (s), the retry's reason starts with, the concurrency left of 8
FAULTS = [
    (Fault("drop"), 5.0, "connection failed: ServerDisconnectedError", 8),   # not taken for an overload
    (Fault("timeout", delay=1.0), 0.3, "timed out", 4),                         # an overload: halved
    (Fault("503"), 5.0, "server error (503)", 4),
    (Fault("500"), 5.0, "server error (500)", 8),
]


@pytest.mark.parametrize(("fault", "timeout", "reason", "limit"), FAULTS, ids=lambda v: getattr(v, "kind", None))
def test_each_transport_fault_is_retried_with_its_own_reason_and_load(fault: Fault, timeout: float, reason: str,
                                                                      limit: int) -> None:
    with OpenAIServer(offline_responder, keep_alive=True) as server:
        book = LimitBook()
        judge = _judge(server, concurrency=8, timeout=timeout, limits=book)
        book.set(judge.pacer._key, 8)
        judge = _judge(server, concurrency=8, timeout=timeout, limits=book)
        assert judge.pacer.limit == 8
        server.script(fault)
        assert score_sample(_sample(), FAITHFULNESS, judge).status == OK
        assert judge.retries == [reason]
        assert judge.pacer.limit == limit
        judge.close()


def test_a_loop_tears_its_state_down_on_its_own_thread_before_it_stops() -> None:
    torn: list[tuple[str, str, bool]] = []

    async def teardown(state: str) -> None:
        await asyncio.sleep(0)
        torn.append((state, threading.current_thread().name, asyncio.get_running_loop().is_running()))

    loop = LoopThread("teardown-loop", setup=lambda: "client", teardown=teardown)

    async def name() -> str:
        return threading.current_thread().name

    assert loop.run(name()) == "teardown-loop"
    loop.close()
    assert torn == [("client", "teardown-loop", True)]
    loop.close()                                         # idempotent: nothing left to tear down
    assert len(torn) == 1
    assert loop.run(name()) == "teardown-loop"           # a new loop, a new state

    async def close_from_inside() -> None:
        loop.close()                                     # e.g. the owner collected on the loop's thread

    asyncio.run_coroutine_threadsafe(close_from_inside(), loop._loop).result(timeout=5)
    for t in [t for t in threading.enumerate() if t.name == "teardown-loop"]:
        t.join(timeout=5)
    assert torn[-1][0] == "client" and len(torn) == 2
    assert not [t for t in threading.enumerate() if t.name == "teardown-loop"]
