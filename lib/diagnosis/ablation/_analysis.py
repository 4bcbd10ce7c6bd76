"""Read a finished ablation's stored results into verdicts: paired intervals, noise, headroom, static evidence.

The numbers per cell are computed here from the results frame; the decision
is `lib.diagnosis.ablation._verdicts.classify` (pure) and the words are `lib.diagnosis.ablation._verdict_words`.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from lib.core.endpoints import DEMO_GENERATOR
from lib.core.metrics import EXPECT_SENSITIVE, MetricSpec, get_metric
from lib.core.profiles import expectation_for, tool_of
from lib.core.prompts import fields_rendered
from lib.core.records import RecordedInstrument
from lib.core.results import EXCLUDED, FAILED, OK
from lib.core.samples import GROUND_TRUTH, arm_fields
from lib.diagnosis.ablation import _arm_words as arm_words
from lib.diagnosis.ablation import _verdict_words as verdict_words
from lib.diagnosis.ablation._arms import CONTROL, is_control, is_swap, tested_fields
from lib.diagnosis.ablation._epochs import recorded_reduction, reduction_words, replayed
from lib.diagnosis.ablation._floor import floor_level, floor_scores
from lib.diagnosis.ablation._plan import Plan
from lib.diagnosis.ablation._plan import plan as make_plan
from lib.diagnosis.ablation._result import AblationResult, ArmVerdict, FourReadings, ReplayCheck
from lib.diagnosis.ablation._verdicts import (
    BELOW_EFFECT,
    CLEAN,
    FLOOR,
    IGNORES_INPUTS,
    INCONCLUSIVE,
    INSENSITIVE,
    LEAK,
    MEASURED,
    UNCHANGED,
    CellEvidence,
    ControlEvidence,
    Decision,
    classify,
    classify_control,
    with_control,
)
from lib.diagnosis.stats import PairedDiff, flips, mde, noise_band, paired_interval, run_noise_sd, sample_mean

ZERO_BAND = 1e-9   # a band below this is identical repeats (floating-point dust), reported as 0

if TYPE_CHECKING:
    from lib.diagnosis.ablation._spec import AblationSpec
    from lib.store import Store

SequentialCell = Callable[..., ArmVerdict]   # lib.diagnosis.ablation._sequential_run.sequential_cell


@dataclass
class ArmResults:
    """One arm's stored results of one metric, gathered per sample (the sequential run reads them too)."""

    scores: dict[str, list[float]]          # sample -> ok scores over repeats
    labels: dict[str, list[list[bool]]]     # sample -> per repeat item labels
    failed: int
    excluded: int
    units: int
    reasons: Counter
    rows: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))  # (status, reason)


def restrict(arm: ArmResults, ids: Collection[str]) -> ArmResults:
    """The arm's results on these samples only (a sequential ablation's cell at its deciding look)."""
    keep = set(ids)
    out = ArmResults(defaultdict(list), defaultdict(list), 0, 0, 0, Counter())
    for sid, rows in arm.rows.items():
        if sid not in keep:
            continue
        out.rows[sid] = rows
        out.units += len(rows)
        for status, reason in rows:
            out.failed += status == FAILED
            out.excluded += status == EXCLUDED
            if status == FAILED:
                out.reasons[reason.split(" (after")[0]] += 1
        if sid in arm.scores:
            out.scores[sid], out.labels[sid] = arm.scores[sid], arm.labels[sid]
    return out


