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
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from lib.core.metrics import MetricSpec, get_metric
from lib.core.profiles import expectation_for, tool_of
from lib.core.results import EXCLUDED, FAILED
from lib.core.samples import arm_fields
from lib.diagnosis.ablation import _verdict_words as verdict_words
from lib.diagnosis.ablation._analysis import ZERO_BAND, ArmResults, band_of, cell_verdict, collect, restrict
from lib.diagnosis.ablation._judging import Judging, Scorer, many_form, score_group, score_groups
from lib.diagnosis.ablation._plan import BASELINE, Plan, Unit
from lib.diagnosis.ablation._sequential import CHUNK, EXHAUSTED, Stop, cs_at_looks, first_stop, looks
from lib.diagnosis.ablation._verdicts import CellEvidence
from lib.diagnosis.stats import noise_band

if TYPE_CHECKING:
    from lib.diagnosis.ablation._result import ArmVerdict
    from lib.diagnosis.ablation._spec import AblationSpec
    from lib.judging.base import Judge
    from lib.store import Store

REPLAY_MIN = 100   # the baseline is judged on at least this many samples (or all): the replay check reads it


def _per_sample(arm: ArmResults, order: Sequence[str]) -> dict[str, np.ndarray]:
    """An arm's per-sample figures in the order: scored, mean, repeat variance, judgings, failed, excluded."""
    scored = np.array([s in arm.scores for s in order])
    mean = np.full(len(order), np.nan)
    var = np.full(len(order), np.nan)
    for i, s in enumerate(order):   # plain sums: numpy's per-call cost dominates lists of 1-20 repeats
        x = arm.scores.get(s)
        if x:
            mean[i] = m = sum(x) / len(x)
            if len(x) >= 2:
                var[i] = sum((v - m) ** 2 for v in x) / (len(x) - 1)
    rows = [arm.rows.get(s, []) for s in order]
    units = np.array([len(r) for r in rows])
    failed = np.array([sum(st == FAILED for st, _ in r) for r in rows])
    excluded = np.array([sum(st == EXCLUDED for st, _ in r) for r in rows])
    return {"scored": scored, "mean": mean, "var": var, "units": units, "failed": failed, "excluded": excluded}


def cell_stop(spec: AblationSpec, order: Sequence[str], mspec: MetricSpec, arm: str, base: ArmResults, abl: ArmResults,
              judged: int, since: int = 0) -> Stop | None:
    """Where an arm stopped, replaying its looks after `since` over its first `judged` samples of `order`.

    The evidence at a look is what `lib.diagnosis.ablation._analysis.evidence` reads from the arms restricted to the
    samples judged by then (figures per sample computed once here), with the CS as its interval.
    """
    marks = looks(len(order))
    b, a = _per_sample(base, order), _per_sample(abl, order)
    paired = b["scored"] & a["scored"]
    before = np.concatenate(([0], np.cumsum(paired)))            # pairs among the first j samples
    deltas = (a["mean"] - b["mean"])[paired]
    fields = arm_fields(arm)
    expected = expectation_for(mspec.name, fields, tool_of(spec.scorer))

    def at(k: int) -> CellEvidence:
        n = int(before[k])
        cs = cs_at_looks(deltas[:n], [int(before[j]) for j in marks if j <= k])
        base_scored = b["scored"][:k]
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
                            min_effect=spec.min_effect, sequence=True)

    return first_stop(len(order), judged, at, since=since)


def sequential_cell(spec: AblationSpec, plan: Plan, mspec: MetricSpec, arm: str, base: ArmResults, abl: ArmResults,
                    renders: frozenset[str] | None, mismatch: bool, probe: int = 0) -> ArmVerdict:
    """A sequential ablation's verdict on one arm: decided on the samples judged when it stopped.

    An arm a look decided reads its confidence sequence at that look, over the samples judged by then (the
    baseline and the noise band restricted to them); an arm judged on every sample reads the fixed-n interval,
    as judging all samples does. The sentence says how many samples were judged and why judging stopped.
    """
    order = [s.sample_id for s in plan.samples]
    stop = cell_stop(spec, order, mspec, arm, base, abl, len(order)) or Stop(EXHAUSTED, len(order))
    if stop.early:
        ids = order[:stop.samples]
        b, a = restrict(base, ids), restrict(abl, ids)
        interval = (stop.lo, stop.hi) if stop.lo is not None and stop.hi is not None else None
        cell = cell_verdict(spec, mspec, arm, b, a, band_of(spec, b)[1], renders, mismatch, probe, interval=interval)
    else:
        cell = cell_verdict(spec, mspec, arm, base, abl, band_of(spec, base)[1], renders, mismatch, probe)
    words = verdict_words.stop_words(stop.reason, stop.samples, len(order))
    return replace(cell, stop=stop.reason, judged=stop.samples, sentence=f"{cell.sentence} {words}")


