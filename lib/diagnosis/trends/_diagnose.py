"""Diagnosis: what changed at a run, which jumps exceed noise, where evidence came from.

Pure reductions over frames the store returns, plus the instrument/outputs
split, which re-judges. No Streamlit here: every page and CLI command calls
these functions, and so do the tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from lib.core.errors import InputError
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.profiles import by_design, tool_fields_read, tool_of
from lib.core.prompts import fields_read, template_diff
from lib.core.records import MAIN
from lib.core.results import Aggregate, aggregate
from lib.diagnosis.trends._noise import (
    FLOOR,
    PairedStep,
    call_step,
    metric_noise,
    spread_of,
    spread_without,
    within_steps,
)
from lib.diagnosis.trends._segments import boundary_runs, segment_index
from lib.intake.importers import UNVERSIONED
from lib.judging.base import CallCache, Judge
from lib.judging.harness import Instrument, score_samples
from lib.store import Store

JUMP_K = 4.0


def flatten(d: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Nested config -> {'retriever.top_k': 3, ...}."""
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def config_diff(before: Mapping[str, object], after: Mapping[str, object]) -> dict[str, tuple[object, object]]:
    """Changed keys of two (nested) configs: key -> (before, after); absent is None."""
    a, b = flatten(before), flatten(after)
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


# -- what changed between two runs -------------------------------------------------------
@dataclass(frozen=True)
class TemplateChange:
    metric: str
    before_hash: str | None
    after_hash: str | None
    diff: str
    fields_before: tuple[str, ...]
    fields_after: tuple[str, ...]
    newly_forbidden: tuple[str, ...]   # must-never-receive fields the new template reads and the old did not

    @property
    def description(self) -> str:
        text = (f"{self.metric} prompt {self.before_hash} -> {self.after_hash} (reads "
                f"{', '.join(self.fields_before) or '?'} -> {', '.join(self.fields_after) or '?'})")
        if self.newly_forbidden:
            text += f"; now reads {', '.join(self.newly_forbidden)}, which {self.metric} must never receive"
        return text


@dataclass(frozen=True)
class RunChanges:
    run_id: str
    prev_run_id: str | None
    judge_models: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    templates: list[TemplateChange] = field(default_factory=list)
    bindings: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    pipeline: dict[str, tuple[object, object]] = field(default_factory=dict)
    # metric -> (judge name, served before, served now): the same configured name, another model served
    served: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not (self.judge_models or self.templates or self.bindings or self.pipeline or self.served)


def fields_of(template: str | None, metric: str) -> tuple[str, ...]:
    if template is None:
        return ()
    from lib.core.samples import FIELDS

    read = fields_read(template, metric)
    return tuple(f for f in FIELDS if f in read)


def _fields_shown(template: str | None, metric: str) -> tuple[str, ...]:
    """The fields a template reads, or, for another tool's recorded instrument, the fields it shows its grader."""
    from lib.core.samples import FIELDS

    shown = tool_fields_read(template)
    if shown is not None:
        return tuple(f for f in FIELDS if f in shown)
    try:
        return fields_of(template, metric)
    except InputError:   # stored before the doors refused it: its fields are unknown ('?'); lint names it
        return ()


