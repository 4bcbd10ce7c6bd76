"""One look of the watcher: read what is new, decide the messages (lib.diagnosis.watch), claim them, deliver them
through Apprise, record what was delivered. The CLI's `watch` calls it once or every interval.

Where the state lives, and the lock:
- Watchers of one database take turns: each look holds an exclusive lock on `<db>.watch.lock` (fcntl), so two
  watchers started at once never decide from the same state; the second waits, then finds the first's claims.
  A message is also claimed in one transaction with its facts (lib.store.watch.claim), so a claim can never be
  made twice in one file.
- When the database is free, the watcher opens it read-write (draining its inbox first, as every command does),
  reads the history and keeps its state there (tables watch_seen, watch_outbox, watch_meta).
- While the dashboard owns the file (DuckDB lets no other process open it, not even to read), the watcher reads
  the dashboard's snapshot (lib.store.snapshot) and keeps its state in a side file, `<db>.watch`, with the same
  tables; what it has seen is the snapshot's state and the side file's together. The next look that finds the
  database free folds the side file into it and removes it; the dashboard reads both meanwhile (`sent_log`).
- Exactly once: a message's outbox row is 'pending' until its channel took it, and each send is recorded
  (attempts, sent_at) before it is made. A watcher killed between the send and the record leaves it pending:
  the next look sends it once more, with the same idempotency key in its text (`evaldrift-key: ...`), for a
  receiver to drop. A failed send is retried with backoff within the look, then kept pending for the next one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from lib.core.endpoints import redact
from lib.core.errors import InputError, StoreBusyError
from lib.core.settings import Settings, notify_urls
from lib.diagnosis.watch import Event, ablations_wanted, events, observe, times_only, with_notes
from lib.intake import inbox
from lib.store import Store
from lib.store import watch as ws
from lib.store.lake import is_lake
from lib.store.snapshot import snapshot_path, snapshot_time
from lib.store.watch import side_path

RETRIES = 3            # tries of one send within a look
BACKOFF = 2.0          # seconds before the second try; doubled before each later one
LOCK_WAIT = 300.0      # seconds a look waits for another watcher's look to end


class DeliveryError(Exception):
    """A channel did not take a message.

    Attributes:
        channel: the channel (its redacted URL).
        reason: what Apprise said, without credentials.
    """

    def __init__(self, channel: str, reason: str) -> None:
        super().__init__(f"{channel}: {reason}")
        self.channel = channel
        self.reason = reason


class Notifier(Protocol):
    """Where messages go: named channels, each taking a title and a plain-text body."""

    @property
    def channels(self) -> tuple[str, ...]: ...

    def send(self, channel: str, title: str, body: str) -> None:
        """Deliver, or raise DeliveryError."""


class AppriseNotifier:
    """Channels from Apprise URLs (Slack, Microsoft Teams, Discord, email, JSON webhooks and the rest Apprise
    knows). A channel is named by its URL as Apprise shows it with secrets hidden.

    Raises:
        InputError: a URL Apprise does not know (named by its place, never by its text: it may hold a secret).
    """

    def __init__(self, urls: Sequence[str]) -> None:
        import apprise

        self._targets: dict[str, apprise.Apprise] = {}
        self._urls: dict[str, str] = {}
        for n, url in enumerate(urls, start=1):
            target = apprise.Apprise()
            if not target.add(url):
                scheme = url.split("://", 1)[0] if "://" in url else "(no scheme)"
                raise InputError(f"notification URL {n} ({scheme}://...) is not one Apprise can use; see "
                                 "https://appriseit.com/services/", field="EVALDRIFT_NOTIFY")
            name = str(target[0].url(privacy=True)).split("?", 1)[0]   # its options are noise on a page
            name = name if name not in self._targets else f"{name} #{n}"
            self._targets[name], self._urls[name] = target, url

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self._targets)

    def send(self, channel: str, title: str, body: str) -> None:
        import apprise

        with apprise.LogCapture(level=logging.WARNING) as logs:
            ok = self._targets[channel].notify(body=body, title=title, body_format=apprise.NotifyFormat.TEXT)
        if not ok:
            # what Apprise said, never the URL as configured (it holds the channel's secret)
            said = [redact(ln.strip().replace(self._urls[channel], channel)) for ln in logs.getvalue().splitlines()
                    if ln.strip()]
            raise DeliveryError(channel, said[-1][-300:] if said else "the channel refused the message")


def notifier_from(settings: Settings) -> AppriseNotifier:
    """The channels the operator configured: EVALDRIFT_NOTIFY and the file EVALDRIFT_NOTIFY_FILE.

    Raises:
        InputError: none configured, the file unreadable, or a URL Apprise does not know.
    """
    urls = list(settings.notify)
    if settings.notify_file is not None:
        try:
            urls += notify_urls(settings.notify_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read {settings.notify_file}: {exc.strerror}",
                             field="EVALDRIFT_NOTIFY_FILE") from None
    if not urls:
        raise InputError("no channel to alert: set EVALDRIFT_NOTIFY to one or more Apprise URLs (or "
                         "EVALDRIFT_NOTIFY_FILE to a file of them)", field="EVALDRIFT_NOTIFY")
    return AppriseNotifier(urls)


@dataclass(frozen=True)
class LookResult:
    """What one look did.

    Attributes:
        claimed: the messages this look decided and claimed (new events).
        delivered: outbox rows delivered by this look (new or pending from before).
        pending: outbox rows still pending after it (a channel failed).
        errors: the last error of each pending row, one line each.
        snapshot: the dashboard owned the database: its snapshot was read, the state kept in the side file.
        quick: nothing was recorded since the last look: only the run cadence was checked.
    """

    claimed: tuple[Event, ...]
    delivered: int
    pending: int
    errors: tuple[str, ...]
    snapshot: bool
    quick: bool


def _open_side(side: Path, tries: int = 50) -> Store:
    """The side file, read-write: the dashboard opens it to read for a moment (sent_log), so a busy file is tried
    again for up to about 5 s."""
    for _ in range(tries - 1):
        try:
            return Store(side)
        except StoreBusyError:
            time.sleep(0.1)
    return Store(side)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    Path(f"{path}.wal").unlink(missing_ok=True)


def _send(notifier: Notifier, channel: str, title: str, body: str, *, retries: int, backoff: float,
          sleep: Callable[[float], None]) -> str | None:
    """Send one message to one channel, retried with doubling backoff; None when delivered, else the last error."""
    error = ""
    for attempt in range(retries):
        if attempt:
            sleep(backoff * 2 ** (attempt - 1))
        try:
            notifier.send(channel, title, body)
            return None
        except DeliveryError as exc:
            error = exc.reason
    return error or "not delivered"


@dataclass(frozen=True)
class Ablating:
    """`watch --ablate`: run the ablations the suspects call for before sending (lib.jobs.watch_ablate).

    Attributes:
        budget: the paid judge calls each look's ablations may make together (the offline judge's are free).
        settings: the operator's settings (the judge's server, the breaker's limits).
    """

    budget: int
    settings: Settings


def look(db: Path | str, notifier: Notifier, *, now: datetime | None = None, public_url: str | None = None,
         retries: int | None = None, backoff: float | None = None, lock_wait: float = LOCK_WAIT,
         sleep: Callable[[float], None] = time.sleep, ablating: Ablating | None = None) -> LookResult:
    """One look at a database: decide, claim and deliver what is new, and resend what is pending.

    Args:
        db: the DuckDB file (it must exist), or a team store's URL (lib.store.lake: read and written in place,
            with no lock between watchers: run one watcher a team store).
        notifier: the channels (AppriseNotifier from the operator's settings).
        now: the time of the look (a missing run is judged against it; default: now).
        public_url: the dashboard's address, for each message's link (EVALDRIFT_PUBLIC_URL).
        retries, backoff, sleep: each send's tries within this look (default RETRIES) and the wait before the
            second (default BACKOFF seconds, doubled before each later one).
        lock_wait: seconds to wait for another watcher's look to end.
        ablating: run the ablations the suspects call for first, within its budget (None: none).

    Raises:
        StoreBusyError: the dashboard holds the database and has written no snapshot, or another look held the
            watch lock too long.
    """
    now = now or datetime.now().replace(microsecond=0)
    tries, pause = RETRIES if retries is None else retries, BACKOFF if backoff is None else backoff
    if is_lake(db):   # a team store is never held: the watcher reads and keeps its state in it (one watcher a store)
        with Store(db) as store:
            return _look(store, store, notifier, now=now, public_url=public_url, sleep=sleep, on_snapshot=False,
                         retries=tries, backoff=pause, ablating=ablating)
    db = Path(db)
    side = side_path(db)
    with ws.turn(db, lock_wait):
        try:
            reader = inbox.open_drained(db, inbox.folder_for(db))
        except StoreBusyError:
            if snapshot_time(db) is None:
                raise
            reader = Store(snapshot_path(db), read_only=True)
            try:
                state = _open_side(side)
            except BaseException:
                reader.close()
                raise
            on_snapshot = True
        else:
            state, on_snapshot = reader, False
            if side.is_file():
                with Store(side) as old:
                    ws.fold(reader, old)
                _remove(side)
        try:
            return _look(reader, state, notifier, now=now, public_url=public_url, sleep=sleep,
                         on_snapshot=on_snapshot, retries=tries, backoff=pause, ablating=ablating)
        finally:
            if state is not reader:
                state.close()
            reader.close()


def _look(reader: Store, state: Store, notifier: Notifier, *, now: datetime, public_url: str | None, retries: int,
          backoff: float, sleep: Callable[[float], None], on_snapshot: bool,
          ablating: Ablating | None = None) -> LookResult:
    stores = (reader, state) if state is not reader else (reader,)
    seen = frozenset().union(*(ws.seen_keys(s) for s in stores))
    last = [v for s in stores if (v := ws.meta(s, "watermark")) is not None]
    first_look = not any(ws.meta(s, "last_look") for s in stores)
    mark = ws.watermark(reader)
    quick = bool(last) and last[-1] == mark
    recent = ws.run_times(reader)
    obs = times_only(now, recent) if quick else observe(reader, now, recent=recent)
    decision = events(obs, seen, first_look=first_look)
    wanted = ablations_wanted(obs, decision, seen) if ablating is not None and not quick else ()
    if wanted and on_snapshot:   # the snapshot is read-only: the ablations' judgings have nowhere to go
        notes = {w.run_id: [f"ablation of {w.metric} with {w.blank} blanked at {w.run_id} not run: the dashboard "
                            "holds the database (ablate from its Ablation page); no verdict yet"] for w in wanted}
        decision = with_notes(decision, notes)
    elif wanted and ablating is not None:
        from lib.jobs.watch_ablate import ablate

        done = ablate(reader, wanted, budget=ablating.budget, settings=ablating.settings)
        if done.ran:   # their verdicts are news: look again (a verdict folds into the message at its run)
            obs = observe(reader, now, recent=recent)
            decision = events(obs, seen, first_look=first_look)
        decision = with_notes(decision, done.notes)
        mark = ws.watermark(reader)   # the ablations it stored are not news to the next look
    ws.mark_seen(state, decision.silent)
    channels = notifier.channels
    claimed = []
    for e in decision.events:
        rows = [ws.OutboxRow(e.key, ch, e.kind, e.incident_id, e.run_id, e.headline, e.text(public_url))
                for ch in channels]
        if ws.claim(state, rows, e.facts):
            claimed.append(e)
    ws.set_meta(state, "watermark", mark)
    ws.set_meta(state, "last_look", now.isoformat())
    delivered, errors = 0, []
    for row in ws.merged(*stores):
        if row.status != ws.PENDING or row.channel not in channels:
            continue
        # recorded before the send: a watcher killed mid-send leaves the row pending, sent again next look
        row = replace(row, attempts=row.attempts + 1, sent_at=datetime.now().replace(microsecond=0))
        ws.put(state, [row])
        # the cause is the title (a phone's notification and an email's subject show it), the evidence the body
        body = row.body.removeprefix(row.headline).lstrip("\n")
        error = _send(notifier, row.channel, row.headline, body, retries=retries, backoff=backoff, sleep=sleep)
        if error is None:
            ws.put(state, [replace(row, status=ws.DELIVERED, last_error=None,
                                   delivered_at=datetime.now().replace(microsecond=0))])
            delivered += 1
        else:
            ws.put(state, [replace(row, last_error=error)])
            errors.append(f"{row.message_key} to {row.channel}: {error}")
    return LookResult(tuple(claimed), delivered, len(errors), tuple(errors), on_snapshot, quick)


def send_now(notifier: Notifier, title: str, body: str, *, retries: int | None = None,
             backoff: float | None = None, sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Send one message to every channel outside the outbox (`watch --test`, `watch --digest`); returns the errors,
    one line a channel that did not take it."""
    errors = []
    for ch in notifier.channels:
        error = _send(notifier, ch, title, body, retries=RETRIES if retries is None else retries,
                      backoff=BACKOFF if backoff is None else backoff, sleep=sleep)
        if error is not None:
            errors.append(f"{ch}: {error}")
    return errors


def sent_log(store: Store, db: Path | None = None) -> list[ws.OutboxRow]:
    """What the watcher sent or owes, for the dashboard: the database's outbox, and the side file's when a watcher
    kept its state there while the dashboard owned the database (skipped while a look holds it)."""
    stores = [store]
    side = side_path(db) if db is not None else None
    opened = None
    if side is not None and side.is_file():
        try:
            opened = Store(side, read_only=True)
            stores.append(opened)
        except (StoreBusyError, OSError):
            opened = None
    try:
        return ws.merged(*stores)
    finally:
        if opened is not None:
            opened.close()
