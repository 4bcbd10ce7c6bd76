"""A database file opened by attaching it to a DuckDB instance that an earlier open of this process left idle.

Making a DuckDB instance builds its whole catalog of built-in functions, and closing one tears it down: 17-20 ms
of CPU, measured (2026-12-06, median of 30 back to back, load 20), where attaching a file to a kept instance and
detaching it costs 2-3 ms. Every command and every page opens a store, and the test suite hundreds of times.

Each open file has an instance of its own, holding only it (attached as `NAME`) beside the instance's empty
in-memory database, so a store's cursors see its tables and no other store's. A file opened again while it is
open shares its instance (as `duckdb.connect` shares one for a path it has open), and its last close detaches it
(which checkpoints it, as closing an instance did) and keeps the instance for the next open.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb

NAME = "evaldrift"   # the file's name in its instance (the instance's other database is the empty `memory`)
IDLE_MAX = 4   # instances kept for later opens: one each for the files a process has open at once, in practice
_lock = threading.Lock()
_idle: list[duckdb.DuckDBPyConnection] = []
_open: dict[str, _Held] = {}
_pid = os.getpid()
_forked: list[object] = []   # a forked child's copies of its parent's instances: never used, never torn down


@dataclass
class _Held:
    root: duckdb.DuckDBPyConnection   # the instance's own connection (never `USE`s the file)
    read_only: bool
    users: int


def _key(path: Path) -> str:
    return str(path.resolve())


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _own_process() -> None:
    """In a forked child: the parent's instances (their threads are not in the child) are left alone."""
    global _pid, _idle, _open
    if os.getpid() != _pid:
        _forked.append((_idle, _open))
        _pid, _idle, _open = os.getpid(), [], {}


def attach(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the instance holding `path` (attached now, or already): its cursors must `USE` `NAME`.

    Raises:
        duckdb.ConnectionException: the file is open in this process with the other `read_only`.
        duckdb.Error: DuckDB's own, as `duckdb.connect` raises them (a lock held by another process, not a
            DuckDB file, cannot open).
    """
    key = _key(path)
    with _lock:
        _own_process()
        held = _open.get(key)
        if held is not None:
            if held.read_only != read_only:
                raise duckdb.ConnectionException(f"{path} is open in this process with another configuration "
                                                 f"(read_only={held.read_only})")
            held.users += 1
            return held.root.cursor()
        root = _idle.pop() if _idle else duckdb.connect(":memory:")
        try:   # the path is the caller's file name, quoted; never sample text
            root.execute(f"ATTACH {_literal(key)} AS {NAME}{' (READ_ONLY)' if read_only else ''}")
        except BaseException:
            _keep(root)
            raise
        _open[key] = _Held(root=root, read_only=read_only, users=1)
        return root.cursor()


def shared(path: Path) -> duckdb.DuckDBPyConnection | None:
    """A connection (in `NAME`) to `path` when this process has it open, else None; close it after use."""
    with _lock:
        _own_process()
        held = _open.get(_key(path))
        if held is None:
            return None
        con = held.root.cursor()
    con.execute(f"USE {NAME}")
    return con


def release(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    """Close `attach`'s connection (and every cursor made from it); the last one's detaches the file."""
    con.close()
    key = _key(path)
    with _lock:
        _own_process()
        held = _open.get(key)
        if held is None:
            return
        held.users -= 1
        if held.users > 0:
            return
        del _open[key]
        try:
            held.root.execute(f"DETACH {NAME}")
        except duckdb.Error:   # still in use by a cursor made elsewhere: the instance goes, and the file with it
            held.root.close()
            return
        _keep(held.root)


def _keep(root: duckdb.DuckDBPyConnection) -> None:
    if len(_idle) < IDLE_MAX:
        _idle.append(root)
    else:
        root.close()
