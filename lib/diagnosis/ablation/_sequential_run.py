"""Running a sequential ablation: judge chunk by chunk in the seeded order, look, and stop the arms decided.

Each chunk judges the next `CHUNK` samples of the order (lib.diagnosis.ablation._plan puts
`Plan.samples` in it) in every arm still open, and the baseline of each metric
that has one, in the judge's full concurrency; then every open arm is looked at
(lib.diagnosis.ablation._sequential). Which arms are open is read again from the stored
results at every look, so a killed ablation resumes with the same stops, and the
analysis (`sequential_cell`) replays the same looks to say where each arm stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from lib.core.metrics import MetricSpec, get_metric
from lib.core.profiles import expectation_for, tool_of
from lib.core.results import EXCLUDED, FAILED, OK
from lib.diagnosis.ablation import _verdict_words as verdict_words
from lib.diagnosis.ablation._analysis import ZERO_BAND, ArmResults, band_of, cell_verdict, collect, restrict
from lib.diagnosis.ablation._arms import CONTROL, tested_fields
from lib.diagnosis.ablation._epochs import recorded_reduction
from lib.diagnosis.ablation._floor import floor_scores
from lib.diagnosis.ablation._judging import Judging, Scorer, many_form, score_group, score_groups
from lib.diagnosis.ablation._plan import BASELINE, Plan, Unit
from lib.diagnosis.ablation._replay_samples import replay_decided, replay_deltas
from lib.diagnosis.ablation._sequential import CHUNK, EXHAUSTED, MOVE, Stop, cs_at_looks, first_stop, looks
from lib.diagnosis.ablation._verdicts import CellEvidence
from lib.diagnosis.stats import noise_band, sample_mean, sample_variance

if TYPE_CHECKING:
    from lib.diagnosis.ablation._result import ArmVerdict
    from lib.diagnosis.ablation._spec import AblationSpec
    from lib.judging.base import Judge
    from lib.store import Store

REPLAY_MIN = 100   # the baseline is judged on at least this many samples (or all): the replay check reads it


def _per_sample(arm: ArmResults, order: Sequence[str]) -> dict[str, np.ndarray]:
    """An arm's per-sample figures in the order: scored, mean, repeat variance, judgings, failed, excluded.

    Samples with the same number of repeats (below eight) get their means and variances a column at a time:
    the same additions in the same order as `sample_mean` and `sample_variance`, so bit for bit theirs, without a
    Python call per sample (a look reads every sample of two arms, and a running ablation looks once a chunk).
    """
    n = len(order)
    mean = np.full(n, np.nan)
    var = np.full(n, np.nan)
    got: list[list[float]] = []
    scored = np.zeros(n, dtype=bool)
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(order):
        x = arm.scores.get(s)
        scored[i] = x is not None
        got.append(x or [])
        if x:
            by_length.setdefault(len(x), []).append(i)
    for length, where in by_length.items():
        if length >= 8:   # numpy sums pairwise from eight on: its own mean and variance
            for i in where:
                mean[i] = sample_mean(got[i])
                var[i] = sample_variance(got[i])
            continue
        block = np.array([got[i] for i in where], dtype=float)   # [sample, repeat]
        m = block[:, 0].copy()
        for j in range(1, length):
            m += block[:, j]
        m /= length
        mean[where] = m
        if length >= 2:
            d = block - m[:, None]
            acc = d[:, 0] * d[:, 0]
            for j in range(1, length):
                acc += d[:, j] * d[:, j]
            var[where] = acc / (length - 1)
    rows = [arm.rows.get(s, ()) for s in order]
    units = np.array([len(r) for r in rows], dtype=int)
    failed = np.zeros(n, dtype=int)
    excluded = np.zeros(n, dtype=int)
    if arm.failed or arm.excluded:   # the arm's own counts of its rows: with none, every sample's are 0
        for i, r in enumerate(rows):
            for st, _ in r:
                if st == FAILED:
                    failed[i] += 1
                elif st == EXCLUDED:
                    excluded[i] += 1
    return {"scored": scored, "mean": mean, "var": var, "units": units, "failed": failed, "excluded": excluded}


def cell_stop(spec: AblationSpec, order: Sequence[str], mspec: MetricSpec, arm: str, base: ArmResults, abl: ArmResults,
              judged: int, since: int = 0, floor: Mapping[str, Sequence[float]] | None = None) -> Stop | None:
    """Where an arm stopped, replaying its looks after `since` over its first `judged` samples of `order`.

    The evidence at a look is what `lib.diagnosis.ablation._analysis.evidence` reads from the arms restricted to the
    samples judged by then (figures per sample computed once here), with the CS as its interval; the judge's
    floor (`floor`: the floor arm's scores per sample) is read over the same samples.
    """
    marks = looks(len(order))
    b, a = _per_sample(base, order), _per_sample(abl, order)
    f = np.array([sample_mean(floor[s]) if floor is not None and floor.get(s) else np.nan for s in order])
    paired = b["scored"] & a["scored"]
    before = np.concatenate(([0], np.cumsum(paired)))            # pairs among the first j samples
    deltas = (a["mean"] - b["mean"])[paired]
    fields = tested_fields(arm)
    expected = expectation_for(mspec.name, fields, tool_of(spec.scorer))

    def at(k: int) -> CellEvidence:
        n = int(before[k])
        cs = cs_at_looks(deltas[:n], [int(before[j]) for j in marks if j <= k])
        base_scored = b["scored"][:k]
        floored = base_scored & ~np.isnan(f[:k])
        var = b["var"][:k][~np.isnan(b["var"][:k])]
        band = None
        if spec.repeats >= 2 and len(var):
            band = noise_band(math.sqrt(float(np.mean(var)) / len(var)))
            band = 0.0 if band < ZERO_BAND else band
        return CellEvidence(mspec.name, fields, expected, None, n, float(np.mean(deltas[:n])) if n else None,
                            cs[0] if n else None, cs[1] if n else None, band,
                            float(np.mean(b["mean"][:k][base_scored])) if base_scored.any() else None,
                            int(b["failed"][:k].sum() + a["failed"][:k].sum()),
                            int(b["units"][:k].sum() + a["units"][:k].sum()),
                            nothing_to_judge=mspec.items_from in fields and not a["scored"][:k].any()
                            and a["excluded"][:k].sum() > 0,
                            min_effect=spec.min_effect, sequence=True,
                            floor=float(np.mean(f[:k][floored])) if floored.any() else None)

    return first_stop(len(order), judged, at, since=since)


def sequential_cell(spec: AblationSpec, plan: Plan, mspec: MetricSpec, arm: str, base: ArmResults, abl: ArmResults,
                    renders: frozenset[str] | None, mismatch: bool, probe: int = 0,
                    floor: Mapping[str, Sequence[float]] | None = None) -> ArmVerdict:
    """A sequential ablation's verdict on one arm: decided on the samples judged when it stopped.

    An arm a look decided reads its confidence sequence at that look, over the samples judged by then (the
    baseline and the noise band restricted to them); an arm judged on every sample reads the fixed-n interval,
    as judging all samples does. The sentence says how many samples were judged and why judging stopped.
    """
    order = [s.sample_id for s in plan.samples]
    stop = cell_stop(spec, order, mspec, arm, base, abl, len(order), floor=floor) or Stop(EXHAUSTED, len(order))
    if stop.early:
        ids = order[:stop.samples]
        b, a = restrict(base, ids), restrict(abl, ids)
        interval = (stop.lo, stop.hi) if stop.lo is not None and stop.hi is not None else None
        cell = cell_verdict(spec, mspec, arm, b, a, band_of(spec, b)[1], renders, mismatch, probe, interval=interval,
                            floor=floor)
    else:
        cell = cell_verdict(spec, mspec, arm, base, abl, band_of(spec, base)[1], renders, mismatch, probe,
                            floor=floor)
    words = verdict_words.stop_words(stop.reason, stop.samples, len(order))
    return replace(cell, stop=stop.reason, judged=stop.samples, sentence=f"{cell.sentence} {words}")


def open_arms(plan: Plan, arms: Mapping[tuple[str, str], ArmResults], stops: dict[tuple[str, str], Stop], start: int,
              k: int) -> None:
    """Look at every open arm after the chunk ending at sample k (`arms`: the stored results, collected);
    record the arms a look decided in `stops`."""
    spec = plan.spec
    order = [s.sample_id for s in plan.samples]
    for m in spec.metrics:
        base = arms.get((m, BASELINE))
        floor = floor_scores(plan.floor_arm(m), m, plan.unchanged, base.scores, arms) if base is not None else None
        for arm in plan.judged_arms(m)[1:]:
            if (m, arm) in stops or base is None or (m, arm) not in arms:
                continue
            st = cell_stop(spec, order, get_metric(m), arm, base, arms[(m, arm)], k, since=start, floor=floor)
            if st is not None:
                stops[(m, arm)] = st
        if (m, CONTROL) not in stops and plan.judged_control(m) and floor is not None and (m, CONTROL) in arms:
            st = control_stop(order, floor, arms[(m, CONTROL)], k, min_effect=spec.min_effect)
            if st is not None:
                stops[(m, CONTROL)] = st


def control_stop(order: Sequence[str], floor: Mapping[str, Sequence[float]], control: ArmResults, k: int, *,
                 min_effect: float) -> Stop | None:
    """The positive control stops once its rise above the floor is shown: the CS of (perfect support - floor)
    over the first k samples of the order, intersected over the looks so far, lies above the smallest effect.

    Only a rise stops it early (a judge that reads its inputs rises far, at the first look); a control that
    does not rise is judged while any arm is open, as the floor is, and read with the fixed-n interval.
    """
    ids = order[:k]
    paired = [s for s in ids if floor.get(s) and control.scores.get(s)]
    deltas = [sample_mean(control.scores[s]) - sample_mean(floor[s]) for s in paired]
    have = set(paired)
    counts = [sum(1 for s in order[:j] if s in have) for j in looks(len(order)) if j <= k]
    lo, hi = cs_at_looks(deltas, counts)
    return Stop(MOVE, k, lo, hi) if deltas and lo > min_effect else None


def chunk_units(plan: Plan, stops: dict[tuple[str, str], Stop], start: int, k: int, reps: Sequence[int],
                done: set, *, baseline_only: bool = False, replaying: Collection[str] | None = None) -> list[Unit]:
    """The judgings of samples [start, k) of the order: each open arm, and the baseline of its metric (and its
    floor arm while an arm is open: a null reads its headroom over the samples it was decided on)."""
    spec = plan.spec
    units = []
    for m in spec.metrics:
        open_ = [a for a in plan.judged_arms(m)[1:] if (m, a) not in stops]
        floor = plan.judged_floor(m)
        control = plan.judged_control(m) if (m, CONTROL) not in stops else None   # stopped once its rise is shown
        # the baseline also serves the replay check, judged until its own interval decides (replay_samples);
        # `replaying` names the metrics whose replay is undecided (None: the first REPLAY_MIN samples)
        replay = start < REPLAY_MIN if replaying is None else m in replaying
        arms = [BASELINE] if open_ or replay else []
        arms += [floor] if open_ and floor and not baseline_only else []
        arms += [control] if open_ and control and not baseline_only else []   # the positive control, beside it
        arms += [] if baseline_only else open_
        units += [Unit(m, arm, rep, s) for arm in arms for rep in reps for s in plan.samples[start:k]
                  if (m, arm, rep, s.sample_id) not in done]
    return units


def _remaining(plan: Plan, stops: dict, k: int, reps: int) -> int:
    left = len(plan.samples) - k
    def arms(m: str) -> int:
        open_ = len([a for a in plan.judged_arms(m)[1:] if (m, a) not in stops])
        extra = (1 if plan.judged_floor(m) else 0) + (1 if plan.judged_control(m) and (m, CONTROL) not in stops
                                                       else 0)
        return open_ + 1 + (extra if open_ else 0)   # the baseline; the floor and the positive control while open

    return sum(arms(m) * reps * left for m in plan.spec.metrics)


def run_sequential(store: Store, plan: Plan, judge: Judge | None, scorer: Scorer | None, done: set,
                   progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None) -> bool:
    """Judge chunk by chunk until every arm is decided or judged in full; True when should_stop stopped it."""
    spec = plan.spec
    aid = spec.ablation_id
    stops: dict[tuple[str, str], Stop] = {}
    reps: Sequence[int] = range(spec.repeats)
    judging = Judging(store, plan, judge, len(done), plan.total, progress) if judge is not None else None
    start = 0
    stored = {m: _stored_scores(store, spec, m) for m in spec.metrics}
    notes = store.run_notes(spec.run_id)
    reductions = {m: recorded_reduction(notes, m) for m in spec.metrics}   # a tool's epoch reducer, per metric
    replaying: set[str] | None = None
    for k in looks(len(plan.samples)):
        if start == 0 and plan.probes and judging is not None:   # the probe: its samples' baseline, every repeat
            probe = set(plan.probe_ids)
            units = [u for u in chunk_units(plan, stops, 0, k, reps, done, baseline_only=True)
                     if u[3].sample_id in probe]
            if judging.run(units, should_stop):
                return True
            if plan.repeats_stopped(store.ablation_results(aid)):
                reps = [0]
            done = store.ablation_done_keys(aid)
        units = chunk_units(plan, stops, start, k, reps, done, replaying=replaying)
        if judging is not None:
            if judging.run(units, should_stop):
                return True
        elif _score_chunk(store, plan, scorer, units, should_stop):  # type: ignore[arg-type]
            return True
        arms = collect(store.ablation_results(aid), labels=False)   # once a look: the arms' looks and the replay
        open_arms(plan, arms, stops, start, k)
        replaying = _replaying(plan, arms, stored, reductions, exact=len(reps) == 1 and spec.repeats > 1)
        start = k
        if judging is not None:
            judging.total = judging.count + _remaining(plan, stops, k, len(reps))
            store.set_ablation_total(aid, judging.total)
        if not chunk_units(plan, stops, start, len(plan.samples), reps, set(), replaying=replaying):
            break
    if judging is not None:   # every arm decided or judged in full: what was judged is the whole of it
        judging.total = judging.count
        store.set_ablation_total(aid, judging.total)
        judging.flush()
    else:
        store.set_ablation_total(aid, len(store.ablation_done_keys(aid)))
    return False


def _stored_scores(store: Store, spec: AblationSpec, metric: str) -> dict[str, float]:
    frame = store.sample_scores(spec.run_id, spec.suite, metric)
    return {r.sample_id: float(r.score) for r in frame.itertuples(index=False) if r.status == OK}


def _replaying(plan: Plan, arms: Mapping[tuple[str, str], ArmResults], stored: dict[str, dict[str, float]],
               reductions: Mapping[str, tuple[str, int] | None] | None = None, *, exact: bool = False) -> set[str]:
    """The metrics whose replay check is not yet decided by its own interval over the baseline judged so far
    (each sample's judgings reduced as the tool reduced its epochs, where it did; `exact`: the judge was shown
    to repeat itself exactly)."""
    spec = plan.spec
    out = set()
    for m in spec.metrics:
        base = arms.get((m, BASELINE))
        scores = base.scores if base is not None else {}
        band = band_of(spec, base)[1] if base is not None else None   # as the replay check reads it
        deltas = replay_deltas(stored[m], scores, (reductions or {}).get(m), repeats_exact=exact)
        if stored[m] and not replay_decided(deltas, min_effect=spec.min_effect, band=band,
                                            total=len(set(stored[m]) & {s.sample_id for s in plan.samples}),
                                            at_least=REPLAY_MIN):
            out.add(m)
    return out


def _score_chunk(store: Store, plan: Plan, scorer: Scorer, units: list[Unit],
                 should_stop: Callable[[], bool] | None) -> bool:
    groups: dict[tuple[str, str, int], list] = {}
    for m, arm, rep, s in units:
        groups.setdefault((m, arm, rep), []).append(s)
    if many_form(scorer) is not None:   # a tool that is slow to start: the chunk's arms and repeats in one call
        if should_stop and should_stop():
            return True
        store.add_ablation_batches(plan.spec.ablation_id, score_groups(scorer, groups, plan.pairs))
        return False
    scored: dict[tuple[str, str, int], list] = {}
    try:
        for (m, arm, rep), samples in groups.items():
            if should_stop and should_stop():
                return True
            scored[(m, arm, rep)] = score_group(scorer, m, arm, samples, plan.pairs)
    finally:   # one commit for the chunk; what was scored before a stop or a scorer's error is kept
        store.add_ablation_batches(plan.spec.ablation_id, scored)
    return False


__all__ = ["CHUNK", "REPLAY_MIN", "cell_stop", "run_sequential", "sequential_cell"]
