"""The frames the Overview, Trends, Run and Compare pages show, built from store frames.

Pure functions: store frames and diagnosis values in, frames and small
values out, no Streamlit and no queries, so a test gets every number a page
shows. Sample text passes through untouched (the pages show it as text).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time

import pandas as pd

from lib.core.metrics import METRIC_NAMES, get_metric
from lib.diagnosis.diagnose import Jump, RunChanges, Split
from lib.diagnosis.noise import metric_noise
from lib.diagnosis.segments import last_same_instrument
from lib.diagnosis.stats import Flips, PairedDiff, flips, paired_bootstrap

PAGE_ABLATION = "pages/ablation.py"
PAGE_COMPARE = "pages/compare.py"
PAGE_RUN = "pages/run.py"
PAGE_TRENDS = "pages/trends.py"

PROVENANCE_LOCATIONS = ("contexts", "ground_truth", "question", "nowhere")
SPARK_RUNS = 30


def ordered_metrics(names: Sequence[str]) -> list[str]:
    """Metric names in registry order, unknown names (if any) after, alphabetically."""
    known = [m for m in METRIC_NAMES if m in set(names)]
    return known + sorted(set(names) - set(known))


# -- overview --------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricCard:
    """One metric's latest score, its change since the previous run, and its recent trend."""

    metric: str
    run_id: str
    score: float | None
    previous: float | None    # the last earlier run measured with the same instrument (None: there is none)
    delta: float | None
    threshold: float          # the jump threshold (lib.diagnosis.noise)
    noise_sd: float           # the run-to-run spread: sd of one run's score (lib.diagnosis.noise)
    spark: tuple[float, ...]  # the last SPARK_RUNS scores, oldest first
    judge_model: str | None
    n: int
    n_failed: int
    previous_run: str | None = None

    @property
    def beyond_noise(self) -> bool:
        return self.delta is not None and abs(self.delta) > self.threshold


def metric_cards(history: pd.DataFrame, *, spark_runs: int = SPARK_RUNS) -> list[MetricCard]:
    """Per metric (registry order): latest score, its change since the last run measured with the same
    instrument (lib.diagnosis.segments), the run-to-run spread and jump threshold
    (lib.diagnosis.noise), sparkline values."""
    cards = []
    spreads = metric_noise(history)
    for metric in ordered_metrics(history["metric"].unique().tolist() if not history.empty else []):
        g = history[history["metric"] == metric].dropna(subset=["score"]).reset_index(drop=True)
        if g.empty:
            continue
        scores = g["score"].astype(float).tolist()
        last = g.iloc[-1]
        same = last_same_instrument(g, metric)
        prev = same[1] if same else None
        cards.append(MetricCard(
            metric=metric, run_id=str(last["run_id"]), score=scores[-1], previous=prev,
            delta=scores[-1] - prev if prev is not None else None, threshold=spreads[metric].threshold,
            noise_sd=spreads[metric].spread, spark=tuple(scores[-spark_runs:]),
            judge_model=last["judge_model"] if isinstance(last["judge_model"], str) else None,
            n=int(last["n"]), n_failed=int(last["n_failed"]), previous_run=same[0] if same else None))
    return cards


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


# -- trends ----------------------------------------------------------------------------------
def day_bounds(first: date, last: date) -> tuple[datetime, datetime]:
    """A date range as the datetimes that include every run on both days."""
    return datetime.combine(first, time.min), datetime.combine(last, time.max)


def in_range(frame: pd.DataFrame, since: datetime | None, until: datetime | None,
             column: str = "started_at") -> pd.DataFrame:
    """Rows whose `column` lies within [since, until] (either bound may be None)."""
    mask = pd.Series(True, index=frame.index)
    if since is not None:
        mask &= frame[column] >= pd.Timestamp(since)
    if until is not None:
        mask &= frame[column] <= pd.Timestamp(until)
    return frame[mask]


def run_days(history: pd.DataFrame) -> list[date]:
    """The distinct days with a run, oldest first (the Trends range picker's stops)."""
    return sorted(set(history["started_at"].dt.date))


