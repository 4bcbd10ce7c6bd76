"""Settings, read from the environment (and Streamlit secrets) in one place, through one validated table.

| setting | environment | default |
|---|---|---|
| db_path | EVALDRIFT_DB | data/demo.duckdb (the demo is built when absent) |
| inbox | EVALDRIFT_INBOX | none: `inbox/` beside each database |
| judge_model | EVALDRIFT_JUDGE_MODEL | offline-lexical-v2 |
| base_url | OPENAI_BASE_URL | none (the SDK's default) |
| api_key | OPENAI_API_KEY | none |
| judge_concurrency | EVALDRIFT_JUDGE_CONCURRENCY | 8 (1 to 1000) |
| judge_timeout | EVALDRIFT_JUDGE_TIMEOUT | 60 (seconds, over 0 and at most a day) |
| breaker_failures | EVALDRIFT_BREAKER_FAILURES | 10 (judge calls failed in a row that stop a job or score; 0: off) |
| job_deadline | EVALDRIFT_JOB_DEADLINE | none (seconds an ablation job may run) |
| db_dir | EVALDRIFT_DB_DIR | none: only EVALDRIFT_DB is offered |
| scorers | EVALDRIFT_SCORERS | none: the dashboard runs no external scorer |
| allowed_users | EVALDRIFT_ALLOWED_USERS | none: with login on, every signed-in user |
| ablation_users | EVALDRIFT_ABLATION_USERS | none: whoever may see the pages may launch |
| ragas_python | EVALDRIFT_RAGAS_PYTHON | this Python: where lib.judging.scorers.ragas_metrics runs Ragas |
| inspect_python | EVALDRIFT_INSPECT_PYTHON | none: a Python with inspect-ai, whose reader reads Inspect logs |
| call_budget | EVALDRIFT_CALL_BUDGET | none: every paid launch that makes calls is confirmed |
| identity_claim | EVALDRIFT_IDENTITY_CLAIM | none: the `email` claim, trusted only when `email_verified` is true |
| max_input_bytes | EVALDRIFT_MAX_INPUT_BYTES | 536870912 (512 MiB: a file read whole, a zip member, all members) |
| max_field_chars | EVALDRIFT_MAX_FIELD_CHARS | 1000000 (characters in one text field; contexts counted together) |
| notify | EVALDRIFT_NOTIFY | none: `watch` has no channel (Apprise URLs, comma- or space-separated) |
| notify_file | EVALDRIFT_NOTIFY_FILE | none (a file of Apprise URLs, one a line: a mounted secret) |
| public_url | EVALDRIFT_PUBLIC_URL | none: `watch`'s messages carry no link |

`SETTINGS` is that table as data (datasette's SETTINGS is the model): each row
names the field, the variable, how its text is read (type and range), its
default and its help. `load` reads every row the same way, so a value that is
not what its row reads (`EVALDRIFT_JUDGE_CONCURRENCY=abc`, `0`, `-1`) is an
InputError naming the variable, the same one line in the CLI (exit 2) and on
the dashboard, never a traceback three calls later. Lists are comma-separated.
A user entry is an e-mail address or `@domain`. No value may hold a control
character (a newline pasted into a variable is a mistake, not a value).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lib.core.endpoints import OFFLINE_MODEL, check_base_url, normalise, redact
from lib.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
DEMO_DB = ROOT / "data" / "demo.duckdb"


def is_demo_path(path: str | Path) -> bool:
    """Is this the embedded demo database (built on first open)?"""
    return Path(path).resolve() == DEMO_DB.resolve()


class _Refused(ValueError):
    """A setting's text is not what its row reads; the message says what it must be."""


# -- how a setting's text is read (each raises _Refused with what the value must be) ----------------------------
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _text(value: str) -> str:
    if _CONTROL.search(value):
        raise _Refused("must not contain a control character (a newline, a tab, ...)")
    return value.strip()


def _token(value: str) -> str:
    text = _text(value)
    if not text or any(ch.isspace() for ch in text):
        raise _Refused("must be one word, with no white space in it")
    return text


def _path(value: str) -> Path:
    return Path(_text(value))


STORE_URL = "ducklake:"   # a team store's URL (lib.store.lake), which EVALDRIFT_DB may name instead of a file


def _database(value: str) -> Path | str:
    """A DuckDB file, or a team store's URL kept as the text it is (a Path would fold a URI's `//`); the URL is
    checked when the store opens it (a password in it is refused there, lib.store.lake.parse)."""
    text = _text(value)
    return text if text.startswith(STORE_URL) else Path(text)


def _whole(low: int, high: int) -> Callable[[str], int]:
    def read(value: str) -> int:
        text = _text(value)
        if not re.fullmatch(r"[+-]?\d{1,19}", text) or not low <= int(text) <= high:
            raise _Refused(f"must be a whole number from {low:,} to {high:,}")
        return int(text)
    return read


