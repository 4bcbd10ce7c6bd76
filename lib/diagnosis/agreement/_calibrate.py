"""A gate for a new judge: judge a suite's calibration set with a candidate instrument and the current one,
paired over the same labelled samples, and say whether the candidate agrees with people worse.

The current instrument is the one the newest run recorded for the metric with a judge model, template and
binding of ours (a run imported from another tool records none, and is passed over). Both are asked through
the call cache with the same seed, so an identical candidate makes no new call and agrees exactly as the
current one does. The candidate fails when its headline agreement (accuracy of
binary verdicts, else 1 - mean error) is lower by more than the margin and the paired interval of the
difference lies wholly below zero (lib.diagnosis.agreement.is_worse).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from lib.core.errors import InputError
from lib.core.labels import content_key
from lib.core.prompts import prompt_hash
from lib.core.records import MAIN
from lib.core.samples import EvalSample
from lib.diagnosis.agreement._agreement import Comparison, Pairs, compare, instrument_text, pair_labels
from lib.judging.base import Judge
from lib.judging.harness import Instrument, score_samples
from lib.store import Store

MARGIN = 0.02   # default: a candidate may agree with people up to 2 points worse before the gate fails
SEED = 0


@dataclass(frozen=True)
class Contender:
    """An instrument to judge the calibration set with: the judge, its model name, template and binding."""

    judge: Judge
    model: str
    template: str
    binding: str

    @property
    def text(self) -> str:
        return instrument_text(self.model, prompt_hash(self.template), self.binding)


@dataclass(frozen=True)
class Calibration:
    """The result of `calibrate`.

    Attributes:
        metric: the metric.
        suite: the suite whose calibration set was judged.
        version: the calibration set's version.
        n_samples: labelled samples judged (a sample whose stored content no longer matches its labels is
            left out: its labels are of other text).
        n_left_out: labelled samples left out for that reason.
        comparison: the paired comparison (current first).
    """

    metric: str
    suite: str
    version: int
    n_samples: int
    n_left_out: int
    comparison: Comparison

    @property
    def worse(self) -> bool:
        return self.comparison.worse

    @property
    def sentence(self) -> str:
        c = self.comparison
        a, b, d = c.current, c.candidate, c.difference
        figure = a.headline_name
        verdict = (f"WORSE: lower by more than the {c.margin:.2f} margin, with the whole interval below zero"
                   if c.worse else f"not worse beyond the {c.margin:.2f} margin")
        bias = ""
        if a.bias.known and b.bias.known:
            bias = f"; bias {a.bias.value:+.2f} -> {b.bias.value:+.2f}"
        return (f"{self.metric}, calibration set v{self.version} of suite {self.suite!r} ({self.n_samples} labelled "
                f"samples): {figure} {a.headline.value:.2f} (current: {a.instrument}) -> {b.headline.value:.2f} "
                f"(candidate: {b.instrument}), difference {d.value:+.3f} [{d.low:+.3f}, {d.high:+.3f}]{bias}. "
                f"Candidate {verdict}.")


@dataclass(frozen=True)
class CurrentInstrument:
    """The instrument a candidate is gated against: the newest run's that can judge again.

    Attributes:
        run_id: the run that recorded it.
        judge_model: its judge model.
        template: its template text.
        binding: its binding (projected or replay).
    """

    run_id: str
    judge_model: str
    template: str
    binding: str


def current_instrument(store: Store, metric: str, suite: str = MAIN) -> CurrentInstrument:
    """The newest run's instrument for `metric` with a judge model, a template and a binding of ours.

    A run imported from another tool records none (its scores came from that tool's code), so a later run of that
    kind leaves the current instrument where it was.

    Raises:
        InputError: no run of the suite recorded one (one line naming the latest run and what scored it).
    """
    found = store.replayable_instrument(metric, suite)
    if found is None:
        latest = store.latest_scored(metric, suite)
        whose = (f"; the latest, {latest[0]}, was scored by {latest[1] or 'an instrument it did not record'}"
                 if latest else "")
        raise InputError(f"no run of suite {suite!r} recorded a {metric} instrument evaldrift can judge with "
                         f"(judge model, template and binding){whose}: record one scored by evaldrift "
                         "(python -m lib score) to gate a candidate against", field="instrument")
    run_id, inst = found
    return CurrentInstrument(run_id, str(inst.judge_model), str(inst.template), str(inst.binding))


def current_contender(store: Store, metric: str, judge: Judge, suite: str = MAIN) -> Contender:
    """The current instrument for `metric` (current_instrument), with `judge` (built for its model) to ask."""
    inst = current_instrument(store, metric, suite)
    return Contender(judge, inst.judge_model, inst.template, inst.binding)


def calibration_samples(store: Store, suite: str, metric: str, version: int) -> tuple[list[EvalSample], int]:
    """The labelled samples whose latest stored copy is what was labelled, and how many were left out.

    Raises:
        InputError: there are none (no labels of the metric, or none on the samples as stored now).
    """
    labels = store.labels(suite, metric=metric, version=version)
    ids = sorted(set(labels["sample_id"]))
    copies = store.latest_samples(suite, ids)
    wanted = labels.groupby("sample_id")["content"].agg(set).to_dict()
    keep = [copies[s] for s in ids if s in copies and content_key(metric, copies[s]) in wanted[s]]
    if not keep:
        raise InputError(f"suite {suite!r} has no {metric} labels on stored samples: label some first "
                         "(python -m lib labels import FILE)", field="labels")
    return keep, len(ids) - len(keep)


def _judge(samples: Sequence[EvalSample], labels: pd.DataFrame, metric: str, who: Contender,
           store: Store) -> Pairs:
    results = score_samples(samples, Instrument(metric, who.template, who.binding), who.judge, seed=SEED,
                            cache=store)
    by_id = {s.sample_id: s for s in samples}
    judgings = pd.DataFrame([{
        "run_id": "calibration", "sample_id": r.sample_id, "status": r.status, "score": r.score,
        "verdicts": r.verdicts_json(), "judge_model": who.model, "prompt_hash": prompt_hash(who.template),
        "binding": who.binding, "scorer": None, "question": by_id[r.sample_id].question,
        "answer": by_id[r.sample_id].answer, "contexts": list(by_id[r.sample_id].contexts),
        "ground_truth": by_id[r.sample_id].ground_truth} for r in results])
    return pair_labels(labels, judgings, metric)


def calibrate(store: Store, metric: str, candidate: Contender, current: Contender, *, suite: str = MAIN,
              margin: float = MARGIN, version: int | None = None) -> Calibration:
    """Judge the calibration set with both instruments and compare them, paired.

    Raises:
        InputError: the suite has no labels for the metric on samples the store holds as labelled.
    """
    version = store.calibration_version(suite) if version is None else version
    samples, left_out = calibration_samples(store, suite, metric, version)
    labels = store.labels(suite, metric=metric, version=version)
    pairs_current = _judge(samples, labels, metric, current, store)
    pairs_candidate = _judge(samples, labels, metric, candidate, store)
    store.flush_cache()
    comparison = compare(pairs_current, pairs_candidate, metric=metric, version=version, margin=margin,
                         names=(current.text, candidate.text))
    return Calibration(metric, suite, version, len(samples), left_out, comparison)
