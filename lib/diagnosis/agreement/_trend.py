"""Agreement with people on the timeline: each comparable segment's agreement, and each instrument change's
agreement before and after it.

A segment (lib.diagnosis.trends._segments) is a stretch of runs measured with one instrument; its agreement pools the
judgings of its runs on the labelled samples, the interval drawn over samples. An instrument change is the
boundary between two segments; its sentence reads e.g. "judge model offline-lexical-v1 -> offline-lexical-v2:
agreement with people on 150 labelled samples 0.93 [0.91, 0.95] -> 0.93 [0.91, 0.95], bias +0.01 -> +0.01".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from lib.core.records import MAIN
from lib.diagnosis.agreement._agreement import Agreement, agreement, corrected_mean, labelled_pairs
from lib.diagnosis.agreement._design import Withheld
from lib.diagnosis.agreement._ppi import MIN_LABELS, Corrected
from lib.diagnosis.agreement._stats import Estimate
from lib.diagnosis.trends import INSTRUMENT_COLUMNS, Segment, segment_index, segments
from lib.store import Store
from lib.store import history as hs

_NAMES = {"judge_model": "judge model", "prompt_hash": "prompt", "binding": "binding", "scorer": "scoring library"}


def estimate_text(e: Estimate, signed: bool = False) -> str:
    """'0.84 [0.80, 0.88]' (signed: '+0.02 [-0.01, +0.05]'); '-' when unknown."""
    if not e.known:
        return "-"
    f = "{:+.2f}" if signed else "{:.2f}"
    if e.low != e.low:   # NaN: no interval
        return f.format(e.value)
    return f"{f.format(e.value)} [{f.format(e.low)}, {f.format(e.high)}]"


@dataclass(frozen=True)
class SegmentAgreement:
    """One comparable segment of a metric and its agreement with people (which names the segment's instrument
    as the agreement reads it: `agreement.instrument`, e.g. 'offline-lexical-v2 · prompt 1a2b3c4d5e6f · projected').
    """

    segment: Segment
    agreement: Agreement


@dataclass(frozen=True)
class ChangeAgreement:
    """An instrument change of a metric (the first run of a segment) and agreement on either side."""

    metric: str
    run_id: str
    started_at: datetime
    change: str            # what changed: 'judge model a -> b; prompt x -> y'
    before: Agreement
    after: Agreement

    @property
    def sentence(self) -> str:
        b, a = self.before, self.after
        n = max(b.n_samples, a.n_samples)
        text = (f"{self.change}: agreement with people on {n} labelled samples ({b.headline_name}, calibration set "
                f"v{a.version}) {estimate_text(b.headline)} -> {estimate_text(a.headline)}")
        if b.bias.known and a.bias.known:
            text += f", bias (judge - people) {b.bias.value:+.2f} -> {estimate_text(a.bias, signed=True)}"
        return text


def _change_text(before: pd.Series, after: pd.Series) -> str:
    parts = [f"{_NAMES[c]} {before[c]} -> {after[c]}" for c in INSTRUMENT_COLUMNS
             if c in before.index and str(before[c]) != str(after[c])]
    return "; ".join(parts) or "instrument change"


def trend_agreement(store: Store, history: pd.DataFrame, *, suite: str = MAIN, seed: int = 0
                    ) -> tuple[list[SegmentAgreement], list[ChangeAgreement]]:
    """Every labelled metric's segments with their agreement, and its instrument changes with both sides'.

    Args:
        store: the store (labels and judgings).
        history: store.metric_history(suite=suite) (all runs: a segment is cut where its instrument changes).
    """
    # The Review and the incidents it lists both ask on one store: answer once per data version.
    memo_key = (suite, seed, store.data_version(), len(history), tuple(sorted(history["metric"].unique())))
    memo: dict = store.__dict__.setdefault("_agreement_memo", {})
    if memo_key not in memo:
        memo.clear()
        memo[memo_key] = _trend_agreement(store, history, suite, seed)
    return memo[memo_key]


def _trend_agreement(store: Store, history: pd.DataFrame, suite: str, seed: int
                     ) -> tuple[list[SegmentAgreement], list[ChangeAgreement]]:
    segs: list[SegmentAgreement] = []
    changes: list[ChangeAgreement] = []
    labelled = hs.labelled_metrics(store, suite)   # one read, not one a metric
    for metric in sorted(history["metric"].unique()) if not history.empty else []:
        if metric not in labelled:
            continue
        pairs, version = labelled_pairs(store, suite, metric)
        h = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
        h = h.assign(_seg=segment_index(h).loc[h.index])
        previous: tuple[SegmentAgreement, pd.Series] | None = None
        for segment, (_, g) in zip(segments(h), h.groupby("_seg", sort=True), strict=True):
            runs = g["run_id"].tolist()
            first = g.iloc[0]
            inst = " · ".join(str(first[c]) for c in INSTRUMENT_COLUMNS if c in g and isinstance(first[c], str))
            found = agreement(pairs.where("run_id", runs), metric=metric, instrument=inst, version=version, seed=seed)
            here = SegmentAgreement(segment=segment, agreement=found)
            segs.append(here)
            if previous is not None:
                changes.append(ChangeAgreement(metric, runs[0], segment.start, _change_text(previous[1], first),
                                               previous[0].agreement, found))
            previous = (here, first)
    return segs, changes


def segments_frame(segs: list[SegmentAgreement]) -> pd.DataFrame:
    """The segments as a table for a page or an export (text cells, one row a segment)."""
    return pd.DataFrame([{
        "metric": s.segment.metric, "from": s.segment.start, "to": s.segment.end, "runs": s.segment.n_runs,
        "instrument": s.agreement.instrument,
        "labelled samples": s.agreement.n_samples, "agreement": estimate_text(s.agreement.headline),
        "kappa": estimate_text(s.agreement.kappa), "bias": estimate_text(s.agreement.bias, signed=True)}
        for s in segs], columns=["metric", "from", "to", "runs", "instrument", "labelled samples", "agreement",
                                 "kappa", "bias"])


AUC_DROPPED = ("No AUC column: AUC ranks the judge's graded sample scores against people's yes/no label of a whole "
               "sample (a file's sample labels, `python -m lib labels import`); item labels, the kind this page "
               "stores, meet yes/no verdicts, where accuracy and kappa already say what an AUC would.")


def agreements_frame(found: list[Agreement]) -> pd.DataFrame:
    """Agreements per instrument as a table (text cells): the Labels page's figures.

    The AUC column is left out when no instrument has one (no binary sample labels: AUC_DROPPED says why), so a
    column of dashes never stands in for a figure that cannot exist.
    """
    columns = ["instrument", "labelled samples", "runs", "accuracy", "kappa", "AUC", "bias", "mean error"]
    if not any(a.auc.known for a in found):
        columns.remove("AUC")
    return pd.DataFrame([{
        "instrument": a.instrument, "labelled samples": a.n_samples, "runs": a.n_runs,
        "accuracy": estimate_text(a.accuracy), "kappa": estimate_text(a.kappa), "AUC": estimate_text(a.auc),
        "bias": estimate_text(a.bias, signed=True), "mean error": estimate_text(a.mean_error)} for a in found],
        columns=columns)


@dataclass(frozen=True)
class SegmentCorrected:
    """One comparable segment's metric by its judge and as people's labels correct it (PPI++ over samples).

    Each sample counts once: its judge score is the mean over the segment's runs, and its people's score the mean
    over the texts those runs judged; the rectifier is this segment's instrument's, never another's. `corrected`
    is Withheld (with its reason) when the labels' draw supports no estimator (lib.diagnosis.agreement._design).
    """

    segment: Segment
    corrected: Corrected | Withheld


def corrected_by_segment(store: Store, history: pd.DataFrame, *, suite: str = MAIN) -> list[SegmentCorrected]:
    """Every labelled metric's segments with their label-corrected value (segments with under two labelled
    samples scored are left out).

    Args:
        store: the store (labels and judgings).
        history: store.metric_history(suite=suite) (all runs: a segment is cut where its instrument changes).
    """
    out: list[SegmentCorrected] = []
    labelled = hs.labelled_metrics(store, suite)   # one read, not one a metric
    for metric in sorted(history["metric"].unique()) if not history.empty else []:
        if metric not in labelled:
            continue
        h = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
        h = h.assign(_seg=segment_index(h).loc[h.index])
        pairs, _ = labelled_pairs(store, suite, metric, run_ids=h["run_id"].tolist())
        for segment, (_, g) in zip(segments(h), h.groupby("_seg", sort=True), strict=True):
            runs = g["run_id"].tolist()
            paired = pairs.samples[pairs.samples["run_id"].isin(set(runs))]
            per_sample = paired.groupby("sample_id")[["judge", "people"]].mean()
            if len(per_sample) < MIN_LABELS:
                continue
            judged = hs.mean_sample_scores(store, runs, suite, metric)
            rest = judged[~judged["sample_id"].isin(set(per_sample.index))]
            found = corrected_mean([str(s) for s in per_sample.index], per_sample["people"].to_numpy(float),
                                   per_sample["judge"].to_numpy(float), rest["score"].to_numpy(float), pairs.draws)
            if found is not None:
                out.append(SegmentCorrected(segment, found))
    return out


def _corrected_cell(c: Corrected | Withheld) -> str:
    """'0.79 [0.74, 0.84]', or 'not corrected: <why>' where the labels' draw supports no estimator."""
    if isinstance(c, Withheld):
        return f"not corrected: {c.reason}"
    return f"{c.value:.2f} [{c.low:.2f}, {c.high:.2f}]" + (" (weighted by the queue's order)" if c.weighted else "")


def corrected_frame(found: list[SegmentCorrected]) -> pd.DataFrame:
    """The segments' corrected values as a table (text cells, one row a segment): Trends' toggle."""
    return pd.DataFrame([{
        "metric": s.segment.metric, "from": s.segment.start, "to": s.segment.end, "runs": s.segment.n_runs,
        "instrument": s.segment.label, "by the judge": f"{s.corrected.judge:.2f}",
        "corrected by people's labels": _corrected_cell(s.corrected),
        "labelled samples": s.corrected.n_labelled} for s in found],
        columns=["metric", "from", "to", "runs", "instrument", "by the judge", "corrected by people's labels",
                 "labelled samples"])
