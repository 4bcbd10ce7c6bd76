"""The store's schema: the tables, and the migrations from each version to the next."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from lib.core.errors import StoreError
from lib.store.base import _now
from lib.store.lake import without_keys

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table


_SCHEMA_V1 = [
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id VARCHAR PRIMARY KEY, started_at TIMESTAMP NOT NULL, label VARCHAR,
        pipeline VARCHAR NOT NULL, recorded_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS prompts (
        prompt_hash VARCHAR PRIMARY KEY, metric VARCHAR NOT NULL, template VARCHAR NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS run_metrics (
        run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        judge_model VARCHAR, prompt_hash VARCHAR, binding VARCHAR, fingerprint VARCHAR,
        score DOUBLE, n INTEGER NOT NULL, n_failed INTEGER NOT NULL, n_excluded INTEGER NOT NULL,
        PRIMARY KEY (run_id, suite, metric))""",
    """CREATE TABLE IF NOT EXISTS samples (
        run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, sample_id VARCHAR NOT NULL,
        question VARCHAR NOT NULL, answer VARCHAR NOT NULL, contexts VARCHAR[] NOT NULL,
        ground_truth VARCHAR NOT NULL, PRIMARY KEY (run_id, suite, sample_id))""",
    """CREATE TABLE IF NOT EXISTS sample_scores (
        run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL, status VARCHAR NOT NULL, score DOUBLE, reason VARCHAR,
        verdicts VARCHAR NOT NULL, PRIMARY KEY (run_id, suite, metric, sample_id))""",
    """CREATE TABLE IF NOT EXISTS judge_cache (
        key VARCHAR PRIMARY KEY, model VARCHAR NOT NULL, request VARCHAR NOT NULL, reply VARCHAR NOT NULL,
        prompt_tokens INTEGER, completion_tokens INTEGER, fingerprint VARCHAR, created_at TIMESTAMP)""",
    """CREATE TABLE IF NOT EXISTS ablations (
        ablation_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL,
        spec VARCHAR NOT NULL, judge_model VARCHAR NOT NULL, status VARCHAR NOT NULL,
        total INTEGER NOT NULL, done INTEGER NOT NULL, created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL, result VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS ablation_results (
        ablation_id VARCHAR NOT NULL, metric VARCHAR NOT NULL, arm VARCHAR NOT NULL, rep INTEGER NOT NULL,
        sample_id VARCHAR NOT NULL, status VARCHAR NOT NULL, score DOUBLE, reason VARCHAR,
        verdicts VARCHAR NOT NULL, calls INTEGER NOT NULL, cached BOOLEAN NOT NULL,
        PRIMARY KEY (ablation_id, metric, arm, rep, sample_id))""",
]
# v2: the fields a run's samples had (JSON list; NULL for older runs: all four), and per metric the scoring
# library that produced the scores ("ragas 0.2.6"; NULL: ours or unknown) and the judge's output mode.
_SCHEMA_V2 = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS fields VARCHAR",
    "ALTER TABLE run_metrics ADD COLUMN IF NOT EXISTS scorer VARCHAR",
    "ALTER TABLE run_metrics ADD COLUMN IF NOT EXISTS output_mode VARCHAR",
]
# v3: re-judged series and the incident log (lib.store.history). Made lazily before v3, hence IF NOT EXISTS:
# a database that already has them keeps them as they are.
_HISTORY = [
    """CREATE TABLE IF NOT EXISTS rejudges (
        series_id VARCHAR PRIMARY KEY, metric VARCHAR NOT NULL, suite VARCHAR NOT NULL, spec VARCHAR NOT NULL,
        judge_model VARCHAR NOT NULL, prompt_hash VARCHAR NOT NULL, binding VARCHAR NOT NULL, label VARCHAR,
        status VARCHAR NOT NULL, total INTEGER NOT NULL, done INTEGER NOT NULL,
        created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS rejudge_scores (
        series_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, sample_id VARCHAR NOT NULL, status VARCHAR NOT NULL,
        score DOUBLE, reason VARCHAR, verdicts VARCHAR NOT NULL, calls INTEGER NOT NULL, cached BOOLEAN NOT NULL,
        PRIMARY KEY (series_id, run_id, sample_id))""",
    """CREATE TABLE IF NOT EXISTS rejudge_runs (
        series_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, score DOUBLE, n INTEGER NOT NULL,
        n_failed INTEGER NOT NULL, n_excluded INTEGER NOT NULL, calls INTEGER NOT NULL, cached INTEGER NOT NULL,
        PRIMARY KEY (series_id, run_id))""",
    """CREATE TABLE IF NOT EXISTS incident_states (
        incident_id VARCHAR NOT NULL, seq INTEGER NOT NULL, state VARCHAR NOT NULL, note VARCHAR NOT NULL,
        user_name VARCHAR NOT NULL, set_at TIMESTAMP NOT NULL, PRIMARY KEY (incident_id, seq))""",
]
# v4: how an ablation job ended (stopped and why, output mode, pacing), beside the ablations table.
_JOB_LOG = [
    """CREATE TABLE IF NOT EXISTS job_log (
        ablation_id VARCHAR PRIMARY KEY, state VARCHAR NOT NULL, reason VARCHAR, output_mode VARCHAR,
        pacing VARCHAR, updated_at TIMESTAMP NOT NULL)""",
]
# v5: jobs sent through the OpenAI Batch API (lib.store.batches).
_BATCHES = [
    """CREATE TABLE IF NOT EXISTS batch_jobs (
        batch_id VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, job_id VARCHAR NOT NULL, spec VARCHAR NOT NULL,
        model VARCHAR NOT NULL, endpoint VARCHAR NOT NULL, status VARCHAR NOT NULL, total INTEGER NOT NULL,
        completed INTEGER NOT NULL, failed INTEGER NOT NULL, input_file_id VARCHAR NOT NULL,
        output_file_id VARCHAR, error_file_id VARCHAR, collected BOOLEAN NOT NULL, replies INTEGER NOT NULL,
        finished BOOLEAN NOT NULL, created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS batch_requests (
        batch_id VARCHAR NOT NULL, key VARCHAR NOT NULL, request VARCHAR NOT NULL, items INTEGER NOT NULL,
        labels VARCHAR NOT NULL, PRIMARY KEY (batch_id, key))""",
    """CREATE TABLE IF NOT EXISTS batch_replies (
        batch_id VARCHAR NOT NULL, key VARCHAR NOT NULL, reply VARCHAR NOT NULL, prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL, fingerprint VARCHAR, PRIMARY KEY (batch_id, key))""",
    """CREATE TABLE IF NOT EXISTS batch_faults (
        batch_id VARCHAR NOT NULL, key VARCHAR NOT NULL, reason VARCHAR NOT NULL, PRIMARY KEY (batch_id, key))""",
]

