"""The judge seam: chat messages in, text (JSON verdicts) and token usage out."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lib.judges.structured import ReplyShape

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
        endpoint: where the judge lives, normalised and without credentials (lib.endpoints): the same
            model name on two servers is two judges, so a reply never crosses endpoints in the cache.
        shape: what a valid reply holds (how many verdicts, which two words), for a judge that can ask
            the server for exactly that (a JSON schema). Derived from the messages, so not part of the key.
        template: the template the last message was rendered from (lib.prompts), for a judge that tells
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

    @property
    def key(self) -> str:
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
    """

    text: str
    usage: Usage = Usage()
    fingerprint: str | None = None
    cached: bool = False


@runtime_checkable
class Judge(Protocol):
    """A judge: anything with a model name that answers a request.

    `concurrency` is how many calls the harness may have in flight; `cacheable`
    says whether replies are worth keeping in the call cache (a paid model:
    yes; the free offline judge: no). A judge may also have an `endpoint`
    (normalised, no credentials; see `judge_endpoint`), part of its identity.
    """

    model: str
    concurrency: int
    cacheable: bool

    def complete(self, request: JudgeRequest) -> JudgeReply: ...


def judge_endpoint(judge: object) -> str:
    """A judge's endpoint identity ('' for a judge that names none)."""
    return str(getattr(judge, "endpoint", "") or "")


class CallCache(Protocol):
    """A store of valid replies keyed by JudgeRequest.key."""

    def get(self, key: str) -> JudgeReply | None: ...

    def put(self, request: JudgeRequest, reply: JudgeReply) -> None: ...


class MemoryCache:
    """A CallCache in a dict (tests, one-off scripts)."""

    def __init__(self) -> None:
        self._replies: dict[str, JudgeReply] = {}

    def get(self, key: str) -> JudgeReply | None:
        return self._replies.get(key)

    def put(self, request: JudgeRequest, reply: JudgeReply) -> None:
        self._replies[request.key] = reply

    def __len__(self) -> int:
        return len(self._replies)