def collect(frame: pd.DataFrame, *, labels: bool = True) -> dict[tuple[str, str], ArmResults]:
    """Group stored results by (metric, arm): scores and labels per sample, failures counted.

    `labels=False` leaves every arm's per-item labels empty: a sequential run's looks read scores and
    statuses only, and parsing each stored verdict's JSON at every look was most of a look's cost.
    """
    arms: dict[tuple[str, str], ArmResults] = {}
    for (metric, arm), part in frame.groupby(["metric", "arm"], sort=False):
        a = ArmResults(defaultdict(list), defaultdict(list), 0, 0, len(part), Counter())
        # whole columns as lists: iterating rows of Arrow-backed columns costs a Python call per cell
        verdict_column = part["verdicts"].tolist() if labels else [None] * len(part)
        for sample_id, status, reason, score, verdicts in zip(
                *(part[c].tolist() for c in ("sample_id", "status", "reason", "score")), verdict_column, strict=True):
            a.rows[sample_id].append((status, reason or ""))
            if status == OK:
                a.scores[sample_id].append(float(score))
                if labels:
                    a.labels[sample_id].append([bool(x["label"]) for x in json.loads(verdicts)])
            elif status == FAILED:
                a.failed += 1
                a.reasons[reason.split(" (after")[0]] += 1
            elif status == EXCLUDED:
                a.excluded += 1
        arms[(metric, arm)] = a
    return arms


def _majority(per_rep: list[list[bool]]) -> list[bool] | None:
    if len({len(x) for x in per_rep}) != 1:
        return None
    return [sum(col) * 2 > len(col) for col in zip(*per_rep, strict=True)]


def _item_flips(base: ArmResults, abl: ArmResults, common: list[str]):
    before: list[bool] = []
    after: list[bool] = []
    for s in common:
        x, y = _majority(base.labels.get(s, [])), _majority(abl.labels.get(s, []))
        if x is not None and y is not None and len(x) == len(y):
            before.extend(x)
            after.extend(y)
    return flips(before, after)


def _mean_scores(arm: ArmResults) -> float | None:
    return float(np.mean([sample_mean(x) for x in arm.scores.values()])) if arm.scores else None


def _unchanged_cell(spec: AblationSpec, mspec: MetricSpec, arm: str, base: ArmResults, band: float | None,
                    renders: frozenset[str] | None, mismatch: bool, n_samples: int) -> ArmVerdict:
    """An arm whose prompts equal the baseline's: not re-judged, so no move, interval or flips to show."""
    fields = tested_fields(arm)
    expected = expectation_for(mspec.name, fields, tool_of(spec.scorer))
    e = CellEvidence(mspec.name, fields, expected, renders, 0, None, None, None, band, _mean_scores(base),
                     replay_mismatch=mismatch, min_effect=spec.min_effect, unchanged=n_samples)
    d = classify(e)
    said = verdict_words.sentence(e, d, repeats=spec.repeats)
    return ArmVerdict(metric=mspec.name, arm=arm, kind=d.kind, expected=expected, baseline=e.baseline, ablated=None,
                      delta=None, lo=None, hi=None, noise=band, ratio=None, n=0, n_failed=0, n_units=0,
                      flips_to_positive=0, flips_to_negative=0, flips_p=None, mde=None,
                      sentence=arm_words.swap_words(said) if is_swap(arm) else said, why=d.why,
                      renders=tuple(sorted(renders)) if renders is not None else None, headroom=e.headroom,
                      min_effect=e.min_effect, rule_out=e.rule_out, joint=_joint(spec, mspec, arm))


def _joint(spec: AblationSpec, mspec: MetricSpec, arm: str) -> bool:
    """The arm blanks all the metric's must-never-receive fields together (a swap arm is never the joint arm)."""
    fields = tested_fields(arm)
    return not is_swap(arm) and (arm not in spec.blanks or (len(fields) > 1 and set(fields) == mspec.never))


def band_of(spec: AblationSpec, base: ArmResults) -> tuple[float, float | None]:
    """The judge's repeat noise (sd of a run mean, and its band) from the baseline's repeats."""
    sd = run_noise_sd(list(base.scores.values())) if spec.repeats >= 2 else math.nan
    band = noise_band(sd) if not math.isnan(sd) else None
    if band is not None and band < ZERO_BAND:
        band = 0.0  # identical repeats: rounding dust is not a noise band to divide by
    return sd, band