def events_for(events: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Change events that concern any of `metrics`: theirs, plus pipeline changes (which concern all)."""
    return events[events["metric"].isna() | events["metric"].isin(list(metrics))]


ALL_METRICS = "all metrics"


def events_table(events: pd.DataFrame) -> pd.DataFrame:
    """Change events as a table: a pipeline change (no metric of its own) says it concerns all metrics."""
    return events.assign(metric=events["metric"].astype(object).where(events["metric"].notna(), ALL_METRICS))


def jumps_frame(jumps: Sequence[Jump]) -> pd.DataFrame:
    """Jumps as a table: when, metric, before, after, delta, ratio to threshold, first suspect."""
    rows = [{"started_at": j.started_at, "run_id": j.run_id, "metric": j.metric, "before": j.before,
             "after": j.after, "delta": j.delta, "x_threshold": j.ratio,
             "across_instruments": j.across_instruments,
             "first_suspect": ("across instruments: test with the 2x2 split; " if j.across_instruments else "")
             + (j.suspects[0].description if j.suspects else "")} for j in jumps]
    return pd.DataFrame(rows, columns=["started_at", "run_id", "metric", "before", "after", "delta", "x_threshold",
                                       "across_instruments", "first_suspect"])


# -- run -------------------------------------------------------------------------------------
def metric_table(run_metrics: pd.DataFrame) -> pd.DataFrame:
    """A run's metrics in registry order, with the instrument (and how a model judge was asked for its verdicts:
    json_schema, json_object or text) and an `attributed` flag."""
    cols = ["metric", "score", "n", "n_failed", "n_excluded", "judge_model", "prompt_hash", "binding"]
    if "output_mode" in run_metrics and run_metrics["output_mode"].notna().any():
        cols.append("output_mode")
    if run_metrics.empty:
        return pd.DataFrame(columns=[*cols, "attributed"])
    order = {m: i for i, m in enumerate(ordered_metrics(run_metrics["metric"].tolist()))}
    t = run_metrics.assign(_o=run_metrics["metric"].map(order)).sort_values("_o")[cols].reset_index(drop=True)
    t["attributed"] = t[["judge_model", "prompt_hash", "binding"]].notna().all(axis=1)
    return t


def _verdicts(text: object) -> list[dict[str, object]]:
    if not isinstance(text, str) or not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _passages(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    try:
        return tuple(str(p) for p in value)  # type: ignore[union-attr]
    except TypeError:
        return ()


def _contexts_text(value: object) -> str:
    return "\n\n".join(_passages(value))


def sample_table(samples: pd.DataFrame, scores: pd.DataFrame, provenance: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per sample: its texts, every metric's score, and for `metric` its verdict and evidence counts.

    Args:
        samples: store.samples_frame (sample_id, question, answer, contexts, ground_truth).
        scores: store.sample_scores for the run (all metrics).
        provenance: diagnose.provenance for the run and `metric`.
        metric: the metric whose verdicts are counted.

    Columns: sample_id, question, answer, contexts (passages joined by blank lines), ground_truth,
    one score column per metric, passages (the contexts as a tuple, in rank order), status (of
    `metric`), items, <positive label>, <negative label>, and one evidence-location count per
    PROVENANCE_LOCATIONS (positive verdicts of `metric` whose evidence was found there).
    """
    pos, neg = get_metric(metric).labels
    t = samples[["sample_id", "question", "answer", "ground_truth"]].copy()
    t.insert(3, "contexts", [_contexts_text(c) for c in samples["contexts"]])
    t["passages"] = [_passages(c) for c in samples["contexts"]]
    metrics = ordered_metrics(scores["metric"].unique().tolist()) if not scores.empty else []
    if metrics:
        wide = scores.pivot_table(index="sample_id", columns="metric", values="score", aggfunc="first",
                                  dropna=False)
        for m in metrics:
            t[m] = t["sample_id"].map(wide[m]) if m in wide else math.nan
    mine = scores[scores["metric"] == metric].set_index("sample_id")
    t["status"] = t["sample_id"].map(mine["status"]).fillna("unscored")
    counts = {sid: _count_labels(v) for sid, v in mine["verdicts"].items()}
    t["items"] = [counts.get(s, (0, 0))[0] + counts.get(s, (0, 0))[1] for s in t["sample_id"]]
    t[pos] = [counts.get(s, (0, 0))[0] for s in t["sample_id"]]
    t[neg] = [counts.get(s, (0, 0))[1] for s in t["sample_id"]]
    by_loc = (provenance.groupby(["sample_id", "location"]).size().unstack(fill_value=0)
              if not provenance.empty else pd.DataFrame())
    for loc in PROVENANCE_LOCATIONS:
        col = f"in_{loc}" if loc != "nowhere" else "nowhere"
        t[col] = t["sample_id"].map(by_loc[loc]).fillna(0).astype(int) if loc in by_loc else 0
    return t