def run_changes(store: Store, run_id: str, prev_run_id: str | None = None, *, suite: str = MAIN) -> RunChanges:
    """Everything recorded that differs between a run and the one before it (or `prev_run_id`)."""
    prev = prev_run_id if prev_run_id is not None else store.previous_run(run_id)
    if prev is None:
        return RunChanges(run_id, None)
    a, b = store.run_metrics(prev, suite).set_index("metric"), store.run_metrics(run_id, suite).set_index("metric")
    judges, bindings, templates, served = {}, {}, [], {}
    for m in METRIC_NAMES:
        if m not in a.index or m not in b.index:
            continue
        ra, rb = a.loc[m], b.loc[m]
        if ra.judge_model != rb.judge_model:
            judges[m] = (ra.judge_model, rb.judge_model)
        else:
            sa, sb = served_as(ra.get("served_model"), ra.get("fingerprint")), served_as(
                rb.get("served_model"), rb.get("fingerprint"))
            if sa is not None and sb is not None and sa != sb:
                served[m] = (str(rb.judge_model), sa, sb)
        if ra.binding != rb.binding:
            bindings[m] = (ra.binding, rb.binding)
        if ra.prompt_hash != rb.prompt_hash:
            ta = store.prompt(ra.prompt_hash) if ra.prompt_hash else None
            tb = store.prompt(rb.prompt_hash) if rb.prompt_hash else None
            fa, fb = _fields_shown(ta, m), _fields_shown(tb, m)
            # a field the run's tool gives this metric by design is no new leak (lib.core.profiles)
            scorer = rb.get("scorer")
            never = get_metric(m).never - by_design(tool_of(scorer if isinstance(scorer, str) else None), m)
            templates.append(TemplateChange(
                m, ra.prompt_hash, rb.prompt_hash,
                template_diff(ta or "", tb or "", old_name=str(ra.prompt_hash), new_name=str(rb.prompt_hash)),
                fa, fb, tuple(f for f in fb if f in never and f not in fa)))
    pipe = config_diff(store.run(prev).pipeline, store.run(run_id).pipeline)
    return RunChanges(run_id, prev, judges, templates, bindings, pipe, served)


NO_PIPELINE = ("{}", "")


def served_as(served_model: object, fingerprint: object) -> str | None:
    """What a server said it served, as one text: "judge-x-0613 (fp_a)"; None when it said neither.

    Either part may be missing (a server that sends no fingerprint; a stored run from before served models were
    recorded): a change of either under one configured judge name is a changed instrument nobody configured.
    """
    model = served_model if isinstance(served_model, str) and served_model else None
    fp = fingerprint if isinstance(fingerprint, str) and fingerprint else None
    if model is None and fp is None:
        return None
    return model if fp is None else f"{model} ({fp})" if model is not None else f"fingerprint {fp}"


def _served_events(h: pd.DataFrame) -> pd.DataFrame | None:
    """Markers where the served model or fingerprint changed under one configured judge name (h sorted by metric,
    time): each run is compared with the last run of its metric judged under the same name that said what it was
    served. A run that said nothing (an import, an older run) is no change."""
    if "served_model" not in h.columns or "fingerprint" not in h.columns:
        return None
    named = h[h["judge_model"].notna()]
    if named.empty:
        return None
    cur = pd.Series([served_as(m, f) for m, f in zip(named["served_model"], named["fingerprint"], strict=True)],
                    index=named.index, dtype=object)
    old = _last_before(cur, [named["metric"], named["judge_model"]])
    differs = cur.notna() & old.notna() & ~cur.eq(old)
    hit = named[differs]
    if hit.empty:
        return None
    text = [f"{m} served under {j}: {o} -> {c}" for m, j, o, c in
            zip(hit["metric"], hit["judge_model"], old[differs], cur[differs], strict=True)]
    return pd.DataFrame({"run_id": hit["run_id"].to_numpy(), "started_at": hit["started_at"].to_numpy(),
                         "kind": "served model", "metric": hit["metric"].to_numpy(), "text": text})


def _last_before(values: pd.Series, by: pd.Series | list[pd.Series]) -> pd.Series:
    """Per row, the last value recorded (not NA) before it in its group (`by`), None when none was: what
    `groupby(by).transform(lambda s: s.ffill().shift())` gives, by pandas' own grouped ffill and shift, with no
    Python call a group (grouped by two keys, the transform also built a MultiIndex of every row: most of the
    50 ms change_events took on the demo's history)."""
    out = values.groupby(by).ffill().groupby(by).shift().astype(object)
    return out.where(out.notna(), None)


