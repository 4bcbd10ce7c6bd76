"""A judge on any OpenAI-compatible chat.completions server, through the openai SDK.

The SDK's own retries are switched off (max_retries=0) so that every attempt,
its wait and its reason are ours to bound and record: 429 (honouring
Retry-After up to a cap), 5xx, 408/409, timeouts, dropped connections and 200
replies whose body is no chat completion are retried with exponential backoff
and full jitter; other 4xx are final.

Verdicts are asked for as a strict JSON schema built from the request
(lib.judging.structured); a server that refuses it is asked for the schema in
the other forms servers honour, then for a JSON object, then for plain text,
and the refusals are remembered for its endpoint. Every
attempt passes through a Pacer (lib.judging.pacing), which keeps as many calls
in flight as the server sustains. `stop()` ends waits and refuses new
attempts: a job's circuit breaker or deadline (lib.judging.breaker) calls it.

Calls run on one event loop per judge (lib.judging.loop) through the SDK's
AsyncOpenAI client over its aiohttp transport (lib.judging.transport); the
harness's threads only wait for them. The body is
posted with the client's own `post` and read as JSON: the SDK's typed request
transform and response models cost more client CPU than the call itself at 64
in flight, and a verdict needs only the content, the usage and the
fingerprint. Status errors, timeouts and dropped connections still arrive as
the SDK's exceptions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import math
import random
import threading
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx2
import openai

from lib.core.calls import STOPPED_PREFIX, JudgeReply, JudgeRequest
from lib.core.endpoints import normalise
from lib.core.errors import JudgeError
from lib.judging.loop import LoopThread
from lib.judging.pacing import LIMITS, OK, OTHER, OVERLOAD, LimitBook, Pacer, PacingReport, Ticket
from lib.judging.structured import BOOK, JSON_SCHEMA, TEXT, ModeBook, chat_body, is_refusal, next_mode, reply_of
from lib.judging.transport import dropped_connection, http_client


async def _close_client(client: openai.AsyncOpenAI) -> None:
    await client.close()


def _seconds(value: str | None) -> float | None:
    """A Retry-After value as seconds: a number, or an HTTP date (None when unreadable)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """The server's wait hint (retry-after-ms, else Retry-After); None when absent, negative or NaN.

    A huge hint is returned as it is (the judge caps every wait at max_backoff); an infinite one too (the judge
    then stops asking: no wait it would make is long enough).
    """
    try:
        headers = exc.response.headers
    except AttributeError:
        return None
    ms = _seconds(headers.get("retry-after-ms"))
    seconds = ms / 1000.0 if ms is not None else _seconds(headers.get("retry-after"))
    # A negative or NaN hint would make time.sleep raise; fall back to our own backoff.
    return seconds if seconds is not None and 0.0 <= seconds <= math.inf else None


TIMEOUT_STRETCH = 2   # a retry after a timeout waits this many timeouts (on one slot it queues behind the last)


