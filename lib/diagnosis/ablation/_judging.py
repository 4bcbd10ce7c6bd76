"""Judging an ablation's units: one sample of one arm in one repeat, in the judge's concurrency, stored in batches.

Shared by the ablation that judges every sample (lib.diagnosis.ablation) and the one that
stops arms once decided (lib.diagnosis.ablation._sequential_run): both hand lists of units
to `Judging.run` (a judge) or `score_group` (an external scorer) and store what
comes back as it completes, so a killed ablation resumes where it stopped.
"""

from __future__ import annotations

import functools
import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING

from lib.core.calls import JudgeReply
from lib.core.degenerate import exclusion_reason
from lib.core.errors import InputError
from lib.core.metrics import get_metric
from lib.core.results import EXCLUDED, FAILED, OK, SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.ablation._arms import arm_sample, blanked_fields
from lib.diagnosis.ablation._plan import Plan, Unit
from lib.judging.base import Judge, judge_endpoint
from lib.judging.harness import Repairs, build_request, repair_allowance, score_sample
from lib.judging.known import KnownCache

if TYPE_CHECKING:
    from lib.store import Store

BATCH = 200              # results per stored batch (a kill loses at most this many per arm)

Scorer = Callable[[Sequence[EvalSample]], Sequence[float | None]]


class Judging:
    """Judges units and stores their results in batches, reporting (done, total) after each stored batch."""

    def __init__(self, store: Store, plan: Plan, judge: Judge, done: int, total: int,
                 progress: Callable[[int, int], None] | None) -> None:
        self.store, self.plan, self.judge, self.progress = store, plan, judge, progress
        self.count, self.total = done, total
        self._blanked: dict[tuple[str, str, str], EvalSample] = {}
        self._buffer: dict[tuple[str, str, int], list[SampleResult]] = defaultdict(list)
        self._last_flush = time.monotonic()
        self._cache: KnownCache | None = None
        self._endpoint = judge_endpoint(judge)   # once, not once a judging (lib.judging.harness.score_sample)
        # Kept for the whole ablation, across its chunks: the unreadable replies (an identical request in another
        # arm or chunk gets the same failure without a call) and the repairs allowed, as its estimate counts them.
        self._unreadable: dict[str, JudgeReply] = {}
        # (metric, sample id) -> why the metric must not score it: a sample's, asked once, not once an arm and repeat
        self._excluded: dict[tuple[str, str], str | None] = {}
        self._repairs = Repairs(repair_allowance(len(judgings_to_call(plan, plan.units(
            store.ablation_done_keys(plan.spec.ablation_id))))))

    def flush(self) -> None:
        self.store.add_ablation_batches(self.plan.spec.ablation_id, dict(self._buffer))
        self._buffer.clear()
        self._last_flush = time.monotonic()
        if self.progress:
            self.progress(self.count, self.total)

    def work(self, unit: Unit) -> tuple[tuple[str, str, int], SampleResult]:
        m, arm, rep, s = unit
        reason = self._exclusion(m, s)  # the unblanked sample decides: blanking is the measurement
        if reason:
            return (m, arm, rep), SampleResult(s.sample_id, EXCLUDED, reason=reason)
        key = (m, arm, s.sample_id)   # the control arm's sample depends on the metric
        if key not in self._blanked:
            self._blanked[key] = self.plan.arm_sample(s, m, arm)
        return (m, arm, rep), score_sample(self._blanked[key], self.plan.instruments[m], self.judge,
                                           seed=self.plan.spec.seed + rep, cache=self._cache, screen=False,
                                           endpoint=self._endpoint)

    def _exclusion(self, metric: str, sample: EvalSample) -> str | None:
        key = (metric, sample.sample_id)
        if key not in self._excluded:
            self._excluded[key] = exclusion_reason(sample, metric)
        return self._excluded[key]

    def _known(self, units: list[Unit]) -> KnownCache:
        """The store's call cache, knowing which of the units' requests it holds: one query, not one per call."""
        endpoint, keys = self._endpoint, []
        for m, arm, rep, s in units:
            if self._exclusion(m, s):
                continue
            copy = self._blanked.setdefault((m, arm, s.sample_id), self.plan.arm_sample(s, m, arm))
            request, _ = build_request(copy, self.plan.instruments[m], self.judge.model, endpoint,
                                       self.plan.spec.seed + rep)
            if request is not None:
                keys.append(request.key)
        return KnownCache(self.store, keys, unreadable=self._unreadable, repairs=self._repairs)

    def collect(self, key: tuple[str, str, int], r: SampleResult) -> None:
        self._buffer[key].append(r)
        self.count += 1
        if sum(map(len, self._buffer.values())) >= BATCH or time.monotonic() - self._last_flush > 1.0:
            self.flush()

    def run(self, units: list[Unit], should_stop: Callable[[], bool] | None) -> bool:
        """Judge units (in the judge's concurrency), then store the rest; True when should_stop stopped the work."""
        self._cache = self._known(units) if self.judge.cacheable else None
        stopped = judge_units(units, self.judge, self.work, self.collect, should_stop)
        self.flush()
        return stopped


