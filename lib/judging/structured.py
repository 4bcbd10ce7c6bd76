"""How a model judge is asked for its verdicts: a JSON schema, a JSON object, or plain text.

A strict JSON schema built from the request (exactly N verdict objects, item
numbers 1..N, the metric's two verdict words) makes a small model's replies
readable: it can no longer copy a one-item example or invent a third verdict
word. Not every OpenAI-compatible server takes a schema, so the judge asks
for the strongest mode first and steps down on a refusal:

    json_schema  ->  json_object  ->  text

A refusal is remembered per (normalised endpoint, model) in a ModeBook, so an
endpoint is probed once per process, not once per call. Pure values and
functions here; lib.judging.openai_judge does the calling.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from lib.core.calls import ReplyShape

JSON_SCHEMA = "json_schema"
JSON_OBJECT = "json_object"
TEXT = "text"
MODES: tuple[str, ...] = (JSON_SCHEMA, JSON_OBJECT, TEXT)   # strongest first
SCHEMA_NAME = "evaldrift_verdicts"

# Words a server's refusal uses when it cannot honour response_format (vLLM, llama.cpp, LM Studio, proxies).
_REFUSAL_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")


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
    """The `response_format` argument for a mode (None: plain text, nothing sent)."""
    if mode == JSON_SCHEMA:
        if shape is None:
            raise ValueError("a JSON schema needs the reply's shape")
        return {"type": JSON_SCHEMA,
                "json_schema": {"name": SCHEMA_NAME, "schema": verdict_schema(shape), "strict": True}}
    if mode == JSON_OBJECT:
        return {"type": JSON_OBJECT}
    if mode == TEXT:
        return None
    raise ValueError(f"unknown output mode {mode!r}; known: {', '.join(MODES)}")


def is_refusal(status: int, message: str) -> bool:
    """Whether an HTTP error answering a request with response_format refuses that format.

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
            if mode == JSON_SCHEMA and shape is None:
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
