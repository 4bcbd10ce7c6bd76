"""The Labels page's work, without Streamlit: a labeller's queue through a run's samples in the order that narrows
the label-corrected interval fastest (lib.diagnosis.agreement._active), the judge's item verdicts beside each with
other people's labels of the item, how far a label of this text reaches (every run that judged the same text), and
one label stored per click (through the same checks as the file door)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from lib.app.imports import HasStore
from lib.core.labels import Label, QueueDraw, content_key, label_items
from lib.core.metrics import get_metric
from lib.core.results import OK
from lib.core.samples import EvalSample
from lib.diagnosis.agreement import Corrected, Withheld, active_labels_to_halve, active_order, active_weights
from lib.diagnosis.trends import INSTRUMENT_COLUMNS
from lib.intake.labels import labels_from_rows
from lib.store import Store


@dataclass(frozen=True)
class JudgedItem:
    """One item of a sample, with the judge's verdict and evidence at the run (None: not judged)."""

    number: int
    text: str
    verdict: str | None
    evidence: str
    label: float | None   # this labeller's current label of the item, if any
    others: tuple[tuple[str, float], ...] = ()   # other people's current labels of the item: (labeller, value)

    @property
    def tied(self) -> bool:
        """People's labels of the item (this labeller's included) split evenly: agreement leaves the item out."""
        values = [v for _, v in self.others] + ([self.label] if self.label is not None else [])
        return len(values) > 1 and float(np.mean(values)) == 0.5


@dataclass(frozen=True)
class Queue:
    """A labeller's progress through a run's samples for one metric."""

    total: int                    # samples with items to label
    done: int                     # samples whose every item this labeller has labelled
    current: EvalSample | None    # the first sample not done, in id order (None: all done)

    @property
    def share(self) -> float:
        return self.done / self.total if self.total else 1.0


def _mine(store: Store, suite: str, metric: str, labeller: str, *, sample_id: str | None = None
          ) -> dict[tuple[str, str], dict[int, float]]:
    """(sample id, content) -> item -> value: the labeller's current item labels (of one sample, when given)."""
    return _by_labeller(store, suite, metric, sample_id).get(labeller, {})


def _by_labeller(store: Store, suite: str, metric: str, sample_id: str | None = None
                 ) -> dict[str, dict[tuple[str, str], dict[int, float]]]:
    """labeller -> (sample id, content) -> item -> value: everyone's current item labels."""
    labels = store.labels(suite, metric=metric, sample_ids=None if sample_id is None else [sample_id])
    labels = labels[labels["item"].notna()]
    out: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    for r in labels.itertuples(index=False):
        out.setdefault(r.labeller, {}).setdefault((r.sample_id, r.content), {})[int(r.item)] = float(r.value)
    return out


@dataclass(frozen=True)
class Labellable:
    """A run's sample as a labeller of one metric sees it: its content key and how many items it has."""

    sample: EvalSample
    content: str
    n_items: int


def labellable(ctx: HasStore, run_id: str, suite: str, metric: str) -> tuple[Labellable, ...]:
    """A run's samples with items to label (judgings only: a page may cache it while people label)."""
    out = []
    for sample in ctx.store.samples(run_id, suite):
        n = len(label_items(metric, sample))
        if n:
            out.append(Labellable(sample, content_key(metric, sample), n))
    return tuple(out)


def queue(ctx: HasStore, run_id: str, suite: str, metric: str, labeller: str, *, skip: tuple[str, ...] = (),
          order: Sequence[str] | None = None, samples: Sequence[Labellable] | None = None) -> Queue:
    """Where `labeller` stands on a run's samples: how many are done, and the next one (ids in `skip` passed by).

    Args:
        order: sample ids in the order to label them (`label_order`); None: id order. Samples not in it follow.
        samples: the run's `labellable` samples, when the caller holds them (read from the store when None).
    """
    mine = _mine(ctx.store, suite, metric, labeller)
    total = done = 0
    candidates: list[EvalSample] = []
    for one in labellable(ctx, run_id, suite, metric) if samples is None else samples:
        total += 1
        got = mine.get((one.sample.sample_id, one.content), {})
        if all(k in got for k in range(1, one.n_items + 1)):
            done += 1
        elif one.sample.sample_id not in skip:
            candidates.append(one.sample)
    if order is not None and candidates:
        rank = {sid: k for k, sid in enumerate(order)}
        candidates.sort(key=lambda smp: rank.get(smp.sample_id, len(rank)))
    return Queue(total, done, candidates[0] if candidates else None)