def _unversioned(scorer: pd.Series) -> pd.Series:
    """'ragas 0.4.3 faithfulness' and 'ragas (version not recorded) faithfulness' -> 'ragas faithfulness'."""
    return scorer.astype(str).str.replace(r"^(\S+) (\(version not recorded\)|\S+) ", r"\1 ", regex=True)


def change_events(history: pd.DataFrame) -> pd.DataFrame:
    """Markers for a trend chart: one row per recorded change between consecutive runs.

    Columns: run_id, started_at, kind ('judge model' | 'served model' | 'prompt' | 'binding' | 'scoring library' |
    'pipeline'; 'served model': the model or fingerprint the server said it served changed under one judge name),
    metric (None for pipeline), text. Each metric is compared with its own previous
    scored run; the pipeline with the previous run. Vectorised: only the rows that
    differ are turned into text, so a 2,000-run history costs tens of milliseconds.
    """
    columns = ["run_id", "started_at", "kind", "metric", "text"]
    if history.empty:
        return pd.DataFrame(columns=columns)
    parts: list[pd.DataFrame] = []
    runs = history.drop_duplicates("run_id").sort_values(["started_at", "run_id"])
    # a run recorded with no pipeline config (an import that was not given one) says nothing about the
    # pipeline: it is compared with nothing, and the runs around it with each other
    runs = runs[~runs["pipeline"].astype(str).isin(NO_PIPELINE)]
    pipes = runs["pipeline"].astype(str)
    changed = runs[pipes.ne(pipes.shift()) & pipes.shift().notna()]
    if not changed.empty:
        prev_pipe = pipes.shift()[changed.index]
        texts = []
        for before, after in zip(prev_pipe, changed["pipeline"].astype(str), strict=True):
            diff = config_diff(json.loads(before), json.loads(after))
            texts.append("; ".join(f"{k}: {v[0]} -> {v[1]}" for k, v in diff.items()))
        parts.append(pd.DataFrame({"run_id": changed["run_id"].to_numpy(),
                                   "started_at": changed["started_at"].to_numpy(),
                                   "kind": "pipeline", "metric": None, "text": texts}))
    h = history.sort_values(["metric", "started_at", "run_id"])
    first = h["metric"].ne(h["metric"].shift())
    for col, kind in (("judge_model", "judge model"), ("prompt_hash", "prompt"), ("binding", "binding"),
                      ("scorer", "scoring library")):
        if col not in h.columns:  # a history from before scoring libraries were recorded
            continue
        # a run that did not record the field (an import with no grader, no template) says nothing about it:
        # no marker at it, and the next run that records it is compared with the last one that did
        cur = h[col].astype(object)
        old = _last_before(h[col].astype(object), h["metric"])
        differs = ~first & cur.notna() & old.notna() & ~cur.eq(old)
        if col == "scorer":
            # a run that did not record the tool's version says nothing about the version: the tool or its metric
            # changing is compared with the run before, a version with the last run that recorded one
            versioned = cur.where(~cur.astype(str).str.contains(UNVERSIONED, regex=False)).astype(object)
            last = _last_before(versioned, h["metric"])
            tool_changed = ~_unversioned(cur).eq(_unversioned(old))
            version_changed = versioned.notna() & last.notna() & ~versioned.eq(last)
            differs = ~first & cur.notna() & old.notna() & (tool_changed | version_changed)
            old = old.where(tool_changed | ~version_changed, last)
        hit = h[differs]
        if hit.empty:
            continue
        said = [v.where(v.notna(), "not recorded").astype(str) for v in (old[differs], cur[differs])]  # never "nan"
        text = hit["metric"] + f" {kind}: " + said[0] + " -> " + said[1]
        parts.append(pd.DataFrame({"run_id": hit["run_id"].to_numpy(), "started_at": hit["started_at"].to_numpy(),
                                   "kind": kind, "metric": hit["metric"].to_numpy(), "text": text.to_numpy()}))
    served = _served_events(h)
    if served is not None:
        parts.append(served)
    if not parts:
        return pd.DataFrame(columns=columns)
    order = {"pipeline": 0, "judge model": 1, "served model": 2, "prompt": 3, "binding": 4, "scoring library": 5}
    out = pd.concat(parts, ignore_index=True)
    out["_k"] = out["kind"].map(order)
    out = out.sort_values(["started_at", "run_id", "_k", "metric"], na_position="first", kind="stable")
    return out.drop(columns="_k").reset_index(drop=True)[columns]


