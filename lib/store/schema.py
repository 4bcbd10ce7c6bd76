"""The store's schema: the tables, and the migrations from each version to the next."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from lib.core.errors import StoreError

if TYPE_CHECKING:
    import pyarrow as pa

    Frame = pd.DataFrame | pa.Table


SCHEMA_VERSION = 3

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
# v3: what an import found or changed in a run (JSON object: repeats folded, scores clamped, columns not read,
# where the grader was read); NULL for runs recorded before, and for runs with nothing to say.
_SCHEMA_V3 = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS notes VARCHAR",
]
MIGRATIONS: dict[int, list[str]] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3}


def migrate(cur: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Bring a database to SCHEMA_VERSION by its named steps, in the caller's transaction.

    Raises:
        StoreError: the file's schema is newer than this evaldrift.
    """
    cur.execute(MIGRATIONS[1][0])
    row = cur.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema {version}, newer than this evaldrift ({SCHEMA_VERSION})")
    for v in range(version + 1, SCHEMA_VERSION + 1):
        for stmt in MIGRATIONS[v]:
            cur.execute(stmt)
    cur.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
