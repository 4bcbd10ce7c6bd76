"""Settings, read from the environment (and Streamlit secrets) in one place.

| setting | environment | default |
|---|---|---|
| db_path | EVALDRIFT_DB | data/demo.duckdb (the demo is built when absent) |
| inbox | EVALDRIFT_INBOX | <db folder>/inbox |
| judge_model | EVALDRIFT_JUDGE_MODEL | offline-lexical-v2 |
| base_url | OPENAI_BASE_URL | none (the SDK's default) |
| api_key | OPENAI_API_KEY | none |
| judge_concurrency | EVALDRIFT_JUDGE_CONCURRENCY | 8 |
| judge_timeout | EVALDRIFT_JUDGE_TIMEOUT | 60 (seconds) |
| breaker_failures | EVALDRIFT_BREAKER_FAILURES | 10 (judge calls failed in a row that stop a job or score; 0: off) |
| job_deadline | EVALDRIFT_JOB_DEADLINE | none (seconds an ablation job may run) |
| db_dir | EVALDRIFT_DB_DIR | none: only EVALDRIFT_DB is offered |
| scorers | EVALDRIFT_SCORERS | none: the dashboard runs no external scorer |
| allowed_users | EVALDRIFT_ALLOWED_USERS | none: with login on, every signed-in user |
| ablation_users | EVALDRIFT_ABLATION_USERS | none: whoever may see the pages may launch |
| ragas_python | EVALDRIFT_RAGAS_PYTHON | this Python: where lib.judging.scorers.ragas_metrics runs Ragas |
| inspect_python | EVALDRIFT_INSPECT_PYTHON | none: a Python with inspect-ai, whose reader reads Inspect logs |
| call_budget | EVALDRIFT_CALL_BUDGET | none: every paid launch that makes calls is confirmed |
| identity_claim | EVALDRIFT_IDENTITY_CLAIM | email (not trusted when the provider says email_verified false) |
| max_input_bytes | EVALDRIFT_MAX_INPUT_BYTES | 536870912 (512 MiB: a file read whole, a zip member, all members) |
| max_field_chars | EVALDRIFT_MAX_FIELD_CHARS | 1000000 (characters in one text field; contexts counted together) |
| notify | EVALDRIFT_NOTIFY | none: `watch` has no channel (Apprise URLs, comma- or space-separated) |
| notify_file | EVALDRIFT_NOTIFY_FILE | none (a file of Apprise URLs, one a line: a mounted secret) |
| public_url | EVALDRIFT_PUBLIC_URL | none: `watch`'s messages carry no link |

Lists are comma-separated. A user entry is an e-mail address or `@domain`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lib.core.endpoints import OFFLINE_MODEL, check_base_url, normalise
from lib.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
DEMO_DB = ROOT / "data" / "demo.duckdb"


def is_demo_path(path: str | Path) -> bool:
    """Is this the embedded demo database (built on first open)?"""
    return Path(path).resolve() == DEMO_DB.resolve()


SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("db_path", "EVALDRIFT_DB", "the DuckDB file; the demo database is built there when absent"),
    ("inbox", "EVALDRIFT_INBOX", "folder where runs recorded while the database is busy are dropped"),
    ("judge_model", "EVALDRIFT_JUDGE_MODEL", "judge model; offline-lexical-* is the embedded offline judge"),
    ("base_url", "OPENAI_BASE_URL", "OpenAI-compatible server for the model judge"),
    ("api_key", "OPENAI_API_KEY", "API key for that server (never logged, stored or shown)"),
    ("judge_concurrency", "EVALDRIFT_JUDGE_CONCURRENCY", "judge calls in flight at once"),
    ("judge_timeout", "EVALDRIFT_JUDGE_TIMEOUT", "seconds for one judge call"),
    ("breaker_failures", "EVALDRIFT_BREAKER_FAILURES",
     "judge calls failed in a row (after their retries) that stop an ablation or re-judge job, or a score; "
     "0: never"),
    ("job_deadline", "EVALDRIFT_JOB_DEADLINE", "seconds an ablation job may run before it stops (resumable)"),
    ("db_dir", "EVALDRIFT_DB_DIR", "folder whose *.duckdb files the dashboard offers by name, beside EVALDRIFT_DB"),
    ("scorers", "EVALDRIFT_SCORERS", "external scorers (module:function, comma-separated) the dashboard may run"),
    ("allowed_users", "EVALDRIFT_ALLOWED_USERS", "with login on: who may sign in (e-mails and @domains)"),
    ("ablation_users", "EVALDRIFT_ABLATION_USERS", "with login on: who may launch ablations with a paid judge"),
    ("ragas_python", "EVALDRIFT_RAGAS_PYTHON", "the Python (with Ragas installed) the Ragas scorer runs in"),
    ("inspect_python", "EVALDRIFT_INSPECT_PYTHON", "a Python with inspect-ai: Inspect logs are read by its reader"),
    ("call_budget", "EVALDRIFT_CALL_BUDGET", "judge calls a paid ablation may make without a confirmation"),
    ("identity_claim", "EVALDRIFT_IDENTITY_CLAIM",
     "with login on: the identity-token claim holding the user's address (default email, refused when the "
     "provider sends email_verified other than true); e.g. preferred_username for a provider that verifies it"),
    ("max_input_bytes", "EVALDRIFT_MAX_INPUT_BYTES",
     "bytes of a file read whole (an inbox hand-over, a promptfoo or Inspect JSON), of one member of an Inspect "
     ".eval zip, and of its members together, uncompressed (default 512 MiB)"),
    ("max_field_chars", "EVALDRIFT_MAX_FIELD_CHARS",
     "characters one text field may hold (a question, answer, reference, id; a sample's passages together), "
     "at every door (default 1,000,000)"),
    ("notify", "EVALDRIFT_NOTIFY",
     "where `watch` sends its alerts: Apprise URLs (json://, slack://, msteams://, mailto://, ...), comma- or "
     "space-separated; never read from the database, a URL or the browser"),
    ("notify_file", "EVALDRIFT_NOTIFY_FILE",
     "a file of Apprise URLs, one a line (# comments), read beside EVALDRIFT_NOTIFY: a secret mounted as a file"),
    ("public_url", "EVALDRIFT_PUBLIC_URL", "the dashboard's address as the team opens it: `watch` links each alert "
                                           "to its run there"),
)


@dataclass(frozen=True)
class Settings:
    db_path: Path
    inbox: Path
    judge_model: str
    base_url: str | None
    api_key: str | None
    judge_concurrency: int
    judge_timeout: float
    db_dir: Path | None = None
    scorers: tuple[str, ...] = ()
    allowed_users: tuple[str, ...] = ()
    ablation_users: tuple[str, ...] = ()
    ragas_python: str | None = None
    inspect_python: str | None = None
    breaker_failures: int = 10
    job_deadline: float | None = None
    call_budget: int | None = None
    identity_claim: str = "email"
    max_input_bytes: int = 512 * 1024 * 1024
    max_field_chars: int = 1_000_000
    notify: tuple[str, ...] = ()
    notify_file: Path | None = None
    public_url: str | None = None

    def __repr__(self) -> str:  # neither the key nor credentials in the URL ever appear in logs
        return (f"Settings(db_path={str(self.db_path)!r}, judge_model={self.judge_model!r}, "
                f"base_url={self.endpoint if self.base_url else None!r}, "
                f"api_key={'set' if self.api_key else 'unset'})")

    @property
    def endpoint(self) -> str:
        """The model judge's endpoint as identity and display text (no credentials)."""
        return normalise(self.base_url)

    @property
    def is_demo(self) -> bool:
        return is_demo_path(self.db_path)