def _count_labels(text: object) -> tuple[int, int]:
    vs = _verdicts(text)
    positive = sum(1 for v in vs if v.get("label") is True)
    return positive, len(vs) - positive


@dataclass(frozen=True)
class EvidenceSummary:
    """Where a run's positive verdicts for one metric found their evidence."""

    metric: str
    positive: int
    counts: dict[str, int]      # location -> positive verdicts evidenced there (PROVENANCE_LOCATIONS)
    forbidden: dict[str, int]   # the subset in artifacts the metric must never receive, when non-zero

    @property
    def leak(self) -> bool:
        """Evidence in a must-never-receive artifact: a leak seen without a single new judge call."""
        return bool(self.forbidden)

    @property
    def sentence(self) -> str:
        where = ", ".join(f"{n} in {loc}" if loc != "nowhere" else f"{n} nowhere" for loc, n in self.counts.items())
        text = f"Evidence of the {self.positive} positive {self.metric} verdicts: {where}."
        if self.forbidden:
            bad = " and ".join(self.forbidden)
            text += (f" {self.metric} must never receive {bad}, so the judge was shown it: a wiring leak seen in "
                     "the verdicts themselves.")
        return text


def evidence_summary(provenance: pd.DataFrame, metric: str) -> EvidenceSummary:
    """Count a run's positive verdicts by where their evidence was found (diagnose.provenance rows)."""
    found = provenance["location"].value_counts() if not provenance.empty else pd.Series(dtype=int)
    counts = {loc: int(found.get(loc, 0)) for loc in PROVENANCE_LOCATIONS}
    never = get_metric(metric).never
    forbidden = {loc: n for loc, n in counts.items() if loc in never and n}
    return EvidenceSummary(metric, len(provenance), counts, forbidden)


def location_column(location: str) -> str:
    """The sample_table column counting evidence found in `location`."""
    return "nowhere" if location == "nowhere" else f"in_{location}"


def filter_samples(table: pd.DataFrame, metric: str, *, search: str = "",
                   score_range: tuple[float, float] = (0.0, 1.0), verdict: str | None = None,
                   location: str | None = None) -> pd.DataFrame:
    """The rows of a sample_table that pass every filter.

    Args:
        search: case-insensitive text looked for in the sample id and the four artifacts.
        score_range: inclusive bounds on `metric`'s score; unscored samples pass only the full range.
        verdict: keep samples with at least one item given this verdict word (e.g. "unsupported").
        location: keep samples with at least one positive verdict evidenced there (PROVENANCE_LOCATIONS).
    """
    keep = pd.Series(True, index=table.index)
    needle = search.strip().lower()
    if needle:
        hay = table[["sample_id", "question", "answer", "contexts", "ground_truth"]].astype(str)
        keep &= hay.apply(lambda col: col.str.lower().str.contains(needle, regex=False)).any(axis=1)
    lo, hi = score_range
    if (lo, hi) != (0.0, 1.0) and metric in table:
        keep &= table[metric].between(lo, hi).fillna(False).astype(bool)
    if verdict:
        keep &= table[verdict] > 0 if verdict in table else False
    if location:
        keep &= table[location_column(location)] > 0
    return table[keep]


