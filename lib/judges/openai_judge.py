"""A judge on any OpenAI-compatible chat.completions server, through the openai SDK.

The SDK's own retries are switched off (max_retries=0) so that every attempt,
its wait and its reason are ours to bound and record: 429 (honouring
Retry-After), 5xx, 408/409, timeouts, dropped connections and 200 replies
whose body is no chat completion are retried with exponential backoff and
full jitter; other 4xx are final.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable

import openai

from lib.endpoints import normalise
from lib.errors import JudgeError
from lib.judges.base import JudgeReply, JudgeRequest, Usage


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
    except AttributeError:
        return None
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    # A negative or NaN hint would make time.sleep raise; fall back to our own backoff.
    return seconds if seconds is not None and 0.0 <= seconds <= math.inf else None


def _reply(resp: object) -> JudgeReply:
    """The text, usage and fingerprint of a chat completion (raises if it is not one)."""
    choice = resp.choices[0] if resp.choices else None  # type: ignore[attr-defined]
    text = (choice.message.content or "") if choice else ""
    u = resp.usage  # type: ignore[attr-defined]
    usage = Usage(u.prompt_tokens, u.completion_tokens) if u else Usage()
    return JudgeReply(text=text, usage=usage, fingerprint=resp.system_fingerprint)  # type: ignore[attr-defined]


class OpenAIJudge:
    """A judge that calls `chat.completions` on an OpenAI-compatible server.

    Args:
        model: the model name the server knows.
        base_url: the server's /v1 URL (OpenAI, vLLM, Ollama, LM Studio, ...).
        api_key: the key; never logged, stored or shown.
        timeout: seconds for one attempt.
        max_attempts: attempts per call, first included.
        backoff: base of the exponential backoff, seconds.
        max_backoff: cap on one wait, seconds (Retry-After is capped too).
        concurrency: calls the harness may have in flight at once.
        json_mode: ask the server for a JSON object (response_format).
        sleep: how to wait (tests pass a recorder).
    """

    cacheable = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_attempts: int = 4, backoff: float = 0.5,
                 max_backoff: float = 20.0, concurrency: int = 8, json_mode: bool = True,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model
        self.base_url = base_url
        self.endpoint = normalise(base_url)   # identity and display text: no credentials
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.json_mode = json_mode
        self._sleep = sleep
        self._client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                     timeout=timeout, max_retries=0)
        self._lock = threading.Lock()
        self.attempts = 0
        self.retries: list[str] = []

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIJudge(model={self.model!r}, base_url={self.endpoint if self.base_url else None!r})"

    def _wait(self, attempt: int, hint: float | None) -> None:
        if hint is not None:
            delay = min(hint, self.max_backoff)
        else:
            delay = random.uniform(0, min(self.max_backoff, self.backoff * 2 ** attempt))
        self._sleep(delay)

    def complete(self, request: JudgeRequest) -> JudgeReply:
        kwargs: dict[str, object] = {
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if self.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        last = ""
        for attempt in range(self.max_attempts):
            with self._lock:
                self.attempts += 1
            hint: float | None = None
            try:
                reply = _reply(self._client.chat.completions.create(**kwargs))
            except openai.RateLimitError as exc:
                last, hint = "rate limited (429)", _retry_after(exc)
            except openai.APITimeoutError:
                last = "timed out"
            except openai.APIConnectionError as exc:
                last = f"connection failed: {type(exc).__name__}"
            except openai.APIStatusError as exc:
                if exc.status_code < 500 and exc.status_code not in (408, 409):  # the SDK retries 408/409 too
                    raise JudgeError(f"judge server refused the request ({exc.status_code})") from None
                kind = "server error" if exc.status_code >= 500 else "retryable status"
                last, hint = f"{kind} ({exc.status_code})", _retry_after(exc)
            except (openai.APIResponseValidationError, ValueError, AttributeError, IndexError, TypeError):
                # A 200 whose body is no chat completion (a proxy's HTML page, a cut-off body): retried.
                last = "unreadable response (not a chat completion)"
            else:
                return reply
            with self._lock:
                self.retries.append(last)
            if attempt + 1 < self.max_attempts:
                self._wait(attempt, hint)
        raise JudgeError(f"{last}, after {self.max_attempts} attempts", retryable=True)
