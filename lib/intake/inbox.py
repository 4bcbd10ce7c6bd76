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

One rule says where a hand-over goes, in the recorder and the owner alike
(`folder_for`): EVALDRIFT_INBOX when it is set, whatever the database, else
`inbox/` beside the database. The owner drains both that folder and the one
beside its database (`folders_drained`), so a recorder that does not share
the owner's EVALDRIFT_INBOX is still drained; a recorder that hands over to
EVALDRIFT_INBOX cannot know whether the owner drains it, and says so.

A hand-over names the database it is for (`target`, the first key of the
file), because databases in one folder share an inbox: a drain records only
runs for its own database (and untargeted files written before targets
existed), leaves runs for others untouched, and beside a run whose database
is gone writes a `.reason.txt` saying so; the run waits there.

The inbox takes only regular files its own user owns: each entry is checked
with lstat before it is opened (no symlink is followed, no FIFO, folder or
device is read), opened non-blocking, and checked again on the open
descriptor; anything else, or a file larger than EVALDRIFT_MAX_INPUT_BYTES,
is moved to rejected/ with its reason and never holds up the others.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
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
from lib.intake.runjson import read_handover, run_to_json
from lib.store import Store
from lib.store.lake import is_lake

log = logging.getLogger(__name__)
REJECTED = "rejected"
REASON_SUFFIX = ".reason.txt"
SUFFIX = ".run.json"
_HEAD = 64 * 1024          # the target is the first key: this many bytes always hold it
_REASON_CHARS = 4000       # a reason file longer than this is shown cut
_TARGET_HEAD = re.compile(rb'\A\s*\{\s*"target"\s*:\s*("(?:[^"\\]|\\.)*")')


@dataclass(frozen=True)
class Handover:
    """Where a recorded run went: 'database' or 'inbox' (and the file)."""

    where: str
    path: Path


def drop(inbox: str | Path, run: RunRecord, *, target: str | Path | None = None) -> Path:
    """Write a run into the inbox atomically; returns the file.

    Args:
        inbox: the inbox folder.
        run: the run (checked already).
        target: the database the run is for; only that database's drain records it.
    """
    folder = Path(inbox)
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run.run_id)[:80]
    final = folder / f"{safe}-{uuid.uuid4().hex[:8]}{SUFFIX}"
    tmp = folder / f".{final.name}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(run_to_json(run, target=None if target is None else str(Path(target).resolve())))
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
        return Handover("inbox", drop(folder, run, target=db_path))


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
    if is_lake(db_path) or not Path(db_path).exists():
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
        return FileHandover(Handover("inbox", drop(folder, whole, target=db_path)),
                            Recorded(whole.run_id, whole.fields, n),
                            run=whole)


@dataclass(frozen=True)
class Rejection:
    """A hand-over file the drain refused: the file (now in rejected/) and why."""

    path: Path
    reason: str


def folder_for(db_path: str | Path, settings: Settings | None = None) -> Path:
    """Where a hand-over for `db_path` goes: EVALDRIFT_INBOX when it is set, whatever the database (each file names
    the database it is for), else `inbox/` beside the file. The recorder and the owner read this one rule."""
    s = settings or load_settings()
    return s.inbox if s.inbox is not None else beside(db_path)


def beside(db_path: str | Path) -> Path:
    """The `inbox/` folder beside a database: where a recorder without EVALDRIFT_INBOX hands over."""
    return Path(db_path).parent / "inbox"


def folders_drained(db_path: str | Path, settings: Settings | None = None) -> tuple[Path, ...]:
    """The folders the owner of `db_path` drains: its hand-over folder (folder_for) and the one beside the
    database, where a recorder that does not share the owner's EVALDRIFT_INBOX hands over."""
    return tuple(dict.fromkeys([folder_for(db_path, settings), beside(db_path)]))


