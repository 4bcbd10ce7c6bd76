"""A judge's endpoint as identity and as text: normalised, and never with the credentials in it.

The operator's OPENAI_BASE_URL is checked when the settings are read
(`check_base_url`): an http(s) URL with a host, a port that is a number, an
IPv6 address in brackets, and neither credentials (`user:pass@`) nor a query
string: the key goes in OPENAI_API_KEY and is always sent as a Bearer token.
Everything that names an endpoint (the call-cache key, the ablation id, a
stored spec, CLI output, a page) uses `normalise`, which drops credentials and
queries anyway (a stored spec is not the operator's setting), so two spellings
of one server are one identity and no text evaldrift writes holds a secret.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from lib.core.errors import InputError

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


def check_base_url(url: str | None) -> str | None:
    """The operator's OPENAI_BASE_URL as given (None when unset), or a clear refusal.

    Raises:
        InputError: not an http(s) URL with a host; a port that is no number from 1 to 65535; an IPv6
            address not in brackets; credentials (user:password@) or a query string or fragment in it.
    """
    if url is None or not url.strip():
        return None
    text = url.strip()

    def refuse(why: str) -> InputError:
        shown = redact(text.split("?", 1)[0].split("#", 1)[0])   # never the credentials or a key in a query
        return InputError(f"{why} (got {shown!r})", source="OPENAI_BASE_URL")

    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise refuse(f"not a usable URL: {exc}; a port is a number from 1 to 65535 and an IPv6 address goes "
                     "in brackets, e.g. http://[::1]:8000/v1") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise refuse("must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000/v1")
    if port == 0:
        raise refuse("a port is a number from 1 to 65535")
    if "@" in parts.netloc:
        raise refuse("must not carry credentials (user:password@): put the key in OPENAI_API_KEY, which is sent "
                     "as a Bearer token on every call")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise refuse("must not carry a query string or fragment (?key=...): give the server's base URL alone "
                     "and the key in OPENAI_API_KEY, which is sent as a Bearer token on every call")
    return text