def verdict_records(scores: pd.DataFrame, provenance: pd.DataFrame, metric: str, sample_id: str) -> pd.DataFrame:
    """One sample's verdict records for `metric`, each positive verdict with where its evidence was found.

    Columns: n, item, verdict, evidence, location ('' for negative verdicts), match ('exact' | 'fuzzy' | '').
    """
    cols = ["n", "item", "verdict", "evidence", "location", "match"]
    row = scores[(scores["metric"] == metric) & (scores["sample_id"] == sample_id)]
    if row.empty:
        return pd.DataFrame(columns=cols)
    prov = provenance[provenance["sample_id"] == sample_id] if not provenance.empty else provenance
    where: dict[str, tuple[str, str]] = {}
    for r in prov.itertuples(index=False) if not prov.empty else ():
        where.setdefault(str(r.item), (str(r.location), str(r.match)))
    rows = []
    for i, v in enumerate(_verdicts(row.iloc[0]["verdicts"]), start=1):
        loc, match = where.get(str(v.get("item", "")), ("", "")) if v.get("label") is True else ("", "")
        rows.append({"n": i, "item": str(v.get("item", "")), "verdict": str(v.get("verdict", "")),
                     "evidence": str(v.get("evidence", "") or ""), "location": loc, "match": match})
    return pd.DataFrame(rows, columns=cols)


def sample_status(scores: pd.DataFrame, metric: str, sample_id: str) -> dict[str, object]:
    """One sample's status, score and reason for `metric` (status 'unscored' when absent)."""
    row = scores[(scores["metric"] == metric) & (scores["sample_id"] == sample_id)]
    if row.empty:
        return {"status": "unscored", "score": None, "reason": ""}
    r = row.iloc[0]
    score = None if pd.isna(r["score"]) else float(r["score"])
    return {"status": str(r["status"]), "score": score, "reason": str(r["reason"] or "")}


# -- compare ---------------------------------------------------------------------------------
def config_rows(diff: dict[str, tuple[object, object]]) -> pd.DataFrame:
    """A diagnose.config_diff as a table of key, baseline, run (values as text)."""
    return pd.DataFrame([{"key": k, "baseline": _text(a), "run": _text(b)} for k, (a, b) in diff.items()],
                        columns=["key", "baseline", "run"])


def _text(value: object) -> str:
    return "(absent)" if value is None else json.dumps(value) if not isinstance(value, str) else value


def metric_sides(baseline: pd.DataFrame, run: pd.DataFrame) -> pd.DataFrame:
    """Two runs' metric tables side by side: scores, delta, and the instrument of each."""
    a, b = metric_table(baseline).set_index("metric"), metric_table(run).set_index("metric")
    rows = []
    for m in ordered_metrics(sorted(set(a.index) | set(b.index))):
        ra = a.loc[m] if m in a.index else None
        rb = b.loc[m] if m in b.index else None
        sa = float(ra["score"]) if ra is not None and pd.notna(ra["score"]) else None
        sb = float(rb["score"]) if rb is not None and pd.notna(rb["score"]) else None
        rows.append({
            "metric": m, "baseline": sa, "run": sb,
            "delta": sb - sa if sa is not None and sb is not None else None,
            "judge_model": _pair(ra, rb, "judge_model"), "prompt_hash": _pair(ra, rb, "prompt_hash"),
            "binding": _pair(ra, rb, "binding"),
        })
    return pd.DataFrame(rows, columns=["metric", "baseline", "run", "delta", "judge_model", "prompt_hash",
                                       "binding"])


def _pair(a: pd.Series | None, b: pd.Series | None, col: str) -> str:
    va = None if a is None or pd.isna(a[col]) else str(a[col])
    vb = None if b is None or pd.isna(b[col]) else str(b[col])
    return str(va) if va == vb else f"{va} -> {vb}"


