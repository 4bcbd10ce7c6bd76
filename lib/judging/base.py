"""The judge seam: chat messages in, text (JSON verdicts) and token usage out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from lib.core.calls import JudgeReply, JudgeRequest


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
