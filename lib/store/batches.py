"""The SQL for batch jobs: the batch id a submitted job waits on, its requests, and the faults it returned.

A job sent through the OpenAI Batch API is one row in `batch_jobs` (the
batch id, the job's spec, the server's status and counts), its requests in
`batch_requests` (each with the request JSON the call cache keys, and the
reply shape that tells a readable reply), the readable replies it returned in
`batch_replies` (until the job is run with them, which stores them in the
call cache as its calls), and the lines that came back failed or unreadable
in `batch_faults`. So a restarted process polls the same
batch, and a fault stays recorded, never scored. The tables are made by
lib.store.schema's migrations; every statement takes parameters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from lib.store import Store
from lib.store.base import _now, retried

JOB_COLS = ("batch_id", "kind", "job_id", "spec", "model", "endpoint", "status", "total", "completed", "failed",
            "input_file_id", "output_file_id", "error_file_id", "collected", "replies", "finished", "created_at",
            "updated_at")
_KEY = ("batch_id", "key")   # a request's row in batch_requests, batch_replies and batch_faults


def _rows(store: Store, sql: str, params: Sequence[object] = ()) -> list[tuple]:
    return store.cursor().execute(sql, list(params)).fetchall()


@retried("recording a batch job")
def add_job(store: Store, job: dict[str, object], requests: pd.DataFrame) -> None:
    """Record a submitted batch and its requests (columns key, request, items, labels) in one transaction."""
    row = {**job, "completed": 0, "failed": 0, "output_file_id": None, "error_file_id": None, "collected": False,
           "replies": 0, "finished": False, "created_at": _now(), "updated_at": _now()}
    frame = requests.assign(batch_id=job["batch_id"])[["batch_id", "key", "request", "items", "labels"]]
    with store.transaction() as cur:
        cur.execute(f"INSERT INTO batch_jobs ({', '.join(JOB_COLS)}) VALUES ({', '.join('?' * len(JOB_COLS))})",
                    [row[c] if c != "spec" else json.dumps(row[c], sort_keys=True) for c in JOB_COLS])
        store._put_frame(cur, "batch_requests", frame, _KEY, replace=False)


_UPDATABLE = frozenset({"status", "total", "completed", "failed", "output_file_id", "error_file_id", "collected",
                        "replies", "finished"})


@retried("updating a batch job")
def update_job(store: Store, batch_id: str, **fields: object) -> None:
    """Set some of a job's columns (names from a fixed list, values as parameters)."""
    names = [n for n in fields if n in _UPDATABLE]
    if len(names) != len(fields):
        raise ValueError(f"not a batch job column: {sorted(set(fields) - _UPDATABLE)}")
    sets = ", ".join(f"{n} = ?" for n in names)
    with store.transaction() as cur:
        cur.execute(f"UPDATE batch_jobs SET {sets}, updated_at = ? WHERE batch_id = ?",
                    [*(fields[n] for n in names), _now(), batch_id])


def job(store: Store, batch_id: str) -> dict[str, Any] | None:
    rows = _rows(store, f"SELECT {', '.join(JOB_COLS)} FROM batch_jobs WHERE batch_id = ?", [batch_id])
    if not rows:
        return None
    out = dict(zip(JOB_COLS, rows[0], strict=True))
    out["spec"] = json.loads(str(out["spec"]))
    return out


def job_ids(store: Store, *, unfinished: bool = False) -> list[str]:
    """Batch ids, oldest first (only those whose job is not finished yet, when asked)."""
    where = "WHERE NOT finished" if unfinished else ""
    return [r[0] for r in _rows(store, f"SELECT batch_id FROM batch_jobs {where} ORDER BY created_at, batch_id")]


def requests(store: Store, batch_id: str) -> list[tuple[str, str, int, str]]:
    """(key, request JSON, items, labels JSON) of each request of a batch."""
    return [tuple(r) for r in _rows(store, "SELECT key, request, items, labels FROM batch_requests "
                                           "WHERE batch_id = ? ORDER BY key", [batch_id])]  # type: ignore[misc]


@retried("a batch's faults")
def add_faults(store: Store, batch_id: str, faults: dict[str, str]) -> None:
    """Record the requests a batch returned failed or unreadable, with why."""
    if not faults:
        return
    frame = pd.DataFrame({"batch_id": batch_id, "key": list(faults), "reason": list(faults.values())})
    with store.transaction() as cur:
        store._put_frame(cur, "batch_faults", frame, _KEY, replace=True)


@retried("a batch's replies")
def add_replies(store: Store, batch_id: str, rows: list[tuple[str, str, int, int, str | None]]) -> None:
    """Keep a batch's readable replies: (key, text, prompt tokens, completion tokens, fingerprint)."""
    if not rows:
        return
    frame = pd.DataFrame(rows, columns=["key", "reply", "prompt_tokens", "completion_tokens", "fingerprint"])
    frame.insert(0, "batch_id", batch_id)
    with store.transaction() as cur:
        store._put_frame(cur, "batch_replies", frame, _KEY, replace=True)


def replies(store: Store, batch_id: str) -> list[tuple[str, str, int, int, str | None]]:
    return [tuple(r) for r in _rows(store, "SELECT key, reply, prompt_tokens, completion_tokens, fingerprint "  # type: ignore[misc]
                                           "FROM batch_replies WHERE batch_id = ?", [batch_id])]


def answered_keys(store: Store, keys: Sequence[str]) -> set[str]:
    """Which of these keys a batch has answered (its job not run yet)."""
    if not keys:
        return set()
    return {r[0] for r in _rows(store, "SELECT key FROM batch_replies WHERE key IN (SELECT unnest(?::VARCHAR[]))",
                                [list(keys)])}


def faults(store: Store, batch_id: str) -> dict[str, str]:
    return dict(_rows(store, "SELECT key, reason FROM batch_faults WHERE batch_id = ? ORDER BY key", [batch_id]))
