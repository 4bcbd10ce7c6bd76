"""The Compare page's frames: config and metric sides, paired deltas, flipped verdicts, the split's cells."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from lib.diagnosis.stats import Flips, PairedDiff, flips, paired_bootstrap
from lib.diagnosis.trends import RunChanges, Split
from lib.presentation.views.common import ordered_metrics
from lib.presentation.views.run import metric_table, verdict_list


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
        for v in verdict_list(a[sid]):
            before.setdefault(str(v.get("item")), v)
        for v in verdict_list(b[sid]):
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


def flip_rows(flipped: pd.DataFrame) -> pd.DataFrame:
    """Flipped verdicts as the Compare page lists them, narrow enough for 1024 px beside the sidebar.

    Columns: sample_id, flip (the verdict words, "unsupported → supported"), item, evidence (the positive verdict's:
    the run's for a flip to positive, the baseline's for a flip to negative; the other side's after it, in
    brackets, when it cited different evidence).
    """
    rows = []
    for r in flipped.itertuples(index=False):
        cited, other, other_side = ((r.evidence_run, r.evidence_baseline, "baseline") if r.direction == "to positive"
                                    else (r.evidence_baseline, r.evidence_run, "run"))
        evidence = cited if other in ("", cited) else f"{cited} ({other_side}: {other})"
        rows.append({"sample_id": r.sample_id, "flip": f"{r.baseline} → {r.run}", "item": r.item,
                     "evidence": evidence})
    return pd.DataFrame(rows, columns=["sample_id", "flip", "item", "evidence"])


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