def _seconds(high: float) -> Callable[[str], float]:
    def read(value: str) -> float:
        try:
            seconds = float(_text(value))
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and 0 < seconds <= high):
            raise _Refused(f"must be a number of seconds over 0 and at most {high:,.0f}")
        return seconds
    return read


def _items(check: Callable[[str], bool], what: str) -> Callable[[str], tuple[str, ...]]:
    def read(value: str) -> tuple[str, ...]:
        entries = tuple(v.strip() for v in _text(value).split(",") if v.strip())
        bad = [e for e in entries if not check(e)]
        if bad:
            raise _Refused(f"each entry must be {what}; {bad[0][:60]!r} is not")
        return entries
    return read


_SCORER = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*(@.+)?")   # module:function, or a tool's scorer @FILE
_USER = re.compile(r"[^@\s,]*@[^@\s,]+")   # alice@team.example, or @team.example for a whole domain


def _scorer(entry: str) -> bool:
    return _SCORER.fullmatch(entry) is not None


def _user(entry: str) -> bool:
    return _USER.fullmatch(entry) is not None


def notify_urls(text: str) -> tuple[str, ...]:
    """Apprise URLs from a setting or a file: separated by white space, or by a comma before the next scheme (a
    comma inside a URL, `?to=a@x,b@x`, stays); lines starting with # are comments."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("#")]
    parts = re.split(r"\s+|,(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)", "\n".join(lines))
    return tuple(p.strip() for p in parts if p.strip())


def _notify(value: str) -> tuple[str, ...]:
    if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", value):   # line breaks and tabs separate URLs
        raise _Refused("must not contain a control character other than a line break or a tab")
    urls = notify_urls(value)
    if not all(re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", u) for u in urls):
        raise _Refused("must be Apprise URLs, each scheme://... (json://host/path, mailto://..., slack://...)")
    return urls


def _public_url(value: str) -> str:
    text = _text(value).rstrip("/")
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", text):
        raise _Refused("must be the dashboard's http:// or https:// address, with no query or fragment")
    return text


def _url(value: str) -> str | None:
    return check_base_url(_text(value))


def _url_shown(value: str) -> str:
    """A URL as an error may quote it: no credentials, no query or fragment (where a key may be)."""
    return redact(value.split("?", 1)[0].split("#", 1)[0])


@dataclass(frozen=True)
class Setting:
    """One row of the settings table.

    Attributes:
        name: the field of Settings it fills.
        env: the environment variable (or secrets.toml key) it is read from.
        read: turns the variable's text into the value, or raises _Refused saying what it must be.
        default: the value when the variable is unset or empty (None: not set).
        help: what it is for (the docs' table says the same, tests/test_docs.py checks).
        secret: never echoed in an error (the API key).
        shown: how an error quotes the text (default: as given; the base URL's credentials and query are not).
    """

    name: str
    env: str
    read: Callable[[str], object]
    default: object
    help: str
    secret: bool = False
    shown: Callable[[str], str] | None = None


MIB = 1024 * 1024
SETTINGS: tuple[Setting, ...] = (
    Setting("db_path", "EVALDRIFT_DB", _database, None,   # None: DEMO_DB, looked up in load()
            "the DuckDB file (the demo database is built there when absent), or a team store's URL "
            "(`ducklake:postgres:dbname=... host=... user=...`, no password: libpq reads PGPASSWORD or a PGPASSFILE)"),
    Setting("inbox", "EVALDRIFT_INBOX", _path, None,   # None: inbox/ beside each database (inbox.folder_for)
            "folder where runs recorded while their database is held are handed over, for every database (unset: "
            "inbox/ beside each database); an owner drains it and the folder beside its database"),
    Setting("judge_model", "EVALDRIFT_JUDGE_MODEL", _token, OFFLINE_MODEL,
            "judge model; offline-lexical-* is the embedded offline judge"),
    Setting("base_url", "OPENAI_BASE_URL", _url, None, "OpenAI-compatible server for the model judge",
            shown=_url_shown),
    Setting("api_key", "OPENAI_API_KEY", _token, None, "API key for that server (never logged, stored or shown)",
            secret=True),
    Setting("judge_concurrency", "EVALDRIFT_JUDGE_CONCURRENCY", _whole(1, 1000), 8,
            "judge calls in flight at once (1 to 1000)"),
    Setting("judge_timeout", "EVALDRIFT_JUDGE_TIMEOUT", _seconds(86_400), 60.0,
            "seconds for one judge call (over 0, at most a day)"),
    Setting("breaker_failures", "EVALDRIFT_BREAKER_FAILURES", _whole(0, 1_000_000), 10,
            "judge calls failed in a row (after their retries) that stop an ablation or re-judge job, or a score; "
            "0: never"),
    Setting("job_deadline", "EVALDRIFT_JOB_DEADLINE", _seconds(30 * 86_400), None,
            "seconds an ablation job may run before it stops (resumable)"),
    Setting("db_dir", "EVALDRIFT_DB_DIR", _path, None,
            "folder whose *.duckdb files the dashboard offers by name, beside EVALDRIFT_DB"),
    Setting("scorers", "EVALDRIFT_SCORERS", _items(_scorer, "module:function (or module:function@FILE)"), (),
            "external scorers (module:function, comma-separated) the dashboard may run"),
    Setting("allowed_users", "EVALDRIFT_ALLOWED_USERS", _items(_user, "an e-mail address or @domain"), (),
            "with login on: who may sign in (e-mails and @domains)"),
    Setting("ablation_users", "EVALDRIFT_ABLATION_USERS", _items(_user, "an e-mail address or @domain"),
            (), "with login on: who may launch ablations with a paid judge"),
    Setting("ragas_python", "EVALDRIFT_RAGAS_PYTHON", _text, None,
            "the Python (with Ragas installed) the Ragas scorer runs in"),
    Setting("inspect_python", "EVALDRIFT_INSPECT_PYTHON", _text, None,
            "a Python with inspect-ai: Inspect logs are read by its reader"),
    Setting("call_budget", "EVALDRIFT_CALL_BUDGET", _whole(0, 10**12), None,
            "judge calls a paid ablation may make without a confirmation"),
    Setting("identity_claim", "EVALDRIFT_IDENTITY_CLAIM", _token, None,
            "with login on: the identity-token claim holding the user's address (unset: the email claim, trusted "
            "only when the provider sends email_verified true); e.g. preferred_username for a provider that "
            "verifies it, or email for one that verifies every address without saying so"),
    Setting("max_input_bytes", "EVALDRIFT_MAX_INPUT_BYTES", _whole(1, 2**62), 512 * MIB,
            "bytes of a file read whole (an inbox hand-over, a promptfoo or Inspect JSON), of one member of an "
            "Inspect .eval zip, and of its members together, uncompressed (default 512 MiB)"),
    Setting("max_field_chars", "EVALDRIFT_MAX_FIELD_CHARS", _whole(1, 2**62), 1_000_000,
            "characters one text field may hold (a question, answer, reference, id; a sample's passages together), "
            "at every door (default 1,000,000)"),
    Setting("notify", "EVALDRIFT_NOTIFY", _notify, (),
            "where `watch` sends its alerts: Apprise URLs (json://, slack://, msteams://, mailto://, ...), comma- or "
            "space-separated; never read from the database, a URL or the browser", secret=True),
    Setting("notify_file", "EVALDRIFT_NOTIFY_FILE", _path, None,
            "a file of Apprise URLs, one a line (# comments), read beside EVALDRIFT_NOTIFY: a secret mounted as a "
            "file"),
    Setting("public_url", "EVALDRIFT_PUBLIC_URL", _public_url, None,
            "the dashboard's address as the team opens it: `watch` links each alert to its run there"),
)


@dataclass(frozen=True)
class Settings:
    db_path: Path | str   # str: a team store's URL (STORE_URL)
    inbox: Path | None   # None: beside each database (lib.intake.inbox.folder_for)
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
    identity_claim: str | None = None   # None: the operator named none (lib.app.access: `email`, verified only)
    max_input_bytes: int = 512 * MIB
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
    """Read every setting of SETTINGS; `secrets` (e.g. st.secrets) fill what the environment leaves unset.

    Raises:
        InputError: a value its row does not read, naming the variable and what it must be.
    """
    env = dict(os.environ if environ is None else environ)
    sec = dict(secrets or {})

    def get(name: str) -> str | None:
        value: object = env.get(name)
        if value in (None, ""):
            value = sec.get(name)
        if isinstance(value, list | tuple):  # a TOML list in secrets.toml
            value = ",".join(str(v) for v in value)
        return str(value) if value not in (None, "") else None

    values = {s.name: read_setting(s, get(s.env)) for s in SETTINGS}
    if values["db_path"] is None:
        values["db_path"] = DEMO_DB
    return Settings(**values)   # type: ignore[arg-type]


def read_setting(setting: Setting, text: str | None) -> object:
    """One setting's value from its text (None or blank: its default).

    Raises:
        InputError: naming the variable, what it must be, and the value given (unless it is secret).
    """
    if text is None or not text.strip():
        return setting.default
    try:
        return setting.read(text)
    except _Refused as exc:
        quoted = setting.shown(text) if setting.shown is not None else text
        given = "" if setting.secret else f", got {quoted[:60]!r}" + ("..." if len(quoted) > 60 else "")
        raise InputError(f"{exc}{given}", source=setting.env) from None
