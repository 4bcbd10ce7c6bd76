"""Ablations as the Ablation and Review pages list them: briefs, the verdict matrix beside the wiring table's
expectations, and how each verdict is shown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

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
    swap_arm,
    tested_fields,
)
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
    return AblationBrief(
        ablation_id=str(row["ablation_id"]), run_id=str(row["run_id"]), created_at=row["created_at"],
        status=str(row["status"]), done=int(row["done"]), total=int(row["total"]),
        metrics=tuple(spec.get("metrics", ())), blanks=tuple(spec.get("blanks", ())),
        repeats=int(spec.get("repeats", 1)), limit=spec.get("limit"), judge=str(spec.get("judge", row["judge_model"])),
        summary=result.summary if result else "", verdicts=verdicts, mismatches=mismatches,
        four=result.four.sentence if result and result.four else None,
        cells=tuple((v.metric, v.arm, v.kind) for v in result.verdicts) if result else (), tally=tally,
        swaps=tuple(spec.get("swaps") or ()),
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
