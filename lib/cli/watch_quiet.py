"""`python -m lib watch` when nothing is new, answered before the command line's full import.

Importing the whole command line (pandas, the ablation engine, the judges, Apprise and its plugins) costs over a
second of CPU; a cron or CI watcher that finds nothing new needs none of it. `lib/__main__.py` asks `quiet_watch`
first: it answers a plain `watch` (with `--db`, `--ablate`, `--budget`) only when lib.store.watch.quiet says a
look would find nothing to do, and returns None for anything else (another command, `--every`, `--test`,
`--digest`, `--help`, a setting or argument in doubt), and the command runs as usual, with its own checks and
messages. So a URL Apprise does not know is refused by the first look that has something to send (and by
`watch --test`), not by a look with nothing new.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

LOCK_WAIT = 300.0   # as lib.jobs.watch: seconds a look waits for another watcher's look to end


def calls(text: str) -> int:
    """A whole number of judge calls (0 or more): `watch --budget`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of calls: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"at least 0, got {text!r}")
    return value


class _Doubt(Exception):
    """An argument the quiet path does not take: the full command line decides."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):   # type: ignore[override]
        raise _Doubt(message)


def quiet_watch(argv: Sequence[str], *, now: datetime | None = None) -> int | None:
    """Answer `watch` with nothing new (print "nothing new", exit code 0), or None: run the full command.

    Args:
        argv: the command line after `python -m lib`.
        now: the time of the look (a missing run is judged against it; default: now).
    """
    if not argv or argv[0] != "watch":
        return None
    parser = _Parser(add_help=False)
    parser.add_argument("--db")
    parser.add_argument("--ablate", action="store_true")
    parser.add_argument("--budget", type=calls)
    try:
        args = parser.parse_args(list(argv[1:]))
    except _Doubt:
        return None
    if args.budget is not None and not args.ablate:
        return None

    from lib.core import settings
    from lib.core.errors import EvaldriftError
    from lib.store import lake
    from lib.store import watch as ws

    try:
        s = settings.load()
    except EvaldriftError:
        return None
    raw = args.db or os.environ.get("EVALDRIFT_DB") or None
    if raw is None or lake.is_lake(raw) or not (s.notify or s.notify_file):
        return None
    db = Path(raw)
    if not db.is_file():
        return None
    # the folders the database's owner drains (lib.intake.inbox.folders_drained): EVALDRIFT_INBOX and inbox/ beside
    inboxes = [folder for folder in (s.inbox, db.parent / "inbox") if folder is not None]
    try:
        if not ws.quiet(db, inboxes=inboxes, now=now or datetime.now().replace(microsecond=0), lock_wait=LOCK_WAIT):
            return None
    except (EvaldriftError, OSError):   # a lock file that cannot be made, a watcher holding it too long
        return None
    print("nothing new")
    sys.stdout.flush()
    return 0