def open_drained(db_path: str | Path, inbox: str | Path) -> Store:
    """Open the database read-write and record what waits for it first: in `inbox`, and beside the database (a
    team store's URL, lib.store.lake, is only opened: it is never held, so nothing is handed over to it).

    Raises:
        StoreBusyError: another process holds the file; its message says how many runs wait.
    """
    if is_lake(db_path):   # a team store has many writers: nothing is handed over to it, nothing waits
        return Store(db_path)
    folders = tuple(dict.fromkeys([Path(inbox), beside(db_path)]))
    try:
        store = Store(db_path)
    except StoreBusyError as exc:
        n = sum(waiting(folder, db_path) for folder in folders)
        if n:
            raise StoreBusyError(exc.path, f"{n} run(s) wait in the inbox {inbox}.") from None
        raise
    for folder in folders:
        drain(store, folder)
    return store


def waiting(inbox: str | Path, db_path: str | Path | None = None) -> int:
    """How many runs wait in the inbox (for `db_path` alone, when given: its own and untargeted ones)."""
    mine = None if db_path is None else Path(db_path).resolve()
    n = 0
    for path in _entries(Path(inbox)):
        if mine is None:
            n += 1
            continue
        try:
            target = _peek_target(path)
        except OSError:
            continue
        n += target is None or Path(target) == mine
    return n


def rejected(inbox: str | Path) -> list[Rejection]:
    """The hand-over files the drain refused, newest first, with their reasons.

    Never raises: the folder is read without following a symlink, and an entry that cannot be read
    (dangling, vanished, not a file) is listed with what is known of it.
    """
    folder = Path(inbox) / REJECTED
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
        found = []
        for path in _entries(folder):
            try:
                found.append((os.lstat(path).st_mtime, path))
            except OSError:
                continue  # vanished meanwhile
    except FileNotFoundError:   # nothing was ever refused (or there is no inbox): the usual case, not a fault
        return []
    except OSError as exc:
        log.warning("inbox: cannot list %s: %s", folder, exc)
        return []
    found.sort(key=lambda pair: pair[0], reverse=True)
    return [Rejection(path, _reason(path.with_name(path.name + REASON_SUFFIX))) for _, path in found]


# Every session's page load drains: two sessions at once would read and unlink the same file.
_DRAIN_LOCK = threading.Lock()


def drain(store: Store, inbox: str | Path) -> list[str]:
    """Record every run waiting in the inbox for this database; returns the run ids recorded."""
    folder = Path(inbox)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
    except OSError:
        return []
    with _DRAIN_LOCK:
        return _drain(store, folder)


class _Refused(Exception):
    """An inbox entry that is not a hand-over file this inbox takes."""