def evidence(spec: AblationSpec, mspec: MetricSpec, arm: str, base: ArmResults, abl: ArmResults, band: float | None,
             renders: frozenset[str] | None, mismatch: bool, *, interval: tuple[float, float] | None = None,
             order: Sequence[str] | None = None, floor: Mapping[str, Sequence[float]] | None = None
             ) -> tuple[CellEvidence, list[str], list[float], list[float]]:
    """A cell's evidence: the paired change over samples scored in both arms, and its 95% interval.

    The interval is the paired bootstrap's unless `interval` gives one (a sequential ablation's confidence
    sequence); `order` lists the common samples in that order (default: by id); `floor` is the floor arm's
    scores per sample (lib.diagnosis.ablation_floor), read over the samples the baseline scored. Returns the
    evidence, the common samples, and their as-wired and blanked scores.
    """
    fields = tested_fields(arm)
    expected = expectation_for(mspec.name, fields, tool_of(spec.scorer))
    common = [s for s in order if s in base.scores and s in abl.scores] if order is not None else \
        sorted(set(base.scores) & set(abl.scores))
    a = [sample_mean(base.scores[s]) for s in common]
    b = [sample_mean(abl.scores[s]) for s in common]
    if interval is not None:
        mean = float(np.mean(np.asarray(b) - np.asarray(a))) if common else None
        lo, hi = interval if common else (None, None)
    else:
        pd_ = paired_interval(a, b, seed=len(common)) if common else None
        mean, lo, hi = (pd_.mean, pd_.lo, pd_.hi) if pd_ else (None, None, None)
    e = CellEvidence(mspec.name, fields, expected, renders, len(common), mean, lo, hi, band, _mean_scores(base),
                     base.failed + abl.failed, base.units + abl.units,
                     nothing_to_judge=mspec.items_from in fields and not abl.scores and abl.excluded > 0,
                     replay_mismatch=mismatch, min_effect=spec.min_effect, sequence=interval is not None,
                     floor=floor_level(base.scores, floor))
    return e, common, a, b


def cell_verdict(spec: AblationSpec, mspec: MetricSpec, arm: str, base: ArmResults, abl: ArmResults, band: float | None,
          renders: frozenset[str] | None, mismatch: bool, probe: int = 0,
          interval: tuple[float, float] | None = None, floor: Mapping[str, Sequence[float]] | None = None
          ) -> ArmVerdict:
    e, common, a, b = evidence(spec, mspec, arm, base, abl, band, renders, mismatch, interval=interval, floor=floor)
    deltas = np.asarray(b) - np.asarray(a)
    md = mde(float(np.std(deltas, ddof=1)), len(common)) if len(common) > 1 else None
    fl = _item_flips(base, abl, common) if common else None
    d = classify(e)
    top = ", ".join(f"{k} ({n})" for k, n in (base.reasons + abl.reasons).most_common(2))
    said = verdict_words.sentence(e, d, repeats=spec.repeats, failures=top, probe=probe)
    if is_swap(arm):   # the blank cell's words with the change named, and which way the swap moved it
        said = arm_words.swap_words(said) + arm_words.swap_sign(e, d)
    missed = verdict_words.not_reached(abl.reasons)
    if missed is not None:   # the tool's grader prompts show the blanked text: nothing was measured of that blank
        d = replace(d, kind=INCONCLUSIVE)
        said = missed
    return ArmVerdict(metric=mspec.name, arm=arm, kind=d.kind, expected=e.expected, baseline=e.baseline,
                      ablated=float(np.mean(b)) if b else None, delta=e.mean, lo=e.lo, hi=e.hi, noise=band,
                      ratio=verdict_words.ratio(band, e.mean), n=e.n, n_failed=e.n_failed, n_units=e.n_units,
                      flips_to_positive=fl.to_positive if fl else 0, flips_to_negative=fl.to_negative if fl else 0,
                      flips_p=fl.p_value if fl else None, mde=md,
                      sentence=said, why=d.why, renders=tuple(sorted(renders)) if renders is not None else None,
                      headroom=e.headroom, min_effect=e.min_effect, rule_out=e.rule_out,
                      joint=_joint(spec, mspec, arm))


