"""Every run of a store with its metrics, as plain values (what `python -m lib runs --json` prints)."""

from __future__ import annotations

import json
import math

from lib.core.records import CANARY, MAIN
from lib.store import Store


def _text_or_none(value: object) -> str | None:
    """A text cell, or None where the frame holds a missing value (pandas 3 string columns give NaN)."""
    return value if isinstance(value, str) else None


UNATTRIBUTED = "unattributed"   # nothing says who scored: no grader and no scoring library recorded


def missing_part(part: str, *, judge_model: object, scorer: object) -> str:
    """What an instrument part that was not recorded is called: 'unattributed' only when nothing says who scored
    the metric (no grader, no scoring library); otherwise that this part was not recorded ('no prompt' for the
    template: an imported tool's metric keeps its grader and no template).

    Args:
        part: 'prompt', 'judge model' or 'binding'.
        judge_model: the metric's recorded grader (None or NaN: not recorded).
        scorer: the metric's recorded scoring library (None or NaN: not recorded).
    """
    if not isinstance(judge_model, str) and not isinstance(scorer, str):
        return UNATTRIBUTED
    if part == "prompt":
        return "no prompt"
    return "grader not recorded" if part == "judge model" else f"{part} not recorded"


def runs_data(store: Store) -> list[dict[str, object]]:
    """Every run with its metrics (both suites), oldest first, as plain values."""
    by_run: dict[str, list[dict[str, object]]] = {}
    for suite in (MAIN, CANARY):
        for r in store.metric_history(suite=suite).itertuples(index=False):
            by_run.setdefault(r.run_id, []).append({
                "suite": suite, "metric": r.metric, "score": None if r.score is None or math.isnan(r.score)
                else float(r.score), "n": int(r.n), "n_failed": int(r.n_failed), "n_excluded": int(r.n_excluded),
                "judge_model": _text_or_none(r.judge_model), "prompt_hash": _text_or_none(r.prompt_hash),
                "binding": _text_or_none(r.binding),
                "scorer": _text_or_none(getattr(r, "scorer", None))})
    out = []
    for r in store.runs().itertuples(index=False):
        out.append({"run_id": r.run_id, "started_at": r.started_at.isoformat(), "label": r.label or "",
                    "pipeline": json.loads(r.pipeline), "metrics": by_run.get(r.run_id, [])})
    return out