# Replaced runs are kept: recording over a run id moves the earlier copy's rows here under an archive id
# (lib.store.archive); they come back with restore and go only with an operator's purge. Columns as the live
# tables', plus archive_id: a migration that adds a column to a live table adds it here too.
_ARCHIVE = [
    """CREATE TABLE IF NOT EXISTS archived_runs (
        archive_id VARCHAR PRIMARY KEY, archived_at TIMESTAMP NOT NULL, reason VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL, started_at TIMESTAMP NOT NULL, label VARCHAR, pipeline VARCHAR NOT NULL,
        recorded_at TIMESTAMP NOT NULL, fields VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS archived_run_metrics (
        archive_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        judge_model VARCHAR, prompt_hash VARCHAR, binding VARCHAR, fingerprint VARCHAR,
        score DOUBLE, n INTEGER NOT NULL, n_failed INTEGER NOT NULL, n_excluded INTEGER NOT NULL,
        scorer VARCHAR, output_mode VARCHAR, PRIMARY KEY (archive_id, suite, metric))""",
    """CREATE TABLE IF NOT EXISTS archived_samples (
        archive_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, sample_id VARCHAR NOT NULL,
        question VARCHAR NOT NULL, answer VARCHAR NOT NULL, contexts VARCHAR[] NOT NULL,
        ground_truth VARCHAR NOT NULL, PRIMARY KEY (archive_id, suite, sample_id))""",
    """CREATE TABLE IF NOT EXISTS archived_sample_scores (
        archive_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL, status VARCHAR NOT NULL, score DOUBLE, reason VARCHAR,
        verdicts VARCHAR NOT NULL, PRIMARY KEY (archive_id, suite, metric, sample_id))""",
]

