"""Tests for the OpenAI-compatible test server, driven by the real SDK."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from openai import OpenAI

from tests.support.openai_server import (
    MALFORMED_CONTENT,
    MODEL_ID,
    Fault,
    OpenAIServer,
)

API_KEY = "sk-test"
REPLY = '{"verdicts": ["supported", "unsupported", "supported"]}'


def _responder(body: dict) -> str:
    """Returns a fixed JSON reply regardless of the request."""
    return REPLY


def _client(srv: OpenAIServer, *, timeout: float = 2.0) -> OpenAI:
    """Builds a real SDK client pointed at the test server."""
    return OpenAI(
        api_key=API_KEY, base_url=srv.base_url, max_retries=0, timeout=timeout
    )


def _ask(client: OpenAI, prompt: str = "judge these three claims") -> str:
    """Sends one chat completion and returns the assistant content."""
    resp = client.chat.completions.create(
        model="gpt-judge",
        messages=[{"role": "user", "content": prompt}],
    )
    content = resp.choices[0].message.content
    assert content is not None
    return content


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    """A running server with the fixed-reply responder."""
    with OpenAIServer(_responder) as server:
        yield server


def test_normal_completion_returns_responder_text_and_usage(
    srv: OpenAIServer,
) -> None:
    resp = _client(srv).chat.completions.create(
        model="gpt-judge",
        messages=[
            {"role": "system", "content": "You are a strict judge."},
            {"role": "user", "content": "judge these three claims"},
        ],
        temperature=0,
    )
    assert resp.object == "chat.completion"
    assert resp.model == "gpt-judge"
    assert resp.system_fingerprint == "fp_test"
    choice = resp.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == REPLY
    assert choice.finish_reason == "stop"
    assert resp.usage is not None
    assert resp.usage.prompt_tokens == 5 + 4
    assert resp.usage.completion_tokens == len(REPLY.split())
    assert resp.usage.total_tokens == 9 + len(REPLY.split())

    assert srv.n_calls == 1
    assert srv.requests[0]["temperature"] == 0
    assert srv.requests[0]["messages"][1]["content"] == "judge these three claims"
    auth = {k.lower(): v for k, v in srv.headers_seen[0].items()}["authorization"]
    assert auth == f"Bearer {API_KEY}"


def test_responder_sees_request_body() -> None:
    def echo(body: dict) -> str:
        return json.dumps({"n_messages": len(body["messages"])})

    with OpenAIServer(echo, model_fingerprint="fp_other") as server:
        resp = _client(server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert json.loads(resp.choices[0].message.content or "") == {"n_messages": 1}
    assert resp.system_fingerprint == "fp_other"


def test_scripted_429_raises_rate_limit_error_then_recovers(
    srv: OpenAIServer,
) -> None:
    srv.script(Fault("429", retry_after=0.25))
    client = _client(srv)
    with pytest.raises(openai.RateLimitError) as excinfo:
        _ask(client)
    assert excinfo.value.status_code == 429
    assert excinfo.value.response.headers["retry-after"] == "0.25"
    assert _ask(client) == REPLY  # the fault was consumed
    assert srv.n_calls == 2  # faulted requests are recorded too


def test_sdk_retries_honour_scripted_faults(srv: OpenAIServer) -> None:
    # Retry-After keeps the SDK's backoff short (no header means ~0.5-1 s).
    srv.script(Fault("429", retry_after=0.01), Fault("429", retry_after=0.01))
    client = OpenAI(api_key=API_KEY, base_url=srv.base_url, max_retries=3, timeout=2.0)
    assert _ask(client) == REPLY
    assert srv.n_calls == 3


@pytest.mark.parametrize(
    ("kind", "exc_type", "status"),
    [
        ("500", openai.InternalServerError, 500),
        ("503", openai.InternalServerError, 503),
    ],
)
def test_server_errors(
    srv: OpenAIServer, kind: str, exc_type: type[openai.APIStatusError], status: int
) -> None:
    srv.script(Fault(kind))
    with pytest.raises(exc_type) as excinfo:
        _ask(_client(srv))
    assert excinfo.value.status_code == status


def test_scripted_drop_raises_connection_error(srv: OpenAIServer) -> None:
    srv.script(Fault("drop"))
    client = _client(srv)
    with pytest.raises(openai.APIConnectionError) as excinfo:
        _ask(client)
    assert not isinstance(excinfo.value, openai.APITimeoutError)
    assert _ask(client) == REPLY


def test_timeout_fault_makes_client_time_out_and_stop_is_prompt() -> None:
    server = OpenAIServer(_responder).start()
    try:
        server.script(Fault("timeout", delay=5.0))
        with pytest.raises(openai.APITimeoutError):
            _ask(_client(server, timeout=0.3))
    finally:
        t0 = time.monotonic()
        server.stop()
        assert time.monotonic() - t0 < 1.0  # sleeping handler does not block


def test_content_faults(srv: OpenAIServer) -> None:
    srv.script(
        Fault("malformed"),
        Fault("truncated"),
        Fault("text", text='{"verdicts": ["maybe"]}'),
    )
    client = _client(srv)
    malformed = _ask(client)
    assert malformed == MALFORMED_CONTENT
    truncated = _ask(client)
    assert truncated == REPLY[: len(REPLY) // 2]
    with pytest.raises(json.JSONDecodeError):
        json.loads(truncated)
    assert _ask(client) == '{"verdicts": ["maybe"]}'
    assert _ask(client) == REPLY


def test_fail_always_until_cleared(srv: OpenAIServer) -> None:
    srv.fail_always(Fault("503"))
    client = _client(srv)
    for _ in range(3):
        with pytest.raises(openai.InternalServerError):
            _ask(client)
    srv.fail_always(None)
    assert _ask(client) == REPLY
    assert srv.n_calls == 4


def test_latency_is_concurrent() -> None:
    with OpenAIServer(_responder, latency=0.2) as server:
        client = _client(server)
        _ask(client)  # warm up
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            replies = list(pool.map(lambda i: _ask(client, f"q{i}"), range(8)))
        elapsed = time.monotonic() - t0
    assert replies == [REPLY] * 8
    assert server.n_calls == 9
    # serial would be 1.6 s; this is a functional concurrency check
    assert elapsed < 1.0


def test_models_and_unknown_paths(srv: OpenAIServer) -> None:
    models = _client(srv).models.list()
    assert [m.id for m in models.data] == [MODEL_ID]
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(srv.base_url + "/nope", timeout=2.0)
    assert excinfo.value.code == 404
    assert "error" in json.loads(excinfo.value.read())
    assert srv.n_calls == 0  # only chat completions are recorded


def test_server_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with OpenAIServer(_responder) as server:
        client = _client(server)
        _ask(client)
        server.script(Fault("drop"), Fault("429"))
        for _ in range(2):
            with pytest.raises(openai.APIError):
                _ask(client)
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.base_url + "/nope", timeout=2.0)
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""


def test_unknown_fault_kind_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("418")


def test_base_url_requires_start() -> None:
    server = OpenAIServer(_responder)
    with pytest.raises(RuntimeError):
        _ = server.base_url
    server.stop()  # stopping a never-started server is a no-op
