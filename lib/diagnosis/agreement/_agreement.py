"""Is the judge right? Agreement of each instrument with people's labels, with intervals over samples.

People's labels (lib.store.labels) are paired with the judge's stored verdicts on the same samples: an item
label with the judge's verdict on that item, a sample label with the judge's sample score. A label pairs only
with a judging of the content the labeller saw (`lib.core.labels.content_key`). Several people's current
labels of one item are averaged (a binary tie is left out). From the pairs, per instrument (judge model,
prompt hash, binding, scoring library):

- accuracy and Cohen's kappa of binary verdicts (item verdicts; a sample's score >= 0.5 for a binary sample
  label),
- AUC of the judge's sample score against binary sample labels,
- bias (judge minus people) and mean error of sample scores (a sample whose items are all labelled has the
  people's score the metric's own reduction gives),

each with a 95% bootstrap interval over samples. The headline is accuracy where there are binary verdicts,
else 1 - mean error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.core.labels import BINARY, content_key
from lib.core.metrics import get_metric, items_of, sample_score
from lib.core.results import OK
from lib.core.samples import EvalSample
from lib.diagnosis.agreement import _stats as st
from lib.diagnosis.agreement._active import active_mean
from lib.diagnosis.agreement._design import SampleDraw, Withheld, choose, draws_of, sample_draws
from lib.diagnosis.agreement._ppi import MIN_LABELS, Corrected, ppi_mean
from lib.diagnosis.agreement._stats import NONE, Estimate
from lib.store import Store
from lib.store import history as hs


def instrument_text(judge_model: object, prompt_hash: object, binding: object, scorer: object = None) -> str:
    """An instrument as one line: 'offline-lexical-v2 · prompt 1a2b3c4d5e6f · projected'."""
    parts = [str(judge_model or "unknown judge")]
    if prompt_hash:
        parts.append(f"prompt {prompt_hash}")
    if binding:
        parts.append(str(binding))
    if scorer and isinstance(scorer, str):
        parts.append(scorer)
    return " · ".join(parts)


ITEM_COLUMNS = ["run_id", "sample_id", "instrument", "judge", "people"]
SAMPLE_COLUMNS = ["run_id", "sample_id", "instrument", "judge", "people", "binary"]


@dataclass(frozen=True)
class Pairs:
    """Labels paired with judgings.

    Attributes:
        items: one row per (judging, labelled item): run_id, sample_id, instrument, judge (bool), people (bool).
        samples: one row per (judging, labelled sample): run_id, sample_id, instrument, judge (score),
            people (score), binary (True when the people's label is a binary sample label).
        n_labels: current labels the pairs drew on.
        draws: how each labelled sample was drawn (lib.diagnosis.agreement._design), by sample id.
    """

    items: pd.DataFrame
    samples: pd.DataFrame
    n_labels: int
    draws: dict[str, SampleDraw] = field(default_factory=dict)

    def where(self, column: str, values: Sequence[object]) -> Pairs:
        keep = set(values)
        return Pairs(self.items[self.items[column].isin(keep)], self.samples[self.samples[column].isin(keep)],
                     self.n_labels, self.draws)

    @classmethod
    def none(cls, n_labels: int) -> Pairs:
        """No pairs (no judgings, or no labels)."""
        return cls(pd.DataFrame(columns=ITEM_COLUMNS), pd.DataFrame(columns=SAMPLE_COLUMNS), n_labels)

    @property
    def sample_ids(self) -> set[str]:
        return set(self.items["sample_id"].unique()) | set(self.samples["sample_id"].unique())


@dataclass(frozen=True)
class Agreement:
    """How far one instrument agrees with people on one metric.

    Attributes:
        metric: the metric.
        instrument: the instrument as text (instrument_text), or a name the caller gave.
        version: the calibration set's version the labels were read at.
        n_samples: labelled samples with at least one pair.
        n_runs: runs the judgings came from.
        n_items: item pairs (verdicts compared).
        accuracy: share of binary verdicts agreeing with people.
        kappa: Cohen's kappa of binary verdicts.
        auc: AUC of the judge's sample score against binary sample labels.
        bias: mean judge minus people, sample scores.
        mean_error: mean |judge - people|, sample scores.
    """

    metric: str
    instrument: str
    version: int
    n_samples: int
    n_runs: int
    n_items: int
    accuracy: Estimate = NONE
    kappa: Estimate = NONE
    auc: Estimate = NONE
    bias: Estimate = NONE
    mean_error: Estimate = NONE

    @property
    def headline(self) -> Estimate:
        """Accuracy of binary verdicts where there are any, else 1 - mean error."""
        if self.accuracy.known:
            return self.accuracy
        e = self.mean_error
        return Estimate(1 - e.value, 1 - e.high, 1 - e.low) if e.known else NONE

    @property
    def headline_name(self) -> str:
        return "accuracy" if self.accuracy.known else "1 - mean error"


def _consensus(labels: pd.DataFrame) -> pd.DataFrame:
    """Per (sample, item, content): the mean of the people's current labels, and whether all were binary."""
    if labels.empty:
        return pd.DataFrame(columns=["sample_id", "item", "content", "value", "binary"])
    frame = labels.assign(item=labels["item"].astype("Int64").fillna(0), is_binary=labels["kind"] == BINARY)
    out = frame.groupby(["sample_id", "item", "content"], as_index=False).agg(
        value=("value", "mean"), binary=("is_binary", "all"))
    out["item"] = out["item"].astype(int)   # 0: the whole sample
    return out


def pair_labels(labels: pd.DataFrame, judgings: pd.DataFrame, metric: str,
                copies: pd.DataFrame | None = None) -> Pairs:
    """Pair current labels (Store.labels) with judgings.

    `judgings` holds the columns of Store.labelled_judgings, and either `copies` (its second frame: each
    judged copy of a sample's text) or the sample's text in its own columns (question, answer, contexts,
    ground_truth) with `verdicts` as JSON. Judgings not scored (failed, excluded) pair with nothing: a failure
    is not a verdict.
    """
    spec = get_metric(metric)
    if judgings.empty:
        return Pairs.none(len(labels))
    if copies is None:
        judgings, copies = _as_copies(judgings)
    marks_of: dict[tuple[str, str], dict[int, tuple[float, bool]]] = {}
    for r in _consensus(labels).itertuples(index=False):
        marks_of.setdefault((r.sample_id, r.content), {})[int(r.item)] = (float(r.value), bool(r.binary))
    labelled_ids = {sid for sid, _ in marks_of}
    ok = judgings[(judgings["status"] == OK) & judgings["sample_id"].isin(labelled_ids)]
    # Each copy of a sample's text once: the labels on its content, and the people's score of it.
    people_items: list[tuple[object, int, bool]] = []
    whole: dict[object, tuple[float, bool]] = {}
    for c in copies[copies["copy"].isin(set(ok["copy"]))].itertuples(index=False):
        sample = EvalSample(c.sample_id, c.question, c.answer, tuple(c.contexts), c.ground_truth)
        marks = marks_of.get((c.sample_id, content_key(metric, sample)))
        if not marks:
            continue
        people_items += [(c.copy, item, value > 0.5) for item, (value, binary) in sorted(marks.items())
                         if item > 0 and binary and value != 0.5]
        found = _people_sample_score(spec, sample, marks)
        if found is not None:
            whole[c.copy] = found
    keys = list(zip(ok["judge_model"], ok["prompt_hash"], ok["binding"], ok["scorer"], strict=True))
    names = {k: instrument_text(*k) for k in set(keys)}
    ok = ok.assign(instrument=pd.Series([names[k] for k in keys], index=ok.index, dtype=object))
    return Pairs(_item_pairs(ok, pd.DataFrame(people_items, columns=["copy", "item", "people"])),
                 _sample_pairs(ok, whole), len(labels), sample_draws(labels))


def _as_copies(judgings: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgings with the sample's text and JSON verdicts on each row, as the store's (judgings, copies) pair."""
    keys = [(sid, q, a, tuple(c), g) for sid, q, a, c, g in zip(
        judgings["sample_id"], judgings["question"], judgings["answer"], judgings["contexts"],
        judgings["ground_truth"], strict=True)]
    ok = (judgings["status"] == OK).to_numpy()
    verdicts = [[bool(v["label"]) for v in json.loads(text)] if scored and text else []
                for text, scored in zip(judgings["verdicts"], ok, strict=True)]
    out = judgings.assign(copy=pd.Series(keys, index=judgings.index, dtype=object),
                          verdict_labels=pd.Series(verdicts, index=judgings.index, dtype=object))
    first: dict[tuple, int] = {}   # one row per distinct copy: where it first appears
    for row, key in enumerate(keys):
        first.setdefault(key, row)
    rows = judgings.iloc[sorted(first.values())]
    copies = pd.DataFrame({"copy": pd.Series(list(first), dtype=object), "sample_id": rows["sample_id"].to_numpy(),
                           "question": rows["question"].to_numpy(), "answer": rows["answer"].to_numpy(),
                           "contexts": rows["contexts"].to_numpy(), "ground_truth": rows["ground_truth"].to_numpy()})
    return out, copies


def _item_pairs(ok: pd.DataFrame, people: pd.DataFrame) -> pd.DataFrame:
    """One row per (judging, labelled item): the judge's verdict on the item against the people's."""
    judged = ok[ok["copy"].isin(set(people["copy"]))]
    verdicts = [list(v) if v is not None else [] for v in judged["verdict_labels"]]
    counts = np.fromiter((len(v) for v in verdicts), dtype=int, count=len(verdicts))
    flat = judged.loc[judged.index.repeat(counts), ["run_id", "sample_id", "instrument", "copy"]]
    flat = flat.assign(item=np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts, counts) + 1,
                       judge=np.fromiter((x for v in verdicts for x in v), dtype=bool, count=int(counts.sum())))
    paired = flat.merge(people.astype({"item": int}), on=["copy", "item"], how="inner", sort=False)
    return paired[ITEM_COLUMNS].reset_index(drop=True)


def _sample_pairs(ok: pd.DataFrame, whole: dict[object, tuple[float, bool]]) -> pd.DataFrame:
    """One row per judging of a sample whose people's score is known: the judge's score against it."""
    scored = ok.assign(judge=pd.to_numeric(ok["score"], errors="coerce").astype(float))
    scored = scored[scored["copy"].isin(set(whole)) & scored["judge"].notna()]
    found = [whole[c] for c in scored["copy"]]
    return pd.DataFrame({
        "run_id": scored["run_id"].to_numpy(), "sample_id": scored["sample_id"].to_numpy(),
        "instrument": scored["instrument"].to_numpy(), "judge": scored["judge"].to_numpy(float),
        "people": np.array([f[0] for f in found], dtype=float), "binary": np.array([f[1] for f in found], dtype=bool),
    }, columns=SAMPLE_COLUMNS)


def _people_sample_score(spec, sample: EvalSample, labelled: dict[int, tuple[float, bool]]
                         ) -> tuple[float, bool] | None:
    """The people's score of a sample: a whole-sample label, else the metric's reduction of all its items."""
    if 0 in labelled:
        value, binary = labelled[0]
        if binary and value == 0.5:
            return None
        return (round(value) * 1.0 if binary else value, binary)
    n = len(items_of(spec, spec.project(sample)))
    marks = [labelled.get(k) for k in range(1, n + 1)]
    if n and all(m is not None and m[1] and m[0] != 0.5 for m in marks):
        return (sample_score(spec, [m[0] > 0.5 for m in marks]), False)   # type: ignore[index]
    return None


def agreement(pairs: Pairs, *, metric: str, instrument: str, version: int, seed: int = 0,
              reps: int = st.BOOTSTRAP) -> Agreement:
    """The agreement figures of a set of pairs, each with its bootstrap interval over samples."""
    items, samples = pairs.items, pairs.samples
    binary_samples = samples[samples["binary"].astype(bool)]
    verdict_j = np.concatenate([items["judge"].to_numpy(bool), binary_samples["judge"].to_numpy(float) >= 0.5])
    verdict_p = np.concatenate([items["people"].to_numpy(bool), binary_samples["people"].to_numpy(float) > 0.5])
    verdict_c = np.concatenate([items["sample_id"].to_numpy(str), binary_samples["sample_id"].to_numpy(str)])
    all_ids = sorted(pairs.sample_ids)
    draws, _ = st.replicate_weights(all_ids, reps=reps, seed=seed)
    sorted_ids = np.array(all_ids, dtype=object)

    def index(ids: np.ndarray) -> np.ndarray:
        """Each id's place in all_ids (sorted: a binary search, not a dict look-up per row)."""
        return np.searchsorted(sorted_ids, ids.astype(object)).astype(int)

    def est(stat, n: int, ids: np.ndarray) -> Estimate:
        if n == 0:
            return NONE
        point = stat(np.ones(n))
        return st.interval(st.boot(stat, n, draws, index(ids)), point)

    def fast(point: float, replicates: np.ndarray, n: int) -> Estimate:
        return st.interval(replicates, point) if n else NONE

    agree = (verdict_j == verdict_p).astype(float)
    vi = index(verdict_c)
    accuracy = fast(float(agree.mean()) if len(agree) else math.nan, st.boot_mean(agree, draws, vi), len(agree))
    kappa = fast(st.cohen_kappa(verdict_j, verdict_p), st.boot_kappa(verdict_j, verdict_p, draws, vi), len(agree))
    bj, bp = binary_samples["judge"].to_numpy(float), binary_samples["people"].to_numpy(float) > 0.5
    auc = est(lambda w: st.auc(bj, bp, w), len(bj), binary_samples["sample_id"].to_numpy(str))
    diff = samples["judge"].to_numpy(float) - samples["people"].to_numpy(float)
    si = index(samples["sample_id"].to_numpy(str))
    bias = fast(st.bias(diff, np.zeros(len(diff))), st.boot_mean(diff, draws, si), len(diff))
    mean_error = fast(st.mean_error(diff, np.zeros(len(diff))), st.boot_mean(np.abs(diff), draws, si), len(diff))
    runs = set(items["run_id"].unique()) | set(samples["run_id"].unique())   # not a Python loop over every pair
    return Agreement(metric=metric, instrument=instrument, version=version, n_samples=len(all_ids),
                     n_runs=len(runs), n_items=len(items), accuracy=accuracy, kappa=kappa, auc=auc, bias=bias,
                     mean_error=mean_error)


def labelled_pairs(store: Store, suite: str, metric: str, *, version: int | None = None,
                   run_ids: Sequence[str] | None = None) -> tuple[Pairs, int]:
    """The pairs of a suite's calibration set (at `version`, default the current one) with stored judgings.

    Every run's pairs (`run_ids` None) are kept per data version on the store: an incident load asks for them
    twice (the trend's agreement, then the correction at its steps), a page once more, each a read of every
    labelled judging (0.5 CPU s on the demo).
    """
    version = store.calibration_version(suite) if version is None else version
    memo: dict = store.__dict__.get("_pairs_memo", {})
    key = (suite, metric, version, store.data_version()) if run_ids is None else None
    if key is not None and key in memo:
        return memo[key], version
    labels = store.labels(suite, metric=metric, version=version)
    if labels.empty:
        return Pairs.none(0), version
    judgings, copies = store.labelled_judgings(suite, metric, sorted(set(labels["sample_id"])), run_ids)
    pairs = pair_labels(labels, judgings, metric, copies)
    if key is not None:   # this data version's pairs only, swapped whole: the dashboard's threads share a store
        store.__dict__["_pairs_memo"] = {**{k: v for k, v in memo.items() if k[3] == key[3]}, key: pairs}
    return pairs, version


def agreement_by_instrument(store: Store, suite: str, metric: str, *, version: int | None = None,
                            seed: int = 0) -> list[Agreement]:
    """Each instrument's agreement with the calibration set, from its stored judgings (first used first)."""
    pairs, version = labelled_pairs(store, suite, metric, version=version)
    order = list(dict.fromkeys([*pairs.samples["instrument"], *pairs.items["instrument"]]))
    return [agreement(pairs.where("instrument", [inst]), metric=metric, instrument=inst, version=version, seed=seed)
            for inst in order]


def agreement_of_runs(store: Store, suite: str, metric: str, run_ids: Sequence[str], *,
                      version: int | None = None, seed: int = 0, label: str | None = None) -> Agreement:
    """The agreement of the judgings of some runs (a segment of the trend) with the calibration set."""
    pairs, version = labelled_pairs(store, suite, metric, version=version, run_ids=run_ids)
    names = list(dict.fromkeys([*pairs.samples["instrument"], *pairs.items["instrument"]]))
    return agreement(pairs, metric=metric, instrument=label or " + ".join(names) or "no judgings", version=version,
                     seed=seed)


@dataclass(frozen=True)
class Comparison:
    """A candidate instrument against the current one, paired over the same labelled samples.

    Attributes:
        current: the current instrument's agreement.
        candidate: the candidate's.
        difference: candidate minus current headline, with its paired bootstrap interval.
        margin: how much worse the candidate may be before it fails.
        worse: the candidate is worse beyond the margin (see `is_worse`).
    """

    current: Agreement
    candidate: Agreement
    difference: Estimate
    margin: float

    @property
    def worse(self) -> bool:
        return is_worse(self.difference, self.margin)


def is_worse(difference: Estimate, margin: float) -> bool:
    """A candidate fails when it is lower by more than `margin` and its paired interval lies wholly below 0.

    Both conditions: a drop inside the margin is tolerated however sure, and a large drop the samples cannot
    tell from chance is not called worse (an equal judge, difference 0, always passes).
    """
    if not difference.known:
        return False
    return difference.value < -margin and math.isfinite(difference.high) and difference.high < 0


def compare(current: Pairs, candidate: Pairs, *, metric: str, version: int, margin: float,
            names: tuple[str, str] = ("current", "candidate"), seed: int = 0, reps: int = st.BOOTSTRAP) -> Comparison:
    """The paired comparison of two instruments' pairs over the samples both have pairs on."""
    both = sorted(current.sample_ids & candidate.sample_ids)
    a, b = current.where("sample_id", both), candidate.where("sample_id", both)
    agree_a = agreement(a, metric=metric, instrument=names[0], version=version, seed=seed, reps=reps)
    agree_b = agreement(b, metric=metric, instrument=names[1], version=version, seed=seed, reps=reps)
    # The same draws of samples for both, replicate by replicate: the difference's interval is paired.
    draws, _ = st.replicate_weights(both, reps=reps, seed=seed)
    pos = {sid: k for k, sid in enumerate(both)}
    use_accuracy = agree_a.accuracy.known and agree_b.accuracy.known

    def per_pair(p: Pairs) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's agreement (1/0, or 1 - |judge - people|) and its sample's place in `both`."""
        if use_accuracy:
            bs = p.samples[p.samples["binary"].astype(bool)]
            agree = np.concatenate([(p.items["judge"].to_numpy(bool) == p.items["people"].to_numpy(bool)),
                                    (bs["judge"].to_numpy(float) >= 0.5) == (bs["people"].to_numpy(float) > 0.5)])
            ids = np.concatenate([p.items["sample_id"].to_numpy(str), bs["sample_id"].to_numpy(str)])
        else:
            agree = 1 - np.abs(p.samples["judge"].to_numpy(float) - p.samples["people"].to_numpy(float))
            ids = p.samples["sample_id"].to_numpy(str)
        return agree.astype(float), np.fromiter((pos[s] for s in ids), dtype=int, count=len(ids))

    if both:
        (agree_a_, at_a), (agree_b_, at_b) = per_pair(a), per_pair(b)
        point = st.weighted_mean(agree_b_, np.ones(len(agree_b_))) - st.weighted_mean(agree_a_, np.ones(len(agree_a_)))
        # each replicate's weighted mean at once (boot_mean): the pairs of a sample drawn k times weigh k
        reps_diff = st.boot_mean(agree_b_, draws, at_b) - st.boot_mean(agree_a_, draws, at_a)
        difference = st.interval(reps_diff, point)
    else:
        difference = NONE
    return Comparison(agree_a, agree_b, difference, margin)


def corrected_of_run(store: Store, suite: str, metric: str, run_id: str, *, version: int | None = None,
                     tune: bool = True, pairs: Pairs | None = None) -> Corrected | Withheld | None:
    """A run's metric by its judge and as the calibration set's labels correct it (lib.diagnosis.agreement._ppi).

    The rectifier (people minus judge) is measured on this run's own judgings of the labelled samples, so it is
    the run's instrument that is calibrated, never another judge's; the judge's scores of the run's other samples
    carry the rest.

    `pairs`: labelled_pairs already read over runs that include this one (corrected_at_steps reads them once for
    all its runs: one read a run cost two thirds of an incident load's CPU); None reads this run's.

    The estimator follows how the labelled samples were drawn (lib.diagnosis.agreement._design): PPI (`tune`:
    PPI++) for uniform draws, the weighted estimator for labels taken from one queue over the run's samples.

    Returns:
        The correction; Withheld (with the reason) when the labels' draw supports no estimator; None when fewer
        than two labelled samples were scored by the run.
    """
    if pairs is None:
        pairs, _ = labelled_pairs(store, suite, metric, version=version, run_ids=[run_id])
    else:
        pairs = pairs.where("run_id", [run_id])
    paired = pairs.samples.drop_duplicates("sample_id")
    if len(paired) < MIN_LABELS:
        return None
    # the run's scored samples only (status ok, a score): not its reasons and verdicts' JSON, a third of the read
    ok = hs.mean_sample_scores(store, [run_id], suite, metric)
    rest = ok[~ok["sample_id"].isin(set(paired["sample_id"]))]
    return corrected_mean(paired["sample_id"].astype(str).tolist(), paired["people"].to_numpy(float),
                          paired["judge"].to_numpy(float), rest["score"].to_numpy(float), pairs.draws, tune=tune)


def corrected_mean(labelled: Sequence[str], people: np.ndarray, judged: np.ndarray, unlabelled: np.ndarray,
                   draws: dict[str, SampleDraw], *, tune: bool = True) -> Corrected | Withheld | None:
    """The corrected mean of the judge's scores, by people's scores of the `labelled` samples (and the judge's of
    them, `judged`) and the judge's scores of the others (`unlabelled`), with the estimator the labelled samples'
    `draws` support (lib.diagnosis.agreement._design).

    Returns:
        The correction (PPI / PPI++ for uniform draws, `active_mean` for one queue's); Withheld with the reason;
        None under MIN_LABELS labelled samples.
    """
    if len(labelled) < MIN_LABELS:
        return None
    every = np.concatenate([np.asarray(judged, dtype=float), np.asarray(unlabelled, dtype=float)])
    choice = choose(draws_of(draws, labelled), len(every))
    if choice.estimator == "weighted":
        return active_mean(people, judged, np.array(choice.pi), every)
    if choice.estimator != "ppi":
        return Withheld(float(every.mean()), len(labelled), choice.reason)
    return ppi_mean(people, judged, unlabelled, tune=tune)


def corrected_at_steps(store: Store, suite: str, steps: Sequence[tuple[str, str, str | None]]
                       ) -> dict[tuple[str, str], str]:
    """For each step (metric, run id, the run before), where the calibration set labels the metric: the run's
    metric by its judge and corrected by people's labels, with the run before's beside it (corrected_of_run).

    Returns:
        (metric, run id) -> "faithfulness 0.92 by the judge; 0.81 [0.78, 0.84] corrected by 150 labels (the run
        before: 0.79 by the judge; 0.80 [0.78, 0.82] corrected)"; steps with fewer than two labelled samples
        scored are left out.
    """
    labelled = {s[0] for s in steps} & hs.labelled_metrics(store, suite)
    pairs_of = {m: labelled_pairs(store, suite, m)[0] for m in labelled}   # every run's, as the trend read them
    out: dict[tuple[str, str], str] = {}
    for metric, run_id, before_id in steps:
        if metric not in labelled or (metric, run_id) in out:
            continue
        now = corrected_of_run(store, suite, metric, run_id, pairs=pairs_of[metric])
        if now is None:
            continue
        before = corrected_of_run(store, suite, metric, before_id, pairs=pairs_of[metric]) if before_id else None
        out[(metric, run_id)] = now.sentence(metric) + (f" (the run before: {before.short})" if before else "")
    return out
