"""The Labels page's work, without Streamlit: a labeller's queue through a run's samples, the judge's item
verdicts beside each, and one label stored per click (through the same checks as the file door)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from lib.app.imports import HasStore
from lib.core.labels import Label, content_key, label_items
from lib.core.metrics import get_metric
from lib.core.samples import EvalSample
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


@dataclass(frozen=True)
class Queue:
    """A labeller's progress through a run's samples for one metric."""

    total: int                    # samples with items to label
    done: int                     # samples whose every item this labeller has labelled
    current: EvalSample | None    # the first sample not done, in id order (None: all done)

    @property
    def share(self) -> float:
        return self.done / self.total if self.total else 1.0


def _mine(store: Store, suite: str, metric: str, labeller: str) -> dict[tuple[str, str], dict[int, float]]:
    labels = store.labels(suite, metric=metric)
    labels = labels[(labels["labeller"] == labeller) & labels["item"].notna()]
    out: dict[tuple[str, str], dict[int, float]] = {}
    for r in labels.itertuples(index=False):
        out.setdefault((r.sample_id, r.content), {})[int(r.item)] = float(r.value)
    return out


def queue(ctx: HasStore, run_id: str, suite: str, metric: str, labeller: str, *, skip: tuple[str, ...] = ()) -> Queue:
    """Where `labeller` stands on a run's samples: how many are done, and the next one (ids in `skip` passed by)."""
    store = ctx.store
    mine = _mine(store, suite, metric, labeller)
    total = done = 0
    current = None
    for sample in store.samples(run_id, suite):
        n = len(label_items(metric, sample))
        if not n:
            continue
        total += 1
        got = mine.get((sample.sample_id, content_key(metric, sample)), {})
        if all(k in got for k in range(1, n + 1)):
            done += 1
        elif current is None and sample.sample_id not in skip:
            current = sample
    return Queue(total, done, current)


def judged_items(ctx: HasStore, run_id: str, suite: str, metric: str, sample: EvalSample,
                 labeller: str) -> list[JudgedItem]:
    """The sample's items with the run's judge verdicts and evidence, and the labeller's labels so far."""
    store = ctx.store
    scores = store.sample_scores(run_id, suite, metric)
    row = scores[scores["sample_id"] == sample.sample_id]
    verdicts = json.loads(row["verdicts"].iloc[0]) if len(row) else []
    pos, neg = get_metric(metric).labels
    got = _mine(store, suite, metric, labeller).get((sample.sample_id, content_key(metric, sample)), {})
    out = []
    for k, text in enumerate(label_items(metric, sample), start=1):
        v = verdicts[k - 1] if k - 1 < len(verdicts) else None
        out.append(JudgedItem(k, text, (pos if v["label"] else neg) if v else None,
                              str(v.get("evidence") or "") if v else "", got.get(k)))
    return out


def record_label(ctx: HasStore, *, run_id: str, suite: str, metric: str, sample_id: str, item: int, value: bool,
                 labeller: str) -> Label:
    """Store one item label from the dashboard (checked as a file row is); returns it with its seq."""
    store = ctx.store
    (label,) = labels_from_rows(store, [{"sample_id": sample_id, "metric": metric, "item": item, "label": value,
                                         "labeller": labeller, "run_id": run_id, "suite": suite}], source="dashboard")
    (seq,) = store.add_labels([label])
    return Label(**{**label.__dict__, "seq": seq})
