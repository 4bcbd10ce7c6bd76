"""The DuckDB run store: schema, migrations, transactional writes, the queries pages need.

One process owns a database file at a time (DuckDB locks the file against
every other process, even readers). Within the owning process one connection
is shared and every use takes its own `.cursor()`, so Streamlit's session
threads and the ablation worker can use it at once. Writes are serialised by
a lock and run in a transaction: a run, an ingest or a batch of ablation
results is wholly there or wholly absent. All SQL lives here and takes
parameters; no sample text is ever put into SQL text.

The face: `Store` (lib.store.store) and the records a caller hands it. Every other part of the database is a
module of functions that take the store first (`from lib.store import history as hs`; lib/store/README.md).
"""

from lib.store.base import CACHE_BATCH, STATUSES
from lib.store.recording import PreparedRun, RunBatch, prepare_run
from lib.store.schema import MIGRATIONS, SCHEMA_VERSION, Migration
from lib.store.store import Store

__all__ = ["CACHE_BATCH", "MIGRATIONS", "SCHEMA_VERSION", "STATUSES", "Migration", "PreparedRun", "RunBatch", "Store",
           "prepare_run"]
