"""The judge seam: chat messages in, text (JSON verdicts) and token usage out."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lib.core.calls import JudgeReply, JudgeRequest

if TYPE_CHECKING:
    from lib.judging.pacing import PacingReport


@runtime_checkable
class Judge(Protocol):
    """A judge: anything with a model name that answers a request.

    `concurrency` is how many calls the harness may have in flight; `cacheable`
    says whether replies are worth keeping in the call cache (a paid model:
    yes; the free offline judge: no). A judge may also have abilities, each a
    protocol below, asked for with isinstance (never by attribute name): an
    endpoint (`HasEndpoint`), a stop (`Stoppable`), the output mode it asked
    for (`ReportsOutputMode`, `ChoosesJsonMode`), and what its pacer measured
    (`Paced`).
    """

    model: str
    concurrency: int
    cacheable: bool

    def complete(self, request: JudgeRequest) -> JudgeReply: ...


@runtime_checkable
class HasEndpoint(Protocol):
    """A judge that says where it lives (normalised, no credentials; "offline" for the embedded judges): part of
    its identity and of every call's cache key."""

    endpoint: str


@runtime_checkable
class Stoppable(Protocol):
    """A judge that can be told to stop: its waits end, its calls in flight are cancelled, no new attempt is made
    (what a tripped breaker calls)."""

    def stop(self, reason: str = ...) -> None: ...


@runtime_checkable
class ReportsOutputMode(Protocol):
    """A judge that reports how it asked for its JSON verdicts on its last answered call (None: none yet)."""

    output_mode: str | None


@runtime_checkable
class ChoosesJsonMode(Protocol):
    """A judge that asks for JSON (True) or plain text (False) and reports no mode of its own."""

    json_mode: bool


@runtime_checkable
class Paced(Protocol):
    """A judge whose calls a pacer adapts: what it measured (concurrency reached, latencies, back-offs)."""

    @property
    def pacing(self) -> PacingReport: ...


def judge_endpoint(judge: Judge) -> str:
    """A judge's endpoint identity ('' for a judge that names none)."""
    return str(judge.endpoint or "") if isinstance(judge, HasEndpoint) else ""


def judge_stop(judge: Judge) -> Callable[[str], None] | None:
    """The judge's stop, for a breaker to call when it trips (None: the judge cannot be stopped)."""
    return judge.stop if isinstance(judge, Stoppable) else None


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
