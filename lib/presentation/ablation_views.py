"""Ablations as the Ablation and Review pages list them: briefs, the verdict matrix beside the wiring table's
expectations, and how each verdict is shown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import pandas as pd

from lib.core.metrics import EXPECT_SENSITIVE
from lib.core.metrics import expectation as metric_expectation
from lib.diagnosis.ablation import (
    INCONCLUSIVE,
    INSENSITIVE,
    LEAK,
    REPLAY_MISMATCH,
    AblationResult,
    is_control,
    split_headline,
    swap_arm,
    tested_fields,
)
from lib.diagnosis.incidents import Incident
from lib.presentation.judging_counts import JudgingCounts, counts
from lib.store import Store

NOT_TESTED = "not tested"
ALARMING = (LEAK, INSENSITIVE)


@dataclass(frozen=True)
class AblationBrief:
    """One stored ablation in a line: what it tested, how far it got, what it found."""

    ablation_id: str
    run_id: str
    created_at: datetime
    status: str
    done: int
    total: int
    metrics: tuple[str, ...]
    blanks: tuple[str, ...]
    repeats: int
    limit: int | None
    judge: str
    summary: str                              # '' until done
    verdicts: tuple[tuple[str, str], ...]     # (kind, sentence) per cell
    mismatches: tuple[str, ...]               # replay-mismatch sentences
    four: str | None                          # the four readings' sentence, when measured
    cells: tuple[tuple[str, str, str], ...] = ()   # (metric, arm, verdict kind) per cell
    tally: JudgingCounts | None = None        # what became of its judgings (lib.presentation.judging_counts)
    swaps: tuple[str, ...] = ()               # fields swapped with another sample's
    lead: str = ""                            # the summary's one sentence to read first ('' until done)
    caveats: tuple[str, ...] = ()             # the summary's other sentences: small print, said once

    @property
    def what(self) -> str:
        """'faithfulness x ground_truth, contexts; 3 repeats; first 60 samples; judge offline-lexical-v2'."""
        samples = f"first {self.limit} samples" if self.limit else "all samples"
        blanked = f"{', '.join(self.blanks)} blanked" if self.blanks else ""
        swapped = f"{', '.join(self.swaps)} swapped" if self.swaps else ""
        return (f"{', '.join(self.metrics)} x {'; '.join(x for x in (blanked, swapped) if x)}; {self.repeats} "
                f"repeat(s); {samples}; judge {self.judge}")

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.verdicts)

    @property
    def alarming(self) -> bool:
        return any(k in ALARMING for k in self.kinds)

    def tests(self, metric: str) -> bool:
        return metric in self.metrics

    @property
    def findings(self) -> frozenset[tuple[str, str]]:
        """(run, metric) of each metric it found leaking or miswired: two ablations finding the same is one."""
        return frozenset((self.run_id, m) for m, _, k in self.cells if k in ALARMING)

    @property
    def progress(self) -> str:
        """Its judgings in the one vocabulary of lib.presentation.judging_counts."""
        return self.tally.sentence if self.tally is not None else f"{self.done} of {self.total} judgings."


def _brief(row: pd.Series, tally: JudgingCounts | None = None) -> AblationBrief:
    spec = json.loads(row["spec"]) if isinstance(row["spec"], str) else dict(row["spec"])
    raw = row["result"]  # None, or NaN in a pandas 3 string column, while the ablation runs
    parsed = json.loads(raw) if isinstance(raw, str) and raw else raw if isinstance(raw, dict) else None
    result = AblationResult.from_dict(parsed) if parsed else None
    verdicts = tuple((v.kind, v.sentence) for v in result.verdicts) if result else ()
    mismatches = tuple(r.sentence for r in result.replay if r.mismatch) if result else ()
    said = split_headline(result.verdicts, result.summary) if result else None
    return AblationBrief(
        ablation_id=str(row["ablation_id"]), run_id=str(row["run_id"]), created_at=row["created_at"],
        status=str(row["status"]), done=int(row["done"]), total=int(row["total"]),
        metrics=tuple(spec.get("metrics", ())), blanks=tuple(spec.get("blanks", ())),
        repeats=int(spec.get("repeats", 1)), limit=spec.get("limit"), judge=str(spec.get("judge", row["judge_model"])),
        summary=result.summary if result else "", verdicts=verdicts, mismatches=mismatches,
        four=result.four.sentence if result and result.four else None,
        cells=tuple((v.metric, v.arm, v.kind) for v in result.verdicts) if result else (), tally=tally,
        swaps=tuple(spec.get("swaps") or ()),
        lead=said.lead if said else "", caveats=said.caveats if said else (),
    )


def ablation_briefs(store: Store, run_id: str | None = None) -> list[AblationBrief]:
    """Stored ablations (of one run, or all), newest first."""
    frame = store.ablations(run_id)
    return [_brief(row, counts(store.ablation_results(str(row["ablation_id"])), int(row["total"])))
            for _, row in frame.iterrows()]


def expectation(metric: str, arm: str) -> str:
    """What the wiring table expects when `arm` is blanked (or swapped): 'invariant' if every such field is one
    the metric must never receive, else 'sensitive'; the positive control (perfect support) is 'sensitive'."""
    return EXPECT_SENSITIVE if is_control(arm) else metric_expectation(metric, tested_fields(arm))


def swap_arms(fields: Sequence[str]) -> list[str]:
    """The swap arms' names for fields chosen on the page ('ground_truth' -> 'swap:ground_truth')."""
    return [swap_arm([f]) for f in fields]


