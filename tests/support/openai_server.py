"""A small OpenAI-compatible HTTP server for tests (standard library only).

The real ``openai`` SDK talks to the network through its own HTTP layer, so
request-mocking libraries do not intercept it. This module provides a real
socket server, bound to ``127.0.0.1`` on a free port, that speaks just enough
of the OpenAI REST API for tests:

* ``POST /v1/chat/completions`` answers with a standard ``chat.completion``
  object whose assistant content comes from a user-supplied *responder*.
* ``GET /v1/models`` lists a single model.
* ``/v1/files`` and ``/v1/batches``: the Batch API (tests/support/batch_api.py).
* Anything else is a 404 JSON error.

Misbehaviour (rate limits, server errors, slow answers, dropped connections,
unparseable content, ...) can be scripted with :class:`Fault`.

The server never prints anything: request logging is disabled so that tests
can assert that API keys (sent in the ``Authorization`` header) never show up
in any output.

Example:
    >>> from openai import OpenAI
    >>> with OpenAIServer(lambda body: '{"verdict": "supported"}') as srv:
    ...     client = OpenAI(api_key="sk-test", base_url=srv.base_url)
    ...     srv.script(Fault("429", retry_after=0.1))
    ...     # first call gets a 429, the next one a normal completion
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.support.batch_api import BatchAPI

__all__ = ["FAULT_KINDS", "LLAMA_CPP_FORMATS", "LLAMA_CPP_REFUSAL", "MODEL_ID", "Fault", "OpenAIServer", "Responder",
           "request_mode", "response_format_type", "schema_of"]

Responder = Callable[[dict], str]
"""Gets the parsed request JSON body, returns the assistant message content."""

FAULT_KINDS: frozenset[str] = frozenset(
    {"400", "429", "500", "503", "timeout", "drop", "malformed", "truncated", "text"}
)
"""All fault kinds understood by :class:`OpenAIServer`."""

MODEL_ID = "evaldrift-test-model"
"""The single model id listed by ``GET /v1/models``."""

LLAMA_CPP_FORMATS = frozenset({"json_object", "json_object_schema"})
"""The output modes llama-cpp-python's server takes (it answers the others with a 500)."""

LLAMA_CPP_REFUSAL = (500, "1 validation error: response_format.type: Input should be 'text' or 'json_object'")
"""How llama-cpp-python's server refuses ``json_schema`` (a 500 naming the type)."""

MALFORMED_CONTENT = "Sure! Here are the verdicts: supported, supported"
"""Assistant content returned for a ``"malformed"`` fault (not JSON)."""


@dataclass
class Fault:
    """One scripted misbehaviour, consumed in order by incoming chat requests.

    Attributes:
        kind: One of ``"400"``, ``"429"``, ``"500"``, ``"503"`` (HTTP error with an
            OpenAI-style JSON error body), ``"timeout"`` (sleep ``delay``
            seconds, then answer normally), ``"drop"`` (close the socket
            without sending a single byte), ``"malformed"`` (200 completion
            whose content is prose, not JSON), ``"truncated"`` (200
            completion whose content is the responder's text cut in half) or
            ``"text"`` (200 completion whose content is exactly ``text``).
        retry_after: For ``"429"``: value of the ``Retry-After`` header in
            seconds; no header is sent when ``None``.
        delay: For ``"timeout"``: seconds to sleep before answering.
        text: For ``"text"``: the exact assistant content to return.
    """

    kind: str
    retry_after: float | None = None
    delay: float = 0.0
    text: str = ""

    def __post_init__(self) -> None:
        """Validate the fault kind.

        Raises:
            ValueError: If ``kind`` is not one of :data:`FAULT_KINDS`.
        """
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"unknown fault kind {self.kind!r}; "
                f"expected one of {sorted(FAULT_KINDS)}"
            )


def _bag_of_words(text: str, size: int = 64) -> list[float]:
    """A deterministic embedding: word counts hashed into `size` slots, with irrational weights (so the cosine
    of a text with itself is computed in floating point, as a real model's is)."""
    import hashlib

    vector = [0.0] * size
    for word in text.lower().replace(".", " ").replace("?", " ").split():
        slot = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "little") % size
        vector[slot] += 1.0 / (1 + slot) ** 0.5
    return vector


def _count_tokens(text: str) -> int:
    """Counts "tokens" as whitespace-separated words.

    Args:
        text: Any text.

    Returns:
        The number of whitespace-separated words in ``text``.
    """
    return len(text.split())


