"""Hand-over of runs to the process that owns the database.

DuckDB lets one process hold a database file; while the dashboard owns it a
nightly job cannot open it, not even to read. So a recorder first tries the
database; if it is held, it writes the run as one JSON file into the inbox
folder (written to a temporary name, then renamed, so the owner never sees
half a file). The owner drains the inbox on every page load: each file is
recorded in its own transaction and then removed; a file that fails
validation is moved to inbox/rejected/ with the reason beside it.

A run is checked by the rules every door shares (`lib.core.validate.check_run`)
before it is handed over, so a recorder learns of a bad run at once, with
the same message as when the database is free; the drain checks again (a
file may come from elsewhere) and isolates each file: whatever is wrong with
one, it goes to rejected/ and the pages and later files carry on.

Every command that opens the database read-write drains first
(`open_drained`), so no run waits in the inbox once anyone has written.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError, StoreBusyError
from lib.core.records import RunRecord
from lib.core.settings import Settings
from lib.core.settings import load as load_settings
from lib.core.validate import check_run
from lib.intake.chunked import FileRun, Recorded, check_file, record_file
from lib.intake.ingest import run_from_frame
from lib.intake.reading import read_table
from lib.intake.runjson import run_from_json, run_to_json
from lib.store import Store

log = logging.getLogger(__name__)
REJECTED = "rejected"
REASON_SUFFIX = ".reason.txt"


@dataclass(frozen=True)
class Handover:
    """Where a recorded run went: 'database' or 'inbox' (and the file)."""

    where: str
    path: Path


def drop(inbox: str | Path, run: RunRecord) -> Path:
    """Write a run into the inbox atomically; returns the file."""
    folder = Path(inbox)
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run.run_id)[:80]
    final = folder / f"{safe}-{uuid.uuid4().hex[:8]}.run.json"
    tmp = folder / f".{final.name}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(run_to_json(run))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def record(db_path: str | Path, run: RunRecord, *, inbox: str | Path | None = None) -> Handover:
    """Record a run in the database, or hand it over through the inbox if the database is held.

    The run is checked in full first, either way (InputError, nothing written).
    Opening the database drains its inbox first, so earlier hand-overs stay in order.
    """
    check_run(run)
    folder = Path(inbox) if inbox is not None else folder_for(db_path)
    try:
        with open_drained(db_path, folder) as store:
            store.record_run(run)
        return Handover("database", Path(db_path))
    except StoreBusyError:
        return Handover("inbox", drop(folder, run))


@dataclass(frozen=True)
class FileHandover:
    """Where a file's run went, and what there is to say of it.

    Attributes:
        handover: 'database' (recorded a chunk at a time) or 'inbox' (the whole run handed over).
        recorded: the run id, the fields the file had and its sample count.
        metrics: the stored run's metric rows (Store.run_metrics), when it went into the database.
        run: the whole run, when it went through the inbox.
    """

    handover: Handover
    recorded: Recorded
    metrics: pd.DataFrame | None = None
    run: RunRecord | None = None


def record_file_at(db_path: str | Path, path: str | Path, run: FileRun, *,
                   inbox: str | Path | None = None) -> FileHandover:
    """Record a file as one run in the database at `db_path`, or hand it over through the inbox if it is held.

    Into the database the file goes a chunk at a time in one transaction (memory bounded by the
    chunk); a hand-over takes the whole run, as a file in the inbox. A database that does not
    exist yet is created only after the whole file has been checked.

    Raises:
        InputError: the file is unreadable, or a row or field is bad (nothing written).
    """
    folder = Path(inbox) if inbox is not None else folder_for(db_path)
    if not Path(db_path).exists():
        check_file(path, run)  # a bad file leaves no new database behind
    try:
        with open_drained(db_path, folder) as store:
            done = record_file(store, path, run)
            return FileHandover(Handover("database", Path(db_path)), done, metrics=store.run_metrics(run.run_id))
    except StoreBusyError:
        whole = run_from_frame(read_table(path), source=str(path), run_id=run.run_id, started_at=run.started_at,
                               pipeline=run.pipeline, judge_model=run.judge_model, templates=run.templates,
                               binding=run.binding)
        n = sum(len(ss) for ss in whole.samples.values())
        return FileHandover(Handover("inbox", drop(folder, whole)), Recorded(whole.run_id, whole.fields, n),
                            run=whole)


@dataclass(frozen=True)
class Rejection:
    """A hand-over file the drain refused: the file (now in rejected/) and why."""

    path: Path
    reason: str


def folder_for(db_path: str | Path, settings: Settings | None = None) -> Path:
    """The inbox of a database: EVALDRIFT_INBOX for the configured database, else `inbox/` beside the file."""
    s = settings or load_settings()
    return s.inbox if Path(db_path).resolve() == s.db_path.resolve() else Path(db_path).parent / "inbox"


def open_drained(db_path: str | Path, inbox: str | Path) -> Store:
    """Open the database read-write and record what waits in its inbox first.

    Raises:
        StoreBusyError: another process holds the file; its message says how many runs wait.
    """
    try:
        store = Store(db_path)
    except StoreBusyError as exc:
        n = waiting(inbox)
        if n:
            raise StoreBusyError(exc.path, f"{n} run(s) wait in the inbox {inbox}.") from None
        raise
    drain(store, inbox)
    return store


def waiting(inbox: str | Path) -> int:
    """How many runs wait in the inbox."""
    folder = Path(inbox)
    return sum(1 for _ in folder.glob("*.run.json")) if folder.is_dir() else 0


def rejected(inbox: str | Path) -> list[Rejection]:
    """The hand-over files the drain refused, newest first, with their reasons."""
    folder = Path(inbox) / REJECTED
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.run.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        reason_file = path.with_name(path.name + REASON_SUFFIX)
        reason = reason_file.read_text(encoding="utf-8").strip() if reason_file.is_file() else "(no reason kept)"
        out.append(Rejection(path, reason))
    return out


# Every session's page load drains: two sessions at once would read and unlink the same file.
_DRAIN_LOCK = threading.Lock()


def drain(store: Store, inbox: str | Path) -> list[str]:
    """Record every run waiting in the inbox; returns the run ids recorded."""
    folder = Path(inbox)
    if not folder.is_dir():
        return []
    with _DRAIN_LOCK:
        return _drain(store, folder)


def _drain(store: Store, folder: Path) -> list[str]:
    recorded = []
    for path in sorted(folder.glob("*.run.json")):
        try:
            run = run_from_json(path.read_bytes(), source=path.name)
            store.record_run(run)
        except FileNotFoundError:  # removed meanwhile
            continue
        except (InputError, ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
            _reject(folder, path, exc)  # the file is bad: set aside, so it never stops the pages or later files
            continue
        except Exception as exc:  # the database failed (disk, lock): keep the file for the next drain
            log.warning("inbox: %s stays for the next drain: %s", path.name, exc)
            break
        path.unlink()
        recorded.append(run.run_id)
    return recorded


def _reject(folder: Path, path: Path, exc: Exception) -> None:
    target = folder / REJECTED
    target.mkdir(exist_ok=True)
    (target / f"{path.name}{REASON_SUFFIX}").write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
    os.replace(path, target / path.name)
