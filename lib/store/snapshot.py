"""A read-only snapshot of a database for readers in other processes while the dashboard owns the file.

DuckDB locks a file against every other process, readers included, while one
holds it read-write. So the owner (the dashboard) keeps a copy beside it,
`<file>.snapshot`, written whole and swapped in (os.replace) whenever its data
changed; the CLI's reading commands (`runs`, `lint`, `report`, `labels agreement`, `labels history`)
open that copy
read-only when the file is held, and say how old it is. The copy is a
checkpointed file copied under the store's write lock (no write can land
mid-copy), or, when a reader kept the checkpoint from emptying the write-ahead
log, a logical copy (COPY FROM DATABASE) of the same committed state. The
file copy is made by a `cp` process: DuckDB's lock is a POSIX lock, which a
process drops when it closes any descriptor of the file, so the owner never
opens the file itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lib.store import Store

SUFFIX = ".snapshot"


def snapshot_path(db_path: str | Path) -> Path:
    """Where the snapshot of a database file lives (beside it; not a *.duckdb name, so no database list shows it)."""
    p = Path(db_path)
    return p.with_name(p.name + SUFFIX)


def snapshot_time(db_path: str | Path) -> datetime | None:
    """When the snapshot of a database was written (None: there is none)."""
    p = snapshot_path(db_path)
    return datetime.fromtimestamp(p.stat().st_mtime) if p.is_file() else None


def write_snapshot(store: Store) -> Path:
    """Write the store's committed state to its snapshot, whole, and swap it in; returns the snapshot's path."""
    target = snapshot_path(store.path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    with store._write_lock:   # no write lands while the copy is made
        store.flush_cache()
        cur = store.cursor()
        cur.execute("CHECKPOINT")
        wal = Path(f"{store.path}.wal")
        cp = shutil.which("cp")
        # The file is copied by another process: DuckDB's lock on it is a POSIX lock, which this process loses
        # the moment it closes any descriptor of the file, as shutil.copyfile would.
        if cp and (not wal.exists() or wal.stat().st_size == 0):
            subprocess.run([cp, str(store.path), str(tmp)], check=True, capture_output=True)
        else:
            name = cur.execute("SELECT current_database()").fetchall()[0][0]
            cur.execute("SET enable_progress_bar = false")
            # The path is ours (the database's own name plus a suffix), never sample text.
            cur.execute(f"ATTACH '{str(tmp).replace(chr(39), chr(39) * 2)}' AS evaldrift_snapshot")
            try:
                cur.execute(f'COPY FROM DATABASE "{name}" TO evaldrift_snapshot')
            finally:
                cur.execute("DETACH evaldrift_snapshot")
    os.replace(tmp, target)
    return target