def control_evidence(spec: AblationSpec, metric: str, floor: Mapping[str, Sequence[float]] | None,
                     control: ArmResults | None, band: float | None) -> ControlEvidence | None:
    """The positive control's evidence: its scores against the floor's, paired over the samples scored in both
    (None when the ablation measured no floor or judged no control)."""
    if floor is None or control is None:
        return None
    common = sorted(set(floor) & set(control.scores))
    f = [sample_mean(floor[s]) for s in common if floor[s]]
    c = [sample_mean(control.scores[s]) for s in common if floor[s]]
    d = paired_interval(f, c, seed=len(c)) if c else None
    return ControlEvidence(metric, len(c), d.mean if d else None, d.lo if d else None, d.hi if d else None, band,
                           float(np.mean(f)) if f else None, float(np.mean(c)) if c else None,
                           n_failed=control.failed, n_units=control.units, min_effect=spec.min_effect)


def _read_control(spec: AblationSpec, plan: Plan, metric: str, arms: Mapping[tuple[str, str], ArmResults],
                  floor: Mapping[str, Sequence[float]] | None, band: float | None,
                  cells: list[ArmVerdict]) -> list[ArmVerdict]:
    """The metric's positive control read into its cells: a cell at the floor says what the control showed (and
    becomes INSENSITIVE when the judge does not read its inputs); the control gets a row of its own when it
    finds the judge does not read its inputs or a cell at the floor needed it."""
    e = control_evidence(spec, metric, floor, arms.get((metric, CONTROL)), band) \
        if plan.judged_control(metric) else None
    if e is None:
        return cells
    d = classify_control(e)
    out = []
    for c in cells:
        if c.metric != metric or c.why != FLOOR:
            out.append(c)
            continue
        after = with_control(Decision(c.kind, c.why), c.expected, d)
        if after.why == IGNORES_INPUTS:
            said = arm_words.ignores_inputs_sentence(metric, tested_fields(c.arm), c.baseline, e)
            if c.stop:   # a sequential cell keeps its account of where judging stopped
                said += " " + verdict_words.stop_words(c.stop, c.judged, len(plan.samples))
            out.append(replace(c, kind=after.kind, why=after.why,
                               sentence=arm_words.swap_words(said) if is_swap(c.arm) else said))
        else:
            out.append(replace(c, sentence=c.sentence + arm_words.floor_control_note(after, d)))
    needed = any(c.metric == metric and c.why in (FLOOR, IGNORES_INPUTS) for c in out)
    if d.kind != INSENSITIVE and not needed:   # a control that rises, with no cell at the floor, changes nothing
        return out
    reasons = arms[(metric, CONTROL)].reasons
    said = arm_words.control_sentence(e, d, noise=verdict_words.noise_words(band, e.mean, spec.repeats),
                                      failures=", ".join(f"{k} ({n})" for k, n in reasons.most_common(2)))
    return [*out, ArmVerdict(metric=metric, arm=CONTROL, kind=d.kind, expected=EXPECT_SENSITIVE, baseline=e.floor,
                             ablated=e.supported, delta=e.mean, lo=e.lo, hi=e.hi, noise=band,
                             ratio=verdict_words.ratio(band, e.mean), n=e.n, n_failed=e.n_failed,
                             n_units=e.n_units, flips_to_positive=0, flips_to_negative=0, flips_p=None, mde=None,
                             sentence=said, why=d.why, min_effect=e.min_effect, rule_out=e.rule_out)]


def _joint_notes(cells: list[ArmVerdict]) -> list[ArmVerdict]:
    """A joint arm that leaks while no single field does is a leak of the set; say so on both sides."""
    out = list(cells)
    for i, j in enumerate(cells):
        if not (j.joint and j.kind == LEAK and j.why in (MEASURED, BELOW_EFFECT)):
            continue
        singles = [k for k, c in enumerate(cells) if c.metric == j.metric and not c.joint and c.why != UNCHANGED
                   and not is_swap(c.arm) and not is_control(c.arm) and len(arm_fields(c.arm)) == 1
                   and c.arm in arm_fields(j.arm)]
        if singles and all(cells[k].kind != LEAK for k in singles):
            out[i] = replace(j, sentence=j.sentence + " Blanked one at a time, none of them moves it: each supplies "
                                                      "what the other removes, a leak of the set.")
        for k in singles:
            if cells[k].kind == CLEAN:
                out[k] = replace(cells[k], sentence=cells[k].sentence + f" Blanked together with the rest of "
                                 f"{j.arm.replace('+', ', ')} it does move (LEAK of the set): this cell clears "
                                 f"nothing.")
    return out


