"""The OpenAI-compatible judge, through the real openai SDK over HTTP to a loopback server.

The server's model is the offline judge (see conftest), so a verdict that
differs from the offline judge's own is a fault of the transport, never of the
model.
"""

from __future__ import annotations

import email.utils
import math
from datetime import UTC, datetime, timedelta

import pytest

from lib.core.calls import JudgeRequest, Message
from lib.core.errors import JudgeError
from lib.core.metrics import METRIC_NAMES, split_sentences
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.results import FAILED, OK, aggregate
from lib.core.samples import EvalSample
from lib.jobs._demo import demo_samples
from lib.judging import MemoryCache, OfflineJudge
from lib.judging.base import Judge
from lib.judging.harness import Instrument, score_sample, score_samples
from lib.judging.openai_judge import OpenAIJudge, _retry_after
from lib.store import Store
from tests.support.openai_server import Fault, OpenAIServer

API_KEY = "sk-test-do-not-leak-4242"
MODEL = "evaldrift-test-model"
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


class Sleeps:
    """Records the waits a judge asks for instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_judge(server: OpenAIServer, **options: object) -> OpenAIJudge:
    options.setdefault("sleep", Sleeps())
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key=API_KEY, timeout=5.0, **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def samples() -> list[EvalSample]:
    main, _ = demo_samples()
    return [d.sample for d in main[:20]]


def test_openai_judge_satisfies_the_judge_protocol_and_is_cacheable(openai_server: OpenAIServer) -> None:
    judge = make_judge(openai_server)
    assert isinstance(judge, Judge)
    assert judge.cacheable is True


@pytest.mark.parametrize("metric", METRIC_NAMES)
def test_verdicts_over_http_equal_the_offline_judges_own(
        openai_server: OpenAIServer, samples: list[EvalSample], metric: str) -> None:
    inst = Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED)
    remote = score_samples(samples, inst, make_judge(openai_server, concurrency=4))
    local = score_samples(samples, inst, OfflineJudge())
    assert [(r.sample_id, r.status, r.verdicts) for r in remote] == [
        (r.sample_id, r.status, r.verdicts) for r in local]
    assert [r.score for r in remote] == [r.score for r in local]
    scored = sum(r.status == OK for r in local)
    assert scored > 15
    assert openai_server.n_calls == scored


def test_requests_carry_model_messages_seed_and_a_json_schema(openai_server: OpenAIServer,
                                                          samples: list[EvalSample]) -> None:
    score_sample(samples[0], FAITHFULNESS, make_judge(openai_server), seed=11)
    body = openai_server.requests[0]
    assert body["model"] == MODEL
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert samples[0].contexts[0] in body["messages"][1]["content"]
    assert body["seed"] == 11
    assert body["temperature"] == 0.0
    # a strict schema for this request: as many verdicts as the sample has claims, in the metric's words
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    verdicts = fmt["json_schema"]["schema"]["properties"]["verdicts"]
    claims = len(split_sentences(samples[0].answer))
    assert verdicts["minItems"] == verdicts["maxItems"] == claims
    assert verdicts["items"]["properties"]["verdict"]["enum"] == ["supported", "unsupported"]


def test_token_usage_is_recorded(openai_server: OpenAIServer, samples: list[EvalSample]) -> None:
    results = score_samples(samples[:5], FAITHFULNESS, make_judge(openai_server))
    for r in results:
        assert r.status == OK
        assert r.calls == 1
        assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    usage = aggregate(results).usage
    assert usage.prompt_tokens == sum(r.usage.prompt_tokens for r in results) > 0


def test_reply_carries_the_servers_fingerprint(openai_server: OpenAIServer) -> None:
    judge = make_judge(openai_server)
    reply = judge.complete(JudgeRequest(MODEL, (Message("user", "CLAIMS:\nITEM 1: A claim."),)))
    assert reply.fingerprint == "fp_test"
    # the test server counts whitespace-separated words: CLAIMS: / ITEM / 1: / A / claim.
    assert reply.usage.prompt_tokens == 5


def test_recovers_from_a_rate_limit_honouring_retry_after(openai_server: OpenAIServer,
                                                          samples: list[EvalSample]) -> None:
    sleeps = Sleeps()
    judge = make_judge(openai_server, sleep=sleeps)
    openai_server.script(Fault("429", retry_after=0.01))
    result = score_sample(samples[0], FAITHFULNESS, judge)
    assert result.status == OK
    assert result.verdicts == score_sample(samples[0], FAITHFULNESS, OfflineJudge()).verdicts
    assert openai_server.n_calls == 2
    assert sleeps.waits == [0.01]
    assert judge.retries == ["rate limited (429)"]


@pytest.mark.parametrize("kind", ["500", "503"])
def test_recovers_from_a_server_error_with_bounded_backoff(openai_server: OpenAIServer,
                                                           samples: list[EvalSample], kind: str) -> None:
    sleeps = Sleeps()
    judge = make_judge(openai_server, sleep=sleeps, backoff=0.5)
    openai_server.script(Fault(kind))
    result = score_sample(samples[0], FAITHFULNESS, judge)
    assert result.status == OK
    assert openai_server.n_calls == 2
    assert judge.retries == [f"server error ({kind})"]
    # first retry: full jitter in [0, backoff * 2**0]
    assert len(sleeps.waits) == 1 and 0.0 <= sleeps.waits[0] <= 0.5


def test_recovers_from_a_dropped_connection(openai_server: OpenAIServer, samples: list[EvalSample]) -> None:
    judge = make_judge(openai_server)
    openai_server.script(Fault("drop"))
    assert score_sample(samples[0], FAITHFULNESS, judge).status == OK
    assert openai_server.n_calls == 2
    assert judge.retries[0].startswith("connection failed")


def test_a_rate_limit_that_never_lifts_fails_the_sample_after_max_attempts(
        openai_server: OpenAIServer, samples: list[EvalSample]) -> None:
    sleeps = Sleeps()
    judge = make_judge(openai_server, sleep=sleeps, max_attempts=3)
    openai_server.fail_always(Fault("429", retry_after=0.01))
    result = score_sample(samples[0], FAITHFULNESS, judge)
    assert result.status == FAILED
    assert result.score is None
    assert result.reason == "judge call failed: rate limited (429), after 3 attempts"
    assert openai_server.n_calls == 3
    # waits between attempts only, none after the last
    assert sleeps.waits == [0.01, 0.01]


def test_a_refused_request_is_not_retried(openai_server: OpenAIServer) -> None:
    judge = OpenAIJudge(MODEL, base_url=openai_server.base_url + "/nowhere", api_key=API_KEY, sleep=Sleeps())
    with pytest.raises(JudgeError, match="refused the request \\(404\\)"):
        judge.complete(JudgeRequest(MODEL, (Message("user", "hello"),)))
    assert judge.attempts == 1


def test_a_bug_of_ours_in_the_call_is_raised_not_retried_as_an_unreadable_reply(
        openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    judge = make_judge(openai_server)

    async def broken_post(kwargs: dict[str, object], timeout: float) -> object:
        raise AttributeError("'NoneType' object has no attribute 'post'")   # e.g. a client not made yet

    monkeypatch.setattr(judge, "_post", broken_post)
    with pytest.raises(AttributeError, match="no attribute 'post'"):
        judge.complete(JudgeRequest(MODEL, (Message("user", "hello"),)))
    assert judge.attempts == 1 and judge.retries == []


def test_repeated_malformed_json_marks_the_sample_failed_after_parse_attempts(
        openai_server: OpenAIServer, samples: list[EvalSample]) -> None:
    openai_server.fail_always(Fault("malformed"))
    result = score_sample(samples[0], FAITHFULNESS, make_judge(openai_server), parse_attempts=3)
    assert result.status == FAILED
    assert result.score is None
    assert result.verdicts == ()
    assert "not JSON" in result.reason and "after 3 attempts" in result.reason
    assert openai_server.n_calls == 3
    assert result.calls == 3


def test_a_truncated_reply_is_asked_again(openai_server: OpenAIServer, samples: list[EvalSample]) -> None:
    openai_server.script(Fault("truncated"))
    result = score_sample(samples[0], FAITHFULNESS, make_judge(openai_server), parse_attempts=3)
    assert result.status == OK
    assert openai_server.n_calls == 2


def _rerun_sends_nothing(server: OpenAIServer, samples: list[EvalSample], cache: object) -> None:
    judge = make_judge(server, concurrency=4)
    first = score_samples(samples, FAITHFULNESS, judge, cache=cache)  # type: ignore[arg-type]
    sent = server.n_calls
    assert sent == sum(r.status == OK for r in first) > 0
    second = score_samples(samples, FAITHFULNESS, make_judge(server), cache=cache)  # type: ignore[arg-type]
    assert server.n_calls == sent
    assert [r.verdicts for r in second] == [r.verdicts for r in first]
    assert all(r.cached and r.calls == 0 for r in second if r.status == OK)


def test_memory_cache_makes_an_identical_rerun_send_no_requests(openai_server: OpenAIServer,
                                                                samples: list[EvalSample]) -> None:
    _rerun_sends_nothing(openai_server, samples, MemoryCache())


def test_store_cache_makes_an_identical_rerun_send_no_requests_even_after_reopening(
        openai_server: OpenAIServer, samples: list[EvalSample], fresh_db) -> None:
    with Store(fresh_db) as store:
        _rerun_sends_nothing(openai_server, samples, store)
        cached = store.counts()["judge_cache"]
        assert cached == openai_server.n_calls
    sent = openai_server.n_calls
    with Store(fresh_db) as store:
        score_samples(samples, FAITHFULNESS, make_judge(openai_server), cache=store)
        assert store.counts()["judge_cache"] == cached
    assert openai_server.n_calls == sent


def test_the_api_key_is_sent_to_the_server_and_never_shown(openai_server: OpenAIServer) -> None:
    judge = make_judge(openai_server)
    judge.complete(JudgeRequest(MODEL, (Message("user", "hello"),)))
    headers = {k.lower(): v for k, v in openai_server.headers_seen[0].items()}
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert API_KEY not in repr(judge)
    assert API_KEY not in str(judge)
    assert repr(judge) == f"OpenAIJudge(model={MODEL!r}, base_url={openai_server.base_url!r})"


class _Headers:
    """What `_retry_after` reads from an APIStatusError: its response's headers."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.response = type("Response", (), {"headers": {k.lower(): v for k, v in headers.items()}})()


@pytest.mark.parametrize(("headers", "wait"), [
    ({}, None),                                                   # no hint: our own backoff
    ({"Retry-After": "2.5"}, 2.5),                                # seconds
    ({"Retry-After": "-5"}, None),                                # negative: ignored
    ({"Retry-After": "nan"}, None),                               # NaN: ignored
    ({"Retry-After": "inf"}, math.inf),                           # never: the judge stops asking
    ({"Retry-After": "soon"}, None),                              # unreadable: ignored
    ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),     # a date in the past: negative, ignored
    ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),        # milliseconds, preferred (OpenAI sends both)
])
def test_the_servers_wait_hint_is_read_sanely(headers: dict[str, str], wait: float | None) -> None:
    assert _retry_after(_Headers(headers)) == wait  # type: ignore[arg-type]


def test_a_retry_after_date_in_the_future_is_seconds_from_now() -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25.0 < _retry_after(_Headers({"Retry-After": when})) <= 30.0  # type: ignore[arg-type, operator]
