"""A judge's endpoint as identity and as text: normalised, and never with the credentials in it.

An OPENAI_BASE_URL may carry credentials (`https://user:pass@host/v1`) or a
key in its query string. The URL the SDK is given keeps them; everything
else (the call-cache key, the ablation id, a stored spec, CLI output, a
page) uses `normalise`, which drops them, so two spellings of one server are
one identity and no text evaldrift writes holds a secret.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

OFFLINE = "offline"
OFFLINE_MODEL = "offline-lexical-v2"   # the embedded judge the settings name when nothing else is set
OFFLINE_PREFIX = "offline-lexical"     # every variant of the embedded judge
DEMO_GENERATOR = "gen-model-a"         # the demo's pipeline generator: how a verdict knows it is on the demo
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def normalise(url: str | None) -> str:
    """The endpoint's identity: scheme, host and path, lower-cased host, no credentials, query or fragment.

    None means the SDK's default (OpenAI); "offline" is the embedded judge.

    >>> normalise("HTTPS://user:secret@API.example.com:443/v1/?key=abc")
    'https://api.example.com/v1'
    """
    if url is None or not url.strip():
        return DEFAULT_OPENAI_URL
    url = url.strip()
    if url == OFFLINE:
        return OFFLINE
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return redact(url.split("?", 1)[0].split("#", 1)[0]).rstrip("/")
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:  # a port that is no number: keep what was written after the host, without credentials
        port = None
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def redact(text: str) -> str:
    """`text` with the credentials of every URL in it replaced by ***.

    >>> redact("connection to https://bob:pw@h/v1 failed")
    'connection to https://***@h/v1 failed'
    """
    return _USERINFO.sub(r"\1***@", text)