def replay_mismatch(deltas: Sequence[float], *, min_effect: float, band: float | None = None,
                    seed: int = 0) -> tuple[bool, PairedDiff]:
    """Does a re-run fail to reproduce the stored score? `deltas`: per sample, re-run minus stored.

    Read as a verdict reads a move: a mismatch is a paired interval, over every sample the baseline judged
    (stats.paired_interval: exact below 20), that excludes zero with a mean beyond the smallest effect worth
    naming and beyond the judge's repeat band `band` (a noisy judge at a ceiling of 1.0 can only lower a score).
    No band of 3 noise sds is added to the tolerance: a deterministic judge that reproduces exactly shows [0, 0].
    """
    d = paired_interval([0.0] * len(deltas), list(deltas), seed=seed)
    allowed = max(min_effect, band or 0.0)
    return bool(d.excludes_zero and abs(d.mean) > allowed + 1e-9), d


def _replay_check(store: Store, spec: AblationSpec, metric: str, base: ArmResults, band: float | None,
                  recorded: str | None, *, repeats_exact: bool = False) -> ReplayCheck:
    stored_frame = store.sample_scores(spec.run_id, spec.suite, metric)
    stored = {r.sample_id: float(r.score) for r in stored_frame.itertuples(index=False) if r.status == OK}
    # like for like: a score the tool reduced over its epochs (max, mode...) is read against the re-run's judgings
    # reduced the same way, not against their mean
    reduction = recorded_reduction(store.run_notes(spec.run_id), metric)
    rerun = {s: v for s in set(stored) & set(base.scores)
             if (v := replayed(base.scores[s], reduction, repeats_exact=repeats_exact)) is not None}
    common = sorted(rerun)
    if reduction is not None and not common and set(stored) & set(base.scores):
        judged = max(len(base.scores[s]) for s in set(stored) & set(base.scores))
        return ReplayCheck(metric, float(np.mean(list(stored.values()))), None, None, band, True,
                           f"REPLAY NOT LIKE FOR LIKE: {reduction_words(metric, reduction)}, and this ablation "
                           f"judged each sample {judged} time(s): no reduced score can be replayed from that, so "
                           f"nothing in it can clear the run. Ablate with --repeats {reduction[1]} (or more) to "
                           f"replay it.", max(spec.min_effect, band or 0.0))
    if not common:
        return ReplayCheck(metric, None, None, None, band, False,
                           f"{metric}: no stored per-sample scores to compare the re-run with.")
    s_mean = float(np.mean([stored[s] for s in common]))
    r_mean = float(np.mean([rerun[s] for s in common]))
    mismatch, d = replay_mismatch([rerun[s] - stored[s] for s in common],
                                  min_effect=spec.min_effect, band=band, seed=len(common))
    allowed = max(spec.min_effect, band or 0.0)
    other = spec.scorer is None and spec.judge is not None and recorded is not None and spec.judge != recorded
    who = f" by {spec.judge}, not the run's own judge ({recorded}), so not a replay," if other else ""
    if reduction is not None:
        who += f" (each sample's {reduction[0]} over {reduction[1]} judgings, as the tool reduced its epochs)"
    stored_words = _stored_words(s_mean, len(common), stored)
    measured = (f"{metric} re-judged{who} reads {r_mean:.3f} against {stored_words} ({d.mean:+.3f}, 95% CI "
                f"{d.lo:+.3f} to {d.hi:+.3f} over {d.n} samples; a mismatch is an interval that excludes 0 and a "
                f"move beyond {allowed:.3f})")
    if mismatch:
        sentence = (f"REPLAY MISMATCH: {measured}: this ablation did not reproduce the instrument that produced the "
                    f"run's score, so nothing in it can clear the run.")
    elif d.lo >= -allowed - 1e-9 and d.hi <= allowed + 1e-9:
        sentence = f"{measured}: the run's score reproduces (the interval lies within ±{allowed:.3f})."
    else:   # every sample judged and still wider than the tolerance: say what it could not rule out
        sentence = (f"{measured}: no mismatch shown, but on these {d.n} samples the interval does not rule out a "
                    f"move beyond {allowed:.3f} either.")
    return ReplayCheck(metric, s_mean, r_mean, r_mean - s_mean, band, mismatch, sentence, allowed)


