"""What crosses the judge seam, as data: a request (chat messages, seed, the reply's shape) and a reply.

The store keeps these in its call cache and the harness sends them; neither needs the other. Judges
live in lib.judging.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class ReplyShape:
    """What a valid reply to one request holds: `items` verdicts, each one of the two `labels`."""

    items: int
    labels: tuple[str, str]



STOPPED_PREFIX = "not asked: "   # a judge's reason for an attempt it did not make because its job was stopped


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class JudgeRequest:
    """Everything that decides a judge's answer; its key is the call-cache key.

    Attributes:
        model: the judge model.
        messages: the chat messages.
        temperature: sampling temperature.
        seed: the sampling seed (repeats of a noise band differ only here).
        endpoint: where the judge lives, normalised and without credentials (lib.core.endpoints): the same
            model name on two servers is two judges, so a reply never crosses endpoints in the cache.
        shape: what a valid reply holds (how many verdicts, which two words), for a judge that can ask
            the server for exactly that (a JSON schema). Derived from the messages, so not part of the key.
        template: the template the last message was rendered from (lib.core.prompts), for a judge that tells
            the rendered fields from the template's own words by its placeholders (the offline judge). A
            model reads only the messages, so it is not part of the key.
    """

    model: str
    messages: tuple[Message, ...]
    temperature: float = 0.0
    seed: int | None = None
    endpoint: str = ""
    shape: ReplyShape | None = None
    template: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {"model": self.model, "endpoint": self.endpoint, "messages": [[m.role, m.content] for m in self.messages],
             "temperature": self.temperature, "seed": self.seed},
            sort_keys=True, ensure_ascii=False,
        )

    @functools.cached_property
    def key(self) -> str:   # computed once: a call asks for it at every step (flights, cache, store)
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    @property
    def prompt(self) -> str:
        """All message contents, the way a model reads them: as one text."""
        return "\n\n".join(m.content for m in self.messages)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class JudgeReply:
    """What a judge said.

    Attributes:
        text: the raw reply (expected: JSON verdicts).
        usage: token usage of the call (zero when answered from cache).
        fingerprint: the server's system_fingerprint, when it sends one.
        cached: True when answered from the call cache without a call.
        served_model: the model the server says it served (the reply's `model`), when it names one: a hosted
            name can stand for another model tomorrow (lib.diagnosis.trends marks the change).
    """

    text: str
    usage: Usage = Usage()
    fingerprint: str | None = None
    cached: bool = False
    served_model: str | None = None