def load(environ: Mapping[str, str] | None = None, secrets: Mapping[str, object] | None = None) -> Settings:
    """Read settings; `secrets` (e.g. st.secrets) fill what the environment leaves unset."""
    env = dict(os.environ if environ is None else environ)
    sec = dict(secrets or {})

    def get(name: str) -> str | None:
        value: object = env.get(name)
        if value in (None, ""):
            value = sec.get(name)
        if isinstance(value, list | tuple):  # a TOML list in secrets.toml
            value = ",".join(str(v) for v in value)
        return str(value) if value not in (None, "") else None

    db = Path(get("EVALDRIFT_DB") or DEMO_DB)
    inbox = Path(get("EVALDRIFT_INBOX") or db.parent / "inbox")
    return Settings(
        db_path=db,
        inbox=inbox,
        judge_model=get("EVALDRIFT_JUDGE_MODEL") or OFFLINE_MODEL,
        base_url=check_base_url(get("OPENAI_BASE_URL")),
        api_key=get("OPENAI_API_KEY"),
        judge_concurrency=int(get("EVALDRIFT_JUDGE_CONCURRENCY") or 8),
        judge_timeout=float(get("EVALDRIFT_JUDGE_TIMEOUT") or 60),
        db_dir=Path(d) if (d := get("EVALDRIFT_DB_DIR")) else None,
        scorers=_items(get("EVALDRIFT_SCORERS")),
        allowed_users=_items(get("EVALDRIFT_ALLOWED_USERS")),
        ablation_users=_items(get("EVALDRIFT_ABLATION_USERS")),
        ragas_python=get("EVALDRIFT_RAGAS_PYTHON"),
        inspect_python=get("EVALDRIFT_INSPECT_PYTHON"),
        breaker_failures=_count(get("EVALDRIFT_BREAKER_FAILURES"), "EVALDRIFT_BREAKER_FAILURES", 10),
        job_deadline=_seconds(get("EVALDRIFT_JOB_DEADLINE"), "EVALDRIFT_JOB_DEADLINE"),
        call_budget=_budget(get("EVALDRIFT_CALL_BUDGET")),
        identity_claim=get("EVALDRIFT_IDENTITY_CLAIM") or "email",
        max_input_bytes=_limit(get("EVALDRIFT_MAX_INPUT_BYTES"), "EVALDRIFT_MAX_INPUT_BYTES", 512 * 1024 * 1024),
        max_field_chars=_limit(get("EVALDRIFT_MAX_FIELD_CHARS"), "EVALDRIFT_MAX_FIELD_CHARS", 1_000_000),
        notify=notify_urls(get("EVALDRIFT_NOTIFY") or ""),
        notify_file=Path(f) if (f := get("EVALDRIFT_NOTIFY_FILE")) else None,
        public_url=get("EVALDRIFT_PUBLIC_URL"),
    )


