"""The dashboard keeps a read-only snapshot of its database fresh for the CLI (lib.store.snapshot).

While the dashboard owns the file, `python -m lib runs`, `lint`, `report` and `labels agreement`
read `<file>.snapshot` instead. One thread per open store looks every
SNAPSHOT_SECONDS at the data version (runs and ablations written, an inbox
hand-over drained) and writes the snapshot again when it changed: a reader
sees what the dashboard holds within a few seconds of its commit.
"""

from __future__ import annotations

import atexit
import sys
import threading
import weakref

import duckdb

from lib.store import Store
from lib.store.snapshot import write_snapshot

SNAPSHOT_SECONDS = 2.0
# The keepers running in this process, stopped when it exits: a keeper is a daemon thread, and one still inside a
# DuckDB call while the interpreter shuts down is unwound by Python when it asks for the interpreter's lock back;
# DuckDB's C++ frames catch that unwinding and the process aborts ("FATAL: exception not rethrown", exit 134).
_RUNNING: weakref.WeakSet[SnapshotKeeper] = weakref.WeakSet()


class SnapshotKeeper:
    """Writes `store`'s snapshot at start and after each change of its data version, until stopped or closed."""

    def __init__(self, store: Store, *, every: float = SNAPSHOT_SECONDS) -> None:
        self.store = store
        self.every = every
        self.written = 0   # snapshots written (for tests and logs)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evaldrift-snapshot", daemon=True)
        store.on_close(self.stop)   # closing the store waits for a copy in flight instead of failing under it
        _RUNNING.add(self)
        self._thread.start()

    def _run(self) -> None:
        last = None
        while not self._stop.is_set():
            try:
                version = self.store.data_version()
                if version != last:
                    write_snapshot(self.store)
                    last = version
                    self.written += 1
            except duckdb.ConnectionException:   # the store was closed: nothing left to keep
                return
            except Exception as exc:   # a failed copy is retried at the next look, never fatal
                print(f"evaldrift: snapshot of {self.store.path} failed: {exc}", file=sys.stderr)
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        _RUNNING.discard(self)


@atexit.register   # atexit runs before daemon threads are cut off: each keeper finishes its look and returns
def _stop_all() -> None:
    for keeper in list(_RUNNING):
        keeper.stop()
