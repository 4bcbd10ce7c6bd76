"""A database file opened by attaching it to a DuckDB instance that an earlier open of this process left idle.

Making a DuckDB instance builds its whole catalog of built-in functions, and closing one tears it down: 17-20 ms
of CPU, measured (2026-12-06, median of 30 back to back, load 20), where attaching a file to a kept instance and
detaching it costs 2-3 ms. Every command and every page opens a store, and the test suite hundreds of times.

Each open file has an instance of its own, holding only it (attached as `NAME`) beside the instance's empty
in-memory database, so a store's cursors see its tables and no other store's. The rules of one `duckdb.connect`
per file hold as they did (lib/store/README.md, "One process owns the file"):

- A file opened again while it is open shares its instance, as `duckdb.connect` shares one for a path it has
  open; the other `read_only` is refused with DuckDB's own error (read-only and read-write never mix in a
  process). A file this process holds through `duckdb.connect` (a test's, a script's) is shared the same way:
  DuckDB refuses to attach a file another instance of the process has open.
- The last close detaches the file: its log is checkpointed into it and DuckDB's lock is gone, so another
  process opens it at once; the instance is kept for the next open. Every cursor of a store is closed before
  (they are the store's connection's children), so none reads or writes the file after its detach.
- The instance's temporary files go beside the file (`<file>.tmp`), where `duckdb.connect` put them.
- A forked child makes instances of its own; its copies of the parent's are never used, and never torn down
  (DuckDB's teardown in a child joins threads the child does not have: the child died of SIGSEGV at exit).

The file's path goes into the ATTACH as a quoted literal (it is the operator's or the caller's name, never
sample text).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

NAME = "evaldrift"   # the file's name in its instance (the instance's other database is the empty `memory`)
IDLE_MAX = 4   # instances kept for later opens: one each for the files a process has open at once, in practice
MIXED = "Can't open a connection to same database file with a different configuration than existing connections"


@dataclass
class _Held:
    root: duckdb.DuckDBPyConnection   # the instance's own connection (never `USE`s the file)
    read_only: bool
    users: list[duckdb.DuckDBPyConnection]   # the connections handed out and not yet released


_lock = threading.Lock()
_idle: list[duckdb.DuckDBPyConnection] = []
_open: dict[str, _Held] = {}


def _key(path: Path) -> str:
    return str(path.resolve())


def literal(text: str) -> str:
    """`text` as a SQL string literal (a file name: never sample text)."""
    return "'" + text.replace("'", "''") + "'"


def attach(path: Path, *, read_only: bool,
           look: Callable[[duckdb.DuckDBPyConnection], None] | None = None) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A connection to the instance holding `path` (attached now, or already), and the name its cursors `USE`
    ("" when this process holds the file through `duckdb.connect`: that instance is shared, as before).

    `look` is called first, on the file attached read-only, when this process does not hold it yet and a
    write-ahead log lies beside it: a read-write attach replays the log into the file, so another application's
    is looked at before (its exception leaves the file detached). The look and the attach are one step for the
    other threads: none opens the file between them (a `duckdb.connect(read_only=True)` for the look was an
    instance that refused another thread's read-write open meanwhile).

    Raises:
        duckdb.ConnectionException: the file is open in this process with the other `read_only`.
        duckdb.Error: DuckDB's own, as `duckdb.connect` raises them (a lock held by another process, not a
            DuckDB file, cannot open).
    """
    key = _key(path)
    with _lock:
        held = _open.get(key)
        if held is not None:   # this process's own file, its log its own
            if held.read_only != read_only:
                raise duckdb.ConnectionException(f"Connection Error: {MIXED}")
            con = held.root.cursor()
            held.users.append(con)
            return con, NAME
        root = _new_or_idle(key + ".tmp")
        try:
            if look is not None and not read_only and Path(f"{key}.wal").exists():
                _look(root, key, look)
            root.execute(f"ATTACH {literal(key)} AS {NAME}{' (READ_ONLY)' if read_only else ''}")
        except duckdb.ResourceInUseException:   # held through duckdb.connect in this process: share that instance
            _keep(root)
            return _connected(path, read_only=read_only, look=look), ""
        except BaseException:
            _keep(root)
            raise
        con = root.cursor()
        _open[key] = _Held(root=root, read_only=read_only, users=[con])
        return con, NAME


def _look(root: duckdb.DuckDBPyConnection, key: str, look: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
    root.execute(f"ATTACH {literal(key)} AS {NAME} (READ_ONLY)")
    try:
        with root.cursor() as cur:
            cur.execute(f"USE {NAME}")
            look(cur)
    finally:
        root.execute(f"DETACH {NAME}")


def _connected(path: Path, *, read_only: bool,
               look: Callable[[duckdb.DuckDBPyConnection], None] | None) -> duckdb.DuckDBPyConnection:
    """`duckdb.connect`'s instance of a file this process holds through it, looked at first as `attach` says."""
    con = duckdb.connect(str(path), read_only=read_only)
    try:
        if look is not None and not read_only and Path(f"{path}.wal").exists():
            look(con)
    except BaseException:
        con.close()
        raise
    return con


def _new_or_idle(temp: str) -> duckdb.DuckDBPyConnection:
    """An idle instance, its temporary files now at `temp`, or a new one."""
    while _idle:
        root = _idle.pop()
        try:
            root.execute(f"SET temp_directory = {literal(temp)}")
            return root
        except duckdb.Error:   # (DuckDB may refuse to move a folder it has used): this one goes
            root.close()
    return duckdb.connect(":memory:", config={"temp_directory": temp})


def release(con: duckdb.DuckDBPyConnection) -> None:
    """Close `attach`'s connection and every cursor made from it; the file's last one detaches the file (found by
    the connection: the file may have been renamed or its folder replaced since)."""
    con.close()
    with _lock:
        found = [(key, held) for key, held in _open.items() if any(user is con for user in held.users)]
        if not found:   # released before: a store closed twice
            return
        [(key, held)] = found
        held.users = [user for user in held.users if user is not con]
        if held.users:
            return
        del _open[key]
        try:
            held.root.execute(f"DETACH {NAME}")
        except duckdb.Error:   # the instance goes, and the file with it
            held.root.close()
            return
        _keep(held.root)


def _keep(root: duckdb.DuckDBPyConnection) -> None:
    if len(_idle) < IDLE_MAX:
        _idle.append(root)
    else:
        root.close()


def _in_forked_child() -> None:
    """The parent's instances stay as they are, forever: used, they would share the parent's file handles;
    torn down, they join worker threads that are not in the child."""
    global _lock, _idle, _open
    import ctypes

    for root in [*_idle, *(held.root for held in _open.values())]:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(root))
    _lock, _idle, _open = threading.Lock(), [], {}


os.register_at_fork(after_in_child=_in_forked_child)
