"""The HTTP client under the model judge's AsyncOpenAI: the SDK's aiohttp transport, when aiohttp is installed.

Profiled at 64 calls in flight against a loopback server, the SDK's default
httpx2 transport costs about 1.0 ms of client CPU per call and its aiohttp
transport (openai.DefaultAioHttpClient) about 0.6 ms: with one interpreter
that is the difference between 1,000 and 1,600 calls a second at most.
Requests are still built, sent and checked by the SDK, so its status errors,
timeouts and connection errors arrive as the SDK's exceptions.

One difference is smoothed here: the aiohttp transport reports a connection
the server dropped (no byte of a reply) as a connect *timeout*, where httpx2
reports a connection error. `dropped_connection` tells the two apart from the
exception's causes, so a dropped connection is not taken for an overloaded
server (which would shrink the calls in flight).
"""

from __future__ import annotations

import functools
import os
import ssl

import httpx2
import openai

try:
    import aiohttp
except ImportError:   # the SDK's default transport, slower per call but the same behaviour
    aiohttp = None  # type: ignore[assignment]


def http_client(concurrency: int, base_url: str | None = None) -> httpx2.AsyncClient:
    """An async HTTP client for AsyncOpenAI keeping up to `concurrency` connections open (call on its loop).

    A base URL with credentials in it (user:password@host) keeps the SDK's default transport: aiohttp refuses
    to send them beside the SDK's Authorization header, where httpx2 sends them as the request's auth.
    """
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    url = base_url or os.environ.get("OPENAI_BASE_URL")   # the SDK's own fallback
    if aiohttp is None or (url and httpx2.URL(url).userinfo):
        return openai.DefaultAsyncHttpxClient(limits=limits, verify=_tls())
    return openai.DefaultAioHttpClient(limits=limits, verify=_tls())


@functools.cache
def _tls() -> ssl.SSLContext:
    """The SDK's default TLS context (the system's certificates), made once a process: each client made its own,
    reading the certificate bundle again (about 20 ms a judge)."""
    return httpx2.create_ssl_context()


def dropped_connection(exc: BaseException) -> str | None:
    """The name of the connection error under an SDK timeout error, when what happened was no timeout."""
    if aiohttp is None:
        return None
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, TimeoutError):
            return None
        if isinstance(link, aiohttp.ClientConnectionError):
            return type(link).__name__
        link = link.__cause__ or link.__context__
    return None