def _stored_words(s_mean: float, n: int, stored: dict[str, float]) -> str:
    """The stored level the replay is read against: on fewer samples than the run scored, it is not the run's
    score the Run page shows, so both are named."""
    if n >= len(stored):
        return f"the stored {s_mean:.3f}"
    return (f"the stored {s_mean:.3f} on the same {n} samples (the run's score over all {len(stored)}: "
            f"{math.fsum(stored.values()) / len(stored):.3f})")


def _renders(spec: AblationSpec, metric: str, inst: RecordedInstrument) -> frozenset[str] | None:
    """The static evidence: what the run's wiring renders (None for an external scorer: its code is not read)."""
    if spec.scorer is not None or inst.template is None:
        return None
    return fields_rendered(str(inst.template), metric, str(inst.binding or "projected"))


def _four_readings(verdicts: list[ArmVerdict]) -> FourReadings | None:
    """Faithfulness's four readings, only where the wiring makes 'the reference alone' meaningful.

    That is: the run's wiring renders ground_truth, or (external scorer) the
    ground_truth cell measured a leak. Otherwise the reading without the
    passages is no reference's support, only noise, and is not computed.
    """
    by_arm = {x.arm: x for x in verdicts if x.metric == "faithfulness"}
    if any(x.judged and x.interval_words.endswith("CS") for x in by_arm.values()):
        return None   # a sequential ablation stopped these arms at different samples: no levels to set side by side
    gt, ctx = by_arm.get("ground_truth"), by_arm.get("contexts")
    if gt is None or ctx is None or gt.baseline is None or gt.ablated is None or ctx.ablated is None:
        return None
    reads_reference = (GROUND_TRUTH in gt.renders) if gt.renders is not None else gt.kind == LEAK
    if not reads_reference:
        return None
    both = by_arm.get("contexts+ground_truth")
    wired, a, b = gt.baseline, gt.ablated, ctx.ablated
    ind = 1 - (1 - a) * (1 - b)
    noise_txt = f" (judge repeat band ±{gt.noise:.3f})" if gt.noise else ""
    sentence = (f"Faithfulness reads {wired:.2f} as wired, {a:.2f} with ground_truth blanked and {b:.2f} with "
                f"contexts blanked{noise_txt}. The reference adds {wired - a:+.2f}; with no passages it still "
                f"supports {b:.2f} of claims. If passages and reference were independent channels of support, "
                f"together they would give 1-(1-{a:.2f})(1-{b:.2f}) = {ind:.3f}, against {wired:.3f} as wired.")
    return FourReadings(wired, a, b, both.ablated if both else None, wired - a, ind, wired - ind, gt.noise, sentence)


def four_readings_gap(verdicts: Sequence[ArmVerdict]) -> str:
    """Why an ablation gives no four readings, in words that fit what it did (what is missing, and the remedy).

    The same conditions as _four_readings, in its order: faithfulness's ground_truth and contexts arms, each with
    levels; judged on the same samples (not stopped sequentially at different ones); a wiring that reads the
    reference.
    """
    by_arm = {x.arm: x for x in verdicts if x.metric == "faithfulness"}
    gt, ctx = by_arm.get("ground_truth"), by_arm.get("contexts")
    if gt is None or ctx is None:
        return "this needs faithfulness with ground_truth and contexts blanked."
    if any(x.judged and x.interval_words.endswith("CS") for x in by_arm.values()):
        return ("this ablation blanked ground_truth and contexts, but judged each arm only until its verdict was "
                "decided, so the arms stopped at different samples and give no levels to set side by side: the "
                "four readings judge every sample.")
    if gt.baseline is None or gt.ablated is None or ctx.ablated is None:
        return "this ablation blanked ground_truth and contexts, but an arm has no score (every sample failed)."
    return ("this run's wiring does not render ground_truth, so without the passages there is no reference's "
            "support to read, only noise.")


