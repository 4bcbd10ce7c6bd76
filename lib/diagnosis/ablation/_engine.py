"""Ablations: re-judge a run's samples with one artifact blanked, paired, with a noise band.

An ablation holds everything still (samples, order, judge, the run's own
template and binding) and changes one thing: the value of the blanked
artifact, in every sample. The unblanked baseline is re-judged alongside, k
times, for the judge's noise band; the blanked arm is repeated the same way.
Per-sample results are stored as they complete, so a killed ablation resumes
where it stopped, and a finished one is answered from the store, as long as the run is the copy it
measured: a run recorded again is judged again (lib.store.ablations).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import time
from collections.abc import Callable, Sequence

import pandas as pd

from lib.core.errors import InputError
from lib.core.records import MAIN
from lib.core.results import OK
from lib.diagnosis.ablation._analysis import analyse
from lib.diagnosis.ablation._judging import BATCH, Judging, Scorer, many_form, score_group, score_groups
from lib.diagnosis.ablation._plan import BASELINE, Plan
from lib.diagnosis.ablation._plan import plan as make_plan
from lib.diagnosis.ablation._result import AblationResult, ArmVerdict, FourReadings, ReplayCheck
from lib.diagnosis.ablation._sequential_run import run_sequential, sequential_cell
from lib.diagnosis.ablation._spec import AblationSpec
from lib.diagnosis.ablation._verdicts import (
    AS_EXPECTED,
    CLEAN,
    INCONCLUSIVE,
    INSENSITIVE,
    LEAK,
    REPLAY_MISMATCH,
    SENSITIVE,
)
from lib.judging.base import Judge
from lib.store import Store

__all__ = ["AS_EXPECTED", "CLEAN", "INCONCLUSIVE", "INSENSITIVE", "LEAK", "REPLAY_MISMATCH", "SENSITIVE",
           "AblationResult", "AblationSpec", "ArmVerdict", "FourReadings", "ReplayCheck", "analyse",
           "four_readings_spec", "matrix_spec", "per_sample_deltas", "recorded_judge", "run_ablation"]

__all__ += ["BATCH", "Scorer"]


def matrix_spec(run_id: str, metrics: Sequence[str], **kw: object) -> AblationSpec:
    """Every metric x each of ground_truth, question, contexts blanked alone."""
    return AblationSpec(run_id, tuple(metrics), ("ground_truth", "question", "contexts"), **kw)  # type: ignore[arg-type]


def four_readings_spec(run_id: str, **kw: object) -> AblationSpec:
    """Faithfulness as wired, without the reference, without the passages, without both.

    Judges every sample unless told otherwise: the four readings are levels read on the same samples, and a
    sequential ablation stops each arm at its own sample count.
    """
    kw.setdefault("sequential", False)
    return AblationSpec(run_id, ("faithfulness",), ("ground_truth", "contexts", "ground_truth+contexts"),
                        **kw)  # type: ignore[arg-type]


def recorded_judge(store: Store, run_id: str, metrics: Sequence[str], suite: str = MAIN) -> str:
    """The judge model that recorded these metrics of the run: an ablation's default judge.

    Raises InputError when a metric recorded no judge (unattributed scores) or
    the metrics were recorded by different judges: then the judge must be named.
    """
    models = {m: store.instrument(run_id, m, suite).judge_model for m in metrics}
    if None in models.values():
        missing = ", ".join(m for m, j in models.items() if j is None)
        raise InputError(f"run {run_id!r} recorded no judge model for {missing}; name the judge to ablate with "
                         f"(--judge, --model)", field="judge")
    if len(set(models.values())) > 1:
        which = ", ".join(f"{m}: {j}" for m, j in models.items())
        raise InputError(f"run {run_id!r} recorded different judges ({which}); ablate those metrics separately",
                         field="judge")
    return str(next(iter(models.values())))


def load_scorer(target: str) -> Scorer:
    """Import an external scorer given as 'module:function', or 'module:function@argument': then the function is
    called as function(argument, samples) (a tool's scorer and the file it reads, e.g. an Inspect log)."""
    module, _, name = target.partition(":")
    name, at, argument = name.partition("@")
    if not module or not name or (at and not argument):
        raise InputError(f"scorer must be 'module:function' or 'module:function@argument', got {target!r}",
                         field="scorer")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot load scorer {target!r}: {exc}", field="scorer") from None
    if not callable(fn):
        raise InputError(f"scorer {target!r} is not callable", field="scorer")
    return functools.partial(fn, argument) if at else fn


# -- running ------------------------------------------------------------------------
def run_ablation(store: Store, spec: AblationSpec, judge: Judge | None, *,
                 progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> AblationResult | None:
    """Run (or resume, or look up) an ablation and return its result.

    Args:
        store: the run store (results are written to it as they complete).
        spec: what to ablate.
        judge: the judge (None when spec.scorer drives an external harness).
        progress: called with (done, total) after each stored batch.
        should_stop: polled between samples; when it returns True the work
            stops with everything finished so far stored, and None is returned.

    Returns:
        The analysed result, or None if stopped early.
    """
    aid = spec.ablation_id
    copy = store.run_copy(spec.run_id)   # read before the samples: a copy recorded meanwhile is never mislabelled
    existing = store.ablation(aid)   # only an ablation of the copy stored now answers (Store.ablation)
    if existing and existing["status"] == "done" and existing["result"]:
        if progress:
            progress(int(existing["total"]), int(existing["total"]))
        return dataclasses.replace(AblationResult.from_dict(existing["result"]), from_store=True)  # type: ignore[arg-type]
    plan = make_plan(store, spec)
    # Refuse bad input before the ablation row exists, so it never shows as a stalled ablation.
    scorer = load_scorer(spec.scorer) if spec.scorer is not None else None
    if scorer is None and judge is None:
        raise InputError("an ablation needs a judge or a scorer", field="judge")
    store.start_ablation(aid, spec.run_id, spec.suite, spec.to_dict(), spec.judge, plan.total, copy=copy)
    done = store.ablation_done_keys(aid)
    if spec.sequential:
        stopped = run_sequential(store, plan, judge, scorer, done, progress, should_stop)
    elif scorer is not None:
        stopped = _run_scorer(store, plan, scorer, done, progress, should_stop)
    else:
        stopped = _run_judge(store, plan, judge, done, progress, should_stop)  # type: ignore[arg-type]
    if stopped:
        return None
    result = analyse(store, spec, plan, sequential_cell=sequential_cell)
    store.finish_ablation(aid, "done", result.to_dict())
    return result


def _run_judge(store: Store, plan: Plan, judge: Judge, done: set, progress, should_stop) -> bool:
    """Judge what is left: the probe first; when it shows identical repeats, every other judging once."""
    spec = plan.spec
    units = plan.units(done)
    probe = [u for u in units if u.arm == BASELINE and u.sample.sample_id in plan.probe_ids]
    judging = Judging(store, plan, judge, len(done), plan.total, progress)
    if judging.run(probe, should_stop):
        return True
    rest = units[len(probe):]
    if plan.repeats_stopped(store.ablation_results(spec.ablation_id)):
        rest = [u for u in rest if u.rep == 0]
        judging.total = judging.count + len(rest)
        store.set_ablation_total(spec.ablation_id, judging.total)
    return judging.run(rest, should_stop)


def _run_scorer(store: Store, plan: Plan, scorer: Scorer, done: set, progress, should_stop) -> bool:
    spec = plan.spec
    count = len(done)
    if many_form(scorer) is not None:   # a tool that is slow to start: every arm and repeat in one call
        groups = {(m, arm, rep): todo for m in spec.metrics for arm in plan.arms_for(m) for rep in range(spec.repeats)
                  if (todo := [s for s in plan.samples if (m, arm, rep, s.sample_id) not in done])}
        if should_stop and should_stop():
            return True
        scored = score_groups(scorer, groups, plan.pairs)
        store.add_ablation_batches(spec.ablation_id, scored)
        count += sum(map(len, scored.values()))
        if progress:
            progress(count, plan.total)
        return False
    # The scorer gets 50 samples a call; their results are stored BATCH at a time, several groups in one commit
    # (as the judge's are: a commit costs more than a fast scorer's 50 scores), or after a second, and what was
    # scored before a stop or a scorer's error is stored too. Progress is told after each commit.
    chunk = 50
    held: dict[tuple[str, str, int], list] = {}
    last = time.monotonic()

    def store_held() -> None:
        nonlocal count, last
        if held:
            store.add_ablation_batches(spec.ablation_id, held)
            count += sum(map(len, held.values()))
            held.clear()
            if progress:
                progress(count, plan.total)
        last = time.monotonic()

    try:
        for m in spec.metrics:
            for arm in plan.measured_arms(m):   # the floor arm too (lib.diagnosis.ablation_floor)
                for rep in range(spec.repeats):
                    todo = [s for s in plan.samples if (m, arm, rep, s.sample_id) not in done]
                    for i in range(0, len(todo), chunk):
                        if should_stop and should_stop():
                            return True
                        held.setdefault((m, arm, rep), []).extend(
                            score_group(scorer, m, arm, todo[i:i + chunk], plan.pairs))
                        if sum(map(len, held.values())) >= BATCH or time.monotonic() - last > 1.0:
                            store_held()
    finally:
        store_held()
    return False


def per_sample_deltas(store: Store, ablation_id: str, metric: str, arm: str):
    """Per-sample baseline, ablated score and delta (means over repeats), biggest moves first."""
    frame = store.ablation_results(ablation_id)
    part = frame[(frame["metric"] == metric) & (frame["status"] == OK)]
    means = part.groupby(["arm", "sample_id"])["score"].mean().unstack(0)
    if "none" not in means or arm not in means:  # an arm not re-judged (prompt unchanged) has no rows
        return pd.DataFrame(columns=["sample_id", "baseline", "ablated", "delta"])
    out = means[["none", arm]].dropna().rename(columns={"none": "baseline", arm: "ablated"})
    out["delta"] = out["ablated"] - out["baseline"]
    return out.reindex(out["delta"].abs().sort_values(ascending=False).index).reset_index()
