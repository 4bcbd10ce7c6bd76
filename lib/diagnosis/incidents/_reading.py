"""How a jump is read in words, from the latest evidence about it, never from its size alone.

A jump at about 1x its threshold is, with nothing else known, likely the judge's
noise. But a jump at a run whose instrument changed, whose template reads a field
the metric must never receive, or that an ablation found leaking is never "likely
noise", whatever its size: the Overview once called a leak's jump "about 1x the
threshold, likely noise" beside its own first suspect "now reads ground_truth",
and kept saying it after the ablation said LEAK. The words name every piece of
evidence, the latest first: what a re-judged series says at the run, then an
ablation's LEAK, then the lint, then the instrument change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from lib.diagnosis.ablation import LEAK
from lib.diagnosis.incidents._incidents import series_step
from lib.diagnosis.rejudge import Series
from lib.diagnosis.trends import Jump
from lib.store import Store

LIKELY_NOISE_RATIO = 1.5   # a jump under 1.5x the threshold is about 1x: at 5% two-sided, noise crosses 1x often
INSTRUMENT_SUSPECTS = ("judge model", "served model", "prompt", "binding", "scoring library")


@dataclass(frozen=True)
class JumpEvidence:
    """What is known about a jump besides its size.

    Attributes:
        reads_never: the must-never-receive fields the run's template for the metric reads (lint_status).
        leak: the newest finished ablation of the run that found the metric leaking (its id; '' none).
        rejudged: what the newest re-judged series covering the run and the one before says there
            (incidents.series_step, prefixed with the series' name and the runs it covers; '' none).
        system_changed: that series still moves beyond its threshold at the run.
    """

    reads_never: tuple[str, ...] = ()
    leak: str = ""
    rejudged: str = ""
    system_changed: bool = False


def instrument_changed(jump: Jump) -> bool:
    """Did the instrument change at the jump's run (a step between segments, or a judge/prompt/binding suspect)?"""
    return jump.across_instruments or any(s.kind in INSTRUMENT_SUSPECTS for s in jump.suspects)


def likely_noise(jump: Jump, evidence: JumpEvidence | None = None) -> bool:
    """Is the jump likely the judge's noise: about 1x the threshold (under LIKELY_NOISE_RATIO) and nothing else
    known that points elsewhere (no instrument change, no lint finding, no LEAK, no re-judged system change)?"""
    e = evidence or JumpEvidence()
    if instrument_changed(jump) or e.reads_never or e.leak or e.system_changed:
        return False
    return jump.ratio < LIKELY_NOISE_RATIO


def reading(jump: Jump, evidence: JumpEvidence | None = None) -> str:
    """The jump in words from its evidence, the latest first ('' when there is nothing to add to its size).

    Examples: "re-judged (...), over r6 to r8 (3 runs): ... the jump is the instrument's, not the system's;
    ablation abl-1 found faithfulness LEAK at this run; its template reads ground_truth, which faithfulness must
    never receive; the instrument changed here: test it with the 2x2 split", or "about 1x the threshold, likely
    noise".
    """
    e = evidence or JumpEvidence()
    parts = []
    if e.rejudged:
        parts.append(e.rejudged)
    if e.leak:
        parts.append(f"ablation {e.leak} found {jump.metric} {LEAK} at this run")
    if e.reads_never:
        parts.append(f"its template reads {' and '.join(e.reads_never)}, which {jump.metric} must never receive")
    if instrument_changed(jump):
        parts.append("the instrument changed here: test it with the 2x2 split")
    if not parts and likely_noise(jump, e):
        parts.append("about 1x the threshold, likely noise")
    return "; ".join(parts)


def jump_evidence(jumps: Sequence[Jump], *, history: pd.DataFrame, lint: pd.DataFrame, ablations: pd.DataFrame,
                  series: Sequence[Series], series_labels: Mapping[str, str] | None = None,
                  ) -> dict[tuple[str, str], JumpEvidence]:
    """Each jump's evidence, keyed by (metric, run id).

    Args:
        jumps: the jumps (trends.find_jumps).
        history: the metric history (the prompt each run's metric was measured with).
        lint: trends.lint_status (its `never` column).
        ablations: store.ablations(), newest first (their stored results).
        series: finished re-judged series, newest first (rejudge.finished_series).
        series_labels: series id -> how to name it (default: its name and the runs it covers).
    """
    out: dict[tuple[str, str], JumpEvidence] = {}
    for j in jumps:
        said, changed = _rejudged(j, series, series_labels or {})
        out[(j.metric, j.run_id)] = JumpEvidence(reads_never(history, lint, j.metric, j.run_id),
                                                 _leak(ablations, j.metric, j.run_id), said, changed)
    return out


def load_jump_evidence(store: Store, jumps: Sequence[Jump]) -> dict[tuple[str, str], JumpEvidence]:
    """jump_evidence from the store: its history, lint, ablations and finished re-judged series."""
    from lib.diagnosis.rejudge import finished_series
    from lib.diagnosis.trends import lint_status

    return jump_evidence(jumps, history=store.metric_history(), lint=lint_status(store),
                         ablations=store.ablations(), series=finished_series(store))


def reads_never(history: pd.DataFrame, lint: pd.DataFrame | None, metric: str, run_id: str) -> tuple[str, ...]:
    """The must-never-receive fields the template that measured (run, metric) reads (lint_status's `never`)."""
    if lint is None or lint.empty or "never" not in lint.columns or history.empty:
        return ()
    row = history[(history["metric"] == metric) & (history["run_id"] == run_id)]
    hashes = set(row["prompt_hash"].dropna().astype(str))
    found = lint[lint["prompt_hash"].isin(hashes) & (lint["metric"] == metric)]["never"].astype(str)
    return tuple(dict.fromkeys(f.strip() for v in found for f in v.split(",") if f.strip()))


def _leak(ablations: pd.DataFrame, metric: str, run_id: str) -> str:
    if ablations.empty:
        return ""
    for r in ablations[(ablations["run_id"] == run_id) & (ablations["status"] == "done")].itertuples(index=False):
        raw = r.result
        result = json.loads(raw) if isinstance(raw, str) and raw else raw if isinstance(raw, dict) else None
        verdicts = (result or {}).get("verdicts", [])
        if any(v.get("metric") == metric and v.get("kind") == LEAK for v in verdicts):
            return str(r.ablation_id)
    return ""


def _rejudged(jump: Jump, series: Sequence[Series], labels: Mapping[str, str]) -> tuple[str, bool]:
    for s in series:   # newest first
        if s.metric != jump.metric:
            continue
        said = series_step(s.frame, jump.run_id, s.threshold)
        if said:
            changed = said.endswith("the system changed")
            return f"{labels.get(s.series_id, f'{s.name}, {s.covers}')}: {said}", changed
    return "", False


def clean_score(series: Sequence[Series], run_id: str, lint: pd.DataFrame | None) -> float | None:
    """The run's score by the newest re-judged series that covers it and whose template lint finds clean."""
    if lint is None or lint.empty:
        return None
    clean = set(lint.loc[lint["findings"].astype(str) == "", "prompt_hash"].astype(str))
    for s in series:   # newest first (rejudge.finished_series)
        hit = s.frame[(s.frame["run_id"] == run_id) & s.frame["score"].notna()]
        hashes = hit["prompt_hash"]
        if not hit.empty and hashes.notna().all() and set(hashes.astype(str)) <= clean:
            return float(hit["score"].iloc[0])
    return None


def leaky_now_words(metric: str, reads: Sequence[str], without: float | None) -> str:
    """What a score measured by a template that reads must-never-receive fields carries beside it ('' when it
    reads none): 'its template reads ground_truth; 0.667 without it, re-judged', or, with no clean re-judge of
    that run, 'its template reads ground_truth, which faithfulness must never receive; no score without it yet:
    re-judge this run with a clean instrument'."""
    if not reads:
        return ""
    fields = " and ".join(reads)
    pronoun = "it" if len(reads) == 1 else "them"
    if without is None:
        return (f"its template reads {fields}, which {metric} must never receive; no score without {pronoun} yet: "
                "re-judge this run with a clean instrument")
    return f"its template reads {fields}; {without:.3f} without {pronoun}, re-judged"