def analyse(store: Store, spec: AblationSpec, plan: Plan | None = None, *,
            sequential_cell: SequentialCell | None = None) -> AblationResult:
    """Classify every (metric, arm) cell of a finished ablation against the wiring table.

    `plan` (lib.diagnosis.ablation._plan; read again when None) says which arms were not
    re-judged because their prompts equal the baseline's. A sequential ablation's cells are
    decided by `sequential_cell` (lib.diagnosis.ablation._sequential_run's, which the engine hands in:
    that module reads this one's arms, so this one does not import it).
    """
    if spec.sequential and sequential_cell is None:
        raise ValueError("a sequential ablation is analysed with its sequential_cell")
    plan = plan or make_plan(store, spec)
    frame = store.ablation_results(spec.ablation_id)
    arms = collect(frame)
    probe = len(plan.probe_ids) if plan.repeats_stopped(frame) else 0
    cells: list[ArmVerdict] = []
    replay: list[ReplayCheck] = []
    failures: Counter = Counter()
    judges: dict[str, str | None] = {}
    for a in arms.values():
        failures.update(a.reasons)
    for m in spec.metrics:
        base = arms.get((m, "none"))
        if base is None:
            continue
        inst = store.instrument(spec.run_id, m, spec.suite)
        judges[m] = inst.judge_model
        _, band = band_of(spec, base)
        check = _replay_check(store, spec, m, base, band, inst.judge_model, repeats_exact=probe > 0)
        replay.append(check)
        floor = floor_scores(plan.floor_arm(m), m, plan.unchanged, base.scores, arms)
        for arm in plan.arms_for(m)[1:]:
            abl = arms.get((m, arm))
            if (m, arm) in plan.unchanged:
                cells.append(_unchanged_cell(spec, get_metric(m), arm, base, band, _renders(spec, m, inst),
                                             check.mismatch, len(plan.samples)))
            elif abl is not None and sequential_cell is not None and spec.sequential:
                cells.append(sequential_cell(spec, plan, get_metric(m), arm, base, abl, _renders(spec, m, inst),
                                             check.mismatch, probe, floor=floor))
            elif abl is not None:
                cells.append(cell_verdict(spec, get_metric(m), arm, base, abl, band, _renders(spec, m, inst),
                                         check.mismatch, probe, floor=floor))
        cells = _read_control(spec, plan, m, arms, floor, band, cells)
    cells = _joint_notes(cells)
    note = verdict_words.judge_note(spec.judge if spec.scorer is None else None, judges)
    calls = int(frame["calls"].sum()) if len(frame) else 0
    cached = int(frame["cached"].sum()) if len(frame) else 0
    summary = verdict_words.headline(cells, replay, note, repeats=spec.repeats, probe=probe)
    if spec.sequential:
        summary += verdict_words.sequential_words(cells, len(plan.samples))
    generator = store.run(spec.run_id).pipeline.get("generator")
    summary += verdict_words.reach_note(spec.judge if spec.scorer is None else None,
                                        isinstance(generator, dict) and generator.get("model") == DEMO_GENERATOR)
    skipped = _repeats_skipped(frame, spec.repeats) if spec.sequential else max(0, plan.total - len(frame))
    skipped = skipped if probe else 0
    return AblationResult(spec.ablation_id, spec, cells, replay, _four_readings(cells), summary, calls,
                          cached, dict(failures), note, judgings=len(frame), not_rejudged=plan.not_rejudged,
                          repeats_skipped=skipped, probe=probe, sequential=spec.sequential,
                          stopped_early=plan.total - len(frame) - skipped if spec.sequential else 0)


def _repeats_skipped(frame: pd.DataFrame, repeats: int) -> int:
    """Judgings of samples judged in a cell but not in every repeat (after identical repeats on the probe)."""
    if not len(frame):
        return 0
    per_cell = frame.groupby(["metric", "arm"]).agg(samples=("sample_id", "nunique"), rows=("sample_id", "size"))
    return int((per_cell["samples"] * repeats - per_cell["rows"]).sum())
