"""The command that lists the runs a store holds."""

from __future__ import annotations

import argparse

from lib.cli.common import EXIT_OK, _db_path, _fmt, _print_json, _table, open_for_reading
from lib.core.metrics import METRIC_NAMES
from lib.core.records import MAIN
from lib.presentation.run_list import missing_part, runs_data


def format_runs(runs: list[dict[str, object]]) -> str:
    """One line per run: each main-suite metric as score, prompt hash (8) and failures."""
    header = ["run", "started", "judge", *METRIC_NAMES, "label"]
    rows = []
    for run in runs:
        metrics = {m["metric"]: m for m in run["metrics"] if m["suite"] == MAIN}  # type: ignore[attr-defined,index]
        judges = sorted({str(m["judge_model"] or missing_part("judge model", judge_model=None, scorer=m.get("scorer")))
                         for m in metrics.values()})
        cells = []
        for name in METRIC_NAMES:
            m = metrics.get(name)
            if m is None:
                cells.append("-")
                continue
            prompt = str(m["prompt_hash"])[:8] if m["prompt_hash"] else missing_part(
                "prompt", judge_model=m["judge_model"], scorer=m.get("scorer"))
            cell = f"{_fmt(m['score'])} n={m['n']} {prompt}"
            cells.append(cell + (f" !{m['n_failed']}" if m["n_failed"] else ""))
        rows.append([str(run["run_id"]), str(run["started_at"])[:16].replace("T", " "), ",".join(judges) or "-",
                     *cells, str(run["label"])])
    legend = ("each metric: score, samples scored, prompt hash (first 8; 'no prompt': its grader is recorded, its "
              "template is not; 'unattributed': nothing says who scored it); !k = k samples failed "
              "(counted, never scored); --json for everything")
    return _table(header, rows) + "\n\n" + legend if rows else "no runs recorded"


def cmd_runs(args: argparse.Namespace) -> int:
    db = _db_path(args, must_exist=True)
    with open_for_reading(db) as store:
        data = runs_data(store)
    if args.json:
        _print_json(data)
    else:
        print(format_runs(data))
    return EXIT_OK
