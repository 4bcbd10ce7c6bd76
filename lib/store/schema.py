"""The store's schema: the tables, and the migrations from each version to the next."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from lib.core.errors import StoreError

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class Migration:
    """One named step of the schema; its version is its place in MIGRATIONS (from 1)."""

    name: str
    statements: tuple[str, ...]


# The schema, oldest step first. A new table is a new Migration appended at the end (never an edit of a step a
# database may already have taken); its version is the list's length.
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
    # The watcher's state (lib.store.watch): every fact it has seen (announced or not), each message it owes a
    # channel with its idempotency key and whether it was delivered, and its last look.
    Migration("watch state and outbox", tuple(_WATCH)),
)
SCHEMA_VERSION = len(MIGRATIONS)


def statements(upto: int = SCHEMA_VERSION) -> list[str]:
    """Every statement of the first `upto` migrations, in order (the whole schema by default)."""
    return [stmt for m in MIGRATIONS[:upto] for stmt in m.statements]


def migrate(cur: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Bring a database to SCHEMA_VERSION by its named steps, in the caller's transaction.

    Raises:
        StoreError: the file's schema is newer than this evaldrift.
    """
    cur.execute(_SCHEMA_V1[0])
    row = cur.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema {version}, newer than this evaldrift ({SCHEMA_VERSION})")
    if version == SCHEMA_VERSION:
        return   # nothing written: opening a current database leaves nothing for its close to write back
    for step in MIGRATIONS[version:]:
        for stmt in step.statements:
            cur.execute(stmt)
    cur.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