@dataclass(frozen=True)
class LabelOrder:
    """A run's samples in the order to label them, with each one's weight (lib.diagnosis.agreement._active).

    Attributes:
        sample_ids: every scored sample of the run, first to label first.
        weights: each sample's weight, in `sample_ids`' order.
        compared_runs: the other instruments' runs whose scores of the same texts gave the disagreement.
    """

    sample_ids: tuple[str, ...]
    weights: tuple[float, ...]
    compared_runs: tuple[str, ...]

    def labels_to_halve(self, n: int) -> int | None:
        """How many labels in all, taken in this order, would halve the corrected interval at n labels."""
        return active_labels_to_halve(np.array(self.weights), n)

    def draw(self, run_id: str, sample_id: str) -> QueueDraw | None:
        """How this order offers `sample_id` (None: not in it, e.g. a sample the run did not score)."""
        if sample_id not in self.sample_ids:
            return None
        k = self.sample_ids.index(sample_id)
        return QueueDraw(run_id, self.weights[k], float(sum(self.weights)), len(self.sample_ids))


def _scores_by_content(store: Store, run_id: str, suite: str, metric: str
                       ) -> dict[str, tuple[str, float, int]]:
    """sample id -> (content key, score, items judged) of a run's scored samples."""
    scores = store.sample_scores(run_id, suite, metric)
    ok = scores[(scores["status"] == OK) & scores["score"].notna()]
    texts = {smp.sample_id: content_key(metric, smp) for smp in store.samples(run_id, suite)}
    return {sid: (texts[sid], float(score), len(json.loads(verdicts)) if verdicts else 1)
            for sid, score, verdicts in zip(ok["sample_id"], ok["score"], ok["verdicts"], strict=True)
            if sid in texts}


def label_order(ctx: HasStore, run_id: str, suite: str, metric: str, *, seed: int = 0) -> LabelOrder:
    """The run's scored samples in the active order: the judge's uncertainty (its score over its item verdicts)
    and its disagreement with each other instrument of the metric (the latest run of each, on the same text).

    Depends on judgings only, not on labels: a page may cache it per run.
    """
    store = ctx.store
    mine = _scores_by_content(store, run_id, suite, metric)
    history = store.metric_history(suite=suite, metrics=[metric])
    cols = [c for c in INSTRUMENT_COLUMNS if c in history.columns]
    here = history[history["run_id"] == run_id]
    others: list[str] = []
    if not here.empty:
        key = tuple(str(here.iloc[0][c]) for c in cols)
        latest = history.assign(_inst=[tuple(str(v) for v in row) for row in history[cols].itertuples(index=False)])
        latest = latest[latest["_inst"] != key].drop_duplicates("_inst", keep="last")
        others = latest["run_id"].tolist()
    ids = sorted(mine)
    s = np.array([mine[i][1] for i in ids])
    d = np.zeros(len(ids))
    for other in others:
        theirs = _scores_by_content(store, other, suite, metric)
        gap = np.array([abs(mine[i][1] - theirs[i][1]) if i in theirs and theirs[i][0] == mine[i][0] else 0.0
                        for i in ids])
        d = np.maximum(d, gap)
    w = active_weights(s, d, np.array([mine[i][2] for i in ids]))
    ranked = active_order(ids, w, seed=seed)
    return LabelOrder(tuple(ids[k] for k in ranked), tuple(float(w[k]) for k in ranked), tuple(others))


@dataclass(frozen=True)
class Reach:
    """How far a label of a sample's text reaches: the runs (and instruments) that judged the very same text."""

    runs: int
    instruments: int


def reach(ctx: HasStore, suite: str, metric: str, sample: EvalSample) -> Reach:
    """The runs and instruments whose judgings of `metric` saw exactly the text a labeller sees of `sample`: a
    label of it is compared with each of them, on every segment of the timeline, earlier runs included."""
    judgings, copies = ctx.store.labelled_judgings(suite, metric, [sample.sample_id])
    key = content_key(metric, sample)
    same = {c.copy for c in copies.itertuples(index=False)
            if content_key(metric, EvalSample(c.sample_id, c.question, c.answer, tuple(c.contexts), c.ground_truth))
            == key}
    seen = judgings[judgings["copy"].isin(same)]
    cols = [c for c in INSTRUMENT_COLUMNS if c in seen.columns]
    instruments = {tuple(str(v) for v in r) for r in seen[cols].itertuples(index=False)}
    return Reach(int(seen["run_id"].nunique()), len(instruments))