# People's labels of samples (lib.store.labels). A row is never updated or deleted: a new label by the same
# labeller of the same sample, metric and item supersedes the old one, which stays as history. `seq` orders every
# label of the file (a suite's calibration set version is its highest seq); `content` is the hash of the fields the
# labeller saw (the metric's input), so a label applies only to samples with that content.
_LABELS = [
    """CREATE TABLE IF NOT EXISTS labels (
        seq BIGINT PRIMARY KEY, suite VARCHAR NOT NULL, sample_id VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        item INTEGER, kind VARCHAR NOT NULL, value DOUBLE NOT NULL, content VARCHAR NOT NULL,
        labeller VARCHAR NOT NULL, labelled_at TIMESTAMP NOT NULL, source VARCHAR NOT NULL, note VARCHAR)""",
]

# `watch_seen`: one row per fact (an incident, a close, a verdict, an instrument change...) by its key, with the
# message that announced it (NULL: seen without a message, e.g. on the first look). `watch_outbox`: one row per
# message and channel (a redacted Apprise URL); status 'pending' until the channel took it, 'delivered' after.
_WATCH = [
    """CREATE TABLE IF NOT EXISTS watch_seen (
        key VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, message_key VARCHAR, seen_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS watch_outbox (
        message_key VARCHAR NOT NULL, channel VARCHAR NOT NULL, kind VARCHAR NOT NULL, incident_id VARCHAR,
        anchor_run VARCHAR, headline VARCHAR NOT NULL, body VARCHAR NOT NULL, status VARCHAR NOT NULL,
        attempts INTEGER NOT NULL, last_error VARCHAR, created_at TIMESTAMP NOT NULL, sent_at TIMESTAMP,
        delivered_at TIMESTAMP, PRIMARY KEY (message_key, channel))""",
    "CREATE TABLE IF NOT EXISTS watch_meta (name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
]


# Which copy of a run an ablation measured. Every recording of a run id is a new copy (`copy_id`, made when it is
# recorded; a replaced copy keeps its id in the archive and takes it back on restore), and an ablation stores the
# copy it judged (`run_copy`): its verdict is about that copy's samples, templates and scores, and no other's
# (lib.store.ablations). Runs stored before get a copy id now; ablations stored before get none, so they match no
# copy: nothing recorded says which copy they measured (a restore or purge leaves no trace a time could be read from).
_COPIES = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS copy_id VARCHAR",
    "ALTER TABLE archived_runs ADD COLUMN IF NOT EXISTS copy_id VARCHAR",
    "UPDATE runs SET copy_id = 'c-' || left(replace(CAST(uuid() AS VARCHAR), '-', ''), 16) WHERE copy_id IS NULL",
    "UPDATE archived_runs SET copy_id = 'c-' || left(replace(CAST(uuid() AS VARCHAR), '-', ''), 16) "
    "WHERE copy_id IS NULL",
    "ALTER TABLE ablations ADD COLUMN IF NOT EXISTS run_copy VARCHAR",
]

# The judge sentinel: a pin is a fixed probe set, the instrument it is judged with (judge name, endpoint, template,
# binding), its baseline verdicts and the bound on the judge's own repeat disagreement; a night is one re-judging
# of a pin, with its seed and its disagreement with the baseline (lib.diagnosis.sentinel).
_SENTINEL = [
    """CREATE TABLE IF NOT EXISTS sentinels (
        pin_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, suite VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        judge_model VARCHAR NOT NULL, endpoint VARCHAR NOT NULL, template VARCHAR NOT NULL, binding VARCHAR NOT NULL,
        source VARCHAR NOT NULL, probes VARCHAR NOT NULL, baseline VARCHAR NOT NULL, repeats INTEGER NOT NULL,
        repeat_share DOUBLE NOT NULL, null_share DOUBLE NOT NULL, served_model VARCHAR, calls INTEGER NOT NULL,
        pinned_at TIMESTAMP NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS sentinel_nights (
        pin_id VARCHAR NOT NULL, night VARCHAR NOT NULL, seed BIGINT NOT NULL, judged INTEGER NOT NULL,
        failed INTEGER NOT NULL, calls INTEGER NOT NULL, cached INTEGER NOT NULL, disagreement DOUBLE,
        detail VARCHAR NOT NULL, served_model VARCHAR, judged_at TIMESTAMP NOT NULL, PRIMARY KEY (pin_id, night))""",
]

