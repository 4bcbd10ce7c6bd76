"""Structured verdicts: a strict JSON schema per request, the fallback to a JSON object and to plain text, the
mode detected once per endpoint and recorded with the scores (issue 11 item 1).

The servers are real loopback servers over the real openai SDK. Their "model" behaves like the small model the
issue ran: given a schema that fixes the verdict count it answers every item; without one it copies the
output rule's example and answers only the first.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.calls import JudgeRequest, Message, ReplyShape
from lib.core.errors import JudgeError
from lib.core.metrics import split_sentences
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.results import FAILED, OK
from lib.core.samples import EvalSample
from lib.jobs._demo import demo_samples
from lib.judging.harness import Instrument, score_samples
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.scoring import evaluate_run
from lib.judging.structured import (
    BOOK,
    GUIDED_JSON,
    JSON_OBJECT,
    JSON_OBJECT_SCHEMA,
    JSON_SCHEMA,
    MODES,
    OLLAMA_FORMAT,
    TEXT,
    ModeBook,
    body_fields,
    is_refusal,
    response_format,
    verdict_schema,
)
from lib.presentation import views
from lib.store import Store
from tests.conftest import offline_responder
from tests.support.openai_server import (
    LLAMA_CPP_FORMATS,
    LLAMA_CPP_REFUSAL,
    Fault,
    OpenAIServer,
    request_mode,
    response_format_type,
    schema_of,
)

MODEL = "small-local-model"
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


def small_model(body: dict) -> str:
    """The offline judge's verdicts, as a small model gives them: all of them only when a schema fixes the count
    (and then exactly as many as the schema asks), else just the first, copying a one-item example."""
    verdicts = json.loads(offline_responder(body))["verdicts"]
    if response_format_type(body) == JSON_SCHEMA:
        schema = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]
        assert schema["minItems"] == schema["maxItems"] == len(verdicts)
        return json.dumps({"verdicts": verdicts})
    return json.dumps({"verdicts": verdicts[:1]})


@pytest.fixture(scope="module")
def samples() -> list[EvalSample]:
    """Twelve demo samples whose answers hold two claims or more (so one verdict is too few)."""
    main, _ = demo_samples()
    many = [d.sample for d in main if len(split_sentences(d.sample.answer)) >= 2]
    return many[:12]


def judge_on(server: OpenAIServer, **options: object) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", timeout=10.0,
                       **options)  # type: ignore[arg-type]


# -- the rules -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("status", "message", "refusal"), [
    (400, "response_format json_schema not supported", True),      # vLLM, LM Studio: bad request
    (400, "Invalid schema for response_format", True),             # a strict schema a server cannot take
    (422, "unprocessable entity", True),                           # validation error of the request body
    (501, "not implemented", True),                                # a proxy without structured output
    (500, "Unsupported response_format type", True),               # llama.cpp-like: a 500 naming the format
    (500, "CUDA out of memory", False),                            # a server fault: retried, not a refusal
    (503, "response_format busy", False),                          # unavailable: retried
    (429, "rate limit", False),                                    # rate limited: retried
    (401, "bad key", False),                                       # final, and no mode would help
    (404, "no such route", False),                                 # final, and no mode would help
])
def test_which_errors_refuse_an_output_mode(status: int, message: str, refusal: bool) -> None:
    assert is_refusal(status, message) is refusal


def test_the_schema_fixes_the_count_the_item_numbers_and_the_verdict_words() -> None:
    schema = verdict_schema(ReplyShape(4, ("supported", "unsupported")))
    verdicts = schema["properties"]["verdicts"]  # type: ignore[index]
    assert (verdicts["minItems"], verdicts["maxItems"]) == (4, 4)
    one = verdicts["items"]
    assert one["properties"]["item"]["enum"] == [1, 2, 3, 4]
    assert one["properties"]["verdict"]["enum"] == ["supported", "unsupported"]
    # strict mode: every property required, no other property allowed, at every level
    assert one["required"] == ["item", "verdict", "evidence"] and one["additionalProperties"] is False
    assert schema["required"] == ["verdicts"] and schema["additionalProperties"] is False
    fmt = response_format(JSON_SCHEMA, ReplyShape(4, ("relevant", "irrelevant")))
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True  # type: ignore[index]
    assert response_format(JSON_OBJECT, None) == {"type": "json_object"}
    assert response_format(TEXT, None) is None


@pytest.mark.parametrize("mode", MODES)
def test_each_form_carries_the_schema_where_its_servers_read_it(mode: str) -> None:
    shape = ReplyShape(3, ("supported", "unsupported"))
    body = {"model": MODEL, "messages": [], **body_fields(mode, shape)}
    assert request_mode(body) == mode                                   # the loopback server reads it back
    assert schema_of(body) == (verdict_schema(shape) if mode in SCHEMA_FORMS else None)


SCHEMA_FORMS = (JSON_SCHEMA, JSON_OBJECT_SCHEMA, GUIDED_JSON, OLLAMA_FORMAT)


@pytest.mark.parametrize(("refused", "shape", "start", "first"), [
    ((), ReplyShape(2, ("a", "b")), JSON_SCHEMA, JSON_SCHEMA),        # nothing refused: the schema
    ((JSON_SCHEMA,), ReplyShape(2, ("a", "b")), JSON_SCHEMA, JSON_OBJECT_SCHEMA),   # llama-cpp-python's form
    ((JSON_SCHEMA, JSON_OBJECT_SCHEMA), ReplyShape(2, ("a", "b")), JSON_SCHEMA, GUIDED_JSON),   # vLLM's
    ((JSON_SCHEMA, JSON_OBJECT_SCHEMA, GUIDED_JSON), ReplyShape(2, ("a", "b")), JSON_SCHEMA, OLLAMA_FORMAT),
    (SCHEMA_FORMS, ReplyShape(2, ("a", "b")), JSON_SCHEMA, JSON_OBJECT),
    ((*SCHEMA_FORMS, JSON_OBJECT), ReplyShape(2, ("a", "b")), JSON_SCHEMA, TEXT),
    ((), None, JSON_SCHEMA, JSON_OBJECT),                             # no shape: no schema to send
    ((), ReplyShape(2, ("a", "b")), TEXT, TEXT),                      # json_mode off
])
def test_the_first_mode_is_the_strongest_not_refused(refused: tuple[str, ...], shape: ReplyShape | None,
                                                     start: str, first: str) -> None:
    book = ModeBook()
    book.refuse("http://h/v1", MODEL, list(refused))
    assert book.first("http://h/v1", MODEL, shape=shape, start=start) == first
    assert book.first("http://other/v1", MODEL, shape=shape, start=start) == (JSON_OBJECT if shape is None
                                                                                else start)


# -- servers -----------------------------------------------------------------------------------------
def test_a_server_honouring_the_schema_gets_one_and_every_reply_is_read(samples: list[EvalSample]) -> None:
    with OpenAIServer(small_model) as server:
        judge = judge_on(server, concurrency=4)
        results = score_samples(samples, FAITHFULNESS, judge)
        assert [r.status for r in results] == [OK] * len(samples), [r.reason for r in results]
        assert {response_format_type(b) for b in server.requests} == {JSON_SCHEMA}
        assert server.n_calls == len(samples) and server.refused == []
    assert judge.output_mode == JSON_SCHEMA


def test_without_a_schema_the_small_model_answers_one_item_and_fails(samples: list[EvalSample]) -> None:
    """The issue's failure, reproduced: JSON mode alone lets the model copy the example's single verdict."""
    with OpenAIServer(small_model, formats=frozenset({JSON_OBJECT})) as server:
        results = score_samples(samples[:3], FAITHFULNESS, judge_on(server))
    assert {r.status for r in results} == {FAILED}
    assert all("judge returned 1 verdicts for" in r.reason and r.score is None for r in results)


def test_a_server_refusing_the_schema_is_asked_for_json_once_refused(samples: list[EvalSample]) -> None:
    with OpenAIServer(offline_responder, formats=frozenset({JSON_OBJECT})) as server:
        judge = judge_on(server, concurrency=4)
        results = score_samples(samples, FAITHFULNESS, judge)
        assert [r.status for r in results] == [OK] * len(samples)
        assert server.refused == list(SCHEMA_FORMS)             # probed once for the endpoint...
        again = judge_on(server)                                # ...and remembered for every judge of it
        assert score_samples(samples[:2], FAITHFULNESS, again)[0].status == OK
        assert server.refused == list(SCHEMA_FORMS)
        kinds = [request_mode(b) for b in server.requests]
    assert kinds == [*SCHEMA_FORMS] + [JSON_OBJECT] * (len(samples) + 2)
    assert judge.output_mode == again.output_mode == JSON_OBJECT
    assert BOOK.refused(judge.endpoint, MODEL) == set(SCHEMA_FORMS)


def test_a_server_refusing_both_json_modes_is_asked_in_plain_text(samples: list[EvalSample]) -> None:
    with OpenAIServer(offline_responder, formats=frozenset()) as server:
        judge = judge_on(server)
        results = score_samples(samples[:4], FAITHFULNESS, judge)
        assert [r.status for r in results] == [OK] * 4
        assert server.refused == [*SCHEMA_FORMS, JSON_OBJECT]
        assert request_mode(server.requests[-1]) == TEXT
    assert judge.output_mode == TEXT


def test_a_request_refused_in_every_mode_fails_and_refuses_no_mode() -> None:
    """A 400 about the request itself (a prompt too long), not its format, is refused in every mode: the call
    fails, and the book does not learn that the endpoint takes no JSON."""
    request = JudgeRequest(MODEL, (Message("user", "CLAIMS:\nITEM 1: A claim."),),
                           shape=ReplyShape(1, ("supported", "unsupported")))
    with OpenAIServer(offline_responder) as server:
        server.fail_always(Fault("400"))
        judge = judge_on(server)
        with pytest.raises(JudgeError, match=r"refused the request \(400\)"):
            judge.complete(request)
        assert [request_mode(b) for b in server.requests] == list(MODES)
        assert BOOK.refused(judge.endpoint, MODEL) == frozenset()
        server.fail_always(None)
        assert judge.complete(request).text and response_format_type(server.requests[-1]) == JSON_SCHEMA
    assert judge.output_mode == JSON_SCHEMA


def test_the_mode_used_is_recorded_with_the_runs_scores(samples: list[EvalSample], tmp_path: Path) -> None:
    with OpenAIServer(offline_responder, formats=frozenset({JSON_OBJECT})) as server:
        run = evaluate_run("structured", samples[:3], judge_on(server), metrics=["faithfulness"],
                           started_at=datetime(2026, 12, 1))
    with Store(tmp_path / "runs.duckdb") as store:
        store.record_run(run)
        metrics = store.run_metrics("structured")
    assert metrics.iloc[0]["output_mode"] == JSON_OBJECT
    assert views.metric_table(metrics).iloc[0]["output_mode"] == JSON_OBJECT   # the Run page's metric table


# -- llama-cpp-python's server (issue 26 item 1) -------------------------------------------------------------
def item_words_model(body: dict) -> str:
    """The issue's small model: with a schema enforced as a grammar it writes item numbers; with bare JSON it
    copies the prompt's labels and writes "ITEM 1"."""
    verdicts = json.loads(offline_responder(body))["verdicts"]
    if schema_of(body) is None:
        verdicts = [{**v, "item": f"ITEM {v['item']}"} for v in verdicts]
    return json.dumps({"verdicts": verdicts})