class _Refused(Exception):
    """The server refused the output mode asked for (the next mode down is tried)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Outcome:
    """What one attempt came to: a reply, or a reason with the wait the server hinted."""

    __slots__ = ("hint", "load", "reason", "reply")

    def __init__(self, reply: JudgeReply | None = None, reason: str = "", hint: float | None = None,
                 load: str = OTHER) -> None:
        self.reply, self.reason, self.hint, self.load = reply, reason, hint, load


class OpenAIJudge:
    """A judge that calls `chat.completions` on an OpenAI-compatible server.

    Args:
        model: the model name the server knows.
        base_url: the server's /v1 URL (OpenAI, vLLM, Ollama, LM Studio, ...).
        api_key: the key; never logged, stored or shown.
        timeout: seconds for one attempt, at least (raised to a few median calls when calls get that slow:
            lib.judging.pacing.Pacer.timeout_for).
        max_attempts: attempts per call, first included.
        backoff: base of the exponential backoff, seconds.
        max_backoff: cap on one wait, seconds (Retry-After is capped too).
        concurrency: the most calls in flight; the Pacer adapts below it to what the server sustains.
        json_mode: ask for structured JSON (a schema, else a JSON object); False: plain text only.
        sleep: how to wait (tests pass a recorder); default: a wait that `stop()` ends.
        modes: where endpoint refusals of output modes are remembered (default: the process's book).
        limits: where the concurrency the endpoint sustained is remembered (default: the process's book), so
            the next judge on it starts there.
        clock: the pacer's monotonic seconds (tests pass their own, so what the pacer decides does not depend on
            how loaded the machine is).
    """

    cacheable = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_attempts: int = 4, backoff: float = 0.5,
                 max_backoff: float = 20.0, concurrency: int = 8, json_mode: bool = True,
                 sleep: Callable[[float], object] | None = None, modes: ModeBook | None = None,
                 limits: LimitBook | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.model = model
        self.base_url = base_url
        self.endpoint = normalise(base_url)   # identity and display text: no credentials
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.json_mode = json_mode
        self.pacer = Pacer(concurrency, timeout=timeout, book=limits if limits is not None else LIMITS,
                           key=f"{self.endpoint} {model}", clock=clock)
        self.timeout = timeout
        self._halt = threading.Event()
        self._halt_reason = ""
        self._in_flight: set[concurrent.futures.Future] = set()
        self._sleep = sleep if sleep is not None else self._halt.wait
        self._modes = modes if modes is not None else BOOK
        key = api_key or "not-needed"

        def client() -> openai.AsyncOpenAI:   # made on the loop's thread: its connections belong there
            return openai.AsyncOpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0,
                                      http_client=http_client(concurrency, base_url))

        self._loop = LoopThread(f"judge:{model}", setup=client, teardown=_close_client)
        # not at exit: a process going away (SIGTERM) must not wait on a hung connection's close; the OS closes it
        weakref.finalize(self, self._loop.close).atexit = False
        self._lock = threading.Lock()
        self.attempts = 0
        self.retries: list[str] = []
        self.output_mode: str | None = None   # the mode of the last reply (None: no call answered yet)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIJudge(model={self.model!r}, base_url={self.endpoint if self.base_url else None!r})"

    @property
    def pacing(self) -> PacingReport:
        """What the pacer measured: concurrency reached, latencies, back-offs."""
        return self.pacer.report()

    def stop(self, reason: str = "the job was stopped") -> None:
        """End every wait, cancel the calls in flight and refuse new attempts (a breaker, a deadline or Stop)."""
        self._halt_reason = reason
        self._halt.set()
        self.pacer.close()
        with self._lock:
            flying = list(self._in_flight)
        for fut in flying:
            fut.cancel()

    def close(self) -> None:
        """Stop the judge's event loop (a later call starts a new one)."""
        self._loop.close()

    def _stopped(self) -> JudgeError:
        return JudgeError(STOPPED_PREFIX + self._halt_reason, retryable=True)

    def _wait(self, attempt: int, hint: float | None) -> None:
        if hint is not None:
            delay = min(hint, self.max_backoff)
        else:
            delay = random.uniform(0, min(self.max_backoff, self.backoff * 2 ** attempt))
        self._sleep(delay)

    def complete(self, request: JudgeRequest) -> JudgeReply:
        """Ask for the verdicts in the strongest output mode the endpoint has not refused.

        Raises:
            JudgeError: every attempt failed (retryable), or the server refused the request in every mode.
        """
        start = JSON_SCHEMA if self.json_mode else TEXT
        probe = request.shape is not None or start == TEXT   # a shapeless request cannot probe the schema
        with self._modes.probing(self.endpoint, request.model) if probe else contextlib.nullcontext():
            mode = self._modes.first(self.endpoint, request.model, shape=request.shape, start=start)
            refused: list[str] = []
            while True:
                try:
                    reply = self._attempts(request, mode)
                except JudgeError as exc:
                    if exc.retryable:   # the server took this mode and failed for a passing reason (timed out,
                        # 5xx, 429): the modes it refused above it stay refused; a final refusal teaches nothing
                        self._modes.refuse(self.endpoint, request.model, refused)
                    raise
                except _Refused as exc:
                    refused.append(mode)
                    following = next_mode(mode)
                    if following is None:
                        raise JudgeError(f"judge server refused the request ({exc.status})") from None
                    mode = following
                    continue
                if probe:
                    self._modes.settle(self.endpoint, request.model, refused)
                else:
                    self._modes.refuse(self.endpoint, request.model, refused)
                self.output_mode = mode
                return reply

    def _attempts(self, request: JudgeRequest, mode: str) -> JudgeReply:
        kwargs = chat_body(request, mode)
        last = ""
        stretch = 1   # a retry after a timeout waits longer: on one slot it queues behind the abandoned call
        waited: list[float] = []
        for attempt in range(self.max_attempts):
            if self._halt.is_set():
                raise self._stopped()
            ticket = self.pacer.acquire()
            if ticket is None:
                raise self._stopped()
            with self._lock:
                self.attempts += 1
            waited.append(self.pacer.timeout_for() * stretch)
            out = self._attempt(kwargs, mode, ticket, waited[-1])
            if out.reply is not None:
                return out.reply
            if out.hint == math.inf:   # "never": asking again after any wait we would make gets the same answer
                raise JudgeError(f"{out.reason}, the server asks to wait forever (Retry-After: inf)", retryable=True)
            last = out.reason
            if last == "timed out":
                stretch = min(2 * stretch, TIMEOUT_STRETCH)
            with self._lock:
                self.retries.append(last)
            if attempt + 1 < self.max_attempts:
                self._wait(attempt, out.hint)
        raise JudgeError(f"{last}, after {self.max_attempts} attempts{self._timeout_advice(last, waited)}",
                         retryable=True)

    def _timeout_advice(self, reason: str, waited: list[float]) -> str:
        """For calls that timed out: the setting to raise, with what the calls measured."""
        if reason != "timed out":
            return ""
        report = self.pacer.report()
        median = f"; the median call took {report.median:.2g} s" if report.median is not None else ""
        waits = (f"each waited {waited[0]:.3g} s" if len(set(waited)) == 1 else
                 f"they waited {', '.join(f'{w:.3g}' for w in waited)} s")
        return (f" ({waits} at {report.final} in flight{median}): raise "
                f"EVALDRIFT_JUDGE_TIMEOUT, or lower EVALDRIFT_JUDGE_CONCURRENCY if the server queues calls")

    async def _post(self, kwargs: dict[str, object], timeout: float) -> Any:
        client: openai.AsyncOpenAI = self._loop.state
        response = await client.post("/chat/completions", cast_to=httpx2.Response, body=kwargs,
                                     options={"timeout": timeout})
        return response.json()

    def _attempt(self, kwargs: dict[str, object], mode: str, ticket: Ticket, timeout: float) -> _Outcome:
        """One call through the pacer, given `timeout` seconds; raises only for a refusal (of the mode, or final)."""
        out = _Outcome()
        # the whole attempt is bounded by the wall clock (a server that trickles bytes never trips a read
        # timeout), and stop() cancels it where it waits; by the pacer's timeout, not the setting alone, so a call
        # slowed by load within a few median calls is waited for, not abandoned to the server's queue
        fut = self._loop.submit(asyncio.wait_for(self._post(kwargs, timeout), timeout))
        with self._lock:
            self._in_flight.add(fut)
        if self._halt.is_set():
            fut.cancel()
        try:
            body = fut.result()
        except concurrent.futures.CancelledError:
            out.reason = "stopped"
            raise self._stopped() from None
        except TimeoutError:
            out.reason, out.load = "timed out", OVERLOAD
        except openai.RateLimitError as exc:
            out.reason, out.hint, out.load = "rate limited (429)", _retry_after(exc), OVERLOAD
        except openai.APITimeoutError as exc:
            dropped = dropped_connection(exc)
            if dropped:
                out.reason = f"connection failed: {dropped}"
            else:
                out.reason, out.load = "timed out", OVERLOAD
        except openai.APIConnectionError as exc:
            out.reason = f"connection failed: {type(exc).__name__}"
        except openai.APIStatusError as exc:
            status = exc.status_code
            if mode != TEXT and is_refusal(status, str(exc.message)):
                raise _Refused(status) from None
            if status < 500 and status not in (408, 409):  # the SDK retries 408/409 too
                raise JudgeError(f"judge server refused the request ({status})") from None
            kind = "server error" if status >= 500 else "retryable status"
            out.reason, out.hint = f"{kind} ({status})", _retry_after(exc)
            out.load = OVERLOAD if status == 503 else OTHER
        except (openai.APIResponseValidationError, ValueError):
            # A 200 whose body is no JSON (a proxy's HTML page, a cut-off body): retried.
            out.reason = "unreadable response (not a chat completion)"
        else:
            # Only reading the body can tell a JSON body that is no chat completion: a fault of ours elsewhere (an
            # AttributeError in the transport) is a bug to see, never an unreadable reply to retry.
            try:
                out.reply, out.load = reply_of(body), OK
            except (ValueError, KeyError, AttributeError, IndexError, TypeError):
                out.reason = "unreadable response (not a chat completion)"
        finally:
            with self._lock:
                self._in_flight.discard(fut)
            self.pacer.release(ticket, out.load, out.reason)
        return out
