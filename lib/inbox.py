"""Hand-over of runs to the process that owns the database.

DuckDB lets one process hold a database file; while the dashboard owns it a
nightly job cannot open it, not even to read. So a recorder first tries the
database; if it is held, it writes the run as one JSON file into the inbox
folder (written to a temporary name, then renamed, so the owner never sees
half a file). The owner drains the inbox on every page load: each file is
recorded in its own transaction and then removed; a file that fails
validation is moved to inbox/rejected/ with the reason beside it.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from lib.errors import EvaldriftError, StoreBusyError
from lib.records import RunRecord, run_from_json, run_to_json
from lib.store import Store


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
    """Record a run in the database, or hand it over through the inbox if the database is held."""
    try:
        with Store(db_path) as store:
            store.record_run(run)
        return Handover("database", Path(db_path))
    except StoreBusyError:
        return Handover("inbox", drop(inbox if inbox is not None else Path(db_path).parent / "inbox", run))


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
            run = run_from_json(path.read_text(encoding="utf-8"))
            store.record_run(run)
        except FileNotFoundError:  # removed meanwhile
            continue
        except (EvaldriftError, ValueError, KeyError, TypeError) as exc:
            rejected = folder / "rejected"
            rejected.mkdir(exist_ok=True)
            os.replace(path, rejected / path.name)
            (rejected / f"{path.name}.reason.txt").write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
            continue
        path.unlink()
        recorded.append(run.run_id)
    return recorded
