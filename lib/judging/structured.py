"""How a model judge is asked for its verdicts: a JSON schema (in one of the forms servers honour), a JSON
object, or plain text.

A strict JSON schema built from the request (exactly N verdict objects, item
numbers 1..N, the metric's two verdict words) makes a small model's replies
readable: it can no longer copy a one-item example, invent a third verdict
word or write "ITEM 1" for an item number. Servers take a schema in different
forms, so the judge asks in the strongest form first and steps down on a
refusal:

    json_schema          response_format {"type": "json_schema", ...} (OpenAI, vLLM, Ollama, LM Studio)
    json_object_schema   response_format {"type": "json_object", "schema": ...} (llama-cpp-python: a grammar)
    guided_json          the body's "guided_json" (vLLM before response_format took a schema)
    ollama_format        the body's "format" (Ollama)
    json_object          response_format {"type": "json_object"}: JSON, no schema
    text                 nothing asked

A server that ignores a field it does not know (rather than refusing it) is
recorded in the mode that was sent; its replies are read the same way either
way (lib.judging.harness), and a reply the schema would have excluded fails
with what the judge wrote.

A refusal is remembered per (normalised endpoint, model) in a ModeBook, so an
endpoint is probed once per process, not once per call. Pure values and
functions here; lib.judging.openai_judge does the calling.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from lib.core.calls import JudgeReply, JudgeRequest, ReplyShape, Usage

JSON_SCHEMA = "json_schema"
JSON_OBJECT_SCHEMA = "json_object_schema"
GUIDED_JSON = "guided_json"
OLLAMA_FORMAT = "ollama_format"
JSON_OBJECT = "json_object"
TEXT = "text"
MODES: tuple[str, ...] = (JSON_SCHEMA, JSON_OBJECT_SCHEMA, GUIDED_JSON, OLLAMA_FORMAT, JSON_OBJECT,
                          TEXT)   # strongest first
SCHEMA_MODES = frozenset({JSON_SCHEMA, JSON_OBJECT_SCHEMA, GUIDED_JSON, OLLAMA_FORMAT})   # these need the shape
SCHEMA_NAME = "evaldrift_verdicts"

# Words a server's refusal uses when it cannot honour response_format (vLLM, llama.cpp, LM Studio, proxies).
_REFUSAL_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured", "guided",
                  "format")


def verdict_schema(shape: ReplyShape) -> dict[str, object]:
    """The JSON schema of a reply: {"verdicts": [exactly `items` objects {item, verdict, evidence}]}.

    Strict-mode rules (OpenAI's subset): every object lists all its properties
    as required and forbids others.
    """
    verdict = {
        "type": "object",
        "properties": {
            "item": {"type": "integer", "enum": list(range(1, shape.items + 1))},
            "verdict": {"type": "string", "enum": list(shape.labels)},
            "evidence": {"type": "string"},
        },
        "required": ["item", "verdict", "evidence"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "items": verdict,
                                    "minItems": shape.items, "maxItems": shape.items}},
        "required": ["verdicts"],
        "additionalProperties": False,
    }


def response_format(mode: str, shape: ReplyShape | None) -> dict[str, object] | None:
    """The `response_format` argument for a mode (None: none sent; see `body_fields` for every field)."""
    fmt = body_fields(mode, shape).get("response_format")
    return fmt if isinstance(fmt, dict) else None


def body_fields(mode: str, shape: ReplyShape | None) -> dict[str, object]:
    """The fields a chat.completions body gets for a mode ({}: plain text, nothing sent)."""
    if mode not in MODES:
        raise ValueError(f"unknown output mode {mode!r}; known: {', '.join(MODES)}")
    if mode in SCHEMA_MODES and shape is None:
        raise ValueError("a JSON schema needs the reply's shape")
    if mode == JSON_SCHEMA:
        return {"response_format": {"type": JSON_SCHEMA, "json_schema": {
            "name": SCHEMA_NAME, "schema": verdict_schema(shape), "strict": True}}}  # type: ignore[arg-type]
    if mode == JSON_OBJECT_SCHEMA:
        return {"response_format": {"type": JSON_OBJECT, "schema": verdict_schema(shape)}}  # type: ignore[arg-type]
    if mode == GUIDED_JSON:
        return {"guided_json": verdict_schema(shape)}  # type: ignore[arg-type]
    if mode == OLLAMA_FORMAT:
        return {"format": verdict_schema(shape)}  # type: ignore[arg-type]
    if mode == JSON_OBJECT:
        return {"response_format": {"type": JSON_OBJECT}}
    return {}


def is_refusal(status: int, message: str) -> bool:
    """Whether an HTTP error answering a request in a structured mode refuses that mode.

    400 and 422 are how servers reject a request they cannot parse or honour;
    501 says "not implemented"; some servers answer 500 naming the format.
    Any other status (429, 503, 401, ...) is about something else.
    """
    text = message.lower()
    if status in (400, 422, 501):
        return True
    return status == 500 and any(w in text for w in _REFUSAL_WORDS)


class ModeBook:
    """The output modes each (endpoint, model) has refused, shared by every judge of a process.

    Refusals are written only once a lower mode has answered: a request that
    fails for another reason (a prompt too long) is refused in every mode and
    teaches nothing. Until an endpoint has answered once, its calls probe one
    at a time (`probing`), so concurrent first calls do not each pay the
    refusals: the endpoint is probed once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refused: dict[tuple[str, str], set[str]] = {}
        self._settled: set[tuple[str, str]] = set()
        self._probes: dict[tuple[str, str], threading.Lock] = {}

    @contextlib.contextmanager
    def probing(self, endpoint: str, model: str) -> Iterator[None]:
        """Held around a call while the endpoint has not answered yet; a no-op once it has (also for the calls
        that were waiting for the probe when it answered)."""
        key = (endpoint, model)
        with self._lock:
            probe = None if key in self._settled else self._probes.setdefault(key, threading.Lock())
        if probe is None:
            yield
            return
        with probe:
            with self._lock:
                settled = key in self._settled
            if not settled:
                yield
                return
        yield

    def settle(self, endpoint: str, model: str, refused: list[str]) -> None:
        """Record an answer: the modes refused before it, and that the endpoint needs no more probing."""
        self.refuse(endpoint, model, refused)
        with self._lock:
            self._settled.add((endpoint, model))

    def first(self, endpoint: str, model: str, *, shape: ReplyShape | None, start: str = JSON_SCHEMA) -> str:
        """The strongest mode from `start` down that this endpoint has not refused (a schema needs a shape)."""
        with self._lock:
            refused = set(self._refused.get((endpoint, model), ()))
        for mode in MODES[MODES.index(start):]:
            if mode in SCHEMA_MODES and shape is None:
                continue
            if mode not in refused:
                return mode
        return TEXT

    def refuse(self, endpoint: str, model: str, modes: list[str]) -> None:
        """Remember that the endpoint refused these modes (called once a lower mode worked)."""
        if not modes:
            return
        with self._lock:
            self._refused.setdefault((endpoint, model), set()).update(m for m in modes if m != TEXT)

    def probes_left(self, endpoint: str, model: str) -> int:
        """The refused requests finding this endpoint's output mode can still cost: 0 once it has answered, else
        one per mode above plain text not yet refused (what a cost estimate adds)."""
        with self._lock:
            if (endpoint, model) in self._settled:
                return 0
            return len([m for m in MODES[:-1] if m not in self._refused.get((endpoint, model), ())])

    def refused(self, endpoint: str, model: str) -> frozenset[str]:
        with self._lock:
            return frozenset(self._refused.get((endpoint, model), ()))

    def clear(self) -> None:
        with self._lock:
            self._refused.clear()
            self._settled.clear()
            self._probes.clear()


def next_mode(mode: str) -> str | None:
    """The mode to try after `mode` is refused (None after plain text)."""
    i = MODES.index(mode)
    return MODES[i + 1] if i + 1 < len(MODES) else None


BOOK = ModeBook()   # the process's: one probe per endpoint and model, whichever judge asks


def reply_of(body: Any) -> JudgeReply:
    """The text, usage, fingerprint and served model of a chat completion body (raises ValueError, KeyError or
    TypeError if it is not one). The batch path reads its output lines with it too."""
    choices = body["choices"]
    choice = choices[0] if choices else None
    text = (choice["message"].get("content") or "") if choice else ""
    if not isinstance(text, str):
        raise TypeError("the content is not text")
    u = body.get("usage")
    usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)) if u else Usage()
    fingerprint = body.get("system_fingerprint")
    served = body.get("model")
    return JudgeReply(text=text, usage=usage, fingerprint=fingerprint if isinstance(fingerprint, str) else None,
                      served_model=served if isinstance(served, str) and served else None)


def chat_body(request: JudgeRequest, mode: str) -> dict[str, object]:
    """The chat.completions body of a request in an output mode (a live call's, and a batch line's)."""
    body: dict[str, object] = {
        "model": request.model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "temperature": request.temperature,
    }
    if request.seed is not None:
        body["seed"] = request.seed
    body.update(body_fields(mode, request.shape))
    return body