def judged_items(ctx: HasStore, run_id: str, suite: str, metric: str, sample: EvalSample,
                 labeller: str) -> list[JudgedItem]:
    """The sample's items with the run's judge verdicts and evidence, and the labeller's labels so far."""
    store = ctx.store
    row = store.sample_scores(run_id, suite, metric, sample_ids=[sample.sample_id])
    verdicts = json.loads(row["verdicts"].iloc[0]) if len(row) else []
    pos, neg = get_metric(metric).labels
    key = (sample.sample_id, content_key(metric, sample))
    everyone = _by_labeller(store, suite, metric, sample.sample_id)
    got = everyone.get(labeller, {}).get(key, {})
    out = []
    for k, text in enumerate(label_items(metric, sample), start=1):
        v = verdicts[k - 1] if k - 1 < len(verdicts) else None
        others = tuple(sorted((who, marks[key][k]) for who, marks in everyone.items()
                              if who != labeller and k in marks.get(key, {})))
        out.append(JudgedItem(k, text, (pos if v["label"] else neg) if v else None,
                              str(v.get("evidence") or "") if v else "", got.get(k), others))
    return out


def record_label(ctx: HasStore, *, run_id: str, suite: str, metric: str, sample_id: str, item: int, value: bool,
                 labeller: str, order: LabelOrder | None = None) -> Label:
    """Store one item label from the dashboard (checked as a file row is); returns it with its seq.

    The label keeps how the run's queue drew its sample (its weight there, the queue's total and size): labels
    taken in the queue's order are corrected by the estimator weighted by it (lib.diagnosis.agreement._design).

    Args:
        order: the run's queue as the labeller saw it (`label_order`, which the page holds); None reads it.
    """
    store = ctx.store
    (label,) = labels_from_rows(store, [{"sample_id": sample_id, "metric": metric, "item": item, "label": value,
                                         "labeller": labeller, "run_id": run_id, "suite": suite}], source="dashboard")
    drawn = (order or label_order(ctx, run_id, suite, metric)).draw(run_id, sample_id)
    (seq,) = store.add_labels([replace(label, drawn=drawn)])
    return replace(label, seq=seq, drawn=drawn)


def next_words(corrected: Corrected | Withheld | None, order: LabelOrder, metric: str) -> str:
    """The Labels page's 'what to label next' sentence: where the run's metric stands through people's labels, and
    how many more labels in the queue's order would halve the corrected interval."""
    why = ("The queue starts where the judge is least sure (its item verdicts split) or where another instrument "
           "scored the very same text differently")
    why += f" (the latest run of each other instrument: {', '.join(order.compared_runs)})." if order.compared_runs \
        else "."
    if corrected is None:
        return (f"Under two labelled samples of this run: no {metric} corrected by people's labels yet. {why}")
    if isinstance(corrected, Withheld):
        return f"This run: {corrected.sentence(metric)}. {why}"
    half = order.labels_to_halve(corrected.n_labelled)
    more = (f" In this order about {half - corrected.n_labelled} more labelled samples ({half} in all) would halve "
            f"the interval (width {corrected.width:.2f} now)." if half is not None
            else " Labelling every remaining sample would not halve the interval.")
    return f"This run: {corrected.sentence(metric)}. {why}{more}"


def reach_words(found: Reach) -> str:
    """Why counts move as people label: a label belongs to a text, and every run that judged that text meets it."""
    if found.runs <= 1:
        return "Only this run judged this very text: your labels of it count for this run alone."
    instruments = f"{found.instruments} instrument{'s' if found.instruments != 1 else ''}"
    return (f"{found.runs} runs ({instruments}) judged this very text, earlier runs included: your labels count for "
            "each, so the labelled-sample counts of earlier segments (here and on Trends) grow by one when you label "
            "its first item, and drop by one if your labels tie with another person's on all its items.")


def item_words(item: JudgedItem, pos: str, neg: str) -> str:
    """Other people's labels of an item, and what a tie does ('' when nobody else labelled it)."""
    if not item.others:
        return ""
    said = ", ".join(f"{who}: {pos if value > 0.5 else neg if value < 0.5 else value}" for who, value in item.others)
    if item.tied:
        return f"{said}. A tie: agreement leaves this item out until a third person labels it."
    return said