Step = Callable[[duckdb.DuckDBPyConnection], None]


@dataclass(frozen=True)
class Migration:
    """One named step of the schema: its SQL statements, then its Python step, in the migrating transaction.

    A database records each step it has taken by name (table `migrations`), so two steps added on two branches
    both apply, in MIGRATIONS' order, whatever order they were written in.

    Attributes:
        name: unique among MIGRATIONS; what the database records. Never rename a step: a database that took it
            under the old name would take it again.
        statements: SQL run in order (parameterless DDL).
        run: a Python step, called with the migrating cursor after the statements (e.g. to move data or to
            make columns read from the live schema); it must only use that cursor.
    """

    name: str
    statements: tuple[str, ...] = ()
    run: Step | None = None


def check_names(migrations: Sequence[Migration]) -> None:
    """Refuse a list of migrations in which two steps share a name (one would never run on a database that
    recorded the other).

    Raises:
        StoreError: a name is used twice.
    """
    seen: set[str] = set()
    for step in migrations:
        if step.name in seen:
            raise StoreError(f"two migrations are named {step.name!r}: each step needs its own name")
        seen.add(step.name)


# The schema, oldest step first. A new table is a new Migration, with a name of its own, appended at the end (never
# an edit or a rename of a step a database may already have taken): a database records the names it has taken.
MIGRATIONS: tuple[Migration, ...] = (
    Migration("core tables", tuple(_SCHEMA_V1)),
    Migration("run fields, scorer and output mode", tuple(_SCHEMA_V2)),
    Migration("re-judged series and incident states", tuple(_HISTORY)),
    Migration("ablation job log", tuple(_JOB_LOG)),
    Migration("batch jobs", tuple(_BATCHES)),
    # A failed ablation judging keeps what the judge wrote (truncated), so the page can show it beside the reason.
    Migration("raw reply of a failed ablation judging",
              ("ALTER TABLE ablation_results ADD COLUMN IF NOT EXISTS raw VARCHAR",)),
    Migration("replaced runs kept", tuple(_ARCHIVE)),
    Migration("labels", tuple(_LABELS)),
    # What an import found or changed in a run (JSON object: repeats folded, scores clamped, columns not read, where
    # the grader was read); NULL for runs recorded before, and for runs with nothing to say. A replaced run keeps it.
    Migration("run notes", ("ALTER TABLE runs ADD COLUMN IF NOT EXISTS notes VARCHAR",
                            "ALTER TABLE archived_runs ADD COLUMN IF NOT EXISTS notes VARCHAR")),
    Migration("run copies and the copy each ablation measured", tuple(_COPIES)),
    # The watcher's state (lib.store.watch): every fact it has seen (announced or not), each message it owes a
    # channel with its idempotency key and whether it was delivered, and its last look.
    Migration("watch state and outbox", tuple(_WATCH)),
    # What the server said it served (the reply's `model`) per cached call and, per metric, the one most calls
    # named: a hosted name can be served by another model (the fingerprint sits beside it since v1). NULL: not said.
    Migration("served model", ("ALTER TABLE judge_cache ADD COLUMN IF NOT EXISTS served_model VARCHAR",
                               "ALTER TABLE run_metrics ADD COLUMN IF NOT EXISTS served_model VARCHAR",
                               "ALTER TABLE archived_run_metrics ADD COLUMN IF NOT EXISTS served_model VARCHAR")),
    # The judge sentinel (lib.store.sentinel): each pin of probes with its instrument and baseline verdicts, and
    # the nights each pin was judged again (a night's seed is in every call's cache key).
    Migration("judge sentinel pins and nights", tuple(_SENTINEL)),
    # How a label's sample was drawn when the Labels page's active queue offered it (lib.core.labels.QueueDraw): the
    # queue's run, the sample's weight, the queue's total weight and size. NULL: not from a queue (a file, the CLI,
    # the demo: a uniform draw), or a dashboard label stored before this step (its draw unknown).
    Migration("label queue draws", (
        "ALTER TABLE labels ADD COLUMN IF NOT EXISTS queue_run VARCHAR",
        "ALTER TABLE labels ADD COLUMN IF NOT EXISTS queue_weight DOUBLE",
        "ALTER TABLE labels ADD COLUMN IF NOT EXISTS queue_total DOUBLE",
        "ALTER TABLE labels ADD COLUMN IF NOT EXISTS queue_size INTEGER")),
)
check_names(MIGRATIONS)   # at import: a duplicated name is a merge mistake, caught before any database is opened
SCHEMA_VERSION = len(MIGRATIONS)

