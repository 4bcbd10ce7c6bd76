"""The errors evaldrift raises, each carrying what is needed to fix the input.

    EvaldriftError
    ├── InputError          a record or file is malformed: file, row, field
    ├── WiringError         a template names a field its metric may not read: metric, field
    ├── LintError           a template reads a must-never-receive field: metric, field
    ├── JudgeError          a judge call failed after its retries: reason
    ├── StoreError          the database cannot be opened or is missing something
    │   └── StoreBusyError  another process holds the database file
    ├── NotFoundError       an unknown run, metric or ablation id
    └── TrustError          a stored spec, database or URL asks for what the operator did not configure
"""

from __future__ import annotations

ECHO_CHARS = 80          # a value from the input, echoed in a message, is cut to about this many characters
MESSAGE_CHARS = 1_000    # and a whole message to this many: a refusal is a line, never the input again


def cut(value: object, limit: int = ECHO_CHARS) -> str:
    """A value from the input as an error message quotes it: its repr, cut to about `limit` characters.

    >>> cut("m" * 2_000_000, 10)
    "'mmmmmmmm... (2,000,000 characters)"
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, str | bytes | list | tuple | dict) else len(text)
    return f"{text[:limit - 1]}... ({size:,} characters)"


def bounded(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` whole when short, else its head and tail around a note of what was cut (the tail often says
    what is wanted: "known: faithfulness, ...")."""
    if len(text) <= limit:
        return text
    keep = (limit - 40) // 2
    return f"{text[:keep]} [... {len(text) - 2 * keep:,} characters cut ...] {text[-keep:]}"


class EvaldriftError(Exception):
    """Base of every error evaldrift raises on purpose; its text is bounded (a page or a CLI line shows it)."""

    def __str__(self) -> str:
        return bounded(super().__str__(), 2 * MESSAGE_CHARS)


class InputError(EvaldriftError):
    """A record or file is malformed.

    Attributes:
        row: 1-based row (line) number in the source, or None for the whole file.
        field: the offending field, or None.
        source: the file name or frame description.
    """

    def __init__(self, message: str, *, row: int | None = None, field: str | None = None,
                 source: str | None = None) -> None:
        # Each part may echo the input (a field named by a 2M-character column, a source naming a metric): cut.
        message = bounded(str(message))
        field = bounded(field, ECHO_CHARS * 2) if isinstance(field, str) else field
        source = bounded(str(source), ECHO_CHARS * 4) if source else source
        where = []
        if source:
            where.append(str(source))
        if row is not None:
            where.append(f"row {row}")
        if field:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.row = row
        self.field = field
        self.source = source
        self.reason = message


class WiringError(EvaldriftError):
    """A template asked for a field that its metric's typed input does not have."""

    def __init__(self, metric: str, field: str) -> None:
        super().__init__(
            f"metric {metric!r} cannot read field {field!r}: it is not in the metric's input, "
            f"so the judge must not see it"
        )
        self.metric = metric
        self.field = field


class LintError(EvaldriftError):
    """A template reads a field its metric must never receive."""

    def __init__(self, metric: str, field: str, prompt_hash: str | None = None) -> None:
        tail = f" (template {prompt_hash})" if prompt_hash else ""
        super().__init__(f"template for {metric!r} reads {field!r}, which {metric} must never receive{tail}")
        self.metric = metric
        self.field = field
        self.prompt_hash = prompt_hash


class JudgeError(EvaldriftError):
    """A judge call failed for good (after retries)."""

    def __init__(self, reason: str, *, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class StoreError(EvaldriftError):
    """The database cannot be opened, or lacks what a query needs."""


class StoreBusyError(StoreError):
    """Another process holds the DuckDB file (DuckDB allows one writer process)."""

    def __init__(self, path: str, detail: str = "") -> None:
        super().__init__(
            f"database {path} is held by another process (the dashboard or another job); "
            f"hand runs over through the inbox folder instead. {detail}".strip()
        )
        self.path = path


class NotFoundError(EvaldriftError):
    """An unknown run, metric or ablation."""


class UnknownNameError(EvaldriftError, KeyError):
    """A metric or field name the registry does not know (a KeyError too, for lookups that catch one)."""

    def __str__(self) -> str:   # a KeyError's str() quotes its message
        return bounded(str(self.args[0]), 2 * MESSAGE_CHARS) if self.args else ""


class TrustError(EvaldriftError):
    """What a stored spec, a database or a URL asks for is not what the server's operator configured.

    Where the API key goes, which files open and what code runs are the
    operator's settings; this error says which setting would allow it.
    """

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting
