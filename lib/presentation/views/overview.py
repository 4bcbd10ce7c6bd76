"""The Overview page's frames: metric cards, recent jumps and their suspects, the history's summary and lint."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from lib.diagnosis.incidents import clean_score, leaky_now_words, reads_never
from lib.diagnosis.rejudge import Series
from lib.diagnosis.trends import (
    Jump,
    PairedStep,
    call_step,
    last_same_instrument,
    segment_index,
    spread_without,
    within_steps,
)
from lib.presentation.views.common import PAGE_COMPARE, SPARK_RUNS, ordered_metrics


@dataclass(frozen=True)
class MetricCard:
    """One metric's latest score, its change since the previous run, and its recent trend."""

    metric: str
    run_id: str
    score: float | None
    previous: float | None    # the last earlier run measured with the same instrument (None: there is none)
    delta: float | None
    threshold: float          # the step's jump threshold (lib.diagnosis.trends.call_step; nan: not decided)
    noise_sd: float           # the run-to-run spread: sd of one run's score (lib.diagnosis.trends; nan: not measured)
    spark: tuple[float, ...]  # the last SPARK_RUNS scores, oldest first
    judge_model: str | None
    n: int
    n_failed: int
    previous_run: str | None = None
    basis: str = ""           # what the threshold rests on (noise.StepCall.basis)
    reads_never: tuple[str, ...] = ()   # must-never-receive fields the latest run's template reads (lint)
    without: float | None = None        # the latest run's score by a lint-clean re-judged series (None: not known)

    @property
    def leak_note(self) -> str:
        """'' or what the score carries when its template reads a must-never-receive field (incidents)."""
        return leaky_now_words(self.metric, self.reads_never, self.without)

    @property
    def beyond_noise(self) -> bool:
        return self.delta is not None and abs(self.delta) > self.threshold   # nan threshold: never

    @property
    def decided(self) -> bool:
        return self.threshold == self.threshold