class _NotYours(Exception):
    """A hand-over file for another database: left where it is."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.target = target


def _drain(store: Store, folder: Path) -> list[str]:
    recorded = []
    mine = Path(store.path).resolve()
    limit = load_settings().max_input_bytes
    for path in _entries(folder):
        try:
            target, run = read_handover(_read_own(path, mine, limit), source=path.name)
            if target is not None and Path(target) != mine:  # named, though not as the first key
                raise _NotYours(target)
        except FileNotFoundError:  # removed meanwhile
            continue
        except _NotYours as other:
            _note_target(path, other.target)
            continue
        except (_Refused, OSError, InputError, ValueError, TypeError, KeyError, AttributeError, OverflowError,
                RecursionError, MemoryError) as exc:
            _reject(folder, path, exc)  # the entry is bad: set aside, so it never stops the pages or later files
            continue
        try:
            store.record_run(run)
        except InputError as exc:
            _reject(folder, path, exc)
            continue
        except Exception as exc:  # the database failed (disk, lock): keep the file for the next drain
            log.warning("inbox: %s stays for the next drain: %s", path.name, exc)
            break
        path.unlink(missing_ok=True)
        path.with_name(path.name + REASON_SUFFIX).unlink(missing_ok=True)
        recorded.append(run.run_id)
    return recorded


def _entries(folder: Path) -> list[Path]:
    """The `*.run.json` names in a folder, sorted; whatever they are (checked later, one by one)."""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it if e.name.endswith(SUFFIX) and not e.name.startswith("."))
    except OSError:
        return []
    return [folder / name for name in names]


def _open_regular(path: Path) -> int:
    """Open a regular file this user owns, never following a symlink nor blocking on a FIFO.

    Raises:
        _Refused: the entry is something else (the reason says what).
        OSError: it cannot be opened.
    """
    before = os.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise _Refused(f"not a regular file ({_kind_of(before.st_mode)}); the inbox takes only files")
    if hasattr(os, "geteuid") and before.st_uid != os.geteuid():
        raise _Refused(f"owned by user id {before.st_uid}, not by this process's user; the inbox takes only "
                       "files its own user wrote")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise _Refused("replaced by something else while being opened")
    return fd


def _peek_target(path: Path) -> str | None:
    """The database a hand-over file names (its first key), read from its first bytes only."""
    fd = _open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        return _head_target(fh.read(_HEAD))


def _head_target(head: bytes) -> str | None:
    match = _TARGET_HEAD.match(head)
    if match is None:
        return None
    try:
        target = json.loads(match.group(1))
    except ValueError:
        return None
    return target if isinstance(target, str) else None


def _read_own(path: Path, mine: Path, limit: int) -> bytes:
    """The bytes of a hand-over file for this database (or for none).

    Raises:
        _NotYours: the file names another database (not read past its first bytes).
        _Refused: not a regular file, or larger than the limit.
    """
    fd = _open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(_HEAD)
        target = _head_target(head)
        if target is not None and Path(target) != mine:
            raise _NotYours(target)
        if size > limit:
            raise _Refused(f"the file is {size:,} bytes, over the limit of {limit:,} (EVALDRIFT_MAX_INPUT_BYTES)")
        data = head + fh.read(limit + 1 - len(head))
    if len(data) > limit:
        raise _Refused(f"the file grew past the limit of {limit:,} bytes (EVALDRIFT_MAX_INPUT_BYTES)")
    return data


def _note_target(path: Path, target: str) -> None:
    """Beside a run for a database that is gone, say so (it waits for that database)."""
    note = path.with_name(path.name + REASON_SUFFIX)
    if Path(target).exists():
        note.unlink(missing_ok=True)
        return
    reason = (f"waits for the database {target}, which does not exist (any more): no other database records it. "
              f"Record it there once it is back, or into another with `python -m lib record {path.name} --db ...`.\n")
    try:
        if _reason(note) != reason.strip():
            _write_reason(note, reason)
    except OSError as exc:
        log.warning("inbox: cannot note why %s waits: %s", path.name, exc)


def _reason(path: Path) -> str:
    """A reason file's text; never raises (a symlink or FIFO put there is not read)."""
    try:
        fd = _open_regular(path)
    except (OSError, _Refused):
        return "(no reason kept)"
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(_REASON_CHARS + 1)
    except OSError:
        return "(no reason kept)"
    text = data[:_REASON_CHARS].decode("utf-8", errors="replace").strip()
    return text + (" ..." if len(data) > _REASON_CHARS else "")


def _write_reason(path: Path, text: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _kind_of(mode: int) -> str:
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
    return next((name for test, name in kinds if test(mode)), "not a file")


def _reject(folder: Path, path: Path, exc: Exception) -> None:
    """Move a bad entry to rejected/ with its reason; never raises (a failure is logged, the drain goes on)."""
    target = folder / REJECTED
    reason = str(exc) if isinstance(exc, _Refused) else f"{type(exc).__name__}: {exc}"
    try:
        try:
            os.mkdir(target)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(target).st_mode):
                raise _Refused(f"{target} is not a folder") from None
        os.replace(path, target / path.name)
        _write_reason(target / f"{path.name}{REASON_SUFFIX}", reason[:_REASON_CHARS] + "\n")
    except (OSError, _Refused) as err:
        log.warning("inbox: cannot set %s aside (%s): %s", path.name, reason, err)
