"""`python -m lib watch`: alert the team's channel when a metric moves, saying whether the system or the
measurement changed (lib.diagnosis.watch decides, lib.jobs.watch claims and delivers).

Exit codes: 0 nothing new, 1 alerts sent, 2 bad input (no channel, a URL Apprise does not know, no database),
3 a delivery failed (kept pending and sent again by the next look). With `--every`, it looks again every
interval until stopped (SIGTERM or Ctrl-C end it between looks, exit 0).
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lib.cli.common import EXIT_FINDING, EXIT_INCONCLUSIVE, EXIT_OK, PROG, UsageError, _db_path, _settings
from lib.cli.watch_quiet import calls

if TYPE_CHECKING:
    from lib.jobs import watch as wj

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


def duration(text: str) -> float:
    """'60s', '5m', '1h' or a number of seconds -> seconds (at least 1)."""
    found = _DURATION.match(text)
    if not found:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (say 60s, 5m or 1h)")
    seconds = float(found.group(1)) * {"s": 1, "m": 60, "h": 3600}[found.group(2) or "s"]
    if seconds < 1:
        raise argparse.ArgumentTypeError(f"at least 1 second, got {text!r}")
    return seconds


def _print_look(result: wj.LookResult) -> None:
    where = " (the dashboard holds the database: read its snapshot)" if result.snapshot else ""
    for e in result.claimed:
        print(f"{e.kind}: {e.headline}")
    if not result.claimed:
        print(f"nothing new{where}")
    elif where:
        print(where.strip(" ()"))
    if result.delivered:
        print(f"{result.delivered} message(s) delivered")
    for line in result.errors:
        print(f"pending: {line}", file=sys.stderr)


def _code(result: wj.LookResult) -> int:
    if result.pending:
        return EXIT_INCONCLUSIVE
    return EXIT_FINDING if result.delivered else EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    if args.budget is not None and not args.ablate:
        raise UsageError("--budget counts the judge calls of --ablate: give --ablate too")
    from lib.jobs import watch as wj

    settings = _settings()
    notifier = wj.notifier_from(settings)
    if args.test:
        errors = wj.send_now(notifier, "evaldrift: test message",
                             f"A test message from `{PROG} watch --test` at {datetime.now():%Y-%m-%d %H:%M:%S}: "
                             f"this channel receives evaldrift's alerts.\nevaldrift-key: test")
        for line in errors:
            print(f"not delivered: {line}", file=sys.stderr)
        print(f"test message sent to {len(notifier.channels) - len(errors)} of {len(notifier.channels)} channel(s)")
        return EXIT_INCONCLUSIVE if errors else EXIT_OK
    db = _db_path(args, must_exist=True)
    if args.digest:
        return _digest(db, notifier)
    ablating = None
    if args.ablate:   # a paid judge within --budget, else EVALDRIFT_CALL_BUDGET, else none: only the free offline one
        budget = args.budget if args.budget is not None else settings.call_budget or 0
        ablating = wj.Ablating(budget, settings)
    if args.every is None:
        result = wj.look(db, notifier, public_url=settings.public_url, ablating=ablating)
        _print_look(result)
        return _code(result)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.is_set():
        try:
            _print_look(wj.look(db, notifier, public_url=settings.public_url, ablating=ablating))
        except Exception as exc:   # one failed look (a busy file, a broken receiver) must not end the watch
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.stdout.flush()
        stop.wait(args.every)
    return EXIT_OK


def _digest(db: Path | str, notifier: wj.AppriseNotifier) -> int:
    from lib.cli.common import open_for_reading
    from lib.jobs import watch as wj
    from lib.presentation.mdtext import markdown_text
    from lib.presentation.review import default_range, review, review_markdown

    with open_for_reading(db) as store:
        bounds = default_range(store)
        if bounds is None:
            raise UsageError(f"{db} holds no runs: nothing to review")
        rev = review(store, *bounds)
        text = markdown_text(review_markdown(rev))
    errors = wj.send_now(notifier, rev.title, text)
    for line in errors:
        print(f"not delivered: {line}", file=sys.stderr)
    print(f"{rev.title}: sent to {len(notifier.channels) - len(errors)} of {len(notifier.channels)} channel(s)")
    return EXIT_INCONCLUSIVE if errors else EXIT_OK


def add_parser(sub: argparse._SubParsersAction, db_arg) -> None:
    """The `watch` command."""
    p = sub.add_parser("watch", help="alert the team's channel (EVALDRIFT_NOTIFY) when a metric moves, saying "
                                     "whether the system or the measurement changed")
    db_arg(p)
    p.add_argument("--every", type=duration, metavar="INTERVAL",
                   help="keep watching: look again every INTERVAL (60s, 5m, 1h) until stopped")
    p.add_argument("--test", action="store_true", help="send a test message to every channel, and nothing else")
    p.add_argument("--digest", action="store_true", help="send the weekly Review (the last 7 days of runs)")
    p.add_argument("--ablate", action="store_true",
                   help="before sending, run the ablations the suspects call for, so a message carries LEAK or CLEAN "
                        "(the offline judge is free; a paid judge only within --budget)")
    p.add_argument("--budget", type=calls, metavar="N",
                   help="with --ablate: the paid judge calls each look's ablations may make together (default "
                        "EVALDRIFT_CALL_BUDGET, else 0: only the offline judge's); an ablation that does not fit is "
                        "not run, and its message says so")
    p.set_defaults(func=cmd_watch)