def card_steps(history: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The step each metric's card decides: (metric, the last earlier run of the latest's instrument, the latest),
    as store.paired_steps takes them."""
    out = []
    for metric in history["metric"].unique().tolist() if not history.empty else []:
        g = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
        same = last_same_instrument(g, metric)
        if same is not None:
            out.append((str(metric), same[0], str(g["run_id"].iloc[-1])))
    return out


def metric_cards(history: pd.DataFrame, *, spark_runs: int = SPARK_RUNS,
                 paired: pd.DataFrame | None = None, lint: pd.DataFrame | None = None,
                 series: Sequence[Series] = ()) -> list[MetricCard]:
    """Per metric (registry order): latest score, its change since the last run measured with the same
    instrument (lib.diagnosis.trends), decided as a jump is (lib.diagnosis.trends.call_step: the paired
    per-sample change from `paired`, store.paired_steps of card_steps, and the run-to-run spread once measured,
    the step left out), and sparkline values. With `lint` (trends.lint_status), a latest score measured by a
    template that reads a must-never-receive field is marked, with its score by a lint-clean re-judged series
    from `series` (rejudge.finished_series) where one covers that run."""
    cards = []
    pairs = {(r.metric, r.prev_run_id, r.run_id): PairedStep(int(r.n), float(r.mean), float(r.sd))
             for r in (paired.itertuples(index=False) if paired is not None else ())}
    for metric in ordered_metrics(history["metric"].unique().tolist() if not history.empty else []):
        g = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
        g = g.reset_index(drop=True)
        if g.empty:
            continue
        scores = g["score"].astype(float).tolist()
        last = g.iloc[-1]
        same = last_same_instrument(g, metric)
        prev = same[1] if same else None
        steps = within_steps(scores, segment_index(g).tolist())
        spread, n_steps = spread_without(steps, len(steps) - 1 if prev is not None else None)
        call = call_step(scores[-1] - prev, pairs.get((metric, same[0], str(last["run_id"]))), spread, n_steps,
                         m_steps=len(g) - 1) \
            if same is not None and prev is not None else None
        reads = reads_never(history, lint, metric, str(last["run_id"]))
        cards.append(MetricCard(
            reads_never=reads, without=clean_score([s for s in series if s.metric == metric], str(last["run_id"]),
                                                   lint) if reads else None,
            metric=metric, run_id=str(last["run_id"]), score=scores[-1], previous=prev,
            delta=scores[-1] - prev if prev is not None else None,
            threshold=call.threshold if call is not None else float("nan"),
            noise_sd=spread, spark=tuple(scores[-spark_runs:]), basis=call.basis if call is not None else "",
            judge_model=last["judge_model"] if isinstance(last["judge_model"], str) else None,
            n=int(last["n"]), n_failed=int(last["n_failed"]), previous_run=same[0] if same else None))
    return cards


FLAT_PAD = 0.01     # a flat series is drawn mid-card in a band this wide on each side


def sparkline_spec(values: Sequence[float]) -> dict[str, object]:
    """A card's sparkline as a Vega-Lite spec (st.vega_lite_chart): the scores oldest first, no axes.

    Both scales get their domain from the values themselves. Streamlit draws a chart before it hands it the
    data (and st.metric's own sparkline adds a hover layer that starts empty), so a scale left to the data
    meets no data at first and Vega logs "Infinite extent" in the console; a fixed domain never does. A flat
    series gets a band around its value, and a single run is drawn as a flat line.
    """
    points = [float(v) for v in values if v == v]   # NaN: no point
    if len(points) == 1:
        points = points * 2
    lo, hi = (min(points), max(points)) if points else (0.0, 1.0)
    if lo == hi:
        lo, hi = lo - FLAT_PAD, hi + FLAT_PAD
    return {
        "data": {"values": [{"run": i, "score": v} for i, v in enumerate(points)]},
        "mark": {"type": "line", "strokeWidth": 2, "strokeCap": "round", "tooltip": False},
        "encoding": {
            "x": {"field": "run", "type": "quantitative", "axis": None,
                  "scale": {"domain": [0, max(len(points) - 1, 1)], "nice": False, "zero": False}},
            "y": {"field": "score", "type": "quantitative", "axis": None,
                  "scale": {"domain": [lo, hi], "nice": False, "zero": False}},
        },
        "config": {"view": {"stroke": None}},
        "padding": {"left": 2, "right": 2, "top": 2, "bottom": 2},
    }


def recent_jumps(jumps: Sequence[Jump]) -> tuple[list[Jump], list[Jump]]:
    """Split jumps into the latest one per metric (newest first) and the earlier rest (newest first)."""
    latest: dict[str, Jump] = {}
    for j in sorted(jumps, key=lambda j: j.started_at):
        latest[j.metric] = j
    recent = sorted(latest.values(), key=lambda j: (j.started_at, j.metric), reverse=True)
    keep = {id(j) for j in recent}
    earlier = sorted((j for j in jumps if id(j) not in keep), key=lambda j: j.started_at, reverse=True)
    return recent, earlier


@dataclass(frozen=True)
class SuspectAction:
    """A jump's suspect, and the page (with query parameters) that tests it."""

    kind: str
    description: str
    test: str
    page: str
    params: dict[str, str]


def suspect_actions(jump: Jump) -> list[SuspectAction]:
    """Each suspect with its test: the jump's split on Compare (both runs' instruments on both runs' outputs).

    A one-run ablation says what that run's wiring depends on, never where a
    jump between two runs came from, so it is not offered as a jump's test.
    """
    params = {"run": jump.run_id, "run_b": jump.prev_run_id, "metric": jump.metric, "split": "1"}
    return [SuspectAction(s.kind, s.description, s.test, PAGE_COMPARE, dict(params)) for s in jump.suspects]


def unattributed(history: pd.DataFrame) -> pd.DataFrame:
    """Scores stored without judge model, prompt hash or binding (flagged, never guessed)."""
    cols = ["run_id", "started_at", "metric", "judge_model", "prompt_hash", "binding", "score"]
    if history.empty:
        return pd.DataFrame(columns=cols)
    mask = history["judge_model"].isna() | history["prompt_hash"].isna() | history["binding"].isna()
    return history.loc[mask, cols].reset_index(drop=True)


@dataclass(frozen=True)
class HistorySummary:
    n_runs: int
    latest_run: str | None
    latest_at: datetime | None


def history_summary(history: pd.DataFrame) -> HistorySummary:
    """How many runs a metric history holds, and the latest one."""
    if history.empty:
        return HistorySummary(0, None, None)
    last = history.sort_values(["started_at", "run_id"]).iloc[-1]
    return HistorySummary(int(history["run_id"].nunique()), str(last["run_id"]), last["started_at"].to_pydatetime())


def run_labels(runs: pd.DataFrame) -> dict[str, str]:
    """store.runs() as run id -> 'run id (YYYY-MM-DD HH:MM label)' for pickers."""
    return {r.run_id: f"{r.run_id}   ({r.started_at:%Y-%m-%d %H:%M}{'  ' + r.label if r.label else ''})"
            for r in runs.itertuples(index=False)}


@dataclass(frozen=True)
class LintSummary:
    total: int                 # stored templates
    findings: pd.DataFrame     # lint_findings(...)
    in_latest: int             # templates with findings that the latest run uses


def lint_summary(lint: pd.DataFrame, latest_run: str | None) -> LintSummary:
    """diagnose.lint_status reduced to what the Overview says: counts and the templates with findings."""
    found = lint_findings(lint, latest_run)
    return LintSummary(len(lint), found, int(found["in_latest_run"].sum()) if not found.empty else 0)


def lint_findings(lint: pd.DataFrame, latest_run: str | None) -> pd.DataFrame:
    """Templates with lint findings, newest use first, marking those the latest run still uses."""
    cols = ["metric", "prompt_hash", "reads", "findings", "runs", "last_run", "in_latest_run"]
    found = lint[lint["findings"].astype(str) != ""].copy()
    if found.empty:
        return pd.DataFrame(columns=cols)
    found["in_latest_run"] = found["last_run"] == latest_run
    return found.sort_values(["in_latest_run", "last_run"], ascending=False)[cols].reset_index(drop=True)