def _content_text(content: Any) -> str:
    """Extracts plain text from a chat message ``content`` field.

    Args:
        content: A string, a list of content parts (``{"type": "text",
            "text": ...}``) or ``None``.

    Returns:
        The concatenated text of the content.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ]
        return " ".join(parts)
    return ""


def _prompt_tokens(body: dict) -> int:
    """Counts the prompt tokens of a chat request body.

    Args:
        body: The parsed request JSON body.

    Returns:
        The number of whitespace-separated words over all message contents.
    """
    messages = body.get("messages") or []
    return sum(
        _count_tokens(_content_text(m.get("content")))
        for m in messages
        if isinstance(m, dict)
    )


def response_format_type(body: dict) -> str:
    """The ``response_format`` type a chat request asks for (``"text"`` when it asks for none).

    Args:
        body: The parsed request JSON body.

    Returns:
        ``"json_schema"``, ``"json_object"``, ``"text"`` or whatever else the client sent.
    """
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return "text"
    return str(fmt.get("type") or "text")


def request_mode(body: dict) -> str:
    """The structured-output form a chat request asks in, named as lib.judging.structured names its modes.

    Args:
        body: The parsed request JSON body.

    Returns:
        ``"json_schema"``, ``"json_object_schema"`` (a ``json_object`` response_format carrying a ``schema``, as
        llama-cpp-python takes it), ``"json_object"``, ``"guided_json"`` (vLLM's body field), ``"ollama_format"``
        (Ollama's ``format`` body field) or ``"text"``.
    """
    kind = response_format_type(body)
    if kind == "json_object" and isinstance(body["response_format"].get("schema"), dict):
        return "json_object_schema"
    if kind != "text":
        return kind
    if "guided_json" in body:
        return "guided_json"
    if "format" in body:
        return "ollama_format"
    return "text"


def schema_of(body: dict) -> dict | None:
    """The JSON schema a chat request carries, in whichever form it asks (None: no schema).

    Args:
        body: The parsed request JSON body.

    Returns:
        The schema, or ``None``.
    """
    mode = request_mode(body)
    if mode == "json_schema":
        return body["response_format"]["json_schema"]["schema"]
    if mode == "json_object_schema":
        return body["response_format"]["schema"]
    if mode == "guided_json":
        return body["guided_json"]
    if mode == "ollama_format":
        return body["format"]
    return None


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    """Builds an OpenAI-style JSON error body.

    Args:
        message: Human-readable error message.
        error_type: OpenAI error ``type`` (e.g. ``"rate_limit_error"``).

    Returns:
        The error body as a dict.
    """
    return {
        "error": {
            "message": message,
            "type": error_type,
            "param": None,
            "code": None,
        }
    }


class _HTTPServer(ThreadingHTTPServer):
    """Threaded HTTP server that knows its :class:`OpenAIServer` owner."""

    daemon_threads = True
    # Do not join handler threads on server_close(): a handler may be
    # sleeping on a "timeout" fault and stop() must be prompt.
    block_on_close = False
    request_queue_size = 128

    def __init__(self, owner: OpenAIServer) -> None:
        """Binds to a free port on 127.0.0.1.

        Args:
            owner: The :class:`OpenAIServer` whose state handlers use.
        """
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _KeepAliveHandler if owner.keep_alive else _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Records handler errors instead of printing a traceback.

        Args:
            request: The client socket.
            client_address: The client address.
        """
        exc = sys.exc_info()[1]
        if exc is not None:
            self.owner._record_error(exc)


class _Handler(BaseHTTPRequestHandler):
    """Request handler implementing the tiny OpenAI-compatible API."""

    server: _HTTPServer
    server_version = "evaldrift-openai-test-server"
    sys_version = ""
    # HTTP/1.0: one request per connection, no idle keep-alive threads.
    protocol_version = "HTTP/1.0"

    # --- quiet -----------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        """Suppresses all request logging (never print headers or keys)."""

    def log_error(self, format: str, *args: Any) -> None:
        """Suppresses error logging."""

    # --- helpers ---------------------------------------------------------

    @property
    def owner(self) -> OpenAIServer:
        """The :class:`OpenAIServer` this handler serves."""
        return self.server.owner

    def _send_json(
        self,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        """Writes a JSON response, ignoring clients that already hung up.

        Args:
            status: HTTP status code.
            payload: JSON-serialisable response body.
            headers: Extra response headers.
        """
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        if self.protocol_version == "HTTP/1.0":
            self.close_connection = True

    def _send_error_json(
        self,
        status: int,
        message: str,
        error_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Writes an OpenAI-style JSON error response.

        Args:
            status: HTTP status code.
            message: Error message.
            error_type: OpenAI error ``type``.
            headers: Extra response headers.
        """
        self._send_json(status, _error_body(message, error_type), headers)

    def _drop(self) -> None:
        """Closes the connection without writing any byte."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.connection.close()

    def _path(self) -> str:
        """Returns the request path without query string or trailing slash."""
        return self.path.split("?", 1)[0].rstrip("/")

    # --- verbs -----------------------------------------------------------

    def do_GET(self) -> None:
        """Serves ``GET /v1/models``, files and batches; anything else is a 404."""
        if self._path().startswith(("/v1/files/", "/v1/batches/")):
            self.owner.batch_api.get(self, self._path())
            return
        if self._path() == "/v1/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": MODEL_ID,
                            "object": "model",
                            "created": 0,
                            "owned_by": "evaldrift-tests",
                        }
                    ],
                },
            )
            return
        self._not_found()

    def do_POST(self) -> None:
        """Serves ``POST /v1/chat/completions`` and ``/v1/embeddings``; anything else is a 404."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self._path().startswith(("/v1/files", "/v1/batches")):
            self.owner.batch_api.post(self, self._path(), raw)
            return
        if self._path() not in ("/v1/chat/completions", "/v1/embeddings"):
            self._not_found()
            return
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        if not isinstance(body, dict):
            self._send_error_json(
                400, "request body is not a JSON object", "invalid_request_error"
            )
            return
        if self._path() == "/v1/embeddings":
            self._embed(body)
            return
        self._chat(body)

    def _embed(self, body: dict) -> None:
        """``POST /v1/embeddings``: each input text as a hashed bag of its words (same words, same vector)."""
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i, "embedding": _bag_of_words(str(t))} for i, t in enumerate(texts)]
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model", MODEL_ID),
                              "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def do_PUT(self) -> None:
        """Any PUT is a 404."""
        self._not_found()

    def do_DELETE(self) -> None:
        """Any DELETE is a 404."""
        self._not_found()

    def do_PATCH(self) -> None:
        """Any PATCH is a 404."""
        self._not_found()

    def _not_found(self) -> None:
        """Writes a 404 JSON error."""
        self._send_error_json(
            404,
            f"Unknown endpoint: {self.command} {self._path()}",
            "invalid_request_error",
        )

    # --- chat completions ------------------------------------------------

    def _chat(self, body: dict) -> None:
        """Handles one chat completion request: refuses an unsupported format, waits for a slot, serves.

        Args:
            body: The parsed request JSON body.
        """
        owner = self.owner
        fault = owner._register(body, dict(self.headers.items()))
        kind = request_mode(body)
        if owner.formats is not None and kind != "text" and kind not in owner.formats:
            with owner._lock:
                owner.refused.append(kind)
            status, message = owner.refusal
            self._send_error_json(
                status,
                message or f"output mode {kind!r} is not supported by this server",
                "invalid_request_error",
            )
            return
        if not owner._enter():
            self._drop()  # server is stopping
            return
        began = time.monotonic()
        try:
            self._serve(body, fault)
        finally:
            owner._leave()
            with owner._lock:
                owner.served.append(time.monotonic() - began)

    def _serve(self, body: dict, fault: Fault | None) -> None:
        """Answers one chat request (inside a slot when the server has few).

        Args:
            body: The parsed request JSON body.
            fault: The fault to apply, or ``None``.
        """
        owner = self.owner
        if not owner._sleep(owner.latency):
            self._drop()  # server is stopping
            return

        if fault is not None:
            kind = fault.kind
            if kind == "429":
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = f"{fault.retry_after:g}"
                self._send_error_json(
                    429,
                    "Rate limit reached (scripted test fault).",
                    "rate_limit_error",
                    headers,
                )
                return
            if kind == "400":
                self._send_error_json(
                    400,
                    "This model's maximum context length is exceeded (scripted test fault).",
                    "invalid_request_error",
                )
                return
            if kind == "500":
                self._send_error_json(
                    500,
                    "Internal server error (scripted test fault).",
                    "server_error",
                )
                return
            if kind == "503":
                self._send_error_json(
                    503,
                    "Service unavailable (scripted test fault).",
                    "service_unavailable",
                )
                return
            if kind == "drop":
                self._drop()
                return
            if kind == "timeout":
                if not owner._sleep(fault.delay):
                    self._drop()
                    return
            elif kind == "malformed":
                self._complete(body, MALFORMED_CONTENT)
                return
            elif kind == "text":
                self._complete(body, fault.text)
                return

        try:
            text = owner.responder(body)
        # A buggy responder must surface as an HTTP 500 the test can see,
        # not as a silently dropped connection.
        except Exception as exc:
            owner._record_error(exc)
            self._send_error_json(
                500,
                f"responder raised {type(exc).__name__}: {exc}",
                "server_error",
            )
            return
        if fault is not None and fault.kind == "truncated":
            text = text[: len(text) // 2]
        self._complete(body, text)

    def _complete(self, body: dict, text: str) -> None:
        """Writes a 200 ``chat.completion`` response.

        Args:
            body: The parsed request JSON body.
            text: The assistant message content.
        """
        prompt_tokens = _prompt_tokens(body)
        completion_tokens = _count_tokens(text)
        self._send_json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.owner.served_model or body.get("model") or MODEL_ID,
                "system_fingerprint": self.owner.model_fingerprint,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": text,
                            "refusal": None,
                        },
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )


class _KeepAliveHandler(_Handler):
    """HTTP/1.1: a client keeps its connections open between requests, as with a real model server."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm on a kept-alive connection the body waits
    # for the client's delayed ACK (about 40 ms a reply on Linux).
    disable_nagle_algorithm = True


