"""`python -m lib archive ...`: the copies of replaced runs: list them, restore one, purge (operators only).

Recording over a run id (ingest, record, score, import, the Import page)
moves the earlier copy aside; it stays until `archive purge` deletes it.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lib.cli.common import EXIT_OK, UsageError, _db_path
from lib.core.errors import StoreBusyError

if TYPE_CHECKING:
    from lib.store.archive import ArchivedRun


def _line(a: ArchivedRun) -> str:
    return (f"{a.archive_id}  run {a.run_id}  replaced {a.archived_at:%Y-%m-%d %H:%M:%S} ({a.reason}): "
            f"{a.footprint.sentence()}")


def say_replaced(db: Path | str, run_id: str, since: datetime) -> None:
    """After a recording in `db`: print what it replaced and where the earlier copy is kept (nothing if new)."""
    from lib.store import Store

    try:
        with Store(db) as store:
            kept = [a for a in store.archived_runs(run_id) if a.archived_at >= since.replace(microsecond=0)
                    and a.reason.startswith("recorded over")]
    except StoreBusyError:   # the dashboard took the file meanwhile: it lists the copy on the Import page
        return
    for a in kept[:1]:
        print(f"replaced the earlier copy of run {run_id} ({a.footprint.sentence()}); it is kept as {a.archive_id}: "
              f"`python -m lib archive restore {a.archive_id} --db {db}` puts it back")


def cmd_archive(args: argparse.Namespace) -> int:
    from lib.store import Store

    db = _db_path(args, must_exist=True)
    with Store(db) as store:
        if args.action == "list":
            kept = store.archived_runs(args.run)
            if args.json:
                print(json.dumps([{"archive_id": a.archive_id, "run_id": a.run_id,
                                   "archived_at": a.archived_at.isoformat(), "reason": a.reason,
                                   "samples": a.footprint.n_samples, "suites": dict(a.footprint.suites),
                                   "metrics": [list(m) for m in a.footprint.metrics]} for a in kept], indent=2))
            else:
                for a in kept:
                    print(_line(a))
                if not kept:
                    print("no replaced runs are kept" + (f" for run {args.run}" if args.run else ""))
        elif args.action == "restore":
            by_id = {a.archive_id: a for a in store.archived_runs()}
            displaced = store.restore_run(args.archive_id)   # InputError for an unknown id
            print(f"restored run {by_id[args.archive_id].run_id} from {args.archive_id} "
                  f"({by_id[args.archive_id].footprint.sentence()})")
            if displaced is not None:
                print(f"the copy it replaced is kept as {displaced.archive_id}")
        else:
            ids = [a.archive_id for a in store.archived_runs(args.run)] if args.all else list(args.archive_id)
            if not ids and not args.all:
                raise UsageError("archive purge wants archive ids (see `archive list`), or --all [--run RUN]")
            n = store.purge_archived(ids)
            print(f"purged {n} kept cop{'y' if n == 1 else 'ies'} for good")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction, db_arg) -> None:
    """The `archive` command and its actions."""
    p = sub.add_parser("archive", help="list, restore or purge the kept copies of replaced runs")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = acts.add_parser("list", help="the kept copies, newest first")
    db_arg(a)
    a.add_argument("--run", metavar="RUN", help="only this run's copies")
    a.add_argument("--json", action="store_true", help="print a JSON list")
    a = acts.add_parser("restore", help="put a kept copy back (the copy it replaces is kept in turn)")
    db_arg(a)
    a.add_argument("archive_id", metavar="ARCHIVE_ID")
    a = acts.add_parser("purge", help="delete kept copies for good (operators only: nothing brings them back)")
    db_arg(a)
    a.add_argument("archive_id", nargs="*", metavar="ARCHIVE_ID")
    a.add_argument("--all", action="store_true", help="every kept copy (of --run only, when given)")
    a.add_argument("--run", metavar="RUN", help="with --all: only this run's copies")
    p.set_defaults(func=cmd_archive)
