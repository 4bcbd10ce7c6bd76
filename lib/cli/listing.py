"""The command that lists the runs a store holds."""

from __future__ import annotations

import argparse
import json
import math

from lib.cli.common import EXIT_OK, _db_path, _fmt, _inbox_for, _print_json, _table
from lib.core.metrics import METRIC_NAMES
from lib.core.records import CANARY, MAIN
from lib.intake import inbox
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


def format_runs(runs: list[dict[str, object]]) -> str:
    """One line per run: each main-suite metric as score, prompt hash (8) and failures."""
    header = ["run", "started", "judge", *METRIC_NAMES, "label"]
    rows = []
    for run in runs:
        metrics = {m["metric"]: m for m in run["metrics"] if m["suite"] == MAIN}  # type: ignore[union-attr,index]
        judges = sorted({str(m["judge_model"] or "unattributed") for m in metrics.values()})
        cells = []
        for name in METRIC_NAMES:
            m = metrics.get(name)
            if m is None:
                cells.append("-")
                continue
            cell = f"{_fmt(m['score'])} n={m['n']} {(m['prompt_hash'] or 'unattributed')[:8]}"
            cells.append(cell + (f" !{m['n_failed']}" if m["n_failed"] else ""))
        rows.append([str(run["run_id"]), str(run["started_at"])[:16].replace("T", " "), ",".join(judges) or "-",
                     *cells, str(run["label"])])
    legend = ("each metric: score, samples scored, prompt hash (first 8); !k = k samples failed "
              "(counted, never scored); --json for everything")
    return _table(header, rows) + "\n\n" + legend if rows else "no runs recorded"


def cmd_runs(args: argparse.Namespace) -> int:
    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        data = runs_data(store)
    if args.json:
        _print_json(data)
    else:
        print(format_runs(data))
    return EXIT_OK