# -- jumps and their suspects ---------------------------------------------------------------
@dataclass(frozen=True)
class Suspect:
    """A recorded change that could explain a jump, and how to test it."""

    kind: str
    description: str
    test: str
    blank: str | None = None   # the field an ablation should blank, when that is the test


@dataclass(frozen=True)
class Jump:
    metric: str
    run_id: str
    prev_run_id: str
    started_at: datetime
    before: float
    after: float
    delta: float
    threshold: float
    noise_sd: float
    suspects: tuple[Suspect, ...]
    across_instruments: bool = False   # the instrument differs from the run before: a step between segments
    basis: str = ""                    # what the threshold rests on (noise.StepCall.basis)
    lapsed: str = ""                   # why a step once beyond its threshold no longer is ('' : it is a jump)

    @property
    def ratio(self) -> float:
        return abs(self.delta) / self.threshold if self.threshold else math.inf

    @property
    def sentence(self) -> str:
        top = self.suspects[0].description if self.suspects else "no recorded change"
        return (f"{self.metric} {self.before:.3f} -> {self.after:.3f} ({self.delta:+.3f}) at {self.run_id}, "
                f"{self.ratio:.1f}x the jump threshold ±{self.threshold:.3f}; first suspect: {top}.")


def _asof_spreads(steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step, the run-to-run spread from the within-instrument differences before it, and how many.

    Exact while fewer than 64 came before; past that it is refreshed whenever their number has grown by an
    eighth (a 20,000-run history costs about a hundred medians, not 20,000).
    """
    valid = ~np.isnan(steps)
    counts = np.concatenate(([0], np.cumsum(valid)[:-1])).astype(int) if len(steps) else np.zeros(0, dtype=int)
    diffs = steps[valid]
    marks = list(range(min(len(diffs), 64) + 1))
    while marks[-1] < len(diffs):
        marks.append(min(len(diffs), max(marks[-1] + 1, int(marks[-1] * 1.125))))
    values = np.array([spread_of(diffs[:c]) for c in marks])
    at = np.searchsorted(np.asarray(marks), counts, side="right") - 1
    return values[at], counts


def suspects_for(changes: RunChanges, metric: str) -> tuple[Suspect, ...]:
    """Rank the recorded changes at a run as suspects for a move in `metric`.

    Every suspect's test is the split of the jump (each run's instrument on
    each run's outputs): only that says whether the jump came from the
    instrument or the outputs. A change that makes the wiring render a field
    the metric must never receive also names the field an ablation of the run
    should blank (`blank`); that tests the run's wiring, not the jump.
    """
    split = f"split {metric}'s jump into instrument and outputs"
    out: list[Suspect] = []
    for t in changes.templates:
        if t.metric != metric:
            continue
        if t.newly_forbidden:
            f = t.newly_forbidden[0]
            out.append(Suspect("prompt", t.description, f"{split}; ablating {metric} with {f} blanked checks "
                                                        f"the new wiring", f))
        else:
            out.append(Suspect("prompt", t.description, split))
    if metric in changes.bindings:
        b = changes.bindings[metric]
        forbidden = sorted(get_metric(metric).never)
        out.append(Suspect("binding", f"{metric} binding {b[0]} -> {b[1]}",
                           f"{split}; ablating {metric} with {forbidden[0]} blanked checks the new wiring",
                           forbidden[0]))
    if metric in changes.judge_models:
        j = changes.judge_models[metric]
        out.append(Suspect("judge model", f"judge model {j[0]} -> {j[1]}", split))
    if metric in changes.served:
        name, before, now = changes.served[metric]
        out.append(Suspect("served model", f"the server served another model under the name {name}: "
                                           f"{before} -> {now}", split))
    for k, (old, new) in changes.pipeline.items():
        out.append(Suspect("pipeline", f"pipeline {k}: {old} -> {new}", split))
    if not out:
        out.append(Suspect("none", "no recorded change at this run",
                           f"{split} (an unrecorded change, or judge noise)"))
    return tuple(out)


def ablations_called_for(store: Store, run_id: str, *, suite: str = MAIN) -> list[tuple[str, str]]:
    """The wiring ablations the suspects of a run's jumps call for: (metric, field to blank), in jump order."""
    return list(dict.fromkeys((j.metric, s.blank) for j in find_jumps(store, suite=suite) if j.run_id == run_id
                              for s in j.suspects if s.blank))


def trend_noise(history: pd.DataFrame) -> dict[str, float]:
    """Per metric: the run-to-run spread, the sd of one run's score (lib.diagnosis.trends._noise)."""
    return {m: n.spread for m, n in metric_noise(history).items()}


def find_jumps(store: Store, *, suite: str = MAIN, metrics: list[str] | None = None, k: float = JUMP_K,
               history: pd.DataFrame | None = None) -> list[Jump]:
    """Steps between consecutive runs beyond their jump threshold (noise.call_step), each with its suspects.

    A step is decided by its own paired per-sample change (the samples scored
    in both runs) and, once noise.MIN_SPREAD_STEPS within-instrument
    differences besides it exist, by the run-to-run spread measured without
    it (the median absolute deviation, which a handful of genuine level shifts
    cannot inflate). See `steps_beyond` for the steps no longer beyond.
    """
    return steps_beyond(store, suite=suite, metrics=metrics, k=k, history=history)[0]


def steps_beyond(store: Store, *, suite: str = MAIN, metrics: list[str] | None = None, k: float = JUMP_K,
                 history: pd.DataFrame | None = None) -> tuple[list[Jump], list[Jump]]:
    """(jumps, lapsed): the steps beyond their threshold now, and those that were beyond it as of their own run
    (the run-to-run spread measured from the runs before them) but are within the threshold measured now; each
    lapsed step says why (`Jump.lapsed`), so an incident it opened is marked, never dropped.

    Kept per data version on the store: the Overview asks for the jumps, then its incidents ask again (0.35 CPU s
    on the demo each time). A given `history` must be the store's own at this version (as every caller passes).
    """
    key = (suite, tuple(metrics) if metrics is not None else None, k, store.data_version(),
           None if history is None else len(history))
    kept = store.__dict__.get("_steps_memo", {}).get(key)
    if kept is None:   # one version kept, swapped whole: the dashboard's threads share a store
        kept = _steps_beyond(store, suite, metrics, k, history)
        store.__dict__["_steps_memo"] = {key: kept}
    jumps, lapsed = kept
    return list(jumps), list(lapsed)


def _steps_beyond(store: Store, suite: str, metrics: list[str] | None, k: float, history: pd.DataFrame | None
                  ) -> tuple[list[Jump], list[Jump]]:
    h = history if history is not None else store.metric_history(suite=suite, metrics=metrics)
    if h.empty:
        return [], []
    h = h.dropna(subset=["score"]).sort_values(["started_at", "run_id"]).copy()
    h["_seg"] = segment_index(h)
    boundaries = boundary_runs(h)
    found: list[tuple[str, pd.DataFrame, int, float, int, float, int]] = []
    for m, g in h.groupby("metric", sort=False):
        g = g.reset_index(drop=True)
        scores = g["score"].to_numpy(dtype=float)
        steps = within_steps(scores, g["_seg"].tolist())
        whole, whole_n = spread_without(steps, None)
        asof, asof_n = _asof_spreads(steps)
        delta = np.abs(np.nan_to_num(np.diff(scores, prepend=np.nan)))
        # a step can be a jump only beyond k·√2 of the smaller of the two spreads (paired evidence only adds)
        smaller = np.minimum(np.full(len(steps), whole), asof)   # nan where either is not measured: no filter
        limit = np.maximum(FLOOR, np.where(np.isnan(smaller) | (whole_n <= 64), 0.0, k * math.sqrt(2) * smaller))
        for i in (int(x) for x in np.flatnonzero(delta > limit)):
            now, now_n = spread_without(steps, i if not math.isnan(steps[i]) else None) if whole_n <= 64 else (
                whole, whole_n - (0 if math.isnan(steps[i]) else 1))
            found.append((str(m), g, int(i), now, now_n, float(asof[i]), int(asof_n[i])))
    pairs = store.paired_steps([(m, str(g.loc[i - 1, "run_id"]), str(g.loc[i, "run_id"])) for m, g, i, *_ in found],
                               suite)
    paired = {(r.metric, r.prev_run_id, r.run_id): PairedStep(int(r.n), float(r.mean), float(r.sd))
              for r in pairs.itertuples(index=False)}
    jumps: list[Jump] = []
    lapsed: list[Jump] = []
    changes_cache: dict[str, RunChanges] = {}
    for m, g, i, now, now_n, then, then_n in found:
        rid, prev = str(g.loc[i, "run_id"]), str(g.loc[i - 1, "run_id"])
        before, after = float(g.loc[i - 1, "score"]), float(g.loc[i, "score"])
        pair = paired.get((m, prev, rid))
        call = call_step(after - before, pair, now, now_n, k=k, m_steps=len(g) - 1)
        was = call_step(after - before, pair, then, then_n, k=k, m_steps=i)
        if not (call.beyond or was.beyond):
            continue
        if rid not in changes_cache:
            changes_cache[rid] = run_changes(store, rid, prev, suite=suite)
        lapse = "" if call.beyond else (
            f"beyond its threshold ±{was.threshold:.3f} as of its run ({was.basis}); within the threshold "
            f"±{call.threshold:.3f} measured now ({call.basis})" if call.decided else
            f"beyond its threshold ±{was.threshold:.3f} as of its run; not decided now ({call.basis})")
        shown = call if call.beyond else was
        jump = Jump(m, rid, prev, g.loc[i, "started_at"], before, after, after - before, shown.threshold,
                    now if not math.isnan(now) else then, suspects_for(changes_cache[rid], m),
                    rid in boundaries.get(m, set()), shown.basis, lapse)
        (jumps if call.beyond else lapsed).append(jump)
    order = lambda j: (j.started_at, j.metric)  # noqa: E731
    return sorted(jumps, key=order), sorted(lapsed, key=order)


# -- instrument versus outputs ----------------------------------------------------------------
@dataclass(frozen=True)
class Split:
    """A jump between runs A and B split into what the instrument and the outputs changed.

    A cell that no judging scored stays None (never 0.0), and then the split
    is not computed: `instrument`, `outputs` and `total` are None and the
    sentence says which cells are unscored and why.
    """

    metric: str
    run_a: str
    run_b: str
    a_with_a: float | None
    b_with_b: float | None
    b_with_a: float | None
    a_with_b: float | None
    instrument: float | None
    outputs: float | None
    stored_delta: float | None
    n: int
    unscored: str = ""   # why some cells have no score ('' when all four are scored)

    @property
    def total(self) -> float | None:
        if self.a_with_a is None or self.b_with_b is None:
            return None
        return self.b_with_b - self.a_with_a

    @property
    def sentence(self) -> str:
        if self.instrument is None or self.outputs is None:
            return (f"{self.metric} {self.run_a} -> {self.run_b}: not split. {self.unscored} An unscored cell is "
                    f"not a zero, so no share can be given to the instrument or the outputs.")
        if abs(self.instrument) < 0.0005 and abs(self.outputs) < 0.0005:
            return (f"{self.metric} {self.run_a} -> {self.run_b}: {self.total:+.3f} re-judged; neither the "
                    f"instrument ({self.instrument:+.3f}) nor the outputs ({self.outputs:+.3f}) moved it, n={self.n}.")
        share = abs(self.instrument) / (abs(self.instrument) + abs(self.outputs))
        side = "the measurement (instrument)" if share >= 0.5 else "the system's outputs"
        return (f"{self.metric} {self.run_a} -> {self.run_b}: {self.total:+.3f} re-judged, of which the instrument "
                f"accounts for {self.instrument:+.3f} and the outputs for {self.outputs:+.3f}: mostly {side} "
                f"({share:.0%} instrument), n={self.n}.")


def _unscored_words(cells: Mapping[tuple[str, str], Aggregate], reasons: Mapping[tuple[str, str], str]) -> str:
    missing = [(o, i) for (o, i), agg in cells.items() if agg.score is None]
    if not missing:
        return ""
    parts = [f"{o}'s outputs with {i}'s instrument ({cells[(o, i)].n_failed} failed"
             + (f": {reasons[(o, i)]})" if reasons.get((o, i)) else ")") for o, i in missing]
    return f"{len(missing)} of the 4 cells are unscored: " + "; ".join(parts) + "."


def split_jump(store: Store, metric: str, run_a: str, run_b: str, judge_for: Callable[[str | None], Judge], *,
               suite: str = MAIN, seed: int = 0, cache: CallCache | None = None) -> Split:
    """Score B's outputs with A's instrument and A's with B's (a 2x2), and split the jump.

    instrument = mean over outputs of (B's instrument - A's instrument);
    outputs    = mean over instruments of (B's outputs - A's outputs).
    The two add up to the re-judged jump exactly. `judge_for(model)` returns
    the judge to use for an instrument that recorded `model`. A cell whose
    every judging failed stays unscored, and then nothing is split. With
    `cache` (the store), a model judge's replies are kept, so a split asked
    again (or resumed after the page was left) pays only for what is missing.
    """
    insts, judges = {}, {}
    for rid in (run_a, run_b):
        rec = store.instrument(rid, metric, suite)
        insts[rid] = Instrument(metric, rec.template or "", rec.binding or "projected")
        judges[rid] = judge_for(rec.judge_model)
    outs = {rid: store.samples(rid, suite) for rid in (run_a, run_b)}
    cells: dict[tuple[str, str], Aggregate] = {}
    reasons: dict[tuple[str, str], str] = {}
    for o in (run_a, run_b):
        for i in (run_a, run_b):
            results = score_samples(outs[o], insts[i], judges[i], seed=seed, cache=cache)
            cells[(o, i)] = aggregate(results)
            reasons[(o, i)] = next((r.reason for r in results if r.reason), "")
    aa, bb = cells[(run_a, run_a)].score, cells[(run_b, run_b)].score
    ba, ab = cells[(run_b, run_a)].score, cells[(run_a, run_b)].score
    whole = None not in (aa, bb, ba, ab)
    instrument = ((ab - aa) + (bb - ba)) / 2 if whole else None  # type: ignore[operator]
    outputs = ((ba - aa) + (bb - ab)) / 2 if whole else None  # type: ignore[operator]
    ra, rb = store.instrument(run_a, metric, suite), store.instrument(run_b, metric, suite)
    stored = (rb.score - ra.score) if ra.score is not None and rb.score is not None else None
    return Split(metric, run_a, run_b, aa, bb, ba, ab, instrument, outputs, stored,
                 min(len(outs[run_a]), len(outs[run_b])), _unscored_words(cells, reasons))