def expectation_table(metrics: Sequence[str], arms: Sequence[str]) -> pd.DataFrame:
    """Metrics x arms, each cell 'invariant' or 'sensitive' (what a correctly wired metric does)."""
    return pd.DataFrame({arm: [expectation(m, arm) for m in metrics] for arm in arms},
                        index=pd.Index(list(metrics), name="metric"))


def verdict_matrix(result: AblationResult) -> pd.DataFrame:
    """Every (metric, arm) cell of an ablation with its verdict and what the wiring table expects.

    Columns: metric, arm, kind (NOT_TESTED when the cell has no verdict),
    expected ('invariant' when every blanked field is one the metric must
    never receive, else 'sensitive'), delta, ratio, noise, sentence. Rows in
    the spec's metric order, then arm order (the joint arms last).
    """
    spec = result.spec
    by_cell = {(v.metric, v.arm): v for v in result.verdicts}
    # the arms asked for (blanks, then swaps), each metric's joint arm (all its must-never-receive fields blanked
    # together), then the positive control where it has a row
    arms = list(dict.fromkeys([*spec.arms[1:], *(v.arm for v in result.verdicts if v.joint),
                               *(v.arm for v in result.verdicts if is_control(v.arm))]))
    rows = []
    for m in spec.metrics:
        for arm in arms:
            v = by_cell.get((m, arm))
            rows.append({
                "metric": m, "arm": arm,
                "kind": v.kind if v else NOT_TESTED,
                "expected": expectation(m, arm),
                "delta": v.delta if v else None, "ratio": v.ratio if v else None,
                "noise": v.noise if v else None, "sentence": v.sentence if v else "",
            })
    return pd.DataFrame(rows, columns=["metric", "arm", "kind", "expected", "delta", "ratio", "noise", "sentence"])


def result_banner(result: AblationResult) -> str:
    """The banner kind for a result: 'error' (a leak or a miswired metric), 'warning', or 'success'."""
    kinds = {v.kind for v in result.verdicts}
    if kinds & set(ALARMING):
        return "error"
    if INCONCLUSIVE in kinds or any(r.mismatch for r in result.replay):
        return "warning"
    return "success"


def sentence_level(kind: str) -> str:
    """How a verdict sentence is shown: 'error' for LEAK/INSENSITIVE, 'warning' for INCONCLUSIVE and a
    replay mismatch, 'success' for CLEAN/SENSITIVE."""
    if kind in ALARMING:
        return "error"
    if kind in (INCONCLUSIVE, REPLAY_MISMATCH):
        return "warning"
    return "success"


# -- where to go from a verdict (issue 46 item 1) ---------------------------------------------------------------
TRENDS_DAYS = 14   # Trends opens on the run with two weeks either side: the jump and what came before and after


@dataclass(frozen=True)
class NextStep:
    """A link offered beside a verdict: the page, its label and its deep-link parameters."""

    page: str
    label: str
    params: tuple[tuple[str, str], ...]

    @property
    def query(self) -> dict[str, str]:
        return dict(self.params)


def carrying_week(launched: datetime, latest: tuple[date, date]) -> tuple[date, date]:
    """The Review week that lists an ablation launched at `launched`: the latest week when it was launched on or
    after the latest run's day (lib.presentation.review counts it there), else the seven days ending on its
    launch day."""
    if launched.date() >= latest[1]:
        return latest
    return launched.date() - timedelta(days=6), launched.date()


def next_steps(*, run_id: str, metrics: Sequence[str], run_day: date, launched: datetime,
               incidents: Sequence[Incident], latest_week: tuple[date, date] | None) -> tuple[NextStep, ...]:
    """What to open after an ablation's verdict: the incident it answers on the Overview, the run on Trends and
    the Review week that carries the ablation.

    Args:
        run_id: the ablated run.
        metrics: the metrics it tested (an incident on one of them at this run is the one it answers).
        run_day: the day the run started.
        launched: when the ablation was launched.
        incidents: the database's incidents (lib.diagnosis.incidents.load).
        latest_week: the Review's default range (lib.presentation.review.default_range), None for no runs.
    """
    steps = []
    answered = sorted((i for i in incidents if i.metric in metrics
                       and run_id in {i.run_id, i.end_run, *(j.run_id for j in i.jumps)}),
                      key=lambda i: not i.jumps)   # a jump or episode it tests before a canary alarm it explains
    if answered:
        steps.append(NextStep("pages/overview.py", f"The incident it answers, on the Overview: {answered[0].title}",
                              ()))
    metric = metrics[0] if len(metrics) == 1 else None
    span = (("from", (run_day - timedelta(days=TRENDS_DAYS)).isoformat()),
            ("to", (run_day + timedelta(days=TRENDS_DAYS)).isoformat()))
    steps.append(NextStep("pages/trends.py", f"{run_id} on Trends" + (f", {metric}" if metric else ""),
                          ((("metric", metric),) if metric else ()) + span))
    if latest_week is not None:
        start, end = carrying_week(launched, latest_week)
        steps.append(NextStep("pages/review.py", f"The Review of {start:%Y-%m-%d} to {end:%Y-%m-%d}, which carries it",
                              (("from", start.isoformat()), ("to", end.isoformat()))))
    return tuple(steps)
