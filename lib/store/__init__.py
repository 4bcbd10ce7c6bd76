"""The DuckDB run store: schema, migrations, transactional writes, the queries pages need.

One process owns a database file at a time (DuckDB locks the file against
every other process, even readers). Within the owning process one connection
is shared and every use takes its own `.cursor()`, so Streamlit's session
threads and the ablation worker can use it at once. Writes are serialised by
a lock and run in a transaction: a run, an ingest or a batch of ablation
results is wholly there or wholly absent. All SQL lives here and takes
parameters; no sample text is ever put into SQL text.
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb

from lib.core.errors import StoreBusyError, StoreError
from lib.store.ablations import AblationsMixin
from lib.store.base import CACHE_BATCH, STATUSES
from lib.store.calls import CallCacheMixin
from lib.store.databases import check_evaldrift
from lib.store.labels import LabelsMixin
from lib.store.recording import RecordingMixin, RunBatch
from lib.store.runs import RunsMixin
from lib.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate

__all__ = ["CACHE_BATCH", "MIGRATIONS", "SCHEMA_VERSION", "STATUSES", "RunBatch", "Store"]


class Store(RunsMixin, RecordingMixin, CallCacheMixin, AblationsMixin, LabelsMixin):
    """A DuckDB run store (see module docstring for the threading and lock rules).

    Args:
        path: the database file (created with its schema when absent).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_evaldrift(self.path)   # another application's file is refused before anything is written to it
        try:
            self._con = duckdb.connect(str(self.path))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreBusyError(str(self.path)) from None
            raise StoreError(f"cannot open database {self.path}: {exc}") from None
        self._write_lock = threading.RLock()
        self._hold_replies()
        with self.transaction() as cur:
            migrate(cur, self.path)
        self._drop_stale_staging()

    def close(self) -> None:
        self.flush_cache()
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