def test_a_llama_cpp_server_gets_the_schema_inside_json_object_and_the_mode_is_recorded(
        samples: list[EvalSample], tmp_path: Path) -> None:
    """It refuses json_schema with a 500 naming the type and enforces a schema sent in json_object: the judge
    steps to that form once, keeps the schema, and every reply is read."""
    with OpenAIServer(item_words_model, formats=LLAMA_CPP_FORMATS, refusal=LLAMA_CPP_REFUSAL) as server:
        judge = judge_on(server, concurrency=4)
        run = evaluate_run("llama", samples, judge, metrics=["faithfulness"], started_at=datetime(2026, 12, 1))
        assert server.refused == [JSON_SCHEMA]
        kinds = [request_mode(b) for b in server.requests]
        assert kinds == [JSON_SCHEMA] + [JSON_OBJECT_SCHEMA] * len(samples)
        assert all(schema_of(b) is not None for b in server.requests)
    with Store(tmp_path / "runs.duckdb") as store:
        store.record_run(run)
        metrics = store.run_metrics("llama")
    assert metrics.iloc[0]["output_mode"] == JSON_OBJECT_SCHEMA and int(metrics.iloc[0]["n_failed"]) == 0


@pytest.mark.parametrize(("item", "read"), [
    (1, 1), ("1", 1), ("ITEM 1", 1), ("item 1", 1), (" ITEM  1 ", 1),
    ("ITEM one", None), ("first", None), ("1.5", None), (None, None),
])
def test_an_item_written_as_its_label_is_that_item_anything_else_fails_naming_field_and_value(
        item: object, read: int | None) -> None:
    from lib.judging.harness import parse_verdicts

    text = json.dumps({"verdicts": [{"item": item, "verdict": "supported", "evidence": ""}]})
    if read is not None:
        assert [v.label for v in parse_verdicts(text, ["a claim"], ("supported", "unsupported"))] == [True]
        return
    with pytest.raises(ValueError) as caught:
        parse_verdicts(text, ["a claim"], ("supported", "unsupported"))
    reason = str(caught.value)
    if item is None:
        assert reason == "judge returned a verdict without an item number"
    else:
        assert f"verdicts[0].item is {item!r}" in reason
