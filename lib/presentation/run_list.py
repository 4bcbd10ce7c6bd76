"""Every run of a store with its metrics, as plain values (what `python -m lib runs --json` prints)."""

from __future__ import annotations

import json
import math

from lib.core.records import CANARY, MAIN
from lib.store import Store


def _text_or_none(value: object) -> str | None:
    """A text cell, or None where the frame holds a missing value (pandas 3 string columns give NaN)."""
    return value if isinstance(value, str) else None


def runs_data(store: Store) -> list[dict[str, object]]:
    """Every run with its metrics (both suites), oldest first, as plain values."""
    by_run: dict[str, list[dict[str, object]]] = {}
    for suite in (MAIN, CANARY):
        for r in store.metric_history(suite=suite).itertuples(index=False):
            by_run.setdefault(r.run_id, []).append({
                "suite": suite, "metric": r.metric, "score": None if r.score is None or math.isnan(r.score)
                else float(r.score), "n": int(r.n), "n_failed": int(r.n_failed), "n_excluded": int(r.n_excluded),
                "judge_model": _text_or_none(r.judge_model), "prompt_hash": _text_or_none(r.prompt_hash),
                "binding": _text_or_none(r.binding)})
    out = []
    for r in store.runs().itertuples(index=False):
        out.append({"run_id": r.run_id, "started_at": r.started_at.isoformat(), "label": r.label or "",
                    "pipeline": json.loads(r.pipeline), "metrics": by_run.get(r.run_id, [])})
    return out