def paired_deltas(baseline: pd.DataFrame, run: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per sample scored in both runs: baseline score, run score, delta (run - baseline), largest moves first."""
    cols = ["sample_id", "baseline", "run", "delta"]
    a = baseline[(baseline["metric"] == metric) & (baseline["status"] == "ok")].set_index("sample_id")["score"]
    b = run[(run["metric"] == metric) & (run["status"] == "ok")].set_index("sample_id")["score"]
    both = pd.concat({"baseline": a, "run": b}, axis=1, join="inner").dropna()
    if both.empty:
        return pd.DataFrame(columns=cols)
    both["delta"] = both["run"] - both["baseline"]
    out = both.reset_index().rename(columns={"index": "sample_id"})
    return out.reindex(out["delta"].abs().sort_values(ascending=False, kind="stable").index)[cols].reset_index(
        drop=True)


def paired_summary(deltas: pd.DataFrame, *, seed: int = 0) -> PairedDiff:
    """Mean per-sample delta with its paired bootstrap interval (stats.paired_bootstrap)."""
    return paired_bootstrap(deltas["baseline"].tolist(), deltas["run"].tolist(), seed=seed)


def aligned_verdicts(baseline: pd.DataFrame, run: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Items judged in both runs for `metric`, aligned by sample and item text (items of an unchanged artifact).

    Columns: sample_id, item, label_baseline, label_run (bool), baseline, run (verdict words),
    evidence_baseline, evidence_run.
    """
    cols = ["sample_id", "item", "label_baseline", "label_run", "baseline", "run", "evidence_baseline",
            "evidence_run"]
    a = baseline[baseline["metric"] == metric].set_index("sample_id")["verdicts"]
    b = run[run["metric"] == metric].set_index("sample_id")["verdicts"]
    rows = []
    for sid in sorted(set(a.index) & set(b.index)):
        before: dict[str, dict[str, object]] = {}
        for v in _verdicts(a[sid]):
            before.setdefault(str(v.get("item")), v)
        for v in _verdicts(b[sid]):
            old = before.get(str(v.get("item")))
            if old is None:
                continue
            rows.append({"sample_id": sid, "item": str(v.get("item")), "label_baseline": old.get("label") is True,
                         "label_run": v.get("label") is True, "baseline": str(old.get("verdict", "")),
                         "run": str(v.get("verdict", "")), "evidence_baseline": str(old.get("evidence") or ""),
                         "evidence_run": str(v.get("evidence") or "")})
    return pd.DataFrame(rows, columns=cols)


def flipped_verdicts(aligned: pd.DataFrame) -> pd.DataFrame:
    """The aligned items whose verdict flipped, with the direction ('to positive' | 'to negative')."""
    cols = ["sample_id", "item", "baseline", "run", "direction", "evidence_baseline", "evidence_run"]
    f = aligned[aligned["label_baseline"] != aligned["label_run"]].copy()
    f["direction"] = ["to positive" if x else "to negative" for x in f["label_run"]]
    return f[cols].reset_index(drop=True)


def flip_summary(aligned: pd.DataFrame) -> Flips:
    """Counts of flips each way over the aligned items, with McNemar's exact p (stats.flips)."""
    return flips(aligned["label_baseline"].astype(bool).tolist(), aligned["label_run"].astype(bool).tolist())


def previous_in(run_ids: Sequence[str], run_id: str) -> str | None:
    """The run before `run_id` in an oldest-first list (None for the first or an unknown run)."""
    try:
        i = list(run_ids).index(run_id)
    except ValueError:
        return None
    return run_ids[i - 1] if i > 0 else None


def change_rows(changes: RunChanges) -> pd.DataFrame:
    """A diagnose.RunChanges' judge-model, binding and pipeline changes as rows: kind, what, before, after."""
    rows = [{"kind": "judge model", "what": m, "before": _text(a), "after": _text(b)}
            for m, (a, b) in changes.judge_models.items()]
    rows += [{"kind": "binding", "what": m, "before": _text(a), "after": _text(b)}
             for m, (a, b) in changes.bindings.items()]
    rows += [{"kind": "pipeline", "what": k, "before": _text(a), "after": _text(b)}
             for k, (a, b) in changes.pipeline.items()]
    return pd.DataFrame(rows, columns=["kind", "what", "before", "after"])


def signed(x: float | None) -> str:
    """A signed score change for a metric tile; an unscored value is 'unscored', never 0."""
    return "unscored" if x is None else f"{x:+.3f}"


def split_cells(split: Split) -> pd.DataFrame:
    """A diagnose.Split's 2x2: rows are whose outputs were judged, columns whose instrument judged them."""
    s = split
    return pd.DataFrame({f"{s.run_a}'s instrument": [s.a_with_a, s.b_with_a],
                         f"{s.run_b}'s instrument": [s.a_with_b, s.b_with_b]},
                        index=[f"{s.run_a}'s outputs", f"{s.run_b}'s outputs"])
