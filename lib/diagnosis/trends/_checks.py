"""The standing checks over the store: the canary suite's alarms and the template lint of every run."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib.core.errors import InputError
from lib.core.profiles import lint_under, tool_fields_read, tool_of
from lib.core.prompts import LintFinding
from lib.core.records import CANARY
from lib.diagnosis.stats import robust_step_sd
from lib.diagnosis.trends._diagnose import JUMP_K, fields_of
from lib.store import Store


@dataclass(frozen=True)
class CanaryStatus:
    frame: pd.DataFrame          # run_id, started_at, score, alarm
    baseline: float | None
    threshold: float | None
    alarm_runs: tuple[str, ...]
    latest_alarm: bool
    sentence: str


def canary_status(store: Store, *, metric: str = "faithfulness", baseline_runs: int = 10, k: float = JUMP_K,
                  min_margin: float = 0.05, history: pd.DataFrame | None = None) -> CanaryStatus:
    """The canary set's score per run against its baseline, with the alarm.

    The canary answers hold correct facts that only the reference states, so a
    correctly wired faithfulness reads them low. Baseline: the median of the
    first `baseline_runs` canary scores. Alarm: a score above baseline + max(k
    noise sds, min_margin), noise from stats.robust_step_sd of the canary series.
    """
    h = history if history is not None else store.metric_history(suite=CANARY, metrics=[metric])
    h = h[h["metric"] == metric].dropna(subset=["score"])
    if h.empty:
        return CanaryStatus(pd.DataFrame(columns=["run_id", "started_at", "score", "alarm"]), None, None, (), False,
                            "No canary runs recorded.")
    scores = h["score"].to_numpy()
    baseline = float(np.median(scores[:baseline_runs]))
    sd = robust_step_sd(scores.tolist())
    margin = max(k * (sd if not math.isnan(sd) else 0.0), min_margin)
    threshold = baseline + margin
    frame = h[["run_id", "started_at", "score"]].reset_index(drop=True)
    frame["alarm"] = frame["score"] > threshold
    alarms = tuple(frame.loc[frame["alarm"], "run_id"])
    latest = bool(frame["alarm"].iloc[-1])
    last = float(frame["score"].iloc[-1])
    if latest:
        sentence = (f"ALARM: canary {metric} is {last:.2f} at {frame['run_id'].iloc[-1]}, above its baseline "
                    f"{baseline:.2f} + {margin:.2f}: answers that only the reference supports are being marked "
                    f"supported. Something has started leaking.")
    else:
        sentence = (f"Canary {metric} is {last:.2f}, within its baseline {baseline:.2f} + {margin:.2f}"
                    + (f"; it alarmed on {len(alarms)} earlier run(s)." if alarms else "."))
    return CanaryStatus(frame, baseline, threshold, alarms, latest, sentence)


# -- template lint over the store --------------------------------------------------------------
def lint_status(store: Store) -> pd.DataFrame:
    """Every stored template with the fields it reads and its lint findings, and where it is in use.

    Columns: metric, prompt_hash, reads, findings (text, '' when clean), runs (count), last_run, bindings,
    never (the must-never-receive fields it reads that are findings, comma-separated; '' when clean).
    """
    prompts = store.prompts()
    usage = store.prompt_usage()
    scorers = store.prompt_scorers()
    rows = []
    for p in prompts.itertuples(index=False):
        # a template recorded from another tool is read as that tool shows it, under that tool's wiring profile
        tool = tool_of(next(iter(scorers.get(p.prompt_hash, [])), None))
        shown = tool_fields_read(p.template)
        try:
            read = frozenset(fields_of(p.template, p.metric)) if shown is None else shown
        except InputError as exc:   # stored before the doors refused it: a finding, never a crash of the lint
            never: list[str] = []   # its own row: no field of the template before it
            reads, findings = ["?"], exc.reason
        else:
            reads, never = lint_under(read, p.metric, tool)
            findings = "; ".join(LintFinding(p.metric, f, p.prompt_hash).message for f in never)
        u = usage.get(p.prompt_hash, {})
        rows.append({
            "metric": p.metric, "prompt_hash": p.prompt_hash,
            "reads": ", ".join(reads),
            "findings": findings,
            "runs": u.get("runs", 0), "last_run": u.get("last_run"), "bindings": u.get("bindings", ""),
            "never": ", ".join(never),
        })
    return pd.DataFrame(rows, columns=["metric", "prompt_hash", "reads", "findings", "runs", "last_run", "bindings",
                                       "never"])