def judgings_to_call(plan: Plan, units: Sequence[Unit]) -> list[Unit]:
    """The units that need the judge: not a degenerate sample, not an arm blanking what the items come from."""
    excluded: dict[tuple[str, str], bool] = {}   # per (metric, sample): the same for every arm and repeat
    keep = []
    for u in units:
        key = (u[0], u[3].sample_id)
        if key not in excluded:
            excluded[key] = bool(exclusion_reason(u[3], u[0]))
        if not excluded[key] and get_metric(u[0]).items_from not in blanked_fields(u[1]):
            keep.append(u)
    return keep


def judge_units(units: list[Unit], judge: Judge, work, collect, should_stop) -> bool:
    """Judge units (in the judge's concurrency); True when should_stop stopped the work."""
    width = max(1, judge.concurrency)
    if width == 1 or len(units) < 2:
        for unit in units:
            if should_stop and should_stop():
                return True
            collect(*work(unit))
        return False
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="ablation-judge") as pool:
        futures = [pool.submit(work, u) for u in units]
        for fut in as_completed(futures):
            collect(*fut.result())
            if should_stop and should_stop():
                for f in futures:
                    f.cancel()
                return True
    return False


def score_group(scorer: Scorer, metric: str, arm: str, originals: Sequence[EvalSample],
                pairs: Mapping[str, EvalSample] | None = None) -> list[SampleResult]:
    """An external scorer's results for samples of one arm: excluded ones first, then one call for the rest.

    A missing, NaN or out-of-range score is a failure with its reason, never a 0 or a 1; a scorer may give
    text instead of a score: its reason for not scoring the sample (a tool that refuses a blanked field).
    `pairs`: each sample's swap partner, for a swap arm (lib.diagnosis.ablation._arms).
    """
    results, part = _excluded_and_blanked(metric, arm, originals, pairs)
    return results + _read_scores(part, list(scorer(part)) if part else [])


Group = tuple[str, str, int]   # (metric, arm, repeat)


def many_form(scorer: Scorer) -> Callable[[list[list[EvalSample]]], list[Sequence[float | str | None]]] | None:
    """The scorer's form that scores several lists of samples in one call (its function's `many`), or None.

    A tool that takes seconds to start (Inspect, promptfoo) scores every arm and repeat of an ablation's chunk
    in one start this way; `module:function@argument` hands the argument to `many` too.
    """
    if isinstance(scorer, functools.partial):
        many = getattr(scorer.func, "many", None)
        return functools.partial(many, *scorer.args) if many is not None else None
    return getattr(scorer, "many", None)


def score_groups(scorer: Scorer, groups: Mapping[Group, Sequence[EvalSample]],
                 pairs: Mapping[str, EvalSample] | None = None) -> dict[Group, list[SampleResult]]:
    """score_group for several (metric, arm, repeat) groups: one call when the scorer has a `many` form."""
    many = many_form(scorer)
    if many is None:
        return {key: score_group(scorer, key[0], key[1], samples, pairs) for key, samples in groups.items()}
    split = {key: _excluded_and_blanked(key[0], key[1], samples, pairs) for key, samples in groups.items()}
    asked = [key for key, (_, part) in split.items() if part]
    answers = list(many([split[key][1] for key in asked])) if asked else []
    if len(answers) != len(asked):
        raise InputError(f"scorer returned {len(answers)} lists of scores for {len(asked)} groups", field="scorer")
    by_key = dict(zip(asked, answers, strict=True))
    return {key: excluded + _read_scores(part, list(by_key.get(key, []))) for key, (excluded, part) in split.items()}


def _excluded_and_blanked(metric: str, arm: str, originals: Sequence[EvalSample],
                          pairs: Mapping[str, EvalSample] | None = None
                          ) -> tuple[list[SampleResult], list[EvalSample]]:
    results = [SampleResult(s.sample_id, EXCLUDED, reason=exclusion_reason(s, metric) or "")
               for s in originals if exclusion_reason(s, metric)]
    return results, [arm_sample(s, metric, arm, pairs) for s in originals if not exclusion_reason(s, metric)]


def _read_scores(part: Sequence[EvalSample], scores: list[float | str | None]) -> list[SampleResult]:
    results: list[SampleResult] = []
    if len(scores) != len(part):
        raise InputError(f"scorer returned {len(scores)} scores for {len(part)} samples", field="scorer")
    for s, v in zip(part, scores, strict=True):
        if isinstance(v, str):   # the scorer's own reason for giving no score (the tool refused the sample)
            results.append(SampleResult(s.sample_id, FAILED, reason=f"scorer gave no score: {v[:300]}"))
        elif v is None or (isinstance(v, float) and math.isnan(v)):
            results.append(SampleResult(s.sample_id, FAILED, reason="scorer returned no score"))
        elif not 0.0 <= float(v) <= 1.0:
            results.append(SampleResult(s.sample_id, FAILED, reason=f"scorer returned {v!r}"))
        else:
            results.append(SampleResult(s.sample_id, OK, float(v)))
    return results