class OpenAIServer:
    """An OpenAI-compatible chat completions server for tests.

    Serves on ``127.0.0.1`` on a free port in a daemon thread; every request
    is handled in its own thread, so simulated latency never blocks other
    requests.

    Fault selection: each chat request, on arrival, consumes the next
    scripted fault (see :meth:`script`); when none is queued, the persistent
    fault set by :meth:`fail_always` applies, if any. The ``latency`` sleep
    applies to every chat request, faulted or not.

    Slots: with ``slots=1`` the server answers one request at a time, in
    arrival order, like a llama.cpp server with one slot: the others wait in
    its queue (and a client's timeout counts that wait). A request whose
    client gave up is still served when its turn comes.

    Formats: with ``formats`` set, a request asking in a structured form
    (:func:`request_mode`) not in it is refused, with ``refusal``'s status and
    message (default a 400), as servers without that form do (plain text is
    always accepted). ``formats=LLAMA_CPP_FORMATS, refusal=LLAMA_CPP_REFUSAL``
    is llama-cpp-python's server: a 500 for ``json_schema``, a schema honoured
    inside ``json_object``.

    Queueing: with ``slots=1`` and ``latency``, every request takes
    ``latency`` seconds of server time, one at a time: a client's latency
    rises with the calls it has in flight while the server's stays constant.
    ``served`` records each request's server time and ``peak_held`` the most
    requests held at once.

    Attributes:
        responder: Produces the assistant content from the request body.
        latency: Seconds every chat request sleeps before being answered.
        model_fingerprint: Value of ``system_fingerprint`` in completions.
        served_model: The ``model`` completions say they were served by (``None``: the model asked for), as a
            hosted name served by another snapshot does; set it between calls to swap the model behind a name.
        requests: Every chat request body received, in arrival order,
            including faulted ones.
        headers_seen: Request headers of each chat request, aligned with
            ``requests``.
        errors: Exceptions raised by the responder or by request handlers
            (for debugging; never printed).
        refused: The output modes refused (one per refusal; :func:`request_mode`).
        served: Seconds each answered request held its slot (server time, queueing excluded).
        peak_held: The most requests held at once (served and queued; slots only).
    """

    def __init__(
        self,
        responder: Responder,
        *,
        latency: float = 0.0,
        model_fingerprint: str = "fp_test",
        slots: int | None = None,
        formats: frozenset[str] | None = None,
        keep_alive: bool = False,
        refusal: tuple[int, str] = (400, ""),
    ) -> None:
        """Creates a server; call :meth:`start` (or use ``with``) to serve.

        Args:
            responder: Gets the parsed request JSON body, returns the
                assistant message content text.
            latency: Simulated model latency in seconds per chat request.
            model_fingerprint: ``system_fingerprint`` reported in completions.
            slots: Requests served at once (``None``: no limit).
            formats: Output modes accepted (:func:`request_mode`; ``None``: any).
            refusal: Status and message of a refused mode (``""``: a message naming it).
            keep_alive: Speak HTTP/1.1 and keep connections open between
                requests (the default, HTTP/1.0, closes each after one).
        """
        self.responder = responder
        self.latency = latency
        self.model_fingerprint = model_fingerprint
        self.served_model: str | None = None
        self.slots = slots
        self.formats = formats
        self.keep_alive = keep_alive
        self.batch_api = BatchAPI(self)   # /v1/files and /v1/batches (tests/support/batch_api.py)
        self.refusal = refusal
        self.refused: list[str] = []
        self.served: list[float] = []
        self.peak_held = 0
        self._slot_cond = threading.Condition()
        self._queue: deque[int] = deque()
        self._tickets = 0
        self._active = 0
        self.requests: list[dict] = []
        self.headers_seen: list[dict] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._always: Fault | None = None
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    # --- lifecycle -------------------------------------------------------

    def start(self) -> Self:
        """Binds a free port and starts serving in a daemon thread.

        Returns:
            This server, for chaining (``srv = OpenAIServer(r).start()``).

        Raises:
            RuntimeError: If the server is already running.
        """
        if self._httpd is not None:
            raise RuntimeError("OpenAIServer is already running")
        self._stopping.clear()
        httpd = _HTTPServer(self)
        host, port = httpd.server_address[:2]
        self._httpd = httpd
        self._base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"OpenAIServer:{port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving promptly; safe to call more than once.

        Handlers still sleeping (latency or ``"timeout"`` faults) are woken
        up and drop their connection.
        """
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5.0)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        """Starts the server.

        Returns:
            This server.
        """
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stops the server."""
        self.stop()

    @property
    def base_url(self) -> str:
        """Base URL for ``OpenAI(base_url=...)``, e.g. ``http://127.0.0.1:54321/v1``.

        Raises:
            RuntimeError: If the server has never been started.
        """
        if self._base_url is None:
            raise RuntimeError("OpenAIServer has not been started")
        return self._base_url

    # --- faults ----------------------------------------------------------

    def script(self, *faults: Fault) -> None:
        """Queues faults; each subsequent chat request consumes one, in order.

        Args:
            *faults: Faults to append to the queue.
        """
        with self._lock:
            self._faults.extend(faults)

    def fail_always(self, fault: Fault | None) -> None:
        """Applies ``fault`` to every chat request until set to ``None``.

        Scripted faults (see :meth:`script`) are consumed first.

        Args:
            fault: The persistent fault, or ``None`` to clear it.
        """
        with self._lock:
            self._always = fault

    @property
    def n_calls(self) -> int:
        """Number of chat requests received so far (``len(requests)``)."""
        with self._lock:
            return len(self.requests)

    # --- used by handlers ------------------------------------------------

    def _register(self, body: dict, headers: dict) -> Fault | None:
        """Records a chat request and picks its fault atomically.

        Args:
            body: The parsed request JSON body.
            headers: The request headers.

        Returns:
            The fault to apply, or ``None`` for a normal answer.
        """
        with self._lock:
            self.requests.append(body)
            self.headers_seen.append(headers)
            if self._faults:
                return self._faults.popleft()
            return self._always

    def _enter(self) -> bool:
        """Waits for a free slot, first come first served (at once without slots).

        Returns:
            ``True`` once the request holds a slot, ``False`` if the server
            is stopping.
        """
        if self.slots is None:
            return not self._stopping.is_set()
        with self._slot_cond:
            ticket = self._tickets
            self._tickets += 1
            self._queue.append(ticket)
            self.peak_held = max(self.peak_held, len(self._queue) + self._active)
            while self._active >= self.slots or self._queue[0] != ticket:
                if self._stopping.is_set():
                    self._queue.remove(ticket)
                    self._slot_cond.notify_all()
                    return False
                self._slot_cond.wait(0.05)
            self._queue.popleft()
            self._active += 1
            return True

    def _leave(self) -> None:
        """Frees the slot taken by :meth:`_enter`."""
        if self.slots is None:
            return
        with self._slot_cond:
            self._active -= 1
            self._slot_cond.notify_all()

    def _sleep(self, seconds: float) -> bool:
        """Sleeps, waking early if the server stops.

        Args:
            seconds: How long to sleep.

        Returns:
            ``True`` if the full sleep elapsed, ``False`` if the server is
            stopping.
        """
        if seconds <= 0:
            return not self._stopping.is_set()
        return not self._stopping.wait(seconds)

    def _record_error(self, exc: BaseException) -> None:
        """Remembers an exception raised while serving a request.

        Args:
            exc: The exception.
        """
        with self._lock:
            self.errors.append(exc)