def notify_urls(text: str) -> tuple[str, ...]:
    """Apprise URLs from a setting or a file: separated by white space, or by a comma before the next scheme (a
    comma inside a URL, `?to=a@x,b@x`, stays); lines starting with # are comments."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("#")]
    parts = re.split(r"\s+|,(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)", "\n".join(lines))
    return tuple(p.strip() for p in parts if p.strip())


def _count(value: str | None, name: str, default: int) -> int:
    """A non-negative whole number setting."""
    if value is None:
        return default
    try:
        n = int(value)
    except ValueError:
        raise InputError(f"{name} must be a whole number, got {value!r}", field=name) from None
    if n < 0:
        raise InputError(f"{name} must be 0 or more, got {n}", field=name)
    return n


def _seconds(value: str | None, name: str) -> float | None:
    """A positive, finite number of seconds (None: unset)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise InputError(f"{name} must be a number of seconds, got {value!r}", field=name) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"{name} must be a positive number of seconds, got {value!r}", field=name)
    return seconds


def _budget(value: str | None) -> int | None:
    """EVALDRIFT_CALL_BUDGET: a count of judge calls (None: unset)."""
    return None if value is None else _count(value, "EVALDRIFT_CALL_BUDGET", 0)


def _limit(value: str | None, name: str, default: int) -> int:
    """A size limit: a whole number of at least 1."""
    n = _count(value, name, default)
    if n < 1:
        raise InputError(f"{name} must be 1 or more, got {n}", field=name)
    return n


def _items(value: str | None) -> tuple[str, ...]:
    """A comma-separated setting as its non-empty entries."""
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())