# The record of the steps a database has taken, by name, with when (NULL: taken before steps were recorded by
# name, when the database kept only their number in meta's schema_version). Made before any step runs.
MIGRATIONS_TABLE = "CREATE TABLE IF NOT EXISTS migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)"
# duckdb_columns(), not duckdb_tables(): on a team store duckdb_tables() reads every table's statistics from the
# catalog (measured at load 30: 66 ms of CPU against 9 ms, on every open of a lake); a table has a column, so its
# columns say whether it exists
_HAS_MIGRATIONS = ("SELECT count(*) > 0 FROM duckdb_columns() WHERE table_name = 'migrations' "
                   "AND database_name = current_database() AND schema_name = current_schema()")


def is_ducklake(cur: duckdb.DuckDBPyConnection) -> bool:
    """True when the cursor's current database is a DuckLake (a team store, lib.store.lake)."""
    rows = cur.execute("SELECT type FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    return bool(rows) and rows[0][0] == "ducklake"


# What migrate reads of the catalog, in one query: the database's type and whether meta and migrations are there.
# Filtered by the current database, which DuckDB applies inside its catalog functions: an unfiltered scan also makes
# every built-in view of the system catalog (pg_catalog's, information_schema's), 5-6 ms of CPU on a new connection.
_STATE = ("SELECT (SELECT type FROM duckdb_databases() WHERE database_name = current_database()), "
          "count(*) FILTER (WHERE table_name = 'meta'), count(*) FILTER (WHERE table_name = 'migrations') "
          "FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = current_schema()")
# A reopen's whole check (`is_current`): meta's schema number and every step recorded, in one read.
_CURRENT = "SELECT (SELECT value FROM meta WHERE key = 'schema_version'), (SELECT list(name) FROM migrations)"


def is_current(cur: duckdb.DuckDBPyConnection, migrations: Sequence[Migration] = MIGRATIONS) -> bool:
    """True when the connected database has recorded exactly `migrations`' steps, and their number in meta: it
    needs no migration, and carries evaldrift's schema mark (lib.store.databases is_evaldrift).

    One read, made outside any transaction (a failed query would end the caller's): a database without these
    tables (a new one, another application's, one from before steps were named) or with anything unexpected in
    them answers False, and takes `migrate`, which says what is wrong. Measured (2026-12-06): a reopen's checks
    took 15 ms of CPU in 8 queries, this one 1-2 ms.
    """
    try:
        version, names = cur.execute(_CURRENT).fetchone() or (None, None)
    except duckdb.Error:
        return False
    return version == str(len(migrations)) and set(names or ()) == {m.name for m in migrations}


def statements(upto: int = SCHEMA_VERSION) -> list[str]:
    """Every SQL statement of the first `upto` migrations, in order, after the migrations table (Python steps
    are not here: `build` runs those too)."""
    return [MIGRATIONS_TABLE, *(stmt for m in MIGRATIONS[:upto] for stmt in m.statements)]


def build(cur: duckdb.DuckDBPyConnection, migrations: Sequence[Migration] = MIGRATIONS) -> None:
    """Make the whole schema in an empty database or schema (the shapes a Parquet dataset is read into), with
    every step's statements and Python step, recording nothing."""
    _take(cur, migrations, first=(MIGRATIONS_TABLE,))


def _take(cur: duckdb.DuckDBPyConnection, steps: Sequence[Migration], *, lake: bool = False,
          first: Sequence[str] = ()) -> None:
    """Run `first`, then each step's statements and Python step, in order. The statements up to a Python step go
    to DuckDB as one script: a new store's 48 statements one call each took 33 ms of CPU, as one script 25 ms (the
    Python call, its prepared statement and its result object, each time)."""
    script = [without_keys(stmt) if lake else stmt for stmt in first]
    for step in steps:
        script += [without_keys(stmt) if lake else stmt for stmt in step.statements]
        if step.run is not None:
            _run_script(cur, script)
            script = []
            step.run(cur)
    _run_script(cur, script)


def _run_script(cur: duckdb.DuckDBPyConnection, script: Sequence[str]) -> None:
    if script:   # statements from this module only (parameterless DDL), never input
        cur.execute(";\n".join(script))


def applied(cur: duckdb.DuckDBPyConnection) -> dict[str, datetime | None]:
    """The steps the connected database has recorded, by name, with when each ran (empty: none recorded)."""
    if not cur.execute(_HAS_MIGRATIONS).fetchall()[0][0]:
        return {}
    return dict(cur.execute("SELECT name, applied_at FROM migrations").fetchall())


def migrate(cur: duckdb.DuckDBPyConnection, path: Path | str, migrations: Sequence[Migration] = MIGRATIONS) -> None:
    """Bring a database to the latest schema by its named steps, in the caller's transaction.

    Each step not yet recorded in the `migrations` table runs in order and is recorded with the time. A database
    from before steps were recorded by name (meta's schema_version N) is converted first, in the same
    transaction: the names of the first N steps are recorded (with no time). Opening a current database reads
    and writes nothing.

    Args:
        cur: a cursor inside the caller's transaction.
        path: the database's name, for the messages.
        migrations: the steps (MIGRATIONS; another list only to test the machinery).

    Raises:
        StoreError: the database has taken a step this evaldrift does not know (it was written by a newer
            one), or two steps share a name.
    """
    check_names(migrations)
    kind, has_meta, has_migrations = cur.execute(_STATE).fetchone()  # type: ignore[misc]
    lake = kind == "ducklake"   # a team store (lib.store.lake): its tables take no PRIMARY KEY
    row = None
    if has_meta:
        row = cur.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    else:
        cur.execute(without_keys(_SCHEMA_V1[0]) if lake else _SCHEMA_V1[0])
    version = int(row[0]) if row else 0
    done: dict[str, datetime | None] = {}
    if has_migrations:
        done = dict(cur.execute("SELECT name, applied_at FROM migrations").fetchall())
    unknown = sorted(set(done) - {m.name for m in migrations})
    if unknown:
        raise StoreError(f"{path} has taken migration steps this evaldrift does not know ("
                         + ", ".join(repr(n) for n in unknown) + "): it was written by a newer evaldrift")
    if version > len(migrations):   # the number a newer evaldrift (or one from before names) wrote
        raise StoreError(f"{path} has schema {version}, newer than this evaldrift ({len(migrations)})")
    pending = [m for m in migrations if m.name not in done]
    if not pending:
        return   # nothing written: opening a current database leaves nothing for its close to write back
    if not done and version:   # one time: a database that kept only the number of steps it had taken
        cur.execute(without_keys(MIGRATIONS_TABLE) if lake else MIGRATIONS_TABLE)
        cur.execute("INSERT INTO migrations SELECT unnest(?), NULL", [[m.name for m in migrations[:version]]])
        pending = list(migrations[version:])
    _take(cur, pending, lake=lake, first=(MIGRATIONS_TABLE,))
    # every step taken is recorded in one statement (one per step cost 0.4 ms each), all in the caller's transaction
    cur.execute("INSERT INTO migrations SELECT unnest(?), ?", [[step.name for step in pending], _now()])
    # kept for an evaldrift from before names, which reads only this number (and refuses a larger one)
    # (a delete and an insert rather than INSERT OR REPLACE, which needs a key the lake's tables cannot have)
    if row is not None:
        cur.execute("DELETE FROM meta WHERE key = 'schema_version'")
    cur.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(len(migrations))])