def open_arms(plan: Plan, frame, stops: dict[tuple[str, str], Stop], start: int, k: int) -> None:
    """Look at every open arm after the chunk ending at sample k; record the arms a look decided in `stops`."""
    spec = plan.spec
    order = [s.sample_id for s in plan.samples]
    arms = collect(frame)
    for m in spec.metrics:
        base = arms.get((m, BASELINE))
        for arm in plan.judged_arms(m)[1:]:
            if (m, arm) in stops or base is None or (m, arm) not in arms:
                continue
            st = cell_stop(spec, order, get_metric(m), arm, base, arms[(m, arm)], k, since=start)
            if st is not None:
                stops[(m, arm)] = st


def chunk_units(plan: Plan, stops: dict[tuple[str, str], Stop], start: int, k: int, reps: Sequence[int],
                done: set, *, baseline_only: bool = False) -> list[Unit]:
    """The judgings of samples [start, k) of the order: each open arm, and the baseline of its metric."""
    spec = plan.spec
    units = []
    for m in spec.metrics:
        open_ = [a for a in plan.judged_arms(m)[1:] if (m, a) not in stops]
        arms = [BASELINE] if open_ or start < REPLAY_MIN else []
        arms += [] if baseline_only else open_
        units += [Unit(m, arm, rep, s) for arm in arms for rep in reps for s in plan.samples[start:k]
                  if (m, arm, rep, s.sample_id) not in done]
    return units


def _remaining(plan: Plan, stops: dict, k: int, reps: int) -> int:
    left = len(plan.samples) - k
    return sum((len([a for a in plan.judged_arms(m)[1:] if (m, a) not in stops]) + 1) * reps * left
               for m in plan.spec.metrics)


def run_sequential(store: Store, plan: Plan, judge: Judge | None, scorer: Scorer | None, done: set,
                   progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None) -> bool:
    """Judge chunk by chunk until every arm is decided or judged in full; True when should_stop stopped it."""
    spec = plan.spec
    aid = spec.ablation_id
    stops: dict[tuple[str, str], Stop] = {}
    reps: Sequence[int] = range(spec.repeats)
    judging = Judging(store, plan, judge, len(done), plan.total, progress) if judge is not None else None
    start = 0
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
        units = chunk_units(plan, stops, start, k, reps, done)
        if judging is not None:
            if judging.run(units, should_stop):
                return True
        elif _score_chunk(store, plan, scorer, units, should_stop):  # type: ignore[arg-type]
            return True
        open_arms(plan, store.ablation_results(aid), stops, start, k)
        start = k
        if judging is not None:
            judging.total = judging.count + _remaining(plan, stops, k, len(reps))
            store.set_ablation_total(aid, judging.total)
        if not chunk_units(plan, stops, start, len(plan.samples), reps, set()):
            break
    if judging is not None:   # every arm decided or judged in full: what was judged is the whole of it
        judging.total = judging.count
        store.set_ablation_total(aid, judging.total)
        judging.flush()
    else:
        store.set_ablation_total(aid, len(store.ablation_done_keys(aid)))
    return False


def _score_chunk(store: Store, plan: Plan, scorer: Scorer, units: list[Unit],
                 should_stop: Callable[[], bool] | None) -> bool:
    groups: dict[tuple[str, str, int], list] = {}
    for m, arm, rep, s in units:
        groups.setdefault((m, arm, rep), []).append(s)
    if many_form(scorer) is not None:   # a tool that is slow to start: the chunk's arms and repeats in one call
        if should_stop and should_stop():
            return True
        for (m, arm, rep), results in score_groups(scorer, groups).items():
            store.add_ablation_results(plan.spec.ablation_id, m, arm, rep, results)
        return False
    for (m, arm, rep), samples in groups.items():
        if should_stop and should_stop():
            return True
        store.add_ablation_results(plan.spec.ablation_id, m, arm, rep, score_group(scorer, m, arm, samples))
    return False


__all__ = ["CHUNK", "REPLAY_MIN", "cell_stop", "run_sequential", "sequential_cell"]
