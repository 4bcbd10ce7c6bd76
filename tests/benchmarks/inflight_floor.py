"""What this machine allows for calls in flight: the server's own CPU and the ratio bare clients reach.

The judge benchmark's ratio to ideal is the client and the loopback server
sharing the machine's cores. These figures put a floor under it, measured
against the same server process with the same request bodies:

- the server's CPU per request (its process, all threads);
- a bare aiohttp client (one event loop, JSON posted and parsed, no SDK):
  the best ratio any Python client on this machine could show;
- the openai SDK alone in one event loop (no harness, no store), posting the
  judge's bodies as lib.judging.openai_judge does, over each HTTP client the
  SDK offers: what the SDK itself costs;
- the same SDK client on a loop thread fed by one waiting thread per call in
  flight, as the harness feeds the judge: what handing calls between threads
  costs on top.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

import httpx2
import openai

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.judging.harness import Instrument, build_request
from lib.judging.structured import JSON_SCHEMA, chat_body
from lib.store import Store
from tests.benchmarks.judge_server import JudgeServer


def bodies(store: Store, run_id: str, model: str, n: int) -> list[dict[str, object]]:
    """`n` chat bodies as the judge sends them for a run's samples (seeds varied so none repeats)."""
    instrument = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    samples = store.samples(run_id)
    out: list[dict[str, object]] = []
    seed = 0
    while len(out) < n:
        for s in samples:
            request = build_request(s, instrument, model, "", seed)[0]
            if request is not None:
                out.append(chat_body(request, JSON_SCHEMA))
            if len(out) == n:
                break
        seed += 1
    return out


async def _flights(send: Callable[[dict], Coroutine[Any, Any, Any]], work: list[dict], width: int) -> None:
    queue = iter(work)

    async def lane() -> None:
        for body in queue:
            await send(body)

    await asyncio.gather(*(lane() for _ in range(width)))


async def _aiohttp(base_url: str, work: list[dict], width: int) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=width)
    async with aiohttp.ClientSession(connector=connector) as session:
        url = base_url + "/chat/completions"

        async def send(body: dict) -> Any:
            async with session.post(url, data=json.dumps(body), headers={"content-type": "application/json"}) as r:
                return json.loads(await r.read())["choices"][0]["message"]["content"]

        await _flights(send, work, width)


async def _sdk(base_url: str, work: list[dict], width: int, http: str) -> None:
    client_kwargs: dict[str, Any] = {}
    if http == "aiohttp":
        client_kwargs["http_client"] = openai.DefaultAioHttpClient(
            limits=httpx2.Limits(max_connections=width, max_keepalive_connections=width))
    async with openai.AsyncOpenAI(api_key="not-needed", base_url=base_url, max_retries=0, timeout=30,
                                  **client_kwargs) as client:
        async def send(body: dict) -> Any:
            r = await client.post("/chat/completions", cast_to=httpx2.Response, body=body)
            return r.json()["choices"][0]["message"]["content"]

        await _flights(send, work, width)


def _sdk_from_threads(base_url: str, work: list[dict], width: int) -> None:
    """The SDK on one loop thread, fed by `width` threads that each wait for their call (the judge's shape)."""
    from concurrent.futures import ThreadPoolExecutor

    from lib.judging.loop import LoopThread
    from lib.judging.transport import http_client

    def setup() -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key="not-needed", base_url=base_url, max_retries=0, timeout=30,
                                  http_client=http_client(width, base_url))

    async def close(client: openai.AsyncOpenAI) -> None:
        await client.close()

    loop = LoopThread("floor", setup=setup, teardown=close)

    async def send(body: dict) -> Any:
        r = await loop.state.post("/chat/completions", cast_to=httpx2.Response, body=body)
        return r.json()["choices"][0]["message"]["content"]

    with ThreadPoolExecutor(width) as pool:
        list(pool.map(lambda body: loop.run(send(body)), work))
    loop.close()


CLIENTS = {
    "bare aiohttp client": lambda url, work, width: _aiohttp(url, work, width),
    "openai SDK alone (httpx2)": lambda url, work, width: _sdk(url, work, width, "httpx2"),
    "openai SDK alone (aiohttp)": lambda url, work, width: _sdk(url, work, width, "aiohttp"),
    "openai SDK (aiohttp) fed by one thread a call": _sdk_from_threads,
}


def measure_client(server: JudgeServer, name: str, work: list[dict], width: int, latency: float) -> dict:
    """One client's run of `work` at `width` in flight: ratio to ideal, client and server CPU per call."""
    before, server_cpu = server.n_calls(), server.cpu()
    t, cpu = time.perf_counter(), time.process_time()
    run = CLIENTS[name](server.base_url, work, width)
    if asyncio.iscoroutine(run):
        asyncio.run(run)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    server_cpu = server.cpu() - server_cpu
    calls = server.n_calls() - before
    ideal = calls * latency / width
    return {"calls": calls, "wall": wall, "ratio": wall / ideal, "cpu_ms": 1000 * cpu / calls,
            "server_ms": 1000 * server_cpu / calls}
