"""The SQL of the watcher's state: what it has seen, the messages it owes each channel, its last look.

A fact (an incident, a close, a verdict, an instrument change, ...) is seen once, by its key. A message is
claimed in one transaction with every fact it announces and one outbox row per channel, so two watchers can
never both claim it: the second finds a key taken and backs off. An outbox row stays 'pending' until its
channel took the message ('delivered'); a watcher killed between the send and the record finds it pending and
sends it again, once, with the same idempotency key (the message key) in the text.

While the dashboard owns the database, the watcher writes the same tables into a side file beside it
(lib.jobs watch: `<db>.watch`); `fold` moves them into the database when the watcher next owns it. Every
statement takes parameters; no message text is ever put into SQL text.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple, dataclass, fields, replace
from datetime import datetime
from pathlib import Path

import duckdb

from lib.core.cadence import missing_run
from lib.core.errors import StoreBusyError, StoreError
from lib.store import Store
from lib.store.base import _now, merge, retried, values

PENDING, DELIVERED = "pending", "delivered"


@dataclass(frozen=True)
class OutboxRow:
    """One message owed to one channel (the columns of watch_outbox, in order)."""

    message_key: str
    channel: str
    kind: str
    incident_id: str | None
    anchor_run: str | None
    headline: str
    body: str
    status: str = PENDING
    attempts: int = 0
    last_error: str | None = None
    created_at: datetime | None = None
    sent_at: datetime | None = None
    delivered_at: datetime | None = None


COLUMNS = tuple(f.name for f in fields(OutboxRow))
_PLACES = ", ".join("?" * len(COLUMNS))
_OUTBOX_KEY = ("message_key", "channel")
_SEEN = ("key", "kind", "message_key", "seen_at")
_META = ("name", "value")


def seen_keys(store: Store) -> frozenset[str]:
    """Every fact key the watcher has seen in this store."""
    return frozenset(r[0] for r in store.cursor().execute("SELECT key FROM watch_seen").fetchall())


@retried("the watcher's seen facts")
def mark_seen(store: Store, keys: Sequence[tuple[str, str]]) -> None:
    """Record facts as seen without a message ((key, kind) pairs; a key already seen is left as it is)."""
    if not keys:
        return
    now = _now()
    with store.transaction() as cur:
        for key, kind in keys:
            merge(cur, "watch_seen", values(_SEEN), _SEEN, ("key",), replace=False, params=[key, kind, None, now])


def claim(store: Store, rows: Sequence[OutboxRow], keys: Sequence[tuple[str, str]]) -> bool:
    """Claim a message: its facts as seen by it and its outbox rows (one per channel), in one transaction.

    Two watchers of a file take turns (their lock); two of a team store may both read a fact as unclaimed, and
    DuckLake commits two inserts at once, so there a claim also takes the store's numbering row: the second of
    two claims at once conflicts, runs again (bounded) and finds the facts taken.

    Returns:
        False when another watcher has claimed any of its facts first (nothing is written then).
    """
    if not rows:
        return False
    now = _now()
    if store.lake:
        return _claim_on_lake(store, rows, keys, now)
    try:
        return _claim(store, rows, keys, now)
    except (duckdb.ConstraintException, duckdb.TransactionException):
        return False


@retried("the watcher's claim")
def _claim_on_lake(store: Store, rows: Sequence[OutboxRow], keys: Sequence[tuple[str, str]], now: datetime) -> bool:
    return _claim(store, rows, keys, now)


def _claim(store: Store, rows: Sequence[OutboxRow], keys: Sequence[tuple[str, str]], now: datetime) -> bool:
    try:
        with store.transaction() as cur:
            store._numbering(cur)   # a team store: the second of two claims at once conflicts (a file: nothing)
            taken = cur.execute(f"SELECT count(*) FROM watch_seen WHERE key IN ({', '.join('?' * len(keys))})",
                                [k for k, _ in keys]).fetchall()[0][0] if keys else 0
            if taken:
                raise _Taken
            for key, kind in keys:
                cur.execute("INSERT INTO watch_seen VALUES (?, ?, ?, ?)", [key, kind, rows[0].message_key, now])
            for row in rows:
                cur.execute(f"INSERT INTO watch_outbox VALUES ({_PLACES})",
                            list(astuple(replace(row, created_at=row.created_at or now))))
    except _Taken:
        return False
    return True


class _Taken(Exception):
    """A fact of the message was claimed by another watcher."""


@retried("the watcher's outbox")
def put(store: Store, rows: Sequence[OutboxRow]) -> None:
    """Write outbox rows whole (a row of the same message and channel is replaced)."""
    if not rows:
        return
    with store.transaction() as cur:
        for row in rows:
            merge(cur, "watch_outbox", values(COLUMNS), COLUMNS, _OUTBOX_KEY, replace=True, params=astuple(row))


def outbox(store: Store) -> list[OutboxRow]:
    """Every outbox row, oldest first."""
    rows = store.cursor().execute(f"SELECT {', '.join(COLUMNS)} FROM watch_outbox "
                                  "ORDER BY created_at, message_key, channel").fetchall()
    return [OutboxRow(*r) for r in rows]


def merged(*stores: Store) -> list[OutboxRow]:
    """The outbox of several files (the database, then its side file): a later file's row for the same message and
    channel wins, since it was written after."""
    out: dict[tuple[str, str], OutboxRow] = {}
    for s in stores:
        for row in outbox(s):
            out[(row.message_key, row.channel)] = row
    return sorted(out.values(), key=lambda r: (r.created_at or datetime.min, r.message_key, r.channel))


def meta(store: Store, name: str) -> str | None:
    rows = store.cursor().execute("SELECT value FROM watch_meta WHERE name = ?", [name]).fetchall()
    return str(rows[0][0]) if rows else None


@retried("the watcher's state")
def set_meta(store: Store, name: str, value: str) -> None:
    with store.transaction() as cur:
        merge(cur, "watch_meta", values(_META), _META, ("name",), replace=True, params=[name, value])


def fold(target: Store, source: Store) -> int:
    """Move a side file's state into the database: its seen facts (kept where the database has them), its outbox
    rows (they are newer: they replace the database's) and its meta. Returns the outbox rows moved."""
    seen = source.cursor().execute("SELECT key, kind, message_key, seen_at FROM watch_seen").fetchall()
    rows = outbox(source)
    metas = source.cursor().execute("SELECT name, value FROM watch_meta").fetchall()
    with target.transaction() as cur:
        for r in seen:
            merge(cur, "watch_seen", values(_SEEN), _SEEN, ("key",), replace=False, params=r)
        for row in rows:
            merge(cur, "watch_outbox", values(COLUMNS), COLUMNS, _OUTBOX_KEY, replace=True, params=astuple(row))
        for r in metas:
            merge(cur, "watch_meta", values(_META), _META, ("name",), replace=True, params=r)
    return len(rows)


def watermark(store: Store) -> str:
    """A cheap fingerprint of everything the watcher reads: it is unchanged when nothing new was recorded."""
    parts = [
        "SELECT count(*), max(recorded_at) FROM runs",
        "SELECT count(*), max(updated_at) FROM ablations",
        "SELECT count(*), max(updated_at) FROM rejudges",
        "SELECT count(*), max(set_at) FROM incident_states",
        "SELECT count(*) FROM prompts",
        "SELECT count(*), max(seq) FROM labels",
    ]
    cur = store.cursor()
    return "|".join(str(cur.execute(sql).fetchall()[0]) for sql in parts)


def run_times(store: Store, limit: int = 64) -> list[tuple[str, datetime]]:
    """The latest runs' ids and start times, oldest first (the watcher learns the cadence from them)."""
    rows = store.cursor().execute("SELECT run_id, started_at FROM runs ORDER BY started_at DESC, run_id DESC "
                                  "LIMIT ?", [limit]).fetchall()
    return [(str(r), t) for r, t in reversed(rows)]


def pending_count(store: Store) -> int:
    """Outbox rows not yet delivered."""
    return int(store.cursor().execute("SELECT count(*) FROM watch_outbox WHERE status = ?",
                                      [PENDING]).fetchall()[0][0])


# -- the files beside a watched database, and the quiet look ----------------------------------------
SIDE_SUFFIX = ".watch"
LOCK_SUFFIX = ".watch.lock"


def side_path(db: Path) -> Path:
    """Where a watcher keeps its state while the dashboard owns the database (lib.jobs.watch)."""
    return db.with_name(db.name + SIDE_SUFFIX)


@contextmanager
def turn(db: Path, wait: float) -> Iterator[None]:
    """A watcher's turn at `db`: an exclusive lock on `<db>.watch.lock` (fcntl), waited for up to `wait` seconds.

    Raises:
        StoreBusyError: another watcher's look held it longer.
    """
    path = db.with_name(db.name + LOCK_SUFFIX)
    with open(path, "a") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreBusyError(str(db), f"another watcher's look has held {path} for over "
                                                  f"{wait:.0f} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _waits(folder: Path) -> bool:
    """Anything at all in an inbox folder (a run, or a file that is not one): the full look drains or rejects it."""
    try:
        return any(entry.is_file() and not entry.name.startswith(".") for entry in folder.iterdir())
    except OSError:
        return False


def quiet(db: Path, *, inboxes: Sequence[Path], now: datetime, lock_wait: float) -> bool:
    """Would a look at `db` find nothing to do? True only when every check says so: no side file, nothing in the
    inboxes the owner drains (lib.intake.inbox.folders_drained), the tables the watcher reads unchanged since the
    last look (`watermark`), no message pending, and no missing run not yet announced (lib.core.cadence).

    It reads the file read-only with DuckDB alone (no pandas), in the watcher's turn. Any doubt (the file held by
    the dashboard, a table missing, a schema to migrate) answers False, and the full look decides.
    """
    if side_path(db).exists() or any(_waits(folder) for folder in inboxes):
        return False
    with turn(db, lock_wait):
        try:
            store = Store(db, read_only=True)
        except (StoreBusyError, StoreError, duckdb.Error, OSError):
            return False
        try:
            last = meta(store, "watermark")
            if last is None or last != watermark(store) or pending_count(store):
                return False
            gone = missing_run(run_times(store), now)
            return gone is None or f"missing:{gone[0]}" in seen_keys(store)
        except duckdb.Error:
            return False
        finally:
            store.close()


__all__ = ["COLUMNS", "DELIVERED", "LOCK_SUFFIX", "PENDING", "SIDE_SUFFIX", "OutboxRow", "claim", "fold",
           "mark_seen", "merged", "meta", "outbox", "pending_count", "put", "quiet", "run_times", "seen_keys",
           "set_meta", "side_path", "turn", "watermark"]
